"""gemini:<model> chat + embeddings through the real ``google-genai`` client against a loopback server."""

from __future__ import annotations

import asyncio
import logging
import time

import numpy as np
import pytest

pytest.importorskip("google.genai")

from servers.base import fake_vector, serve  # noqa: E402
from servers.gemini_server import GeminiApp  # noqa: E402

from akasha.embeddings import resolve_embedder  # noqa: E402
from akasha.errors import MissingAPIKeyError, ProviderError, StreamInterruptedError  # noqa: E402
from akasha.llm import resolve_chat_model  # noqa: E402
from akasha.llm.base import GenerationOptions  # noqa: E402

KEY = "sk-test-SECRET-123"
FAST = {"retry_initial_delay": 0.001, "retry_max_delay": 0.01, "retry_jitter": 0.1}
MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Say hello"},
    {"role": "assistant", "content": "Hello?"},
    {"role": "user", "content": "Again"},
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI",
                "GOOGLE_GENAI_API_VERSION"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server():
    app = GeminiApp(api_key=KEY)
    with serve(app) as srv:
        yield srv


def chat(server, **options):
    return resolve_chat_model("gemini:gemini-2.5-flash", api_key=KEY, base_url=server.url, **FAST, **options)


def embedder(server, **options):
    return resolve_embedder("gemini:gemini-embedding-001", api_key=KEY, base_url=server.url, **FAST, **options)


def test_generate_translates_messages_to_gemini_request(server):
    model = chat(server)
    assert model.name == "gemini:gemini-2.5-flash"
    answer = model.generate(MESSAGES, GenerationOptions(max_output_tokens=16, temperature=0.3))
    assert answer == "Hello from the loopback server."
    request = server.app.requests[-1]
    assert request.path.endswith("/models/gemini-2.5-flash:generateContent")
    assert request.headers["x-goog-api-key"] == KEY
    assert request.body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert [c["role"] for c in request.body["contents"]] == ["user", "model", "user"]
    assert request.body["generationConfig"] == {"temperature": 0.3, "maxOutputTokens": 16}


def test_stream_uses_sse_endpoint(server):
    server.app.chat_reply = "one two three"
    assert list(chat(server).stream(MESSAGES)) == ["one ", "two ", "three"]
    request = server.app.requests[-1]
    assert request.path.endswith(":streamGenerateContent") and request.query["alt"] == ["sse"]


