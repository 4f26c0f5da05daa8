"""Stream an answer piece by piece with ``stream=True``.

Run it from the repository root:

    python examples/streaming.py

With ``stream=True`` a call returns a generator of answer pieces instead of a
``str``. Retrieval, reranking and packing run before the first piece, so
``rag.docs`` and ``rag.trace`` are already set; ``rag.response`` fills in as you
consume the pieces. Hosted models (``openai:``, ``gemini:``, ``ollama:``) stream
tokens; the offline ``extractive`` model used here streams one quoted sentence at a
time. ``stream`` can also be given for one call: ``rag(folder, question, stream=True)``.
In async code (a notebook cell, a web server) ``async for piece in rag.astream(...)``
does the same without blocking the event loop.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import akasha

HERE = Path(__file__).resolve().parent
QUESTION = "What must be checked before starting a pump?"


def main() -> None:
    rag = akasha.RAG(embeddings="hf:all-MiniLM-L6-v2", model="extractive", stream=True)
    pieces = []
    for piece in rag(str(HERE / "docs"), QUESTION):
        pieces.append(piece)
        sys.stdout.write(piece)
        sys.stdout.flush()
    print(f"\n\nstreamed {len(pieces)} pieces from {len(rag.docs)} documents")
    assert "".join(pieces) == rag.response and rag.response.strip()

    # Streaming for one call on a non-streaming instance:
    rag.stream = False
    stream = rag(str(HERE / "docs"), QUESTION, stream=True)
    assert not isinstance(stream, str) and "".join(stream) == rag.response

    # The async twin, for code that already runs an event loop:
    async def consume() -> str:
        return "".join([piece async for piece in rag.astream(str(HERE / "docs"), QUESTION)])

    assert asyncio.run(consume()) == rag.response
    print("astream gave the same answer")


if __name__ == "__main__":
    main()
