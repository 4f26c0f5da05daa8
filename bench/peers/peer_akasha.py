"""akasha under the same protocol as the peers: CorpusIndex with a persistent cache, search_type "auto".

Runs in the project's own environment (the driver puts the repo on PYTHONPATH).
The shared embedding function is wrapped with akasha's CallableEmbedder, so the
index asks the same function, for the same texts, as every peer.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import protocol  # noqa: E402

# Imported before the clock starts: the timings measure the library's work, not its import.
from akasha.embeddings.wrappers import CallableEmbedder  # noqa: E402
from akasha.index import CorpusIndex  # noqa: E402

try:  # akasha imports its chunker's library only when a file must be chunked; the peers import theirs
    import langchain_text_splitters  # noqa: E402, F401  (before the clock, so akasha is timed the same way)
except ImportError:  # an older akasha (the baseline tree) chunks without it
    pass


def open_system(job, embedder):
    wrapped = CallableEmbedder(embedder.embed, name=f"bench-{job['embedding'].get('kind', 'hash')}")
    wrapped.embed_query = embedder.embed_query  # the question's vector, uncounted as for the peers
    index = CorpusIndex(wrapped, chunk_size=1000, cache_dir=Path(job["work"]) / "akasha-cache")
    report = index.sync(job["corpus"])
    search_type = job.get("search_type", "auto")

    def search(query, k):
        return [hit.text for hit in index.search(query, k=k, search_type=search_type)]

    return search, len(index), {"sync": {f: getattr(report, f) for f in ("indexed", "unchanged", "embedded") if hasattr(report, f)}}


if __name__ == "__main__":
    protocol.run(open_system)
