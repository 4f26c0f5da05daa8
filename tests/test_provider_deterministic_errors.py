"""Deterministic provider errors fail at once; embedding timeouts grow with the batch.

Every provider (OpenAI, Gemini, Ollama) is driven through its real client library
against the suite's loopback servers, which answer in each provider's wire format.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("openai")
pytest.importorskip("google.genai")

from servers.base import LoopbackServer, serve  # noqa: E402
from servers.gemini_server import GeminiApp  # noqa: E402
from servers.ollama_server import OllamaApp  # noqa: E402
from servers.openai_server import OpenAIApp  # noqa: E402

from akasha.embeddings import resolve_embedder  # noqa: E402
from akasha.errors import ProviderError  # noqa: E402
from akasha.llm import resolve_chat_model  # noqa: E402
from akasha.retry import DEFAULT_TIMEOUT, is_retryable, scaled_timeout  # noqa: E402

KEY = "sk-test-SECRET-123"
FAST = {"retry_initial_delay": 0.001, "retry_max_delay": 0.01, "retry_jitter": 0.1}
MESSAGES = [{"role": "user", "content": "Say hello"}]
LLAMA_CPP_NO_EMBEDDINGS = "This server does not support embeddings. Start it with `--embeddings`"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT",
                "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "OLLAMA_HOST", "OLLAMA_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@dataclass
class Target:
    """One provider's loopback server and how to build its embedder and chat model against it."""

    provider: str
    server: LoopbackServer
    embedder: Callable[..., Any]
    chat: Callable[..., Any]
    embed_path: str


def _target(provider: str, server: LoopbackServer) -> Target:
    if provider == "openai":
        common = {"api_key": KEY, "base_url": server.url + "/v1", **FAST}
        return Target(provider, server,
                      lambda **o: resolve_embedder("openai:text-embedding-3-small", **common, **o),
                      lambda **o: resolve_chat_model("openai:gpt-test", **common, **o), "/embeddings")
    if provider == "gemini":
        common = {"api_key": KEY, "base_url": server.url, **FAST}
        return Target(provider, server,
                      lambda **o: resolve_embedder("gemini:gemini-embedding-001", **common, **o),
                      lambda **o: resolve_chat_model("gemini:gemini-2.5-flash", **common, **o), "batchEmbedContents")
    common = {"host": server.url, **FAST}
    return Target(provider, server,
                  lambda **o: resolve_embedder("ollama:nomic-embed-text", **common, **o),
                  lambda **o: resolve_chat_model("ollama:llama3.2", **common, **o), "/api/embed")


APPS = {"openai": lambda: OpenAIApp(api_key=KEY), "gemini": lambda: GeminiApp(api_key=KEY), "ollama": OllamaApp}


@pytest.fixture(params=sorted(APPS))
def target(request) -> Iterator[Target]:
    with serve(APPS[request.param]()) as server:
        yield _target(request.param, server)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422, 501])
def test_deterministic_status_fails_at_once_with_server_message(target, status):
    message = f"scripted deterministic answer {status}"
    target.server.app.fail_next(status, message, times=5)
    with pytest.raises(ProviderError) as info:
        target.embedder().embed_documents(["alpha", "beta"])
    assert info.value.status == status
    assert message in str(info.value) and "gave up after" not in str(info.value)
    assert target.server.app.request_count() == 1  # at once: no retry


@pytest.mark.parametrize("status", [500, 501])
def test_unsupported_embeddings_is_not_retried_whatever_the_status(target, status):
    target.server.app.fail_next(status, LLAMA_CPP_NO_EMBEDDINGS, times=5)
    with pytest.raises(ProviderError) as info:
        target.embedder().embed_documents(["alpha"])
    assert "does not support embeddings" in str(info.value) and "--embeddings" in str(info.value)
    assert target.server.app.request_count() == 1


def test_chat_501_fails_at_once_but_503_is_retried(target):
    target.server.app.fail_next(501, "chat completions are not implemented here", times=5)
    with pytest.raises(ProviderError) as info:
        target.chat().generate(MESSAGES)
    assert info.value.status == 501 and "not implemented here" in str(info.value)
    assert target.server.app.request_count() == 1
    target.server.app.requests.clear()
    target.server.app._faults.clear()
    target.server.app.fail_next(503, "overloaded, try again", times=1)
    assert target.chat().generate(MESSAGES) == "Hello from the loopback server."
    assert target.server.app.request_count() == 2


def test_async_embeddings_fail_at_once_too(target):
    target.server.app.fail_next(404, "model not found here", times=5)
    with pytest.raises(ProviderError) as info:
        asyncio.run(target.embedder().aembed_documents(["alpha"]))
    assert info.value.status == 404 and "model not found here" in str(info.value)
    assert target.server.app.request_count() == 1


def test_embedding_timeout_grows_with_the_batch(target):
    """A 0.5 s timeout plus 0.02 s per text lets a 100-text batch take 1 s; one text does not get it."""
    options = {"timeout": 0.5, "timeout_per_text": 0.02, "max_retries": 0}
    if target.provider == "ollama":
        options["batch_size"] = 100
    texts = [f"text {i}" for i in range(100)]
    target.server.app.delay_next(1.0)
    rows = target.embedder(**options).embed_documents(texts)
    assert rows.shape[0] == 100
    assert target.server.app.request_count(target.embed_path) == 1

    target.server.app.delay_next(3.0)
    with pytest.raises(ProviderError) as info:  # the server would answer after 3 s
        target.embedder(**options).embed_documents(["one text"])
    assert "timed out after 0.52 s" in str(info.value)


def test_async_embedding_timeout_grows_with_the_batch(target):
    options = {"timeout": 0.5, "timeout_per_text": 0.02, "max_retries": 0}
    if target.provider == "ollama":
        options["batch_size"] = 100
    target.server.app.delay_next(1.0)
    rows = asyncio.run(target.embedder(**options).aembed_documents([f"t{i}" for i in range(100)]))
    assert rows.shape[0] == 100


def test_default_timeout_for_a_full_openai_batch_is_minutes_not_sixty_seconds():
    embedder = resolve_embedder("openai:text-embedding-3-small", api_key=KEY, base_url="http://127.0.0.1:9/v1")
    assert embedder.request_timeout(1) == pytest.approx(DEFAULT_TIMEOUT + 0.25)
    assert embedder.request_timeout(2048) == pytest.approx(DEFAULT_TIMEOUT + 0.25 * 2048)
    assert scaled_timeout(10, 4, 0.0) == 10
    with pytest.raises(ValueError):
        resolve_embedder("ollama:nomic-embed-text", timeout_per_text=-1)


@pytest.mark.parametrize("status, message, expected", [
    (429, "slow down", True),
    (500, "internal error", True),
    (503, "model is loading", True),
    (408, "request timeout", True),
    (501, "anything", False),
    (505, "HTTP version", False),
    (500, '"llama3.2" does not support embeddings', False),
    (500, "embeddings are not supported by this model", False),
    (500, "input is too large to process. increase the physical batch size", False),
    (500, "the request exceeds the available context size, try increasing it", False),
    (400, "bad request", False),
    (422, "unprocessable", False),
    (None, "no status", False),
])
def test_retry_classification(status, message, expected):
    assert is_retryable(status, message) is expected
