"""Packing with a llama.cpp server counts each chunk's tokens once per tokenizer, not once per question.

The loopback server (tests/servers/openai_server.py with ``tokenize = True``) serves llama.cpp's
``POST /tokenize`` and records every request; a request "carries document text" when its content
contains a chunk's text."""

from __future__ import annotations

import akasha
from akasha.embeddings.hash import HashEmbedder
from akasha.llm.openai import OpenAIChat
from akasha.tokens import count_many
from servers.base import serve
from servers.openai_server import OpenAIApp

KEY = "sk-test"
NOTES = {f"note{i}.txt": f"Note {i}: the air filter of unit {i} is replaced every {i + 2} months. " * 3
         for i in range(12)}


def _with_document_text(app: OpenAIApp) -> int:
    bodies = [str((r.body or {}).get("content", "")) for r in app.probes if r.path == "/tokenize"]
    return sum(1 for body in bodies if any(text.strip()[:40] in body for text in NOTES.values()))


def test_each_chunk_is_counted_once_per_tokenizer_not_once_per_question(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in NOTES.items():
        (docs / name).write_text(text, encoding="utf-8")
    app = OpenAIApp(api_key=KEY)
    app.tokenize = True
    with serve(app) as srv:
        chat = OpenAIChat("local-model", api_key=KEY, base_url=srv.url + "/v1", retry_initial_delay=0.001)
        rag = akasha.RAG(model=chat, embeddings=HashEmbedder(), cache_dir=":memory:", reranker=None)
        rag(docs, "How often is the air filter replaced?")
        sent = len(rag.docs)
        first = _with_document_text(app)
        # each chunk's text once, plus the final check of the whole prompt (once)
        assert sent >= 5 and first <= len(NOTES) + 1
        rag(docs, "How often is the air filter of unit 3 replaced?")
        second = _with_document_text(app) - first
        assert second <= 1  # only the final check of the new prompt: the chunks' counts are known


def test_count_many_counts_each_text_once_per_tokenizer_and_in_one_batch():
    class Counter:
        source = "test-tokenizer"

        def __init__(self) -> None:
            self.batches: list[list[str]] = []

        def count(self, text: str) -> int:  # pragma: no cover - count_batch is used
            raise AssertionError("counted one by one")

        def count_batch(self, texts: list[str]) -> list[int]:
            self.batches.append(list(texts))
            return [len(t.split()) for t in texts]

    first, second = Counter(), Counter()
    assert count_many(first, ["a b", "c d e", "a b"]) == [2, 3, 2]
    assert first.batches == [["a b", "c d e"]]
    assert count_many(second, ["c d e", "f"]) == [3, 1]  # same tokenizer identity: "c d e" is known
    assert second.batches == [["f"]]
