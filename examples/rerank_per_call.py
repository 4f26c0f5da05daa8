"""Override the reranker for one call; the RAG object keeps its own settings.

Run it from the repository root:

    python examples/rerank_per_call.py

The instance has no reranker. The second call asks for ``reranker="llm"`` and
``rerank_top_k=2`` for that call only. The LLM reranker sends the question and the
numbered candidates to ``reranker_model`` and expects ``{"order": [ids]}`` naming
every candidate once. To run offline this script passes a small Python function as
the reranker model: it receives the same prompt a hosted model would and orders the
candidates by word overlap with the question. With a key, use
``reranker_model="openai:gpt-4o-mini"`` or the default ``"gemini:gemini-2.5-flash"``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import akasha

HERE = Path(__file__).resolve().parent
QUESTION = "What caused the mechanical seal failure on P-102?"


def overlap_ranker(prompt: str) -> str:
    """A stand-in for a chat model: read the reranking prompt, answer with the order as JSON."""
    question = re.search(r"Question: (.*)", prompt).group(1)
    wanted = set(re.findall(r"\w+", question.lower()))
    candidates = re.findall(r'<candidate id="(\d+)">\n(.*?)\n</candidate>', prompt, flags=re.S)
    scored = sorted(
        candidates,
        key=lambda c: -len(wanted & set(re.findall(r"\w+", c[1].lower()))),
    )
    return json.dumps({"order": [int(cid) for cid, _ in scored]})


def main() -> None:
    rag = akasha.RAG(embeddings="hf:all-MiniLM-L6-v2", model="extractive", k=8)
    folder = str(HERE / "docs")

    plain = rag(folder, QUESTION)
    print(f"Without a reranker ({len(rag.docs)} documents packed):\n{plain}\n")

    reranked = rag(folder, QUESTION, reranker="llm", reranker_model=overlap_ranker, rerank_top_k=2)
    print(f"With reranker='llm' for this call ({len(rag.docs)} documents):\n{reranked}\n")
    for hit in rag.docs:
        print(f"  {hit.citation()}: rerank rank {hit.details['rerank_rank']:.0f}, first-stage {hit.details.get('rrf', 0):.4f}")
    assert len(rag.docs) == 2
    assert [step["stage"] for step in rag.trace].count("rerank") == 1

    # The override was for that call only.
    assert rag.reranker is None and rag.rerank_top_k == 5
    rag(folder, QUESTION)
    assert "rerank" not in [step["stage"] for step in rag.trace]
    print("\nAfter the call: reranker=None, rerank_top_k=5 (instance unchanged)")


if __name__ == "__main__":
    main()
