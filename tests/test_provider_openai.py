"""openai:<model> chat + embeddings through the real ``openai`` client against a loopback server."""

from __future__ import annotations

import asyncio
import logging
import time

import numpy as np
import pytest

pytest.importorskip("openai")

from servers.base import fake_vector, serve  # noqa: E402
from servers.openai_server import OpenAIApp  # noqa: E402

from akasha.embeddings import resolve_embedder  # noqa: E402
from akasha.errors import MissingAPIKeyError, ProviderError, StreamInterruptedError  # noqa: E402
from akasha.llm import resolve_chat_model  # noqa: E402
from akasha.llm.base import GenerationOptions  # noqa: E402
from akasha.providers.sync_bridge import run_sync  # noqa: E402

KEY = "sk-test-SECRET-123"
FAST = {"retry_initial_delay": 0.001, "retry_max_delay": 0.01, "retry_jitter": 0.1}
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello"}]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT",
                "OPENAI_API_VERSION"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server():
    app = OpenAIApp(api_key=KEY)
    with serve(app) as srv:
        yield srv


def chat(server, **options):
    return resolve_chat_model("openai:gpt-test", api_key=KEY, base_url=server.url + "/v1", **FAST, **options)


def embedder(server, **options):
    return resolve_embedder("openai:text-embedding-3-small", api_key=KEY, base_url=server.url + "/v1",
                            **FAST, **options)


def test_chat_generate_sends_openai_request(server):
    model = chat(server)
    assert model.name == "openai:gpt-test"
    answer = model.generate(MESSAGES, GenerationOptions(max_output_tokens=32, temperature=0.2))
    assert answer == "Hello from the loopback server."
    request = server.app.requests[-1]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["messages"] == MESSAGES
    assert request.body["model"] == "gpt-test"
    assert request.body["temperature"] == 0.2
    assert request.body["max_tokens"] == 32  # custom base_url: the widely supported parameter
    assert "stream" not in request.body


def test_chat_stream_yields_pieces_in_order(server):
    server.app.chat_reply = "one two three four"
    pieces = list(chat(server).stream(MESSAGES, GenerationOptions()))
    assert pieces == ["one ", "two ", "three ", "four"]
    assert server.app.requests[-1].body["stream"] is True


def test_env_base_url_and_key_are_read_at_first_use(server, monkeypatch):
    model = resolve_chat_model("openai:gpt-test", **FAST)  # nothing set yet: construction must not fail
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    assert model.generate(MESSAGES) == "Hello from the loopback server."


def test_missing_key_raises_at_first_use_naming_variable():
    model = resolve_chat_model("openai:gpt-4o-mini")
    assert not model.connection.clients.built
    with pytest.raises(MissingAPIKeyError) as info:
        model.generate(MESSAGES)
    assert "OPENAI_API_KEY" in str(info.value) and "hf:all-MiniLM-L6-v2" in str(info.value)
    emb = resolve_embedder("openai:text-embedding-ada-002")
    assert emb.dimension == 1536
    with pytest.raises(MissingAPIKeyError):
        emb.embed_documents(["x"])


def test_compatible_server_without_key_works(monkeypatch):
    app = OpenAIApp(api_key=None)
    with serve(app) as srv:
        model = resolve_chat_model("openai:local-model", base_url=srv.url + "/v1")
        assert model.generate(MESSAGES) == "Hello from the loopback server."
        emb = resolve_embedder("openai:BAAI/bge-small-en-v1.5", base_url=srv.url + "/v1")  # e.g. TEI's /v1
        assert emb.embed_documents(["a", "b"]).shape == (2, 8)
        assert app.requests[-1].headers["authorization"] == "Bearer not-needed"


def test_model_refusing_temperature_is_retried_without_it(server):
    server.app.reasoning_model = True
    model = chat(server)
    assert model.generate(MESSAGES, GenerationOptions(temperature=0.0)) == "Hello from the loopback server."
    assert [("temperature" in r.body) for r in server.app.requests] == [True, False]
    assert "".join(model.stream(MESSAGES, GenerationOptions(temperature=0.0))) == "Hello from the loopback server."
    assert "temperature" not in server.app.requests[-1].body
    fresh = chat(server)
    assert "".join(fresh.stream(MESSAGES, GenerationOptions(temperature=0.0))) == "Hello from the loopback server."

    async def main():
        return await chat(server).agenerate(MESSAGES, GenerationOptions(temperature=0.0))

    assert asyncio.run(main()) == "Hello from the loopback server."


