"""akasha.RAG end to end over each provider, configured only through environment variables.

The loopback servers answer the LLM reranker's ranking request first, then the
answer request, so one call exercises embeddings, reranker="llm" and generation
through the real client libraries.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openai")
pytest.importorskip("google.genai")
akasha = pytest.importorskip("akasha")
if not hasattr(akasha, "RAG"):
    pytest.skip("akasha.RAG not available yet", allow_module_level=True)

from servers.base import serve  # noqa: E402
from servers.gemini_server import GeminiApp  # noqa: E402
from servers.ollama_server import OllamaApp  # noqa: E402
from servers.openai_server import OpenAIApp  # noqa: E402

KEY = "sk-test-SECRET-123"


@pytest.fixture
def docs(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "apples.txt").write_text("Apples grow in orchards. The Gala apple is sweet and crisp.")
    (folder / "rivers.txt").write_text("The Nile is a long river in Africa that flows north.")
    return folder


def environment(monkeypatch, provider, url):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT",
                "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "OLLAMA_HOST"):
        monkeypatch.delenv(var, raising=False)
    if provider == "openai":
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", url + "/v1")
        return "openai:gpt-test", "openai:text-embedding-3-small"
    if provider == "gemini":
        monkeypatch.setenv("GEMINI_API_KEY", KEY)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", url)
        return "gemini:gemini-2.5-flash", "gemini:gemini-embedding-001"
    monkeypatch.setenv("OLLAMA_HOST", url)
    return "ollama:llama3.2", "ollama:nomic-embed-text"


@pytest.mark.parametrize("provider", ["openai", "gemini", "ollama"])
def test_rag_answers_through_provider(provider, docs, tmp_path, monkeypatch):
    app = {"openai": lambda: OpenAIApp(api_key=KEY), "gemini": lambda: GeminiApp(api_key=KEY),
           "ollama": lambda: OllamaApp()}[provider]()
    with serve(app) as srv:
        model, embeddings = environment(monkeypatch, provider, srv.url)

        def reply(request):
            text = json.dumps(request.body)
            if "candidate id" in text:  # the reranker's request: rank candidate 1 first
                n = text.count("<candidate id=")
                return json.dumps({"order": [1, 0, *range(2, n)] if n > 1 else [0]})
            return "The Gala apple is sweet [apples.txt]."

        app.chat_reply = reply
        rag = akasha.RAG(model=model, embeddings=embeddings, reranker="llm", reranker_model=model,
                         rerank_top_k=2, cache_dir=tmp_path / "cache", search_type="auto")
        answer = rag(docs, "Which apple is sweet?")
        assert "Gala apple is sweet" in answer
        assert len(rag.docs) >= 1
        paths = [r.path for r in app.requests]
        assert any(("embed" in p) for p in paths), paths
        chat_calls = [p for p in paths if "chat" in p or "generateContent" in p]
        assert len(chat_calls) == 2  # rerank + answer
        streamed = "".join(rag(docs, "Which apple is sweet?", stream=True))
        assert "Gala apple is sweet" in streamed
        for text in (repr(rag.docs), repr(getattr(rag, "trace", "")), answer, streamed):
            assert KEY not in text
