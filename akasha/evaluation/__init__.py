"""Answer-finding quality: metrics, an evaluation runner and an HTML report.

>>> from akasha.evaluation import evaluate
>>> table = evaluate("./docs", "questions.jsonl", search_types=["auto", "bm25", "knn"])  # doctest: +SKIP
>>> print(table)  # doctest: +SKIP

Modules: ``metrics``, ``relevance`` (which chunks answer a question), ``runner`` and ``report``.
``import akasha`` does not import this package.
"""

from __future__ import annotations

from akasha.evaluation.relevance import Question, load_questions
from akasha.evaluation.report import write_html_report
from akasha.evaluation.runner import EvalTable, evaluate, evaluate_search

__all__ = ["EvalTable", "Question", "evaluate", "evaluate_search", "load_questions", "write_html_report"]
