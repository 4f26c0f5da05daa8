"""An embedder's identity (the key of the vector cache) is what its vectors are.

Two loopback servers answer for the same model name with different vectors (the second
reverses each vector, as a server with another pooling would differ): pointing the same
model string at the second one must embed again. The same model with the same vectors
behind another port or host reuses every vector and embeds only the probe texts
(akasha.embeddings.identity); a different function under the same name never reuses any.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("openai")

from servers.base import Reply, Request, serve  # noqa: E402
from servers.ollama_server import OllamaApp  # noqa: E402
from servers.openai_server import OpenAIApp  # noqa: E402

import akasha  # noqa: E402
from akasha.embeddings import resolve_embedder  # noqa: E402
from akasha.embeddings.hf_api import HFInferenceEmbedder  # noqa: E402
from akasha.embeddings.wrappers import CallableEmbedder, ObjectEmbedder  # noqa: E402
from akasha.index import CorpusIndex  # noqa: E402

ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "GEMINI_API_KEY",
       "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "OLLAMA_HOST", "OLLAMA_API_KEY")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ENV:
        monkeypatch.delenv(var, raising=False)


class ReversedOpenAIApp(OpenAIApp):
    """Same model name, other vectors (each reversed)."""

    def embeddings(self, request: Request) -> Reply:
        reply = super().embeddings(request)
        for item in reply.json.get("data", []):
            item["embedding"] = item["embedding"][::-1]
        return reply


class ReversedOllamaApp(OllamaApp):
    def embed(self, body: dict) -> Reply:
        reply = super().embed(body)
        reply.json["embeddings"] = [v[::-1] for v in reply.json.get("embeddings", [])]
        return reply


@pytest.fixture
def docs(tmp_path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i, topic in enumerate(["astronomy", "botany", "cooking"]):
        (folder / f"{topic}.txt").write_text(f"Notes on {topic}. " * 20 + f"File {i}.", encoding="utf-8")
    return folder


def sync(embedder: Any, docs: Path, cache: Path):
    return CorpusIndex(embedder, chunk_size=200, chunk_overlap=0, cache_dir=cache).sync(docs)


def test_openai_model_pointed_at_a_second_server_embeds_again(docs, tmp_path):
    cache = tmp_path / "cache"
    with serve(OpenAIApp()) as first, serve(ReversedOpenAIApp()) as second:
        a = resolve_embedder("openai:nomic-embed", base_url=first.url + "/v1")
        b = resolve_embedder("openai:nomic-embed", base_url=second.url + "/v1")
        assert a.name == f"openai:nomic-embed@{first.url}/v1" and a.name != b.name
        report = sync(a, docs, cache)
        assert report.embedded > 0
        # the same server again: every vector comes from the cache
        assert sync(resolve_embedder("openai:nomic-embed", base_url=first.url + "/v1/"), docs, cache).embedded == 0
        # the second server: everything is embedded again, by that server
        again = sync(b, docs, cache)
        assert again.embedded == report.embedded
        assert second.app.request_count("/embeddings") > 0
        # and its vectors are the ones stored: a chunk's own vector from the second server scores 1
        index = CorpusIndex(b, chunk_size=200, chunk_overlap=0, cache_dir=cache)
        index.sync(docs)
        chunk = index.chunks[0]
        from_second = b.embed_documents([chunk.text])[0]
        from_first = a.embed_documents([chunk.text])[0]
        assert float(np.dot(from_second, from_first)) < 0.99
        top, score = index.vector_search(from_second, k=1)[0]
        assert top.text == chunk.text and score > 0.999


def test_openai_base_url_from_the_environment_is_part_of_the_name(docs, tmp_path, monkeypatch):
    """The facade's model string reads OPENAI_BASE_URL; a second server re-embeds, the first is reused."""
    cache = tmp_path / "cache"
    with serve(OpenAIApp()) as first, serve(ReversedOpenAIApp()) as second:
        monkeypatch.setenv("OPENAI_BASE_URL", first.url + "/v1")
        rag = akasha.RAG(embeddings="openai:nomic-embed", model="extractive", cache_dir=str(cache))
        assert rag.index(str(docs)).embedded > 0
        monkeypatch.setenv("OPENAI_BASE_URL", second.url + "/v1")
        rag2 = akasha.RAG(embeddings="openai:nomic-embed", model="extractive", cache_dir=str(cache))
        assert rag2.index(str(docs)).embedded > 0 and second.app.request_count("/embeddings") > 0
        monkeypatch.setenv("OPENAI_BASE_URL", first.url + "/v1")
        before = first.app.request_count("/embeddings")
        rag3 = akasha.RAG(embeddings="openai:nomic-embed", model="extractive", cache_dir=str(cache))
        # only the probe texts are embedded (one request) to know these are the first server's vectors
        assert rag3.index(str(docs)).embedded == 0 and first.app.request_count("/embeddings") == before + 1


