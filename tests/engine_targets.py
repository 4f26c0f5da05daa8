"""Store targets for the engine contract suite, buildable in this process and in a child process.

A target is a small JSON-able recipe (``{"kind": "chroma-folder", "path": ...}``)
so a test can rebuild the same store in a new Python process (``python -m
engine_targets RECIPE CACHE FOLDER``), the way a user's next run would. Run as a
script it syncs FOLDER into an index over that store and prints the sync report
as JSON; with ``--slow`` its embedder sleeps per batch and ``--progress=FILE``
appends a line per batch, so a test can kill it part way.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from akasha.embeddings.hash import HashEmbedder

#: Chunking used by every contract test: small chunks, no overlap, so edits touch few chunks.
CHUNK_SIZE = 50


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting the texts it embeds; optionally slow, or failing after some texts."""

    def __init__(self, *, delay: float = 0.0, fail_after: int | None = None, progress: str | None = None) -> None:
        super().__init__()
        self.embedded = 0
        self.progress = progress
        self.delay = delay
        self.fail_after = fail_after
        self.batch_size = 4

    def embed_documents(self, texts):
        if self.fail_after is not None and self.embedded + len(texts) > self.fail_after:
            raise RuntimeError("embedding provider failed part way")
        if self.delay:
            time.sleep(self.delay)
        self.embedded += len(texts)
        if self.progress:  # one line per batch, so a test knows when to kill this process
            with open(self.progress, "a", encoding="utf-8") as handle:
                handle.write(f"{self.embedded}\n")
        return super().embed_documents(texts)


def build_store(recipe: dict[str, Any]) -> Any:
    """The store a recipe names (None for the local default store)."""
    kind = recipe["kind"]
    if kind == "local":
        return None
    if kind == "memory":
        from akasha.stores.memory import MemoryStore

        return MemoryStore()
    if kind == "faiss":
        from akasha.stores.faiss import FaissStore

        return FaissStore()
    if kind == "chroma-folder":
        from akasha.stores.chroma import ChromaStore

        return ChromaStore(recipe["collection"], path=recipe["path"])
    if kind == "qdrant-folder":
        from akasha.stores.qdrant import QdrantStore

        return QdrantStore(collection=recipe["collection"], url=None, path=recipe["path"])
    if kind == "url":
        return recipe["url"]
    raise ValueError(f"unknown target kind {kind!r}")


def open_index(recipe: dict[str, Any], cache: Path | str, embedder: Any = None) -> Any:
    from akasha.index import CorpusIndex

    return CorpusIndex(embedder or CountingEmbedder(), chunk_size=CHUNK_SIZE, chunk_overlap=0, cache_dir=cache,
                       vector_store=build_store(recipe))


def main(argv: list[str]) -> int:
    recipe, cache, folder = json.loads(argv[0]), argv[1], argv[2]
    progress = next((a.split("=", 1)[1] for a in argv if a.startswith("--progress=")), None)
    embedder = CountingEmbedder(delay=0.2 if "--slow" in argv else 0.0, progress=progress)
    with open_index(recipe, cache, embedder) as index:
        report = index.sync(folder)
        hits = index.search("spare wheel boot", k=1, search_type="bm25")
    print(json.dumps({"embedded": report.embedded, "chunks": report.chunks, "unchanged": report.unchanged,
                      "indexed": report.indexed, "top": hits[0].path if hits else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
