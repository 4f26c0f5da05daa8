"""Chroma as its own ecosystem sees it: akasha's collections read by plain chromadb, and the other way round.

Folder tests run by default; the server variants (``chroma run``) are marked integration.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

import numpy as np
import pytest
from servers_fixtures import chroma_server  # noqa: F401

from akasha.errors import ConfigError, IndexMismatchError
from akasha.stores.chroma import ChromaStore, open_chroma_folder
from akasha.types import Chunk

DIM = 4
EMBEDDER = "st:all-MiniLM-L6-v2@local"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def rec(doc: str, n: int, text: str, vector_page: int = 1) -> Chunk:
    return Chunk(f"{doc}#{n}", text, {"source": f"/data/{doc}.pdf", "page": vector_page, "chunk_index": n,
                                      "content_hash": sha(text), "embedder": EMBEDDER, "doc_id": doc,
                                      "tags": ["x", "y"]})


def plain_client(path: Path):
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


def write_some(store: ChromaStore) -> None:
    store.upsert([rec("report", 0, "Revenue grew 12% in 2023."), rec("report", 1, "Costs fell.", 2)],
                 np.array([[1, 0, 0, 0], [0, 3, 0, 0]], dtype=np.float32))


# ------------------------------------------------------- akasha -> chromadb
def test_plain_chromadb_reads_akasha_collection(tmp_path):
    store = ChromaStore("team-docs", path=tmp_path / "db")
    write_some(store)
    collection = plain_client(tmp_path / "db").get_collection("team-docs")
    got = collection.get(ids=["report#0", "report#1"], include=["documents", "metadatas", "embeddings"])
    assert got["documents"] == ["Revenue grew 12% in 2023.", "Costs fell."]
    meta = got["metadatas"][0]
    assert meta["source"] == "/data/report.pdf" and meta["page"] == 1 and meta["chunk_index"] == 0
    assert meta["content_hash"] == sha("Revenue grew 12% in 2023.") and meta["embedder"] == EMBEDDER
    assert meta["doc_id"] == "report"
    assert json.loads(meta["akasha_json"]) == {"tags": ["x", "y"]}  # what Chroma cannot hold as a plain key
    np.testing.assert_allclose(got["embeddings"][1], [0, 1, 0, 0], atol=1e-6)  # stored unit length
    assert collection.configuration_json["hnsw"]["space"] == "cosine"
    assert collection.metadata["embedding_model"] == EMBEDDER and collection.metadata["embedding_dimension"] == DIM
    # Chroma's own query (cosine distance) finds the same best record akasha does
    found = collection.query(query_embeddings=[[0.9, 0.1, 0, 0]], n_results=1, where={"source": "/data/report.pdf"})
    assert found["ids"][0] == ["report#0"]
    assert [c.metadata["tags"] for c in store.fetch(["report#0"])] == [["x", "y"]]


@pytest.mark.integration
def test_plain_chromadb_reads_akasha_collection_on_a_server(chroma_server):  # noqa: F811
    import chromadb

    from akasha.stores.urls import open_store

    name = f"srv-{uuid.uuid4().hex[:8]}"
    store = open_store(chroma_server.url(name))
    write_some(store)
    store.save_state("k", {"files": {"a": "b"}})
    client = chromadb.HttpClient(host="127.0.0.1", port=chroma_server.port)
    got = client.get_collection(name).get(include=["documents", "metadatas"])
    assert sorted(got["documents"]) == ["Costs fell.", "Revenue grew 12% in 2023."]
    assert {m["source"] for m in got["metadatas"]} == {"/data/report.pdf"}
    # the state sits beside the collection, never inside it
    assert client.get_collection(name).count() == 2
    assert f"{name}-akasha-state" in [c.name for c in client.list_collections()]


# ------------------------------------------------------- chromadb -> akasha
def vectors_where_l2_and_cosine_disagree():
    # for the query [1, 0]: "near" is closer in l2, "aligned" points the same way (higher cosine)
    return {"near": [1.0, 0.9, 0, 0], "aligned": [5.0, 0.5, 0, 0], "away": [0.0, 1.0, 0, 0]}


def test_collection_made_by_plain_chromadb_in_l2_space(tmp_path):
    client = plain_client(tmp_path / "db")
    vectors = vectors_where_l2_and_cosine_disagree()
    collection = client.create_collection("plain", embedding_function=None)  # Chroma's default: l2
    collection.add(ids=list(vectors), embeddings=list(vectors.values()),
                   documents=[f"text {k}" for k in vectors], metadatas=[{"source": f"{k}.md"} for k in vectors])
    store = ChromaStore("plain", path=tmp_path / "db", create=False, embedder=EMBEDDER, dimension=DIM)
    assert store.count() == 3 and store.dimension == DIM and store.embedder is None
    hits = store.nearest(np.array([1, 0, 0, 0], dtype=np.float32), 2)
    assert [c.id for c, _ in hits] == ["aligned", "near"]  # cosine order, not l2 order
    want = 5 / np.linalg.norm([5, 0.5])
    assert hits[0][1] == pytest.approx(want, abs=1e-5)
    assert hits[0][0].text == "text aligned" and hits[0][0].metadata == {"source": "aligned.md"}
    assert store.nearest(np.array([1, 0, 0, 0]), 3, {"source": "away.md"})[0][0].id == "away"
    assert sorted(c.id for part, _ in store.scan() for c in part) == ["aligned", "away", "near"]
    assert store.ids_of_documents(["near"]) == ["near"]  # an id without '#' is its own document
    assert [c.text for c in store.fetch(["near"])] == ["text near"]
    assert [c.name for c in client.list_collections()] == ["plain"]  # no sibling collection


def test_collection_shaped_like_langchain(tmp_path):
    """LangChain's Chroma: uuid4 ids, documents = page_content, metadatas from its loaders (source, page)."""
    client = plain_client(tmp_path / "db")
    collection = client.get_or_create_collection("langchain", embedding_function=None,
                                                 metadata={"hnsw:space": "cosine"})
    ids = [str(uuid.uuid4()) for _ in range(3)]
    collection.upsert(ids=ids, embeddings=[[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]],
                      documents=["alpha", "beta", "gamma"],
                      metadatas=[{"source": "docs/a.pdf", "page": 0}, {"source": "docs/a.pdf", "page": 1},
                                 {"source": "docs/b.txt"}])
    store = ChromaStore("langchain", path=tmp_path / "db", create=False, create_collection=False, dimension=DIM)
    hits = store.nearest(np.array([0, 1, 0.1, 0]), 2)
    assert [c.text for c, _ in hits] == ["beta", "gamma"]
    assert hits[0][0].id == ids[1] and hits[0][0].metadata == {"source": "docs/a.pdf", "page": 1}
    assert {c.text for c, _ in store.nearest(np.array([1, 1, 1, 0]), 5, {"source": "docs/a.pdf"})} == {"alpha", "beta"}
    # akasha can add its own records beside them and remove them again
    store.upsert([rec("mine", 0, "delta")], np.array([[0, 0, 0, 1]], dtype=np.float32))
    assert store.count() == 4 and collection.count() == 4
    assert store.remove(["mine#0"]) == 1 and collection.count() == 3


