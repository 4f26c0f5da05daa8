"""Chroma server specifics: token auth (behind a token-checking proxy) and what lives where."""

from __future__ import annotations

import time

import numpy as np
import pytest
from servers_fixtures import ChromaAuthProxy, chroma_server  # noqa: F401

from akasha.index.backends import Retry, ServerAuthError
from akasha.index.servers import open_backend

pytestmark = pytest.mark.integration


@pytest.fixture
def proxy(chroma_server):  # noqa: F811
    proxy = ChromaAuthProxy(chroma_server.port, "team-token-123")
    yield proxy
    proxy.close()


def test_token_from_option_url_or_environment(proxy, monkeypatch):
    monkeypatch.delenv("CHROMA_AUTH_TOKEN", raising=False)
    a = open_backend(proxy.url("authdocs"), token="team-token-123")
    a.store_corpus("src", "ns", "state-1", {"/a.txt": "h1"}, None)
    url_token = proxy.url("authdocs").replace("chroma://", "chroma://:team-token-123@")
    assert open_backend(url_token + "?header=x-chroma-token").corpus("src", "ns")[0] == "state-1"
    monkeypatch.setenv("CHROMA_AUTH_TOKEN", "team-token-123")
    assert open_backend(proxy.url("authdocs")).corpus("src", "ns")[0] == "state-1"


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_refused_token_is_a_clear_error_without_retries(proxy, monkeypatch, token):
    monkeypatch.delenv("CHROMA_AUTH_TOKEN", raising=False)
    started = time.perf_counter()
    with pytest.raises(ServerAuthError) as info:
        open_backend(proxy.url("authdocs"), token=token, retry=Retry(attempts=5, base=1.0))
    assert time.perf_counter() - started < 5  # no backoff for a refused login
    message = str(info.value)
    assert f"127.0.0.1:{proxy.port}/authdocs" in message and "CHROMA_AUTH_TOKEN" in message
    assert "wrong-token" not in message


def test_layout_manifest_and_per_model_cosine_collection(chroma_server):  # noqa: F811
    import chromadb

    backend = open_backend(chroma_server.url("layout-docs"))
    backend.store_parsed("f" * 64, "recursive-v1:100:0", [(0, "t1", "first text", {"page": 2})])
    vectors = np.eye(3, 8, dtype=np.float32)
    backend.store_vectors("hf:mini", ["t1", "t2", "t3"], vectors)
    backend.store_vectors("hf:mini", ["t1"], vectors[:1])  # idempotent upsert
    client = chromadb.HttpClient(host="127.0.0.1", port=chroma_server.port)
    names = {c if isinstance(c, str) else c.name for c in client.list_collections()}
    vec_names = [n for n in names if n.startswith("layout-docs-v-")]
    assert "layout-docs-manifest" in names and len(vec_names) == 1
    collection = client.get_collection(vec_names[0])
    assert collection.count() == 3
    assert collection.metadata["hnsw:space"] == "cosine" and collection.metadata["embedding_model"] == "hf:mini"
    manifest = client.get_collection("layout-docs-manifest")
    assert manifest.count() == 0  # parsed files are buffered until a read, a commit or close()
    assert backend.load_chunks("f" * 64, "recursive-v1:100:0") == [(0, "t1", "first text", {"page": 2})]
    record = manifest.get(where={"kind": "parsed"}, include=["documents", "metadatas"])
    assert "first text" in record["documents"][0] and record["metadatas"][0]["n_chunks"] == 1
    assert [h for h, _ in backend.knn("hf:mini", vectors[1], 2)][0] == "t2"


def test_long_files_span_several_records(chroma_server):  # noqa: F811
    backend = open_backend(chroma_server.url("long-docs"))
    chunks = [(i, f"t{i}", f"chunk number {i}", {"chunk_index": i}) for i in range(1203)]
    backend.store_parsed("e" * 64, "s", chunks)
    backend.store_parsed("d" * 64, "s", [], "skipped", "no text")
    assert backend.parsed_status("s") == {"e" * 64: ("ok", None), "d" * 64: ("skipped", "no text")}
    assert backend.load_chunks("e" * 64, "s") == chunks
