"""Self-ask: split a compound question into follow-ups, answer each, then the whole.

Run it from the repository root:

    python examples/selfask.py

``rag.selfask_RAG(folder, question)`` first asks the answer model for
``{"questions": [...]}`` (at most three simple follow-up questions), answers each
with retrieval, then answers the original question from the follow-up answers and
the union of their documents. ``rag.followups`` keeps each follow-up with its answer
and documents; ``rag.docs`` holds the union that reached the final answer.

A real model does the splitting (``model="openai:gpt-4o-mini"``, or the offline
``model="llama-cpp:smollm2"``). So that this script runs anywhere, it passes its own
chat model object: it splits on "and" for the decomposition request and lets akasha's
offline ``extractive`` model write every answer. Any object with ``name``,
``generate(messages, options)`` and ``stream(messages, options)`` is a chat model.
If the decomposition is not valid JSON, ``selfask_RAG`` logs a warning and answers
with a plain call instead of failing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import akasha
from akasha.llm import resolve_chat_model

HERE = Path(__file__).resolve().parent
QUESTION = "How often should the bearings be re-greased and what caused the P-102 seal failure?"


class SplitOnAnd:
    """Answers decomposition requests by splitting on 'and'; quotes documents otherwise."""

    name = "split-on-and+extractive"

    def __init__(self) -> None:
        self.answerer = resolve_chat_model("extractive")

    def generate(self, messages, options):
        if "follow-up questions" in messages[0]["content"]:  # the decomposition request
            question = messages[-1]["content"].rstrip("?")
            parts = [p.strip() for p in re.split(r"\band\b", question) if p.strip()]
            return json.dumps({"questions": [p[0].upper() + p[1:] + "?" for p in parts] if len(parts) > 1 else []})
        return self.answerer.generate(messages, options)

    def stream(self, messages, options):
        yield self.generate(messages, options)


def main() -> None:
    rag = akasha.RAG(embeddings="hf:all-MiniLM-L6-v2", model=SplitOnAnd())
    answer = rag.selfask_RAG(str(HERE / "docs"), QUESTION)

    print(f"Question: {QUESTION}\n\nFollow-up questions:")
    for item in rag.followups:
        print(f"- {item['question']}\n    {item['answer'].strip().replace(chr(10), chr(10) + '    ')}")
    print(f"\nFinal answer:\n{answer}\n")
    print(f"{len(rag.docs)} documents in rag.docs (the union used for the final answer)")

    assert len(rag.followups) == 2
    stages = [step["stage"] for step in rag.trace]
    assert stages[0] == "decompose" and stages.count("generate") == 3, stages


if __name__ == "__main__":
    main()
