"""reranker="llm" through each provider prefix: canned replies served by the loopback servers.

The validation itself belongs to akasha.rerank; these tests check that a reply
travelling over each provider's real wire format reaches it intact and that
invalid JSON, an omitted id and a duplicate id each raise ValueError.
"""

from __future__ import annotations

import pytest

pytest.importorskip("akasha.rerank.llm")
pytest.importorskip("openai")
pytest.importorskip("google.genai")

from servers.base import serve  # noqa: E402
from servers.gemini_server import GeminiApp  # noqa: E402
from servers.ollama_server import OllamaApp  # noqa: E402
from servers.openai_server import OpenAIApp  # noqa: E402

from akasha.rerank import rerank, resolve_reranker  # noqa: E402
from akasha.types import Chunk, Hit  # noqa: E402

KEY = "sk-test-SECRET-123"
FAST = {"retry_initial_delay": 0.001, "retry_max_delay": 0.01, "retry_jitter": 0.1}

PROVIDERS = {
    "openai": (lambda: OpenAIApp(api_key=KEY), lambda url: ("openai:gpt-test", {"api_key": KEY, "base_url": url + "/v1"})),
    "gemini": (lambda: GeminiApp(api_key=KEY), lambda url: ("gemini:gemini-2.5-flash", {"api_key": KEY, "base_url": url})),
    "ollama": (lambda: OllamaApp(), lambda url: ("ollama:llama3.2", {"host": url})),
}


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request):
    make_app, make_spec = PROVIDERS[request.param]
    app = make_app()
    with serve(app) as srv:
        model, options = make_spec(srv.url)
        reranker = resolve_reranker("llm", reranker_model=model, **options, **FAST)
        yield app, reranker


def hits(n: int = 3) -> list[Hit]:
    return [Hit(Chunk(f"doc#{i}", f"candidate text number {i}", {"source": f"d{i}.txt"}), 1.0 - i / 10)
            for i in range(n)]


def test_valid_order_is_applied(provider):
    app, reranker = provider
    app.chat_reply = '{"order": [2, 0, 1]}'
    out = rerank(reranker, "which one?", hits(), top_k=2)
    assert [h.chunk.id for h in out] == ["doc#2", "doc#0"]
    prompt = str(app.requests[-1].body)
    assert "candidate text number 1" in prompt and "which one?" in prompt


@pytest.mark.parametrize("reply", [
    "definitely not json",                      # invalid JSON
    '{"order": [2, 0]}',                        # omits id 1
    '{"order": [2, 0, 0]}',                     # duplicate id 0
])
def test_bad_orderings_raise_value_error_before_trimming(provider, reply):
    app, reranker = provider
    app.chat_reply = reply
    with pytest.raises(ValueError):
        rerank(reranker, "which one?", hits(), top_k=1)
    assert len(app.requests) == 1  # one answer, no retry of a successful HTTP reply