def test_same_model_behind_another_port_embeds_only_the_probe_texts(docs, tmp_path):
    """A moved server (same model, same vectors, another port) reuses every cached vector."""
    from akasha.embeddings.identity import PROBE_TEXTS

    cache = tmp_path / "cache"
    with serve(OpenAIApp()) as first:
        report = sync(resolve_embedder("openai:nomic-embed", base_url=first.url + "/v1"), docs, cache)
        assert report.embedded > 0
    with serve(OpenAIApp()) as moved:
        embedder = resolve_embedder("openai:nomic-embed", base_url=moved.url + "/v1")
        again = sync(embedder, docs, cache)
        assert again.embedded == 0 and again.unchanged == 3
        texts = [t for r in moved.app.requests if "/embeddings" in r.path for t in r.body["input"]]
        assert sorted(texts) == sorted(PROBE_TEXTS)


def test_a_different_function_with_the_same_name_embeds_again(docs, tmp_path):
    """A callable embedder is known by its vectors, not its name: another function re-embeds everything."""
    cache = tmp_path / "cache"

    def embed(texts):  # noqa: ANN001
        return [[1.0, float(len(t)), 0.5] for t in texts]

    first = CallableEmbedder(embed)
    report = sync(first, docs, cache)
    assert report.embedded > 0
    assert sync(CallableEmbedder(embed), docs, cache).embedded == 0  # the same function: all reused

    def embed(texts):  # noqa: ANN001, F811 - the same name, other vectors
        return [[float(len(t)), -1.0, 0.25] for t in texts]

    other = CallableEmbedder(embed)
    assert other.name == first.name
    assert sync(other, docs, cache).embedded == report.embedded
    index = CorpusIndex(other, chunk_size=200, chunk_overlap=0, cache_dir=cache)
    index.sync(docs)
    chunk = index.chunks[0]
    top, score = index.vector_search(np.asarray(other.embed_documents([chunk.text])[0]), k=1)[0]
    assert score > 0.999


def test_ollama_host_is_part_of_the_name(docs, tmp_path):
    cache = tmp_path / "cache"
    with serve(OllamaApp()) as first, serve(ReversedOllamaApp()) as second:
        a = resolve_embedder("ollama:nomic-embed-text", host=first.url)
        b = resolve_embedder("ollama:nomic-embed-text", host=second.url)
        assert a.name == f"ollama:nomic-embed-text@{first.url}"
        report = sync(a, docs, cache)
        assert report.embedded > 0 and sync(b, docs, cache).embedded == report.embedded


def test_default_public_endpoints_keep_the_names_existing_caches_use(monkeypatch):
    assert resolve_embedder("openai:text-embedding-3-small").name == "openai:text-embedding-3-small"
    assert resolve_embedder("openai:text-embedding-3-small", base_url="https://api.openai.com/v1",
                            dimensions=256).name == "openai:text-embedding-3-small@256"
    assert resolve_embedder("gemini:gemini-embedding-001").name == "gemini:gemini-embedding-001"
    assert resolve_embedder("gemini:gemini-embedding-001",
                            base_url="https://generativelanguage.googleapis.com/").name == "gemini:gemini-embedding-001"
    assert resolve_embedder("ollama:nomic-embed-text").name == "ollama:nomic-embed-text"
    for host in ("127.0.0.1", "localhost:11434", "http://127.0.0.1:11434/", "0.0.0.0", "http://ollama:11434"):
        monkeypatch.setenv("OLLAMA_HOST", host)
        assert resolve_embedder("ollama:nomic-embed-text").name == "ollama:nomic-embed-text", host
    assert HFInferenceEmbedder("BAAI/bge-small-en-v1.5").name == "hf-api:BAAI/bge-small-en-v1.5"


def test_a_cache_written_under_the_plain_name_is_kept_when_its_vectors_are_reproduced(docs, tmp_path):
    """Vectors cached under a plain name (as every earlier release keyed them) stay in use when the
    embedder reproduces a few of them; an embedder that does not reproduces them embeds again."""
    import json

    from akasha.index.manifest import Manifest

    cache = tmp_path / "cache"
    with serve(OpenAIApp()) as server:
        embedder = resolve_embedder("openai:nomic-embed", base_url=server.url + "/v1")
        report = sync(embedder, docs, cache)
        # what an earlier release left: vectors under the plain name, no identity registry
        manifest = Manifest(str(cache / "index.sqlite3"))
        with manifest.transaction() as db:
            db.execute("UPDATE embeddings SET model = ?", (embedder.name,))
            db.execute("DELETE FROM meta WHERE key LIKE 'akasha-embedder-identities%' OR key LIKE 'identity-hint%'")
        manifest.close()
        assert sync(resolve_embedder("openai:nomic-embed", base_url=server.url + "/v1"), docs, cache).embedded == 0
    with serve(ReversedOpenAIApp()) as other:
        impostor = CallableEmbedder(lambda texts: resolve_embedder(
            "openai:nomic-embed", base_url=other.url + "/v1").embed_documents(texts), name=embedder.name)
        assert sync(impostor, docs, cache).embedded == report.embedded
    assert json.dumps(report.skipped_files) == "[]"


