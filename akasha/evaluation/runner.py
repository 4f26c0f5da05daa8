"""Run evaluation questions through each search type and reranker and tabulate the metrics.

:func:`evaluate` indexes a folder once through the pipeline :mod:`akasha.assemble` builds for
``akasha.RAG``'s options (the engine users run) and reports the metrics of
:mod:`akasha.evaluation.metrics`; :func:`evaluate_search` is the same loop over any search function.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from akasha.evaluation.metrics import SPAN_CHARS, contains_span, mean, ndcg_at_k, recall_at_k, reciprocal_rank
from akasha.evaluation.relevance import Question, load_questions, matcher_for

log = logging.getLogger(__name__)

METRICS = ("recall@1", "recall@5", "mrr@10", "ndcg@10")
ANSWER_METRICS = ("answer@80", "answer_chars")
DEFAULT_SEARCH_TYPES = ("auto", "bm25", "knn")

#: search(question, search_type, reranker, k) -> hits (objects with .text and .path)
SearchFn = Callable[[str, str, Any, int], Sequence[Any]]
#: answer(question, search_type, reranker) -> the answer model's reply
AnswerFn = Callable[[str, str, Any], str]


@dataclass
class EvalTable:
    """Metrics per configuration: one row per (search_type, reranker)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    metrics: tuple[str, ...] = METRICS
    questions: int = 0
    info: dict[str, Any] = field(default_factory=dict)

    def row(self, search_type: str, reranker: str = "none") -> dict[str, Any]:
        """The row of one configuration; KeyError naming the known ones otherwise."""
        for row in self.rows:
            if row["search_type"] == search_type and row["reranker"] == reranker:
                return row
        known = ", ".join(f"{r['search_type']}/{r['reranker']}" for r in self.rows)
        raise KeyError(f"no row for {search_type}/{reranker}; rows: {known}")

    def best(self, metric: str = "mrr@10") -> dict[str, Any]:
        """The row with the highest ``metric``."""
        return max(self.rows, key=lambda row: row[metric])

    def to_json(self) -> str:
        return json.dumps({"questions": self.questions, "info": self.info, "rows": self.rows}, indent=2)

    def _cells(self) -> tuple[list[str], list[list[str]]]:
        answers = [m for m in ANSWER_METRICS if any(m in row for row in self.rows)]
        head = ["search_type", "reranker", *self.metrics, *answers, "ms/query"]
        body = [
            [row["search_type"], row["reranker"], *(f"{row[m]:.4f}" for m in self.metrics),
             *(_answer_cell(row.get(m), m) for m in answers), f"{row['ms_per_query']:.2f}"]
            for row in self.rows
        ]
        return head, body

    def to_markdown(self) -> str:
        head, body = self._cells()
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(cells) + " |" for cells in body]
        return "\n".join(lines)

    def __str__(self) -> str:
        head, body = self._cells()
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
        fmt = "  ".join(f"{{:{'<' if i < 2 else '>'}{w}}}" for i, w in enumerate(widths))
        lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
        lines += [fmt.format(*cells) for cells in body]
        return "\n".join(lines) + f"\n({self.questions} questions)"


def _answer_cell(value: float | None, metric: str) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if metric == "answer_chars" else f"{value:.4f}"


def _reranker_name(reranker: Any) -> str:
    if reranker is None or reranker == "none":
        return "none"
    if isinstance(reranker, str):
        return reranker
    return getattr(reranker, "name", None) or getattr(reranker, "__name__", None) or type(reranker).__name__


def score_question(hits: Sequence[Any], question: Question, folder: Path | None, k: int = 10) -> dict[str, float]:
    """The four metrics for one question's ranked hits."""
    units = matcher_for(question, folder)
    matches = [units(hit.text, getattr(hit, "path", None)) for hit in hits[:k]]
    n = question.n_units
    return {
        "recall@1": recall_at_k(matches, n, 1),
        "recall@5": recall_at_k(matches, n, 5),
        "mrr@10": reciprocal_rank(matches, 10),
        "ndcg@10": ndcg_at_k(matches, n, 10),
    }


def evaluate_search(
    search: SearchFn,
    questions: Sequence[Question],
    *,
    search_types: Sequence[str] = DEFAULT_SEARCH_TYPES,
    rerankers: Sequence[Any] = (None,),
    k: int = 10,
    folder: str | Path | None = None,
    answer: AnswerFn | None = None,
) -> EvalTable:
    """Ask every question under every (search_type, reranker) and average the metrics; with ``answer``,
    questions with a reference answer are also answered (:func:`score_answers` adds to each row)."""
    if k < 10:
        raise ValueError(f"k must be at least 10 to report MRR@10 and nDCG@10, got {k}")
    if not questions:
        raise ValueError("no questions to evaluate")
    root = Path(folder) if folder is not None else None
    table = EvalTable(questions=len(questions))
    for reranker in rerankers:
        for search_type in search_types:
            per_metric: dict[str, list[float]] = {m: [] for m in METRICS}
            elapsed = []
            for question in questions:
                start = time.perf_counter()
                hits = list(search(question.question, search_type, reranker, k))
                elapsed.append(time.perf_counter() - start)
                for name, value in score_question(hits, question, root, k).items():
                    per_metric[name].append(value)
            row: dict[str, Any] = {"search_type": str(search_type), "reranker": _reranker_name(reranker)}
            row.update({name: mean(values) for name, values in per_metric.items()})
            row["ms_per_query"] = 1000 * mean(elapsed)
            if answer is not None:
                row.update(score_answers(answer, questions, search_type, reranker))
            table.rows.append(row)
            log.info("%s/%s: %s", row["search_type"], row["reranker"], {m: round(row[m], 4) for m in METRICS})
    return table


