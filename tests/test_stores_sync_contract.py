"""The synchronous Store contract, once, for every store.

memory, faiss, Chroma (folder and in-memory), Qdrant (in-memory and folder) run by
default; a Chroma server (``chroma run``) and PostgreSQL + pgvector (pgserver) run
with ``-m integration``. "A new client" means a new store object on the same
storage: what one machine wrote, another machine reads.
"""

from __future__ import annotations

import hashlib
import math
import uuid

import numpy as np
import pytest
from servers_fixtures import chroma_server, pg_server  # noqa: F401

from akasha.errors import IndexMismatchError
from akasha.stores.base import Store
from akasha.types import Chunk

DIM = 8
EMBEDDER = "hash:test-embedder@local"


def unit(i: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[i] = 1.0
    return v


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def rec(doc: str, n: int, text: str | None = None, embedder: str = EMBEDDER, **meta: object) -> Chunk:
    """A chunk record the way the index writes it."""
    text = text or f"{doc} chunk {n}"
    return Chunk(f"{doc}#{n}", text, {"source": f"docs/{doc}.txt", "page": n + 1, "chunk_index": n,
                                      "content_hash": sha(text), "embedder": embedder, "doc_id": doc, **meta})


class Opener:
    """Opens the store of one kind; ``reopen()`` gives a new client object on the same storage."""

    def __init__(self, kind: str, tmp_path, request) -> None:
        self.kind = kind
        self.tmp = tmp_path
        self.request = request
        self.name = f"c{uuid.uuid4().hex[:12]}"
        self.persistent = kind in ("chroma-folder", "qdrant-folder", "chroma-server", "pgvector")
        self.opened: list = []

    def open(self, **options):
        kind = self.kind
        if kind == "memory":
            from akasha.stores.memory import MemoryStore

            store = MemoryStore(**options)
        elif kind == "faiss":
            from akasha.stores.faiss import FaissStore

            store = FaissStore(**options)
        elif kind == "chroma-ephemeral":
            from akasha.stores.chroma import ChromaStore

            store = ChromaStore(self.name, **options)
        elif kind == "chroma-folder":
            from akasha.stores.chroma import ChromaStore

            store = ChromaStore(self.name, path=self.tmp / "chroma", **options)
        elif kind == "qdrant-memory":
            from akasha.stores.qdrant import QdrantStore

            store = QdrantStore(collection=self.name, url=":memory:", **options)
        elif kind == "qdrant-folder":
            from akasha.stores.qdrant import QdrantStore

            for old in self.opened:  # an in-process Qdrant folder admits one client at a time
                old.close()
            store = QdrantStore(collection=self.name, url=None, path=self.tmp / "qdrant", **options)
        elif kind == "chroma-server":
            from akasha.stores.urls import open_store

            server = self.request.getfixturevalue("chroma_server")
            store = open_store(server.url(self.name), **options)
        elif kind == "pgvector":
            from akasha.stores.urls import open_store

            server = self.request.getfixturevalue("pg_server")
            store = open_store(server.dsn(table=f"t_{uuid.uuid4().hex[:10]}" if not self.opened else self.table),
                               **options)
            self.table = store.table
        else:
            raise AssertionError(kind)
        self.opened.append(store)
        return store

    def reopen(self, **options):
        """A new client on the same storage (persistent kinds) or the same object (in-process kinds)."""
        return self.open(**options) if self.persistent else self.opened[-1]

    def close(self) -> None:
        for store in self.opened:
            store.close()


KINDS = [
    "memory",
    "faiss",
    "chroma-ephemeral",
    "chroma-folder",
    "qdrant-memory",
    "qdrant-folder",
    pytest.param("chroma-server", marks=pytest.mark.integration),
    pytest.param("pgvector", marks=pytest.mark.integration),
]


@pytest.fixture(params=KINDS)
def opener(request, tmp_path):
    op = Opener(request.param, tmp_path, request)
    yield op
    op.close()


@pytest.fixture
def store(opener):
    return opener.open()


def seed(store) -> list[Chunk]:
    chunks = [rec("a", 0, lang="en"), rec("a", 1, lang="de", draft=True), rec("b", 0, lang="en", draft=False)]
    store.upsert(chunks, np.stack([unit(0), unit(1), unit(2)]) * 5.0)  # not unit length: the store normalises
    return chunks


# ------------------------------------------------------------------ contract
def test_is_a_store_and_empty_at_first(store):
    assert isinstance(store, Store)
    assert store.count() == 0
    assert store.nearest(unit(0), 3) == []
    assert store.fetch(["a#0"]) == []
    assert store.ids_of_documents(["a"]) == []
    assert store.vectors_for([sha("x")], EMBEDDER) == {}
    assert list(store.scan()) == []
    assert store.load_state("nothing") is None
    assert "password" not in store.name.lower() or "***" in store.name


def test_upsert_fetch_round_trip_and_replace_by_id(store):
    chunks = seed(store)
    got = store.fetch(["b#0", "missing#0", "a#0"])
    assert [c.id for c in got] == ["b#0", "a#0"]
    assert got[0].text == chunks[2].text and got[0].metadata == chunks[2].metadata
    assert got[1].metadata == chunks[0].metadata
    new = rec("a", 0, text="a, second version", lang="en")
    store.upsert([new], unit(3)[None, :])
    assert store.count() == 3
    (again,) = store.fetch(["a#0"])
    assert again.text == "a, second version" and again.metadata["content_hash"] == sha("a, second version")
    assert store.nearest(unit(3), 1)[0][0].id == "a#0"


def test_nearest_is_cosine_best_first(store):
    seed(store)
    query = unit(0) * 3.0 + unit(1) * 1.0
    hits = store.nearest(query, 3)
    assert [c.id for c, _ in hits] == ["a#0", "a#1", "b#0"]
    for (_, score), want in zip(hits, [3 / math.sqrt(10), 1 / math.sqrt(10), 0.0], strict=True):
        assert score == pytest.approx(want, abs=1e-4)
    assert len(store.nearest(query, 1)) == 1 and len(store.nearest(query, 50)) == 3
    assert store.nearest(-unit(2), 1, {"doc_id": "b"})[0][1] == pytest.approx(-1.0, abs=1e-4)
    assert store.nearest(query, 0) == []


def test_remove_counts_what_existed(store):
    seed(store)
    assert store.remove(["a#1", "nope#0", "a#1"]) == 1
    assert store.count() == 2
    assert store.fetch(["a#1"]) == []
    assert "a#1" not in [c.id for c, _ in store.nearest(unit(1), 5)]
    assert store.remove([]) == 0


def test_vectors_for_by_hash_and_embedder_also_in_a_new_client(opener, store):
    chunks = seed(store)
    found = store.vectors_for([c.metadata["content_hash"] for c in chunks] + [sha("never written")], EMBEDDER)
    assert set(found) == {c.metadata["content_hash"] for c in chunks}
    np.testing.assert_allclose(found[chunks[1].metadata["content_hash"]], unit(1), atol=1e-6)
    assert all(v.dtype == np.float32 for v in found.values())
    assert store.vectors_for([chunks[0].metadata["content_hash"]], "another-embedder") == {}
    other = opener.reopen()
    again = other.vectors_for([chunks[2].metadata["content_hash"]], EMBEDDER)
    np.testing.assert_allclose(again[chunks[2].metadata["content_hash"]], unit(2), atol=1e-6)


def test_scan_gives_every_record_with_its_unit_vector(store):
    chunks = seed(store)
    store.upsert([rec("c", i) for i in range(4)], np.stack([unit(3 + i) for i in range(4)]))
    batches = list(store.scan(batch=3))
    assert [len(b[0]) for b in batches] == [3, 3, 1]
    seen = {c.id: (c, row) for part, matrix in batches for c, row in zip(part, matrix, strict=True)}
    assert len(seen) == 7
    assert seen["a#1"][0].metadata == chunks[1].metadata
    np.testing.assert_allclose(seen["a#1"][1], unit(1), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(np.stack([r for _, r in seen.values()]), axis=1), 1.0, atol=1e-5)
    with pytest.raises(ValueError):
        list(store.scan(batch=0))


def test_state_round_trip_in_a_new_client(opener, store):
    state = {"namespace": "ns", "files": {"/docs/a.txt": "h1", "/docs/ü.txt": "h2"}, "n": 3, "nested": [1, {"x": None}]}
    seed(store)
    store.save_state("corpus-1", state)
    state["files"]["/docs/a.txt"] = "mutated after saving"  # the store keeps its own copy
    store.save_state("corpus-2", {"v": 1})
    store.save_state("corpus-2", {"v": 2})  # replaced, not appended
    other = opener.reopen()
    loaded = other.load_state("corpus-1")
    assert loaded["files"] == {"/docs/a.txt": "h1", "/docs/ü.txt": "h2"} and loaded["nested"] == [1, {"x": None}]
    assert other.load_state("corpus-2") == {"v": 2}
    assert other.load_state("corpus-3") is None
    if opener.persistent:  # a new client learns what the store holds
        assert other is not store
        assert other.count() == 3 and other.dimension == DIM and other.embedder == EMBEDDER
    with pytest.raises(TypeError):
        store.save_state("bad", {"x": object()})


def test_filters_on_metadata_and_doc_id(store):
    seed(store)

    def ids(filters):
        return {c.id for c, _ in store.nearest(unit(0), 5, filters)}

    assert ids({"lang": "en"}) == {"a#0", "b#0"}
    assert ids({"doc_id": "a"}) == {"a#0", "a#1"}
    assert ids({"doc_id": "a", "lang": "de"}) == {"a#1"}
    assert ids({"chunk_index": 0}) == {"a#0", "b#0"}
    assert ids({"source": "docs/b.txt"}) == {"b#0"}
    assert ids({"draft": True}) == {"a#1"}
    assert ids({"lang": "fr"}) == set()
    assert ids({"lang": "en' OR '1'='1"}) == set()  # a value that looks like SQL stays a value
    hits = store.nearest(unit(0), 5, {"lang": "en"})
    assert hits[0][0].id == "a#0" and hits[0][1] == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize(
    ("chunks", "vectors", "error"),
    [
        pytest.param(lambda: [rec("x", 0), rec("x", 1)], lambda: unit(0)[None, :], ValueError, id="row-count"),
        pytest.param(lambda: [rec("x", 0)], lambda: np.ones((1, DIM + 3)), IndexMismatchError, id="width"),
        pytest.param(lambda: [rec("x", 0)], lambda: np.full((1, DIM), np.nan), ValueError, id="nan"),
        pytest.param(lambda: [rec("x", 0)], lambda: np.full((1, DIM), np.inf), ValueError, id="inf"),
        pytest.param(lambda: [rec("x", 0), rec("x", 0)], lambda: np.stack([unit(0), unit(1)]), ValueError,
                     id="duplicate-id"),
        pytest.param(lambda: [rec("x", 0), rec("x", 1, embedder="other")], lambda: np.stack([unit(0), unit(1)]),
                     ValueError, id="two-embedders"),
        pytest.param(lambda: [rec("x", 0, embedder="other")], lambda: unit(0)[None, :], IndexMismatchError,
                     id="other-embedder"),
    ],
)
def test_invalid_writes_raise_before_anything_is_written(store, chunks, vectors, error):
    seed(store)
    with pytest.raises(error):
        store.upsert(chunks(), vectors())
    assert store.count() == 3
    assert store.fetch(["x#0"]) == []
    assert [c.text for c in store.fetch(["a#0"])] == ["a chunk 0"]


def test_query_of_another_width_is_refused(store):
    seed(store)
    with pytest.raises(IndexMismatchError):
        store.nearest(np.ones(DIM + 1), 3)


def test_ids_of_documents_and_count(store):
    seed(store)
    assert sorted(store.ids_of_documents(["a", "zzz"])) == ["a#0", "a#1"]
    assert sorted(store.ids_of_documents(["b", "a"])) == ["a#0", "a#1", "b#0"]
    assert store.count() == 3


def test_lock_is_a_context_manager(store):
    with store.lock(timeout=5):
        seed(store)
    assert store.count() == 3


def test_old_async_api_works_on_top(store):
    """The API the YAML pipeline awaited (replace/delete/search/get/count) runs on the sync contract."""
    import asyncio

    async def scenario():
        await store.replace(["a"], [rec("a", 0), rec("a", 1)], np.stack([unit(0), unit(1)]))
        await store.replace(["a"], [rec("a", 0, text="a again")], unit(2)[None, :])  # a#1 is stale now
        assert await store.count() == 1
        assert [c.text for c in await store.get(["a#0", "a#1"])] == ["a again"]
        assert (await store.search(unit(2), 3))[0][0].id == "a#0"
        assert await store.delete(["a"]) == 1

    asyncio.run(scenario())
    assert store.count() == 0


def test_store_opened_for_an_embedder_refuses_another_from_the_first_write(opener):
    store = opener.open(embedder="model-a")
    with pytest.raises(IndexMismatchError, match="model-a"):
        store.upsert([rec("a", 0)], unit(0)[None, :])  # written by EMBEDDER
    assert store.count() == 0
    store.upsert([rec("a", 0, embedder="model-a")], unit(0)[None, :])
    assert store.embedder == "model-a" and store.vectors_for([sha("a chunk 0")], "model-a")
