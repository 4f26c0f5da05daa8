"""ollama:<model> chat + embeddings over Ollama's native HTTP API (httpx) against a loopback server."""

from __future__ import annotations

import asyncio
import logging
import time

import numpy as np
import pytest

from servers.base import fake_vector, serve
from servers.ollama_server import OllamaApp

from akasha.embeddings import resolve_embedder
from akasha.errors import ProviderError, StreamInterruptedError
from akasha.llm import resolve_chat_model
from akasha.llm.base import GenerationOptions
from akasha.providers.ollama_conn import normalize_host

KEY = "sk-test-SECRET-123"
FAST = {"retry_initial_delay": 0.001, "retry_max_delay": 0.01, "retry_jitter": 0.1}
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello"}]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)


@pytest.fixture
def server():
    with serve(OllamaApp()) as srv:
        yield srv


def chat(server, **options):
    return resolve_chat_model("ollama:llama3.2", host=server.url, **FAST, **options)


def embedder(server, **options):
    return resolve_embedder("ollama:nomic-embed-text", host=server.url, **FAST, **options)


@pytest.mark.parametrize("raw, expected", [
    (None, "http://localhost:11434"),
    ("0.0.0.0", "http://127.0.0.1:11434"),
    ("myhost:8080", "http://myhost:8080"),
    ("http://example.org:9000/", "http://example.org:9000"),
    ("https://proxy.example/ollama", "https://proxy.example:443/ollama"),
])
def test_host_normalisation(raw, expected):
    assert normalize_host(raw) == expected


def test_default_host_and_env_override(monkeypatch, server):
    model = resolve_chat_model("ollama:llama3.2", **FAST)
    assert model.connection.base_url == "http://localhost:11434"
    monkeypatch.setenv("OLLAMA_HOST", server.url.removeprefix("http://"))
    assert model.generate(MESSAGES) == "Hello from the loopback server."


def test_generate_sends_native_chat_request(server):
    answer = chat(server, model_options={"num_ctx": 4096}).generate(
        MESSAGES, GenerationOptions(max_output_tokens=20, temperature=0.4))
    assert answer == "Hello from the loopback server."
    body = server.app.requests[-1].body
    assert server.app.requests[-1].path == "/api/chat"
    assert body["stream"] is False and body["messages"] == MESSAGES
    assert body["options"] == {"num_ctx": 4096, "temperature": 0.4, "num_predict": 20}


def test_stream_ndjson(server):
    server.app.chat_reply = "one two three"
    assert list(chat(server).stream(MESSAGES)) == ["one ", "two ", "three"]
    assert server.app.requests[-1].body["stream"] is True
    assert chat(server).generate(MESSAGES, None) == "one two three"  # options may be None


def test_unknown_model_fails_at_once_with_ollama_message(server):
    model = resolve_chat_model("ollama:no-such-model", host=server.url, **FAST)
    with pytest.raises(ProviderError) as info:
        model.generate(MESSAGES)
    assert info.value.status == 404 and 'model "no-such-model" not found' in str(info.value)
    assert server.app.request_count("/api/chat") == 1
    with pytest.raises(ProviderError) as info2:
        list(model.stream(MESSAGES))
    assert info2.value.status == 404 and not isinstance(info2.value, StreamInterruptedError)


def test_retries_429_5xx_and_honours_retry_after(server):
    server.app.fail_next(503, "server busy", retry_after="1")
    server.app.fail_next(429, "too many requests")
    start = time.perf_counter()
    assert chat(server, max_retries=2).generate(MESSAGES) == "Hello from the loopback server."
    assert time.perf_counter() - start >= 0.95
    assert server.app.request_count("/api/chat") == 3


def test_retries_bounded(server):
    server.app.fail_next(500, "llama runner process has terminated", times=3)
    with pytest.raises(ProviderError) as info:
        chat(server, max_retries=1).generate(MESSAGES)
    assert info.value.status == 500 and "llama runner process has terminated" in str(info.value)
    assert server.app.request_count("/api/chat") == 2


