"""Caches and collections written by the previous release open without re-embedding (issue 13).

The fixtures under tests/fixtures/legacy/ were written by the previous release's
code (commit and versions in fixtures.json; tests/fixtures/legacy/make_fixtures.py
says how): a local cache folder, a ``store="chroma"`` cache folder, a Chroma
server's data folder (``vector_store="chroma://..."``) and a PostgreSQL dump
(``vector_store="postgresql://..."``), all of the same three-file corpus. With the
current code each one syncs that corpus embedding nothing, answers the questions
the old code answered, and leaves records the store's own tools can read.

The server cases are marked integration: ``chroma run`` on a copy of the saved
data folder, and a fresh pgserver database loaded from the SQL dump.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import shutil
import tarfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from servers_fixtures import PG_PASSWORD, ChromaServer, pg_server  # noqa: F401

from akasha.embeddings.hash import HashEmbedder
from akasha.index import CorpusIndex

FIXTURES = Path(__file__).parent / "fixtures" / "legacy"
FACTS = json.loads((FIXTURES / "fixtures.json").read_text(encoding="utf-8"))
#: Where the previous release indexed the corpus (chunk ids and stat rows name it).
CORPUS_PATH = Path(FACTS["corpus_path"])


class CountingEmbedder:
    """HashEmbedder under the name the previous release used, counting every text it embeds."""

    batch_size = 1024

    def __init__(self, name: str = FACTS["embedder"]) -> None:
        self.inner = HashEmbedder(FACTS["dimension"])
        self.name = name
        self.vector_identity = name  # the hash function: it names its vectors, no probe texts (identity.py)
        self.dimension = self.inner.dimension
        self.texts = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def index_over(embedder: CountingEmbedder, cache_dir: Path | str, **options: object) -> CorpusIndex:
    return CorpusIndex(embedder, chunk_size=FACTS["chunk_size"], chunk_overlap=FACTS["chunk_overlap"],
                       cache_dir=cache_dir, **options)


def unpack(archive: str, target: Path) -> Path:
    """Extract one fixture archive into ``target`` (a fresh copy per test: the tests write into it)."""
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(FIXTURES / archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(target, filter="data")
        else:  # pragma: no cover - Python without extraction filters
            tar.extractall(target)  # noqa: S202 - our own committed fixture
    return target


def corpus_copy(target: Path) -> Path:
    shutil.copytree(FIXTURES / "corpus", target)
    return target


@contextlib.contextmanager
def corpus_where_it_was() -> Iterator[Path]:
    """The corpus back at the path the previous release indexed it at (one test at a time holds it)."""
    CORPUS_PATH.parent.mkdir(parents=True, exist_ok=True)
    with open(CORPUS_PATH.parent.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(CORPUS_PATH, ignore_errors=True)
        try:
            yield corpus_copy(CORPUS_PATH)
        finally:
            shutil.rmtree(CORPUS_PATH, ignore_errors=True)


def assert_same_corpus_and_answers(index: CorpusIndex, root: Path) -> None:
    """The corpus the old code indexed (same files and chunk texts), and the answers it gave.

    ``knn`` must rank exactly as the old code did (same vectors, exact cosine); ``auto`` and
    ``bm25`` must find the file each question is about (their fusion and scoring may improve).
    """
    assert dict(index.files) == FACTS["files"]  # portable keys: relative to the data_source folder
    assert sorted({c.metadata["content_hash"] for c in index.chunks}) == FACTS["content_hashes"]
    assert len(index) == FACTS["chunks"]

    def found(query: str, search_type: str) -> list[str]:
        return [f"{h.chunk.metadata['source']}#{h.chunk.metadata['chunk_index']}"
                for h in index.search(query, k=3, search_type=search_type)]

    for query, expected in FACTS["answers"]["knn"].items():
        assert found(query, "knn") == expected, query
    for query, about in FACTS["queries"].items():
        for search_type in ("auto", "bm25"):
            assert found(query, search_type)[0].partition("#")[0] == about, (query, search_type)


def expected_vectors(tmp_path: Path) -> dict[str, np.ndarray]:
    """content hash -> the HashEmbedder vector of that chunk text (what the old code stored)."""
    embedder = HashEmbedder(FACTS["dimension"])
    with CorpusIndex(embedder, chunk_size=FACTS["chunk_size"], chunk_overlap=FACTS["chunk_overlap"],
                     cache_dir=":memory:") as index:
        index.sync(corpus_copy(tmp_path / "expected"))
        texts = {c.metadata["content_hash"]: c.text for c in index.chunks}
    return dict(zip(texts, embedder.embed_documents(list(texts.values())), strict=True))


def assert_vectors_for_finds_the_old_vectors(store, tmp_path: Path) -> None:
    """The store's ``vectors_for`` reads the previous release's vectors, by content hash and model only."""
    import hashlib

    expected = expected_vectors(tmp_path)
    assert sorted(expected) == FACTS["content_hashes"]
    absent = hashlib.sha256(b"a text nobody indexed").hexdigest()
    found = store.vectors_for([*expected, absent], FACTS["embedder"])
    assert set(found) == set(expected)
    for content_hash, vector in expected.items():
        np.testing.assert_allclose(found[content_hash], vector, atol=1e-6)
    assert store.vectors_for(list(expected), "another-model") == {}
    assert store.count() == 0  # reading wrote nothing


def test_fixtures_are_small_and_from_the_previous_release():
    total = sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file())
    assert total < 1_000_000
    assert FACTS["commit"].startswith("be0edf4") and FACTS["embedder"] == "hash"


# ------------------------------------------------------------- local caches
def test_local_cache_upgraded_in_place_embeds_nothing(tmp_path):
    """Same machine, same paths: the old index.sqlite3 serves every vector; the corpus is unchanged."""
    cache = unpack("local-cache.tar.gz", tmp_path / "cache")
    with corpus_where_it_was() as corpus:
        embedder = CountingEmbedder()
        with index_over(embedder, cache) as index:
            report = index.sync(corpus)
            assert (report.embedded, report.unchanged, report.indexed, report.removed) == (0, 3, 0, 0)
            assert_same_corpus_and_answers(index, corpus)
        with index_over(embedder, cache) as again:  # a later process: the new snapshot and stat rows
            assert again.sync(corpus).unchanged == 3
            assert_same_corpus_and_answers(again, corpus)
        assert embedder.texts == 0


def test_local_cache_with_the_corpus_moved_embeds_nothing(tmp_path):
    """Paths differ (another checkout): files are hashed again, chunks and vectors come from the old cache."""
    cache = unpack("local-cache.tar.gz", tmp_path / "cache")
    corpus = corpus_copy(tmp_path / "moved")
    embedder = CountingEmbedder()
    with index_over(embedder, cache) as index:
        report = index.sync(corpus)
        assert (report.embedded, report.indexed) == (0, 3)
        assert_same_corpus_and_answers(index, corpus)
    assert embedder.texts == 0
    with index_over(CountingEmbedder("another-model"), cache) as other:  # the cache never mixes models
        assert other.sync(corpus).embedded == FACTS["chunks"]


def test_local_cache_restore_before_any_sync(tmp_path):
    """The previous release recorded no 'last committed corpus'; its only corpus is the one restored."""
    cache = unpack("local-cache.tar.gz", tmp_path / "cache")
    with corpus_where_it_was(), index_over(CountingEmbedder(), cache) as index:
        assert index.restore()
        assert_same_corpus_and_answers(index, CORPUS_PATH)


# ------------------------------------------------ the store="chroma" mirror
def mirror_records(cache: Path) -> dict[str, tuple[str, dict]]:
    """The old mirror collection as plain chromadb reads it: id -> (document, metadata)."""
    import chromadb
    from chromadb.config import Settings

    (name,) = FACTS["mirror_collections"]
    client = chromadb.PersistentClient(path=str(cache / "chroma"), settings=Settings(anonymized_telemetry=False))
    got = client.get_collection(name).get(include=["documents", "metadatas"])
    return {i: (d, m) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)}


def test_chroma_cache_upgraded_in_place_embeds_nothing_and_keeps_one_collection(tmp_path):
    """store="chroma" reuses the previous release's ``akasha-<hash>`` collection; a later delete reaches it."""
    cache = unpack("chroma-cache.tar.gz", tmp_path / "cache")
    with corpus_where_it_was() as corpus:
        embedder = CountingEmbedder()
        with index_over(embedder, cache, store="chroma") as index:
            report = index.sync(corpus)
            assert (report.embedded, report.unchanged) == (0, 3)
            assert_same_corpus_and_answers(index, corpus)
        records = mirror_records(cache)
        assert len(records) == FACTS["chunks"]
        assert {m["source"] for _d, m in records.values()} == set(FACTS["files"])  # portable: relative paths
        assert all(d and m["content_hash"] in FACTS["content_hashes"] for d, m in records.values())
        # the previous release's records are rewritten in the idiomatic form (document id, embedder)
        assert all(m["doc_id"] == m["source"] and m["embedder"] == FACTS["embedder"] for _d, m in records.values())
        (corpus / "notes" / "gamma.txt").unlink()
        with index_over(embedder, cache, store="chroma") as index:
            assert index.sync(corpus).removed == 1
        left = mirror_records(cache)
        assert {m["source"] for _d, m in left.values()} == {"alpha.txt", "beta.md"}
        assert embedder.texts == 0


