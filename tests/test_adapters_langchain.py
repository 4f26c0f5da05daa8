"""rag.as_langchain_retriever(): a real langchain-core retriever in a real LCEL chain (langchain's fake chat model)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeListChatModel  # noqa: E402
from langchain_core.output_parsers import StrOutputParser  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables import RunnableLambda, RunnablePassthrough  # noqa: E402

from adapter_fixtures import docs, rag  # noqa: E402, F401
from akasha.errors import ConfigError  # noqa: E402


def test_retriever_returns_documents_with_source_page_and_scores(rag, docs):
    retriever = rag.as_langchain_retriever(str(docs), k=2)
    assert isinstance(retriever, BaseRetriever)
    found = retriever.invoke("Which river flows through Paris, France?")
    assert len(found) == 2 and all(isinstance(d, Document) for d in found)
    top = found[0]
    assert Path(top.metadata["source"]).name == "paris.txt"
    assert "Paris is the capital of France" in top.page_content
    assert top.metadata["page"] is None  # a text file has no pages
    assert isinstance(top.metadata["score"], float) and top.metadata["scores"]
    assert top.metadata["id"].startswith(top.id.rsplit("#", 1)[0])
    assert found[0].metadata["score"] >= found[1].metadata["score"]


def test_retriever_in_an_lcel_chain_with_a_fake_llm(rag, docs):
    retriever = rag.as_langchain_retriever(str(docs), k=1)
    seen: list[str] = []

    def record(prompt_value):
        seen.append(prompt_value.to_string())
        return prompt_value

    def format_docs(documents: list[Document]) -> str:
        return "\n\n".join(f"[{Path(d.metadata['source']).name}] {d.page_content}" for d in documents)

    prompt = ChatPromptTemplate.from_messages([
        ("system", "Answer from the context only.\n\n{context}"),
        ("human", "{question}"),
    ])
    llm = FakeListChatModel(responses=["Paris."])
    chain = ({"context": retriever | format_docs, "question": RunnablePassthrough()}
             | prompt | RunnableLambda(record) | llm | StrOutputParser())
    assert chain.invoke("Which river flows through Paris, France?") == "Paris."
    assert len(seen) == 1 and "[paris.txt] Paris is the capital of France" in seen[0]
    assert "tokyo.txt" not in seen[0]  # k=1: only the best chunk reached the model


def test_async_and_batch(rag, docs):
    retriever = rag.as_langchain_retriever(str(docs), k=1)
    found = asyncio.run(retriever.ainvoke("sourdough bread starter flour"))
    assert Path(found[0].metadata["source"]).name == "bread.txt"
    batches = retriever.batch(["Tokyo, Japan: a very large city", "the Seine flows through Paris"])
    assert [Path(b[0].metadata["source"]).name for b in batches] == ["tokyo.txt", "paris.txt"]


def test_overrides_apply_to_the_retriever_only_and_rerank(rag, docs):
    calls = []

    def reverse(query, documents):
        calls.append(len(documents))
        return list(reversed(documents))

    retriever = rag.as_langchain_retriever(str(docs), k=3, reranker=reverse, search_type="bm25")
    found = retriever.invoke("the Seine flows through Paris")
    assert calls and "rerank" in found[0].metadata["scores"]
    assert Path(found[-1].metadata["source"]).name == "paris.txt"  # the reranker's order is kept
    assert rag.reranker is None  # the instance keeps its own settings


def test_bad_overrides_and_k_fail_when_the_retriever_is_made(rag, docs):
    with pytest.raises(ConfigError):
        rag.as_langchain_retriever(str(docs), search_type="nonsense")
    with pytest.raises(ValueError):
        rag.as_langchain_retriever(str(docs), k=0)