def test_collection_of_another_embedder_or_width_raises_and_creates_nothing(tmp_path):
    first = ChromaStore("recorded", path=tmp_path / "db")
    write_some(first)
    with pytest.raises(IndexMismatchError) as info:
        ChromaStore("recorded", path=tmp_path / "db", embedder="openai:text-embedding-3-small")
    assert "'recorded'" in str(info.value) and EMBEDDER in str(info.value) and "another collection" in str(info.value)
    with pytest.raises(IndexMismatchError, match="4-dimensional"):
        ChromaStore("recorded", path=tmp_path / "db", embedder=EMBEDDER, dimension=384)
    # both differ: the message names the model (what to change), not only the width
    with pytest.raises(IndexMismatchError) as info:
        ChromaStore("recorded", path=tmp_path / "db", embedder="openai:text-embedding-3-small", dimension=1536)
    assert "'openai:text-embedding-3-small'" in str(info.value) and EMBEDDER in str(info.value)
    names = sorted(c.name for c in plain_client(tmp_path / "db").list_collections())
    assert names == ["recorded"]
    # and a write of another embedder into the opened collection is refused too
    other = rec("z", 0, "zzz")
    other.metadata["embedder"] = "other-model"
    with pytest.raises(IndexMismatchError):
        first.upsert([other], np.ones((1, DIM)))