def test_chroma_mirror_alone_gives_its_vectors_to_a_new_machine(tmp_path):
    """Only the old Chroma folder (no index.sqlite3): its records' vectors are reused by content hash."""
    from akasha.stores.chroma import ChromaStore

    folder = unpack("chroma-cache.tar.gz", tmp_path / "old") / "chroma"
    corpus = corpus_copy(tmp_path / "moved")
    (name,) = FACTS["mirror_collections"]
    store = ChromaStore(name, path=folder, create=False, embedder=FACTS["embedder"])
    embedder = CountingEmbedder()
    with index_over(embedder, ":memory:", vector_store=store) as index:
        assert index.sync(corpus).embedded == 0
        assert dict(index.files) == FACTS["files"]
        # The old records name the first machine's paths; they stay until that machine syncs again
        # (a machine only replaces records of its own paths), and every question still finds its file.
        for query, about in FACTS["queries"].items():
            for search_type in ("auto", "bm25"):
                top = index.search(query, k=1, search_type=search_type)[0]
                assert top.chunk.metadata["source"].endswith(about), (query, search_type)
    assert embedder.texts == 0


# ---------------------------------------------------------- Chroma server
@pytest.fixture
def legacy_chroma_server(tmp_path):
    """``chroma run`` on a copy of the previous release's server data folder."""
    server = ChromaServer(unpack("chroma-server.tar.gz", tmp_path / "server" / "data")).start()
    yield server
    server.stop()