def test_names_carry_other_endpoints_without_credentials(monkeypatch):
    name = resolve_embedder("openai:m", base_url="http://user:pw@GPU-Box:8080/v1/?token=abc").name
    assert name == "openai:m@http://gpu-box:8080/v1"
    azure = resolve_embedder("openai:my-deployment", azure_endpoint="https://res.openai.azure.com/",
                             api_key="k-123").name
    assert azure == "openai:my-deployment@https://res.openai.azure.com"
    other = resolve_embedder("openai:my-deployment", azure_endpoint="https://other.openai.azure.com/",
                             api_key="k-123").name
    assert other != azure
    late = resolve_embedder("openai:m")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    assert late.name == "openai:m@http://127.0.0.1:8080/v1"  # read at use, like the requests
    assert resolve_embedder("gemini:g", base_url="http://127.0.0.1:9000").name == "gemini:g@http://127.0.0.1:9000"
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "https://proxy.example/gemini")
    assert resolve_embedder("gemini:g").name == "gemini:g@https://proxy.example/gemini"
    assert resolve_embedder("ollama:e", host="gpu:11434").name == "ollama:e@http://gpu:11434"
    assert HFInferenceEmbedder("m", endpoint="http://tei:8080").name == "hf-api:m@http://tei:8080/embed"


class CompatibleEmbeddings:
    """An embeddings object shaped like LangChain's OpenAIEmbeddings (``model``, ``openai_api_base``),
    talking to an OpenAI-compatible server over HTTP."""

    def __init__(self, model: str, openai_api_base: str, dimensions: int | None = None) -> None:
        self.model = model
        self.openai_api_base = openai_api_base
        self.dimensions = dimensions
        self.api_key = "sk-never-in-a-name"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        import httpx

        reply = httpx.post(self.openai_api_base + "/embeddings", json={"model": self.model, "input": texts})
        reply.raise_for_status()
        return [item["embedding"] for item in sorted(reply.json()["data"], key=lambda d: d["index"])]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def test_embedding_objects_are_named_by_their_endpoint_and_settings(docs, tmp_path):
    cache = tmp_path / "cache"
    with serve(OpenAIApp()) as first, serve(ReversedOpenAIApp()) as second:
        a = ObjectEmbedder(CompatibleEmbeddings("nomic-embed", first.url + "/v1"))
        b = ObjectEmbedder(CompatibleEmbeddings("nomic-embed", second.url + "/v1"))
        prefix = f"object:{__name__}.CompatibleEmbeddings:nomic-embed"
        assert a.name == f"{prefix}@{first.url}/v1"
        assert "sk-never" not in a.name
        report = sync(a, docs, cache)
        assert report.embedded > 0
        assert sync(ObjectEmbedder(CompatibleEmbeddings("nomic-embed", first.url + "/v1")), docs, cache).embedded == 0
        assert sync(b, docs, cache).embedded == report.embedded
    shortened = ObjectEmbedder(CompatibleEmbeddings("nomic-embed", "https://api.openai.com/v1", dimensions=256))
    assert shortened.name == f"{prefix};dimensions=256"


def test_langchain_embeddings_keep_their_names():
    fake = pytest.importorskip("langchain_core.embeddings")
    assert ObjectEmbedder(fake.DeterministicFakeEmbedding(size=8)).name == (
        "object:langchain_core.embeddings.fake.DeterministicFakeEmbedding")


class SentenceTransformerLike:
    """Shaped like LangChain's HuggingFaceEmbeddings: ``model_name``, ``model_kwargs``, ``encode_kwargs``."""

    def __init__(self, model_kwargs: dict, encode_kwargs: dict) -> None:
        self.model_name = "all-MiniLM-L6-v2"
        self.model_kwargs = model_kwargs
        self.encode_kwargs = encode_kwargs

    def embed_documents(self, texts):
        return [[1.0, 0.0]] * len(texts)

    def embed_query(self, text):
        return [1.0, 0.0]


def test_placement_settings_do_not_rename_but_vector_settings_do():
    plain = ObjectEmbedder(SentenceTransformerLike({}, {})).name
    assert plain == f"object:{__name__}.SentenceTransformerLike:all-MiniLM-L6-v2"
    assert ObjectEmbedder(SentenceTransformerLike({"device": "cuda"}, {"batch_size": 64})).name == plain
    normalized = ObjectEmbedder(SentenceTransformerLike({}, {"normalize_embeddings": True})).name
    assert normalized == plain + ';encode_kwargs={"normalize_embeddings": true}'