def test_azure_settings_use_deployment_path_and_api_key_header(monkeypatch):
    app = OpenAIApp(api_key=KEY)
    with serve(app) as srv:
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", srv.url)
        monkeypatch.setenv("OPENAI_API_VERSION", "2024-10-21")
        model = resolve_chat_model("openai:my-deployment", **FAST)
        assert model.generate(MESSAGES, GenerationOptions(max_output_tokens=5)) == "Hello from the loopback server."
        request = app.requests[-1]
        assert request.path == "/openai/deployments/my-deployment/chat/completions"
        assert request.query["api-version"] == ["2024-10-21"]
        assert request.headers["api-key"] == KEY
        assert request.body["max_completion_tokens"] == 5
        vectors = resolve_embedder("openai:my-embedding-deployment", **FAST).embed_documents(["a"])
        assert vectors.shape == (1, 8)
        assert app.requests[-1].path == "/openai/deployments/my-embedding-deployment/embeddings"


def test_429_and_5xx_are_retried_then_succeed(server):
    server.app.fail_next(429, "Rate limit reached", retry_after="0")
    server.app.fail_next(503, "Service unavailable")
    server.app.fail_next(500, "Internal error")
    assert chat(server, max_retries=3).generate(MESSAGES) == "Hello from the loopback server."
    assert server.app.request_count("/chat/completions") == 4


def test_retry_after_is_honoured(server):
    server.app.fail_next(429, "Rate limit reached", retry_after="1")
    start = time.perf_counter()
    chat(server, max_retries=1).generate(MESSAGES)
    assert time.perf_counter() - start >= 0.95
    assert server.app.request_count("/chat/completions") == 2


def test_retries_are_bounded_and_report_provider_message(server):
    server.app.fail_next(503, "The engine is currently overloaded", times=5)
    with pytest.raises(ProviderError) as info:
        chat(server, max_retries=2).generate(MESSAGES)
    assert info.value.status == 503
    assert "The engine is currently overloaded" in str(info.value)
    assert "3 attempts" in str(info.value)
    assert server.app.request_count("/chat/completions") == 3


def test_other_4xx_fails_at_once_with_provider_message(server):
    server.app.fail_next(400, "This model's maximum context length is 8192 tokens")
    with pytest.raises(ProviderError) as info:
        chat(server, max_retries=3).generate(MESSAGES)
    assert info.value.status == 400
    assert "maximum context length is 8192 tokens" in str(info.value)
    assert server.app.request_count("/chat/completions") == 1


def test_timeout_is_configurable_and_retried(server):
    server.app.delay_next(3.0, times=2)
    with pytest.raises(ProviderError) as info:  # the client gave up; it did not wait the 3 s
        chat(server, timeout=0.2, max_retries=1).generate(MESSAGES)
    assert "timed out after 0.2 s" in str(info.value)
    assert info.value.status is None
    assert server.app.request_count("/chat/completions") == 2  # the timeout was retried once


def test_stream_broken_part_way_keeps_partial_text(server):
    server.app.chat_reply = "alpha beta gamma delta"
    server.app.break_stream_after = 3  # role chunk + "alpha " + "beta ", then the socket closes
    received = []
    with pytest.raises(StreamInterruptedError) as info:
        for piece in chat(server).stream(MESSAGES):
            received.append(piece)
    assert received == ["alpha ", "beta "]
    assert info.value.partial == "alpha beta "
    assert "interrupted" in str(info.value)


def test_stream_without_finish_reason_is_reported(server):
    server.app.chat_reply = "alpha beta"
    server.app.omit_stream_end = True
    with pytest.raises(StreamInterruptedError) as info:
        list(chat(server).stream(MESSAGES))
    assert info.value.partial == "alpha beta"


def test_stream_error_event_is_reported(server):
    server.app.chat_reply = "alpha beta gamma"
    server.app.error_event_after = 2
    with pytest.raises(StreamInterruptedError) as info:
        list(chat(server).stream(MESSAGES))
    assert info.value.partial == "alpha "
    assert "server had an error" in str(info.value)


def test_stream_open_is_retried(server):
    server.app.fail_next(502, "Bad gateway")
    assert "".join(chat(server).stream(MESSAGES)) == "Hello from the loopback server."


def test_embeddings_batched_to_limit_and_in_order(server):
    texts = [f"text number {i}" for i in range(2500)]
    vectors = embedder(server).embed_documents(texts)
    assert vectors.shape == (2500, 8) and vectors.dtype == np.float32
    sizes = [len(r.body["input"]) for r in server.app.requests if r.path.endswith("/embeddings")]
    assert sizes == [2048, 452]
    expected = np.asarray(fake_vector("text number 2400"), dtype=np.float32)
    np.testing.assert_allclose(vectors[2400], expected / np.linalg.norm(expected), rtol=1e-5)
    assert server.app.requests[-1].body["encoding_format"] == "float"
    np.testing.assert_allclose(embedder(server).embed_query("text number 3"), vectors[3], rtol=1e-6)