def test_connection_refused_is_reported():
    model = resolve_chat_model("ollama:llama3.2", host="http://127.0.0.1:9", max_retries=1, **FAST)
    with pytest.raises(ProviderError) as info:
        model.generate(MESSAGES)
    assert "connection error" in str(info.value) and "2 attempts" in str(info.value)


def test_timeout(server):
    server.app.delay_next(3.0)
    with pytest.raises(ProviderError) as info:  # the client gave up; it did not wait the 3 s
        chat(server, timeout=0.2, max_retries=0).generate(MESSAGES)
    assert "timed out after 0.2 s" in str(info.value)


def test_stream_broken_part_way(server):
    server.app.chat_reply = "alpha beta gamma"
    server.app.break_stream_after = 2
    got = []
    with pytest.raises(StreamInterruptedError) as info:
        for piece in chat(server).stream(MESSAGES):
            got.append(piece)
    assert got == ["alpha ", "beta "] and info.value.partial == "alpha beta "


def test_stream_without_done_and_error_line(server):
    server.app.chat_reply = "alpha beta"
    server.app.omit_stream_end = True
    with pytest.raises(StreamInterruptedError) as info:
        list(chat(server).stream(MESSAGES))
    assert info.value.partial == "alpha beta"
    server.app.omit_stream_end = False
    server.app.error_event_after = 1
    with pytest.raises(StreamInterruptedError) as info:
        list(chat(server).stream(MESSAGES))
    assert info.value.partial == "alpha " and "error was encountered" in str(info.value)


def test_embeddings_batched_configurably(server):
    texts = [f"chunk {i}" for i in range(10)]
    vectors = embedder(server, batch_size=4).embed_documents(texts)
    assert vectors.shape == (10, 8) and vectors.dtype == np.float32
    sizes = [len(r.body["input"]) for r in server.app.requests if r.path == "/api/embed"]
    assert sizes == [4, 4, 2]
    expected = np.asarray(fake_vector("chunk 7"), dtype=np.float32)
    np.testing.assert_allclose(vectors[7], expected / np.linalg.norm(expected), rtol=1e-5)
    assert embedder(server).embed_query("chunk 7").shape == (8,)


def test_embedding_batch_failure_raises(server):
    server.app.fail_next(503, "busy", times=2, paths=("/api/embed",))
    with pytest.raises(ProviderError):
        embedder(server, batch_size=4, max_retries=1).embed_documents(["a", "b"])


def test_bearer_key_redacted(caplog):
    caplog.set_level(logging.DEBUG)
    wrong = "sk-test-SECRET-WRONG-999"
    with serve(OllamaApp(api_key=KEY)) as srv:
        model = resolve_chat_model("ollama:llama3.2", host=srv.url, api_key=KEY, **FAST)
        assert model.generate(MESSAGES) == "Hello from the loopback server."
        assert srv.app.requests[-1].headers["authorization"] == f"Bearer {KEY}"
        bad = resolve_chat_model("ollama:llama3.2", host=srv.url, api_key=wrong, **FAST)
        with pytest.raises(ProviderError) as info:
            bad.generate(MESSAGES)
        assert info.value.status == 401
        srv.app.fail_next(503, f"echo {KEY}", times=4)
        with pytest.raises(ProviderError) as info2:
            model.generate(MESSAGES)
    for text in (caplog.text, repr(model), str(info.value), str(info2.value)):
        assert KEY not in text and wrong not in text


def test_async_paths(server):
    server.app.chat_reply = "async ollama"
    model, emb = chat(server), embedder(server)

    async def main():
        server.app.fail_next(429, "busy", retry_after="0")
        whole = await model.agenerate(MESSAGES, GenerationOptions())
        pieces = [p async for p in model.astream(MESSAGES, GenerationOptions())]
        vectors = await emb.aembed_documents(["x", "y", "z"])
        server.app.break_stream_after = 1
        got = []
        with pytest.raises(StreamInterruptedError) as info:
            async for p in model.astream(MESSAGES, GenerationOptions()):
                got.append(p)
        return whole, pieces, vectors, got, info.value

    whole, pieces, vectors, got, err = asyncio.run(main())
    assert whole == "async ollama" and pieces == ["async ", "ollama"]
    assert vectors.shape == (3, 8)
    assert got == ["async "] and err.partial == "async "
