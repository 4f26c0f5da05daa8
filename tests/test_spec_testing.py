"""akasha.testing: the deterministic embedder and fake LLM users write their own tests with."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from akasha.llm.base import ChatModel, GenerationOptions
from akasha.testing import FakeLLM, HashEmbedder


def test_hash_embedder_is_deterministic_64_dimensions():
    a, b = HashEmbedder(), HashEmbedder()
    assert a.dimension == 64 and a.name == "hash"
    m = a.embed_documents(["cats purr", "dogs bark"])
    assert m.shape == (2, 64) and m.dtype == np.float32
    assert np.array_equal(m, b.embed_documents(["cats purr", "dogs bark"]))
    assert np.allclose(np.linalg.norm(m, axis=1), 1.0)
    assert a.calls == 1 and a.texts_embedded == 2


def test_fake_llm_replies():
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "hello there"}]
    echo = FakeLLM()
    assert isinstance(echo, ChatModel)
    assert echo.generate(messages, GenerationOptions()) == "hello there"
    assert "".join(echo.stream(messages, GenerationOptions())) == "hello there"
    assert len(echo.calls) == 2 and echo.calls[0] == messages

    cycle = FakeLLM(["one", "two"])
    assert [cycle.generate(messages) for _ in range(3)] == ["one", "two", "one"]
    assert FakeLLM("fixed").generate(messages) == "fixed"
    assert FakeLLM(lambda msgs: msgs[-1]["content"].upper()).generate(messages) == "HELLO THERE"


def test_fake_llm_async_and_errors():
    llm = FakeLLM("async answer")

    async def go():
        pieces = [p async for p in llm.astream([{"role": "user", "content": "q"}])]
        return await llm.agenerate([{"role": "user", "content": "q"}]), "".join(pieces)

    assert asyncio.run(go()) == ("async answer", "async answer")
    with pytest.raises(TimeoutError):
        FakeLLM(error=TimeoutError("slow")).generate([{"role": "user", "content": "q"}])