@pytest.mark.integration
def test_chroma_server_layout_gives_its_vectors_to_the_new_collection(legacy_chroma_server, tmp_path):
    """The old ``<c>-v-<model hash>`` vectors fill the new ``<c>`` collection: nothing embedded, plain records."""
    import chromadb

    url = legacy_chroma_server.url(FACTS["chroma_collection"])
    corpus = corpus_copy(tmp_path / "moved")
    embedder = CountingEmbedder()
    with index_over(embedder, tmp_path / "cache", vector_store=url) as index:
        assert index.sync(corpus).embedded == 0
        assert_same_corpus_and_answers(index, corpus)
    client = chromadb.HttpClient(host="127.0.0.1", port=legacy_chroma_server.port)
    got = client.get_collection(FACTS["chroma_collection"]).get(include=["documents", "metadatas", "embeddings"])
    assert len(got["ids"]) == FACTS["chunks"]
    for document, meta, vector in zip(got["documents"], got["metadatas"], got["embeddings"], strict=True):
        assert document and meta["source"] in FACTS["files"] and meta["embedder"] == FACTS["embedder"]
        assert meta["content_hash"] in FACTS["content_hashes"] and len(vector) == FACTS["dimension"]
    with index_over(embedder, tmp_path / "second-machine", vector_store=url) as second:
        assert second.sync(corpus).embedded == 0
        assert_same_corpus_and_answers(second, corpus)
    assert embedder.texts == 0


@pytest.mark.integration
def test_chroma_server_layout_vectors_are_found_by_content_hash(legacy_chroma_server, tmp_path):
    from akasha.stores.urls import open_store

    store = open_store(legacy_chroma_server.url(FACTS["chroma_collection"]))
    assert_vectors_for_finds_the_old_vectors(store, tmp_path)
    store.close()


# --------------------------------------------------------------- PostgreSQL
@pytest.fixture
def legacy_database(pg_server):  # noqa: F811
    """A fresh database holding the previous release's tables; yields its vector_store URL."""
    import psycopg

    name = f"legacy_{uuid.uuid4().hex[:8]}"
    admin = pg_server.dsn().split("?")[0]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    base = f"postgresql://postgres:{PG_PASSWORD}@127.0.0.1:{pg_server.port}/{name}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute((FIXTURES / "pgvector.sql").read_text(encoding="utf-8"))
    yield base, f"{base}?table={FACTS['pg_table']}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.mark.integration
def test_postgres_layout_gives_its_vectors_to_the_new_table(legacy_database, tmp_path):
    """The old ``<t>_vec_<h>`` rows fill the new ``<t>`` table: nothing embedded; SQL reads text and source."""
    import psycopg

    base, url = legacy_database
    corpus = corpus_copy(tmp_path / "moved")
    embedder = CountingEmbedder()
    with index_over(embedder, tmp_path / "cache", vector_store=url) as index:
        assert index.sync(corpus).embedded == 0
        assert_same_corpus_and_answers(index, corpus)
    table = FACTS["pg_table"]
    with psycopg.connect(base) as conn:
        rows = conn.execute(f"SELECT text, source, page, chunk_index, content_hash, embedder, metadata, "
                            f"vector_dims(embedding) FROM {table}").fetchall()
    assert len(rows) == FACTS["chunks"]
    for text, source, _page, chunk_index, content_hash, embedder_name, metadata, width in rows:
        assert text and source in FACTS["files"] and isinstance(chunk_index, int)  # portable: relative paths
        assert content_hash in FACTS["content_hashes"] and embedder_name == FACTS["embedder"]
        assert metadata["source"] == source and width == FACTS["dimension"]
    with index_over(embedder, tmp_path / "second-machine", vector_store=url) as second:
        assert second.sync(corpus).embedded == 0
        assert_same_corpus_and_answers(second, corpus)
    assert embedder.texts == 0


@pytest.mark.integration
def test_postgres_layout_vectors_are_found_by_content_hash(legacy_database, tmp_path):
    from akasha.stores.urls import open_store

    store = open_store(legacy_database[1])
    assert_vectors_for_finds_the_old_vectors(store, tmp_path)
    store.close()
