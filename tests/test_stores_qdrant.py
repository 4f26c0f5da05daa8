"""Qdrant as its own ecosystem sees it (in-process: ``:memory:`` and a folder)."""

from __future__ import annotations

import hashlib
import uuid

import numpy as np
import pytest

from akasha.errors import ConfigError, IndexMismatchError
from akasha.stores.qdrant import QdrantStore, point_id
from akasha.types import Chunk

DIM = 4
EMBEDDER = "st:all-MiniLM-L6-v2@local"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def rec(doc: str, n: int, text: str) -> Chunk:
    return Chunk(f"{doc}#{n}", text, {"source": f"/data/{doc}.md", "page": 1, "chunk_index": n,
                                      "content_hash": sha(text), "embedder": EMBEDDER, "doc_id": doc,
                                      "text": "user metadata named text"})


def test_points_carry_text_and_flat_metadata(tmp_path):
    store = QdrantStore(collection="docs", url=None, path=tmp_path / "q")
    store.upsert([rec("a", 0, "alpha")], np.array([[2, 0, 0, 0]], dtype=np.float32))
    (point,) = store.client.retrieve("docs", ids=[point_id("a#0")], with_payload=True, with_vectors=True)
    assert point_id("a#0") == str(uuid.uuid5(uuid.NAMESPACE_URL, "a#0"))
    payload = point.payload
    assert payload["chunk_id"] == "a#0" and payload["text"] == "alpha"
    assert payload["source"] == "/data/a.md" and payload["content_hash"] == sha("alpha")
    assert payload["embedder"] == EMBEDDER and payload["doc_id"] == "a" and payload["chunk_index"] == 0
    np.testing.assert_allclose(point.vector[""], [1, 0, 0, 0], atol=1e-6)  # the default vector, beside ...
    assert point.vector["akasha-lexical"].indices  # ... the text's sparse BM25-style term weights
    info = store.client.get_collection("docs")
    assert str(info.config.params.vectors.distance).lower().endswith("cosine")
    # a user key that collides with the payload's own names survives the round trip
    assert store.fetch(["a#0"])[0].metadata["text"] == "user metadata named text"
    store.close()
    again = QdrantStore(collection="docs", url=None, path=tmp_path / "q", embedder=EMBEDDER)
    assert again.count() == 1 and again.dimension == DIM and again.embedder == EMBEDDER
    with pytest.raises(IndexMismatchError, match="holds vectors of"):
        QdrantStore(collection="docs", url=None, client=again.client, embedder="other-model")
    with pytest.raises(IndexMismatchError, match="4-dimensional"):
        QdrantStore(384, collection="docs", url=None, client=again.client)
    again.close()


def test_points_written_like_langchain_in_euclid_distance_are_read_by_cosine():
    from qdrant_client import QdrantClient, models

    client = QdrantClient(location=":memory:")
    client.create_collection("lc", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.EUCLID))
    vectors = {"near": [1.0, 0.9, 0, 0], "aligned": [5.0, 0.5, 0, 0], "away": [0.0, 1.0, 0, 0]}
    ids = {name: str(uuid.uuid4()) for name in vectors}
    client.upsert("lc", points=[
        models.PointStruct(id=ids[name], vector=vec, payload={"page_content": f"text {name}",
                                                              "metadata": {"source": f"{name}.md"}})
        for name, vec in vectors.items()], wait=True)
    store = QdrantStore(collection="lc", url=None, client=client)
    hits = store.nearest(np.array([1, 0, 0, 0]), 2)
    assert [c.text for c, _ in hits] == ["text aligned", "text near"]  # cosine order, not euclidean order
    assert hits[0][1] == pytest.approx(5 / np.linalg.norm([5, 0.5]), abs=1e-5)
    assert hits[0][0].id == ids["aligned"] and hits[0][0].metadata == {"source": "aligned.md"}
    assert [c.text for c in store.fetch([ids["away"]])] == ["text away"]
    assert store.count() == 3


def test_several_named_vectors_are_refused():
    from qdrant_client import QdrantClient, models

    client = QdrantClient(location=":memory:")
    client.create_collection("multi", vectors_config={
        "dense": models.VectorParams(size=DIM, distance=models.Distance.COSINE),
        "title": models.VectorParams(size=DIM, distance=models.Distance.COSINE)})
    with pytest.raises(ConfigError, match="several named vectors"):
        QdrantStore(collection="multi", url=None, client=client)


def test_single_named_vector_collection_is_used():
    from qdrant_client import QdrantClient, models

    client = QdrantClient(location=":memory:")
    client.create_collection("named", vectors_config={"dense": models.VectorParams(size=DIM,
                                                                                   distance=models.Distance.COSINE)})
    store = QdrantStore(collection="named", url=None, client=client)
    store.upsert([rec("a", 0, "alpha"), rec("b", 0, "beta")], np.array([[1, 0, 0, 0], [0, 1, 0, 0]]))
    assert store.nearest(np.array([0, 1, 0, 0]), 1)[0][0].id == "b#0"
    assert set(store.vectors_for([sha("alpha")], EMBEDDER)) == {sha("alpha")}
    assert sum(len(part) for part, _ in store.scan()) == 2


def test_yaml_factory_does_not_contact_a_server_at_build():
    from akasha.stores.qdrant import make_qdrant_store

    class Context:
        dimension = DIM

    store = make_qdrant_store({"url": "http://127.0.0.1:9", "collection": "never"}, Context())
    assert store._client is None  # nothing listens on port 9; building must not try


def test_server_path_of_vectors_for_matches_the_in_process_path():
    """On a server vectors_for filters by payload (MatchAny on content_hash); in-process it scans once. Same answer."""
    store = QdrantStore(collection="paths", url=":memory:")
    chunks = [rec("d", i, f"text {i}") for i in range(30)]
    store.upsert(chunks, np.random.default_rng(1).normal(size=(30, DIM)))
    wanted = [c.metadata["content_hash"] for c in chunks[::3]] + [sha("absent")]
    local = store.vectors_for(wanted, EMBEDDER)
    store._server = True  # the same client, through the server code path
    remote = store.vectors_for(wanted, EMBEDDER)
    assert set(local) == set(remote) == set(wanted[:-1])
    for key in local:
        np.testing.assert_allclose(local[key], remote[key], atol=1e-6)
    assert store.vectors_for(wanted, "other") == {}