def score_answers(answer: AnswerFn, questions: Sequence[Question], search_type: str, reranker: Any) -> dict[str, float]:
    """``answer@80`` and ``answer_chars`` over the questions that have a reference answer (empty if none has)."""
    quoted, lengths = [], []
    for question in questions:
        if not question.answer:
            continue
        reply = answer(question.question, search_type, reranker)
        quoted.append(1.0 if contains_span(reply, question.answer, SPAN_CHARS) else 0.0)
        lengths.append(float(len(reply)))
    if not quoted:
        return {}
    return {"answer@80": mean(quoted), "answer_chars": mean(lengths)}


def evaluate(
    folder: str | Path,
    questions_jsonl: str | Path,
    *,
    search_types: Sequence[str] = DEFAULT_SEARCH_TYPES,
    rerankers: Sequence[Any] = (None,),
    embeddings: Any = "hash",
    k: int = 10,
    chunk_size: int = 1000,
    chunk_overlap: int | None = None,
    cache_dir: str | Path | None = ":memory:",
    candidates: int = 30,
    reranker_model: Any = None,
    report: str | Path | None = None,
    metric: str = "mrr@10",
    model: Any = "extractive",
    answers: bool = True,
) -> EvalTable:
    """Index ``folder`` once and report recall@1/5, MRR@10 and nDCG@10 per search_type and reranker.

    ``embeddings``: a model string or embedder. With a reranker, the top ``candidates`` hits are reranked
    and the top ``k`` scored; ``reranker_model`` is the "llm" reranker's chat model. ``report`` writes an
    HTML report plotting ``metric``. With ``answers`` (default), questions with a reference answer are also
    answered by ``model`` (default ``"extractive"``, offline) through the pipeline ``akasha.RAG`` runs,
    adding ``answer@80`` and ``answer_chars``.
    """
    from akasha.assemble import Components, from_options
    from akasha.options import DEFAULT_RERANKER_MODEL, RAGOptions
    from akasha.retrieval.search import validate_search_type

    for search_type in search_types:
        validate_search_type(search_type)
    questions = load_questions(questions_jsonl)
    components = Components()  # one index, embedder and reranker cache for every configuration
    base = RAGOptions(model=model, embeddings=embeddings, chunk_size=chunk_size, chunk_overlap=chunk_overlap,
                      cache_dir=cache_dir, reranker_model=reranker_model or DEFAULT_RERANKER_MODEL)
    pipelines: dict[tuple[str, str, bool], Any] = {}

    def pipeline_for(search_type: str, reranker: Any, answering: bool = False) -> Any:
        key = (str(search_type), _reranker_name(reranker), answering)
        if key not in pipelines:
            spec = None if reranker in (None, "none") else reranker
            # Answering gets what a user gets (default k, rerank_top_k); retrieval with a reranker keeps
            # `candidates` first-stage hits, and the reranker orders all of them.
            pool = k if spec is None else max(k, candidates)
            sizes = {} if answering else {"k": pool, "rerank_top_k": pool}
            pipelines[key] = from_options(base.merged(search_type=search_type, reranker=spec, **sizes), components)
        return pipelines[key]

    first = pipeline_for(search_types[0], None)
    start = time.perf_counter()
    sync = first.sync(folder)
    index_s = time.perf_counter() - start

    def search(question: str, search_type: str, reranker: Any, top: int) -> list[Any]:
        return pipeline_for(search_type, reranker).retrieve(None, question)[:top]

    def answer(question: str, search_type: str, reranker: Any) -> str:
        return str(pipeline_for(search_type, reranker, answering=True).answer(question).response)

    table = evaluate_search(search, questions, search_types=search_types, rerankers=rerankers, k=k, folder=folder,
                            answer=answer if answers else None)
    table.info = {
        "folder": str(folder),
        "questions_file": str(questions_jsonl),
        "embeddings": getattr(first.embedder, "name", str(embeddings)),
        "chunk_size": chunk_size,
        "chunks": getattr(sync, "chunks", None),
        "index_seconds": round(index_s, 3),
        "k": k,
        "model": getattr(model, "name", str(model)) if answers else None,
    }
    if report is not None:
        from akasha.evaluation.report import write_html_report

        write_html_report(table, report, metric=metric)
    return table
