"""Store targets and doors for the engine contract suite, buildable in this process and in a child process.

A target is a small JSON-able recipe (``{"kind": "chroma-folder", "path": ...}``)
and a door is how a user reaches the engine: ``index`` (CorpusIndex), ``rag``
(the ``akasha.RAG`` facade) or ``yaml`` (a ``kind: RAGPipeline`` spec). A test can
rebuild the same store behind the same door in a new Python process
(``python engine_targets.py RECIPE DOOR CACHE FOLDER``), the way a user's next
run would: the script syncs FOLDER and prints the sync report as JSON. With
``--slow`` its embedder sleeps per batch and ``--progress=FILE`` appends a line
per batch, so a test can kill it part way.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from akasha.embeddings.hash import HashEmbedder

#: Chunking used by every contract test: small chunks, no overlap, so edits touch few chunks.
CHUNK_SIZE = 50
DOORS = ("index", "rag", "yaml")


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting the texts it embeds; optionally slow, or failing after some texts."""

    def __init__(self, *, delay: float = 0.0, fail_after: int | None = None, progress: str | None = None) -> None:
        super().__init__()
        self.embedded = 0
        self.delay = delay
        self.fail_after = fail_after
        self.progress = progress
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
    """The store (or URL) a recipe names for the index and facade doors; None for the local default store."""
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


def yaml_store(recipe: dict[str, Any]) -> dict[str, Any]:
    """The ``vector_store`` section a RAGPipeline file writes for the same store."""
    kind = recipe["kind"]
    if kind in ("memory", "faiss"):
        return {"backend": kind}
    if kind == "chroma-folder":
        return {"backend": "chroma", "persist_directory": recipe["path"], "collection": recipe["collection"]}
    if kind == "url" and recipe["url"].startswith("chroma://"):
        host_port, _, name = recipe["url"][len("chroma://"):].partition("/")
        host, _, port = host_port.partition(":")
        return {"backend": "chroma", "host": host, "port": int(port), "collection": name}
    if kind == "url" and recipe["url"].startswith("postgresql://"):
        dsn, _, query = recipe["url"].partition("?")
        return {"backend": "pgvector", "dsn": dsn, "collection": query.split("table=", 1)[1]}
    raise ValueError(f"no RAGPipeline vector_store for {kind!r}")


class Door:
    """One way into the engine over one store: sync a folder, search it, count what was embedded."""

    def __init__(self, door: str, recipe: dict[str, Any], cache: Path | str, embedder: CountingEmbedder | None,
                 store: Any) -> None:
        self.door = door
        self.embedder = embedder or CountingEmbedder()
        if door == "index":
            from akasha.index import CorpusIndex

            self.engine: Any = CorpusIndex(self.embedder, chunk_size=CHUNK_SIZE, chunk_overlap=0, cache_dir=cache,
                                           vector_store=store)
        elif door == "rag":
            import akasha

            self.engine = akasha.RAG(model="extractive", embeddings=self.embedder, chunk_size=CHUNK_SIZE,
                                     chunk_overlap=0, cache_dir=cache, vector_store=store)
        elif door == "yaml":
            from akasha import registry, spec

            name = f"contract-counting-{id(self.embedder)}"
            registry.register("embedder", name, lambda config, context: self.embedder, replace=True)
            body = {"kind": "RAGPipeline", "metadata": {"name": "contract"}, "spec": {
                "chunking": {"strategy": "recursive", "chunk_size": CHUNK_SIZE, "overlap": 0},
                "embeddings": {"provider": name, "dimension": self.embedder.dimension},
                "vector_store": yaml_store(recipe),
                "retrieval": {"pattern": "hybrid", "top_k": 5}}}
            self.engine = spec.build(body, cache_dir=cache)
        else:
            raise ValueError(f"unknown door {door!r}; known: {', '.join(DOORS)}")

    def sync(self, folder: Path | str) -> Any:
        """The door's sync report (SyncReport), after bringing the engine in line with ``folder``."""
        if self.door == "index":
            return self.engine.sync(folder)
        if self.door == "rag":
            return self.engine.index(folder)
        return self.engine.sync(folder)

    def search(self, folder: Path | str, question: str, k: int = 5, search_type: str = "bm25") -> list[Any]:
        """The best hits for ``question`` over ``folder`` (synced first by the doors that always sync)."""
        if self.door == "index":
            return self.engine.search(question, k=k, search_type=search_type)
        if self.door == "rag":
            return list(self.engine.search(folder, question, k=k, search_type=search_type))
        return list(self.engine.query_sync(question, k=k).hits)

    def close(self) -> None:
        closer = getattr(self.engine, "close", None)
        if closer is not None:
            closer()


@contextlib.contextmanager
def open_door(door: str, recipe: dict[str, Any], cache: Path | str, embedder: CountingEmbedder | None = None,
              store: Any = None) -> Iterator[Door]:
    """A door over ``recipe``'s store (``store`` reuses an object built before); closed on exit."""
    built = store if store is not None else (build_store(recipe) if door != "yaml" else None)
    handle = Door(door, recipe, cache, embedder, built)
    try:
        yield handle
    finally:
        handle.close()
        if store is None and built is not None and not isinstance(built, str):
            built.close()


def main(argv: list[str]) -> int:
    recipe, door, cache, folder = json.loads(argv[0]), argv[1], argv[2], argv[3]
    progress = next((a.split("=", 1)[1] for a in argv if a.startswith("--progress=")), None)
    embedder = CountingEmbedder(delay=0.2 if "--slow" in argv else 0.0, progress=progress)
    with open_door(door, recipe, cache, embedder) as handle:
        report = handle.sync(folder)
        hits = handle.search(folder, "spare wheel boot", k=1)
    print(json.dumps({"embedded": report.embedded, "chunks": report.chunks, "unchanged": report.unchanged,
                      "indexed": report.indexed, "top": hits[0].path if hits else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
