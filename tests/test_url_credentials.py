"""Credentials written into an endpoint URL are sent as the header the provider expects, and never shown (issue 33).

Local servers record each request's headers; every log record (httpx's own included, at
DEBUG) and every message is checked for the password.
"""

from __future__ import annotations

import base64
import logging

import pytest

from akasha.providers.credentials import split_credentials, with_credentials
from tests.spec_fixtures import json_server

SECRET = "s3cr3t-pw"


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_split_takes_the_user_info_out():
    assert split_credentials(f"http://bob:{SECRET}@gpu:8080/v1") == ("http://gpu:8080/v1", ("bob", SECRET))
    assert split_credentials("http://gpu:8080/v1") == ("http://gpu:8080/v1", None)
    assert split_credentials("http://a%40b:p%2Fw@h/x") == ("http://h/x", ("a@b", "p/w"))
    assert with_credentials({"Authorization": "Bearer k"}, ("u", "p")) == {
        "Authorization": "Bearer k", "Proxy-Authorization": basic("u", "p")}


@pytest.fixture
def logs(caplog):
    caplog.set_level(logging.DEBUG)
    return caplog


def no_secret_anywhere(logs, *texts: str) -> None:
    shown = [r.getMessage() for r in logs.records] + list(texts)
    assert not [t for t in shown if SECRET in t]


def test_hf_endpoint_credentials_become_basic_auth(logs):
    pytest.importorskip("httpx")
    from akasha.embeddings.hf_api import HFInferenceEmbedder

    with json_server(lambda path, body, headers: (200, [[1.0, 0.0]] * len(body["inputs"]))) as (url, requests):
        embedder = HFInferenceEmbedder("m", endpoint=url.replace("http://", f"http://tei:{SECRET}@"))
        embedder.embed_documents(["a", "b"])
    assert requests[0][2]["authorization"] == basic("tei", SECRET)
    no_secret_anywhere(logs, embedder.url, repr(embedder), embedder.name)


def test_cohere_keeps_its_bearer_key_beside_the_urls_credentials(logs):
    pytest.importorskip("httpx")
    from akasha.rerank.cohere import CohereReranker
    from akasha.types import Chunk, Hit

    def answer(path, body, headers):
        return 200, {"results": [{"index": i, "relevance_score": 1.0 - i / 10} for i in range(len(body["documents"]))]}

    with json_server(answer) as (url, requests):
        reranker = CohereReranker("co-key", endpoint=url.replace("http://", f"http://gw:{SECRET}@"))
        reranker.rank("q", [Hit(Chunk("a#0", "x", {}), 1.0), Hit(Chunk("b#0", "y", {}), 0.5)])
    headers = requests[0][2]
    assert headers["authorization"] == "Bearer co-key" and headers["proxy-authorization"] == basic("gw", SECRET)
    no_secret_anywhere(logs, reranker.url)


def test_an_ollama_address_with_credentials_sends_them(logs):
    pytest.importorskip("httpx")
    from akasha.embeddings import resolve_embedder

    with json_server(lambda path, body, headers: (200, {"embeddings": [[0.5, 0.5]] * len(body["input"])})) as (
            url, requests):
        embedder = resolve_embedder("ollama:nomic-embed-text", host=url.replace("http://", f"http://me:{SECRET}@"))
        embedder.embed_documents(["pump"])
    assert requests[0][2]["authorization"] == basic("me", SECRET)
    no_secret_anywhere(logs, embedder.name)


def test_an_openai_compatible_server_gets_the_credentials_and_no_log_shows_them(logs):
    pytest.importorskip("openai")
    from akasha.embeddings import resolve_embedder

    def answer(path, body, headers):
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return 200, {"object": "list", "model": "m", "data": [
            {"object": "embedding", "index": i, "embedding": [0.1, 0.2]} for i in range(len(texts))]}

    with json_server(answer) as (url, requests):
        embedder = resolve_embedder("openai:m", base_url=url.replace("http://", f"http://me:{SECRET}@") + "/v1")
        embedder.embed_documents(["pump"])
    assert requests[0][2]["authorization"] == basic("me", SECRET)
    no_secret_anywhere(logs, embedder.name)


def test_the_environments_cohere_key_goes_to_cohere_only(monkeypatch):
    """A YAML pipeline naming its own cohere endpoint does not receive CO_API_KEY unless the spec names a key."""
    pytest.importorskip("httpx")
    from akasha.errors import MissingAPIKeyError
    from akasha.rerank.cohere import make_cohere_reranker

    monkeypatch.setenv("CO_API_KEY", "env-key")
    assert make_cohere_reranker({})._api_key == "env-key"  # Cohere's own endpoint
    with pytest.raises(MissingAPIKeyError, match="another host") as caught:
        make_cohere_reranker({"endpoint": f"https://proxy:{SECRET}@rerank.internal:8080"})
    assert SECRET not in str(caught.value)
    assert make_cohere_reranker({"endpoint": "https://rerank.internal:8080", "api_key": "mine"})._api_key == "mine"