def test_embedding_batch_failing_after_retries_raises_without_partial_result(server):
    emb = embedder(server, batch_size=2, max_retries=1)
    calls = {"n": 0}
    original = server.app.embeddings

    def flaky(request):
        calls["n"] += 1
        if calls["n"] >= 2:
            return server.app.error_reply(503, "overloaded")
        return original(request)

    server.app.embeddings = flaky  # first batch succeeds, the second fails on every attempt
    with pytest.raises(ProviderError) as info:
        emb.embed_documents(["a", "b", "c", "d"])
    assert info.value.status == 503
    assert calls["n"] == 3  # batch 1 ok, batch 2 tried twice


def test_embeddings_retry_429(server):
    server.app.fail_next(429, "slow down", retry_after="0")
    assert embedder(server).embed_documents(["x", "y"]).shape == (2, 8)


def test_key_never_leaks(server, caplog):
    caplog.set_level(logging.DEBUG)
    wrong = "sk-test-SECRET-WRONG-999"
    model = resolve_chat_model("openai:gpt-test", api_key=wrong, base_url=server.url + "/v1", **FAST)
    assert wrong not in repr(model)
    with pytest.raises(ProviderError) as info:
        model.generate(MESSAGES)  # server echoes the key back, like api.openai.com does
    assert info.value.status == 401
    assert "Incorrect API key provided: ***" in str(info.value)
    assert wrong not in str(info.value) and wrong not in repr(info.value)
    # neither chained nor kept as context: the client's exception echoes the key
    assert info.value.__cause__ is None and info.value.__context__ is None
    server.app.fail_next(503, f"echo {KEY}", times=3)
    good = chat(server, max_retries=1)
    with pytest.raises(ProviderError) as info2:
        good.generate(MESSAGES)
    assert KEY not in str(info2.value)
    server.app.break_stream_after = 2
    with pytest.raises(StreamInterruptedError) as info3:
        list(good.stream(MESSAGES))
    emb = embedder(server)
    emb.embed_documents(["a"])
    for text in (caplog.text, repr(good), repr(emb), str(info3.value)):
        assert KEY not in text and wrong not in text


def test_async_generate_stream_and_embeddings(server):
    server.app.chat_reply = "async answer here"
    model = chat(server)
    emb = embedder(server)

    async def main():
        whole = await model.agenerate(MESSAGES, GenerationOptions(max_output_tokens=8))
        pieces = [p async for p in model.astream(MESSAGES, GenerationOptions())]
        vectors = await emb.aembed_documents(["a", "b", "c"])
        return whole, pieces, vectors

    whole, pieces, vectors = asyncio.run(main())
    assert whole == "async answer here"
    assert pieces == ["async ", "answer ", "here"]
    assert vectors.shape == (3, 8)


def test_async_retry_and_broken_stream(server):
    server.app.fail_next(429, "busy", retry_after="0")
    server.app.chat_reply = "a b c d"
    server.app.break_stream_after = 2
    model = chat(server)

    async def main():
        got = []
        with pytest.raises(StreamInterruptedError) as info:
            async for piece in model.astream(MESSAGES, GenerationOptions()):
                got.append(piece)
        return got, info.value

    got, err = asyncio.run(main())
    assert got == ["a "] and err.partial == "a "


def test_sync_call_inside_running_event_loop(server):
    model = chat(server)

    async def notebook_cell():
        # a Jupyter cell: a loop is running, sync code must still work
        return model.generate(MESSAGES), run_sync(model.agenerate(MESSAGES, GenerationOptions()))

    assert asyncio.run(notebook_cell()) == ("Hello from the loopback server.",) * 2


@pytest.mark.parametrize("reply, words", [
    (b'{"choices": [ {"message": ', "not valid JSON"),
    (b'{"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0, '
     b'"finish_reason": "stop", "message": {"role": "assistant", "content": null}}]}', "holds no text"),
])
def test_a_broken_chat_reply_is_a_clear_provider_error(reply, words):
    """issue 33: invalid JSON gave a bare JSONDecodeError, "content": null an empty answer."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from akasha.errors import ProviderError
    from akasha.llm import resolve_chat_model

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):  # noqa: ANN002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        model = resolve_chat_model(f"openai:m@http://127.0.0.1:{server.server_address[1]}/v1")
        with pytest.raises(ProviderError, match=words):
            model.generate([{"role": "user", "content": "hi"}])
    finally:
        server.shutdown()
