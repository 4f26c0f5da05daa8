"""akasha-terminal 1.8.4: its search_type="auto" over its Chroma cache, in bench/.venvs/akasha_terminal.

Read from its source (akasha/RAG/rag.py, utils/atman.py, utils/db/load_db.py,
utils/search/retrievers/base.py): every ``RAG(...)(data_source, prompt)`` call
runs ``process_db`` (mtime check per file, Chroma build/update under
./chromadb/, then loading every stored chunk and vector), ``get_retrivers``
(KNN over all vectors + a BM25Okapi rebuilt over jieba-tokenised chunks), then
the "auto" search. We call those functions directly with a custom embedding
callable (its documented way to plug an embedder), skipping only the LLM.

Opening = ``process_db`` + ``get_retrivers``. The primary query latency is the
per-call path its API runs for each question (process_db + get_retrivers +
"auto" search, everything before the LLM); ``warm_search`` is the "auto"
search alone with prebuilt retrievers, reported beside it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import protocol  # noqa: E402

# Imported before the clock starts: the timings measure the library's work, not its import.
from akasha.utils.db.load_db import process_db  # noqa: E402
from akasha.utils.search.retrievers.base import get_retrivers  # noqa: E402
from akasha.utils.search.search_doc import retri_docs  # noqa: E402


def open_system(job, embedder):
    def bench_shared(texts):  # the name becomes its cache namespace: custom:bench_shared
        return embedder.embed(list(texts)) if len(texts) != 1 else embedder.embed_query(texts[0])[None, :]

    # Its directory loader is not recursive, so pass the corpus's folders as a list (its API takes lists).
    root = Path(job["corpus"])
    corpus = sorted(str(p) for p in root.iterdir() if p.is_dir()) or [str(root)]
    db, _ignored = process_db(data_source=corpus, embeddings=bench_shared, chunk_size=1000)
    retrievers = get_retrivers(db, bench_shared, 0.0, "auto")

    def per_call(query, k):
        call_db, _ = process_db(data_source=corpus, embeddings=bench_shared, chunk_size=1000)
        call_retrievers = get_retrivers(call_db, bench_shared, 0.0, "auto")
        return [d.page_content for d in retri_docs(call_retrievers, query, "auto", k)]

    def warm(query, k):
        return [d.page_content for d in retri_docs(retrievers, query, "auto", k)]

    per_call.other_paths = {"warm_search": warm}
    return per_call, len(db.get_ids()), {}


if __name__ == "__main__":
    protocol.run(open_system)
