"""A plugin pattern may rewrite the question asynchronously: its transform may return a coroutine or
any other awaitable of the query list, and the synchronous query path awaits it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

import akasha.registry as registry
from akasha.retrieval.patterns import Pattern
from akasha.spec import build, load_spec
from tests.spec_fixtures import CORPUS, body


class _Ready:
    """An awaitable that is not a coroutine (like a Future or a Task, it has only ``__await__``)."""

    def __init__(self, value: list[str]) -> None:
        self.value = value

    def __await__(self):
        yield from asyncio.sleep(0).__await__()
        return self.value


@dataclass
class _Rewrite(Pattern):
    kind: str = "coroutine"

    def transform(self, query: str, llm: Any) -> Any:
        async def rewritten() -> list[str]:
            return ["warranty manufacturing defects"]

        return rewritten() if self.kind == "coroutine" else _Ready(["warranty manufacturing defects"])


@pytest.mark.parametrize("kind", ["coroutine", "awaitable"])
def test_an_async_transform_is_awaited_on_the_sync_path(clean_registry, kind):
    registry.register("pattern", "rewrite", lambda c, ctx: _Rewrite("rewrite", ("bm25",), "none", kind=kind))
    pipeline = build(load_spec(body(retrieval={"pattern": "rewrite"})))
    pipeline.ingest_sync(CORPUS)
    hits = pipeline.query_sync("a question that shares no word with the corpus", k=1).hits
    assert len(hits) == 1 and "warranty" in hits[0].chunk.text