def test_plain_collection_of_another_width_raises(tmp_path):
    client = plain_client(tmp_path / "db")
    client.create_collection("wide", embedding_function=None).add(ids=["a"], embeddings=[[1.0] * 16], documents=["a"])
    with pytest.raises(IndexMismatchError, match="16-dimensional"):
        ChromaStore("wide", path=tmp_path / "db", dimension=DIM)


def test_missing_collection_is_named_when_it_must_exist(tmp_path):
    ChromaStore("present", path=tmp_path / "db")
    with pytest.raises(ConfigError, match="'absent'.*present"):
        ChromaStore("absent", path=tmp_path / "db", create_collection=False)


# ------------------------------------------------------------ the folder
def test_documents_folder_is_never_made_a_chroma_folder(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("hello")
    before = sorted(p.name for p in docs.rglob("*"))
    with pytest.raises(ConfigError, match="not a Chroma folder"):
        open_chroma_folder(docs, create=False)
    with pytest.raises(ConfigError, match="chroma.sqlite3"):
        ChromaStore("docs", path=docs, create=False)
    assert sorted(p.name for p in docs.rglob("*")) == before
    with pytest.raises(ConfigError):
        open_chroma_folder(tmp_path / "missing", create=False)
    assert not (tmp_path / "missing").exists()


def test_existing_chroma_folder_opens_without_create(tmp_path):
    write_some(ChromaStore("kept", path=tmp_path / "db"))
    assert (tmp_path / "db" / "chroma.sqlite3").is_file()
    client = open_chroma_folder(tmp_path / "db", create=False)
    assert [c.name for c in client.list_collections()] == ["kept"]
    assert ChromaStore("kept", path=tmp_path / "db", create=False).count() == 2


# ------------------------------------------------------------ formats
def test_records_of_the_previous_yaml_store_are_read(tmp_path):
    """The previous release's YAML store kept the whole metadata as JSON under ``_akasha``."""
    client = plain_client(tmp_path / "db")
    collection = client.create_collection("astromesh", metadata={"hnsw:space": "cosine"}, embedding_function=None)
    collection.add(ids=["d#0"], embeddings=[[1, 0, 0, 0]], documents=["old"],
                   metadatas=[{"doc_id": "d", "topic": "x", "_akasha": json.dumps({"topic": "x", "deep": {"a": 1}})}])
    store = ChromaStore("astromesh", path=tmp_path / "db")
    assert store.fetch(["d#0"])[0].metadata == {"topic": "x", "deep": {"a": 1}}
    assert store.ids_of_documents(["d"]) == ["d#0"]


def test_large_state_is_split_and_replaced_whole(tmp_path):
    store = ChromaStore("big-state", path=tmp_path / "db")
    files = {f"/data/{i:07d}/a-long-file-name.txt": sha(str(i)) for i in range(30_000)}  # ~3 MB of JSON
    store.save_state("corpus", {"files": files})
    smaller = {"files": dict(list(files.items())[:20_000])}
    store.save_state("corpus", smaller)
    again = ChromaStore("big-state", path=tmp_path / "db")
    assert again.load_state("corpus") == smaller
    records = -(-len(json.dumps(smaller, ensure_ascii=False)) // 1_000_000)
    assert records >= 2
    states = plain_client(tmp_path / "db").get_collection("big-state-akasha-state")
    assert states.count() == records  # the head record and the parts of the current version; old parts are gone


@pytest.mark.integration
def test_token_auth_on_a_server_behind_a_token_proxy(chroma_server, monkeypatch):  # noqa: F811
    """Token from token=, from the URL (Bearer or X-Chroma-Token) or $CHROMA_AUTH_TOKEN; a refused one fails fast."""
    from servers_fixtures import ChromaAuthProxy
    from sleeps import record_sleeps

    from akasha.errors import ServerAuthError
    from akasha.retry import Retry
    from akasha.stores.urls import open_store

    proxy = ChromaAuthProxy(chroma_server.port, "team/token?1")
    try:
        monkeypatch.delenv("CHROMA_AUTH_TOKEN", raising=False)
        name = f"auth-{uuid.uuid4().hex[:8]}"
        write_some(open_store(proxy.url(name), token="team/token?1"))
        in_url = proxy.url(name).replace("chroma://", "chroma://:team/token?1@")
        assert open_store(in_url + "?header=x-chroma-token").count() == 2
        monkeypatch.setenv("CHROMA_AUTH_TOKEN", "team/token?1")
        assert open_store(proxy.url(name)).count() == 2
        monkeypatch.delenv("CHROMA_AUTH_TOKEN")
        slept = record_sleeps(monkeypatch)
        with pytest.raises(ServerAuthError) as info:
            open_store(proxy.url(name), token="wrong", retry=Retry(attempts=5, base=1.0))
        assert not [s for s in slept if s >= 1.0]  # no backoff (Retry's base is 1 s)
        assert "team/token" not in str(info.value)
    finally:
        proxy.close()


@pytest.mark.integration
@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_missing_or_refused_token_is_a_clear_error_without_retries(chroma_server, monkeypatch, token):  # noqa: F811
    """No token, or a wrong one: ServerAuthError at once (no backoff), naming the server and where a token goes."""
    from servers_fixtures import ChromaAuthProxy
    from sleeps import record_sleeps

    from akasha.errors import ServerAuthError
    from akasha.retry import Retry
    from akasha.stores.urls import open_store

    proxy = ChromaAuthProxy(chroma_server.port, "team-token-123")
    try:
        monkeypatch.delenv("CHROMA_AUTH_TOKEN", raising=False)
        slept = record_sleeps(monkeypatch)
        with pytest.raises(ServerAuthError) as info:
            open_store(proxy.url("authdocs"), token=token, retry=Retry(attempts=5, base=1.0))
        assert not [s for s in slept if s >= 1.0]  # no backoff (Retry's base is 1 s)
        message = str(info.value)
        assert f"127.0.0.1:{proxy.port}/authdocs" in message and "CHROMA_AUTH_TOKEN" in message
        assert "wrong-token" not in message and "team-token-123" not in message
    finally:
        proxy.close()


def test_collection_of_the_previous_facade_mirror_is_reused(tmp_path):
    """``store="chroma"`` of the previous release mirrored the corpus into ``akasha-<hash>`` collections whose
    metadata names the model; their records carry content_hash, so vectors_for reuses them."""
    client = plain_client(tmp_path / "chroma")
    collection = client.create_collection("akasha-0123456789abcdef", embedding_function=None, metadata={
        "hnsw:space": "cosine", "embedding_model": EMBEDDER, "akasha_format": 1, "chunk_size": 1000})
    collection.add(ids=["/docs/a.txt#0"], embeddings=[[0.0, 2.0, 0.0, 0.0]], documents=["alpha"],
                   metadatas=[{"source": "/docs/a.txt", "chunk_index": 0, "content_hash": sha("alpha")}])
    store = ChromaStore("akasha-0123456789abcdef", path=tmp_path / "chroma", create=False, embedder=EMBEDDER)
    assert store.embedder == EMBEDDER and store.dimension == DIM
    found = store.vectors_for([sha("alpha")], EMBEDDER)
    np.testing.assert_allclose(found[sha("alpha")], [0, 1, 0, 0], atol=1e-6)
    with pytest.raises(IndexMismatchError):
        ChromaStore("akasha-0123456789abcdef", path=tmp_path / "chroma", embedder="other-model")


def test_store_opened_for_one_embedder_refuses_another_from_the_first_write(tmp_path):
    store = ChromaStore("fresh", path=tmp_path / "db", embedder=EMBEDDER)
    other = rec("z", 0, "zzz")
    other.metadata["embedder"] = "other-model"
    with pytest.raises(IndexMismatchError):
        store.upsert([other], np.ones((1, DIM)))
    assert store.count() == 0
