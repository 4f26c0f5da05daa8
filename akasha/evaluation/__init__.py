"""Answer-finding quality: metrics, an evaluation runner and an HTML report.

>>> from akasha.evaluation import evaluate
>>> table = evaluate("./docs", "questions.jsonl", search_types=["auto", "bm25", "knn"])  # doctest: +SKIP
>>> print(table)  # doctest: +SKIP

``metrics`` holds the pure functions (recall@k, MRR@k, nDCG@k), ``relevance``
decides which retrieved chunks answer a question, ``runner`` runs a folder and a
JSONL of questions through each search type and reranker, and ``report`` writes
the HTML report with a plot. Submodules load lazily so ``import akasha`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "evaluate": ("akasha.evaluation.runner", "evaluate"),
    "evaluate_search": ("akasha.evaluation.runner", "evaluate_search"),
    "EvalTable": ("akasha.evaluation.runner", "EvalTable"),
    "Question": ("akasha.evaluation.relevance", "Question"),
    "load_questions": ("akasha.evaluation.relevance", "load_questions"),
    "write_html_report": ("akasha.evaluation.report", "write_html_report"),
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'akasha.evaluation' has no attribute {name!r}") from None
    return getattr(importlib.import_module(module_name), attribute)
