"""issue 33: network replies are bounded in size and time, for the OpenAI and Ollama clients."""

from __future__ import annotations

import pytest
from http_fixtures import drip, send_head, serving

from akasha.errors import ProviderError
from akasha.llm import resolve_chat_model


def _endless(handler) -> None:
    wfile = send_head(handler, 200, "application/json")
    wfile.write(b'{"x": "')
    block = b"a" * 65536
    for _ in range(1000):  # 64 MB unless the client stops reading
        wfile.write(block)


def _drip(handler) -> None:
    drip(send_head(handler, 200, "application/json"), [b" "] * 300, 0.2)  # one byte every 0.2 s for a minute


@pytest.mark.parametrize("spec", ["openai:m@http://user:secret@127.0.0.1:{port}/v1",
                                  "ollama:m@http://user:secret@127.0.0.1:{port}",
                                  "gemini:m@http://user:secret@127.0.0.1:{port}"])
@pytest.mark.parametrize("mode, env, words", [
    ("endless", {"AKASHA_MAX_REPLY_MB": "1"}, "exceeded 1048576 bytes"),
    ("drip", {"AKASHA_REQUEST_DEADLINE_S": "1.5"}, "deadline"),
])
def test_a_reply_is_cut_at_its_size_cap_or_deadline(monkeypatch, spec, mode, env, words):
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with serving(_endless if mode == "endless" else _drip) as (port, _):
        model = resolve_chat_model(spec.format(port=port), timeout=3)
        with pytest.raises(ProviderError, match=words) as caught:  # the cap or the deadline ended it
            model.generate([{"role": "user", "content": "hi"}])
        assert "secret" not in str(caught.value)
        assert "127.0.0.1" in str(caught.value)


def test_a_stream_that_never_ends_is_cut_at_the_deadline(monkeypatch):
    """An SSE stream whose events keep coming ends at the request deadline, not never."""
    monkeypatch.setenv("AKASHA_REQUEST_DEADLINE_S", "1.5")

    chunk = (b'data: {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m", '
             b'"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": null}]}\n\n')
    with serving(lambda handler: drip(send_head(handler, 200, "text/event-stream"), [chunk] * 600, 0.1)) as (port, _):
        model = resolve_chat_model(f"openai:m@http://127.0.0.1:{port}/v1", timeout=3)
        with pytest.raises(ProviderError, match="deadline"):
            for _ in model.stream([{"role": "user", "content": "hi"}]):
                pass


def test_an_hf_inference_api_reply_is_capped(monkeypatch):
    """The hf inference-API embedder (and the cohere reranker, same helper) read through the bounded transport."""
    from akasha.embeddings import resolve_embedder

    monkeypatch.setenv("AKASHA_MAX_REPLY_MB", "1")
    with serving(_endless) as (port, _):
        embedder = resolve_embedder(f"hf_api:all-MiniLM-L6-v2@http://user:secret@127.0.0.1:{port}")
        with pytest.raises(ProviderError, match="exceeded 1048576 bytes") as caught:
            embedder.embed_documents(["hello"])
        assert "secret" not in str(caught.value)


def test_a_bad_limit_variable_is_a_config_error(monkeypatch):
    from akasha.errors import ConfigError
    from akasha.providers.bounded import reply_limits

    monkeypatch.setenv("AKASHA_MAX_REPLY_MB", "lots")
    with pytest.raises(ConfigError, match="AKASHA_MAX_REPLY_MB"):
        reply_limits()
