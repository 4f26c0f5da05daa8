"""rag.as_langchain_retriever() against LangChain's own standard retriever tests (``langchain-tests``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_tests")

from langchain_tests.integration_tests import RetrieversIntegrationTests  # noqa: E402

import akasha  # noqa: E402

DOCS = {
    "paris.txt": "Paris is the capital of France. The Seine flows through Paris.",
    "tokyo.txt": "Tokyo is the capital of Japan. It is a very large city.",
    "bread.txt": "Sourdough bread needs flour, water, salt and a starter.",
    "rome.txt": "Rome is the capital of Italy. The Tiber flows through Rome.",
}


def akasha_retriever(*, folder: str, k: int = 4) -> Any:
    """The constructor the standard tests call: ``k`` is LangChain's number-of-results name."""
    rag = akasha.RAG(model="extractive", embeddings="hash", cache_dir=":memory:")
    return rag.as_langchain_retriever(folder, k=k)


# The standard suite's async test is a plain ``async def``: pytest-asyncio (a langchain-tests dependency) runs it.
@pytest.mark.asyncio(loop_scope="function")
@pytest.mark.filterwarnings("ignore:The test <Function:pytest.PytestWarning")
class TestAkashaLangChainRetriever(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _docs(self, tmp_path: Path) -> None:
        for name, text in DOCS.items():
            (tmp_path / name).write_text(text, encoding="utf-8")
        self._folder = str(tmp_path)

    @property
    def retriever_constructor(self) -> Any:
        return akasha_retriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"folder": self._folder}

    @property
    def retriever_query_example(self) -> str:
        return "Which city is the capital of France?"