@pytest.mark.parametrize("variable", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
def test_key_from_environment_at_first_use(server, monkeypatch, variable):
    model = resolve_chat_model("gemini:gemini-2.5-flash", base_url=server.url, **FAST)
    monkeypatch.setenv(variable, KEY)
    assert model.generate(MESSAGES) == "Hello from the loopback server."


def test_missing_key_raises_at_first_use():
    model = resolve_chat_model("gemini:gemini-2.5-flash")
    emb = resolve_embedder("gemini:gemini-embedding-001")
    assert not model.connection.clients.built and emb.dimension == 3072
    with pytest.raises(MissingAPIKeyError) as info:
        model.generate(MESSAGES)
    assert "GEMINI_API_KEY or GOOGLE_API_KEY" in str(info.value)
    with pytest.raises(MissingAPIKeyError):
        list(model.stream(MESSAGES))
    with pytest.raises(MissingAPIKeyError):
        emb.embed_documents(["x"])


def test_429_and_5xx_retried(server):
    server.app.fail_next(429, "Resource has been exhausted (e.g. check quota).", retry_after="0")
    server.app.fail_next(503, "The model is overloaded. Please try again later.")
    assert chat(server, max_retries=2).generate(MESSAGES) == "Hello from the loopback server."
    assert server.app.request_count(":generateContent") == 3


def test_retry_after_honoured(server):
    server.app.fail_next(429, "quota", retry_after="1")
    start = time.perf_counter()
    chat(server, max_retries=1).generate(MESSAGES)
    assert time.perf_counter() - start >= 0.95


def test_retries_bounded(server):
    server.app.fail_next(500, "An internal error has occurred.", times=4)
    with pytest.raises(ProviderError) as info:
        chat(server, max_retries=1).generate(MESSAGES)
    assert info.value.status == 500 and "An internal error has occurred." in str(info.value)
    assert server.app.request_count(":generateContent") == 2


def test_4xx_fails_at_once_with_provider_message(server):
    server.app.fail_next(404, "models/gemini-9 is not found for API version v1beta")
    with pytest.raises(ProviderError) as info:
        chat(server, max_retries=3).generate(MESSAGES)
    assert info.value.status == 404
    assert "NOT_FOUND: models/gemini-9 is not found" in str(info.value)
    assert server.app.request_count(":generateContent") == 1


def test_timeout(server):
    server.app.delay_next(3.0)
    with pytest.raises(ProviderError) as info:  # the client gave up; it did not wait the 3 s
        chat(server, timeout=0.2, max_retries=0).generate(MESSAGES)
    assert "timed out after 0.2 s" in str(info.value)


def test_stream_broken_part_way(server):
    server.app.chat_reply = "alpha beta gamma delta"
    server.app.break_stream_after = 2
    got = []
    with pytest.raises(StreamInterruptedError) as info:
        for piece in chat(server).stream(MESSAGES):
            got.append(piece)
    assert got == ["alpha ", "beta "] and info.value.partial == "alpha beta "


def test_stream_without_finish_reason(server):
    server.app.chat_reply = "alpha beta"
    server.app.omit_stream_end = True
    with pytest.raises(StreamInterruptedError) as info:
        list(chat(server).stream(MESSAGES))
    assert info.value.partial == "alpha beta"


def test_stream_error_event(server):
    server.app.chat_reply = "alpha beta gamma"
    server.app.error_event_after = 1
    with pytest.raises(StreamInterruptedError) as info:
        list(chat(server).stream(MESSAGES))
    assert info.value.partial == "alpha "


def test_stream_open_retried(server):
    server.app.fail_next(503, "overloaded")
    assert "".join(chat(server).stream(MESSAGES)) == "Hello from the loopback server."


def test_embeddings_batched_by_100_with_task_types(server):
    texts = [f"passage {i}" for i in range(250)]
    vectors = embedder(server, output_dimensionality=8).embed_documents(texts)
    assert vectors.shape == (250, 8) and vectors.dtype == np.float32
    batches = [r.body["requests"] for r in server.app.requests if r.path.endswith(":batchEmbedContents")]
    assert [len(b) for b in batches] == [100, 100, 50]
    assert batches[0][0]["taskType"] == "RETRIEVAL_DOCUMENT"
    assert batches[0][0]["outputDimensionality"] == 8
    expected = np.asarray(fake_vector("passage 123"), dtype=np.float32)
    np.testing.assert_allclose(vectors[123], expected / np.linalg.norm(expected), rtol=1e-5)
    query = embedder(server, output_dimensionality=8).embed_query("passage 5")
    np.testing.assert_allclose(query, vectors[5], rtol=1e-6)
    assert server.app.requests[-1].body["requests"][0]["taskType"] == "RETRIEVAL_QUERY"


def test_embedding_batch_failure_raises_nothing_partial(server):
    server.app.fail_next(503, "overloaded", times=2, paths=(":batchEmbedContents",))
    emb = embedder(server, batch_size=100, max_retries=1)
    with pytest.raises(ProviderError) as info:
        emb.embed_documents([f"t{i}" for i in range(150)])
    assert info.value.status == 503
    server.app.fail_next(429, "quota", retry_after="0")
    assert emb.embed_documents(["a", "b"]).shape[0] == 2


def test_key_never_leaks(server, caplog):
    caplog.set_level(logging.DEBUG)
    wrong = "sk-test-SECRET-WRONG-999"
    model = resolve_chat_model("gemini:gemini-2.5-flash", api_key=wrong, base_url=server.url, **FAST)
    with pytest.raises(ProviderError) as info:
        model.generate(MESSAGES)
    assert info.value.status == 401 and "***" in str(info.value)
    good = chat(server, max_retries=1)
    server.app.fail_next(503, f"echo {KEY}", times=2)
    with pytest.raises(ProviderError) as info2:
        good.generate(MESSAGES)
    server.app.break_stream_after = 1
    with pytest.raises(StreamInterruptedError) as info3:
        list(good.stream(MESSAGES))
    emb = embedder(server)
    emb.embed_documents(["a"])
    for text in (caplog.text, repr(model), repr(good), repr(emb), str(info.value), repr(info.value),
                 str(info2.value), str(info3.value)):
        assert KEY not in text and wrong not in text


def test_async_generate_stream_embed(server):
    server.app.chat_reply = "async gemini answer"
    model, emb = chat(server), embedder(server)

    async def main():
        whole = await model.agenerate(MESSAGES, GenerationOptions())
        pieces = [p async for p in model.astream(MESSAGES, GenerationOptions())]
        return whole, pieces, await emb.aembed_documents(["a", "b"])

    whole, pieces, vectors = asyncio.run(main())
    assert whole == "async gemini answer"
    assert pieces == ["async ", "gemini ", "answer"]
    assert vectors.shape == (2, 8)


def test_async_retry_and_broken_stream(server):
    server.app.fail_next(429, "busy", retry_after="0")
    server.app.chat_reply = "a b c"
    server.app.break_stream_after = 1
    model = chat(server)

    async def main():
        got = []
        with pytest.raises(StreamInterruptedError) as info:
            async for piece in model.astream(MESSAGES, GenerationOptions()):
                got.append(piece)
        return got, info.value

    got, err = asyncio.run(main())
    assert got == ["a "] and err.partial == "a "
