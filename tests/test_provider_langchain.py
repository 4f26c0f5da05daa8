"""LangChain chat models and embeddings passed in place of a model string."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

pytest.importorskip("langchain_core")

from langchain_core.embeddings import DeterministicFakeEmbedding  # noqa: E402
from langchain_core.language_models.fake_chat_models import (  # noqa: E402
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage  # noqa: E402

from akasha.embeddings import resolve_embedder  # noqa: E402
from akasha.errors import StreamInterruptedError  # noqa: E402
from akasha.llm import resolve_chat_model, validate_model  # noqa: E402
from akasha.llm.base import GenerationOptions  # noqa: E402
from akasha.llm.langchain import LangChainChat, content_text, to_langchain  # noqa: E402

MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello"},
    {"role": "user", "content": "Again"},
]


def test_chat_model_object_is_wrapped_and_generates():
    fake = FakeListChatModel(responses=["first answer", "second answer"])
    validate_model(fake)
    model = resolve_chat_model(fake)
    assert isinstance(model, LangChainChat) and model.name.startswith("langchain:FakeListChatModel")
    assert model.generate(MESSAGES, GenerationOptions()) == "first answer"
    assert model.generate(MESSAGES, GenerationOptions()) == "second answer"


def test_messages_are_translated_to_langchain_roles():
    converted = to_langchain(MESSAGES)
    assert [(m.type, m.content) for m in converted] == [
        ("system", "Be brief."), ("human", "Hi"), ("ai", "Hello"), ("human", "Again")]
    assert content_text(AIMessage(content=[{"type": "text", "text": "a"}, "b"])) == "ab"


def test_stream_yields_pieces():
    fake = GenericFakeChatModel(messages=iter([AIMessage(content="one two three")]))
    pieces = list(resolve_chat_model(fake).stream(MESSAGES, GenerationOptions()))
    assert "".join(pieces) == "one two three" and len(pieces) > 1


def test_stream_broken_part_way_keeps_partial():
    fake = FakeListChatModel(responses=["abcdef"], error_on_chunk_number=3)
    got = []
    with pytest.raises(StreamInterruptedError) as info:
        for piece in resolve_chat_model(fake).stream(MESSAGES, GenerationOptions()):
            got.append(piece)
    assert got == ["a", "b", "c"] and info.value.partial == "abc"


def test_async_paths():
    model = resolve_chat_model(FakeListChatModel(responses=["xyz", "uvw"]))

    async def main():
        return await model.agenerate(MESSAGES, GenerationOptions()), [
            p async for p in model.astream(MESSAGES, GenerationOptions())]

    whole, pieces = asyncio.run(main())
    assert whole == "xyz" and "".join(pieces) == "uvw"


def test_langchain_embeddings_object():
    emb = resolve_embedder(DeterministicFakeEmbedding(size=12))
    docs = emb.embed_documents(["a", "b"])
    assert docs.shape == (2, 12) and docs.dtype == np.float32
    np.testing.assert_allclose(emb.embed_query("a"), docs[0], rtol=1e-6)
