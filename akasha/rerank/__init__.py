"""Second-stage rerankers: reorder the first-stage candidates before packing.

Values accepted for ``reranker``:

* ``None`` - no reranking (``rerank_top_k`` has no effect);
* ``"llm"`` - ``reranker_model`` orders every candidate id (:mod:`akasha.rerank.llm`);
* ``"local"`` / ``"bge"`` - ``BAAI/bge-reranker-base`` cross-encoder on CPU, and
  ``"local:<model>"`` / ``"bge:<model>"`` - any Hugging Face sequence-classification
  model name or local folder (:mod:`akasha.rerank.local`);
* a callable ``(query, documents) -> documents`` that may only reorder the
  candidates it was given (:mod:`akasha.rerank.callable`).

Every reranker returns a complete :class:`Ranking`; :func:`rerank` validates it
(:mod:`akasha.rerank.ordering`) and only then keeps the top ``rerank_top_k``.
Nothing here imports torch/transformers or builds a model until a reranker runs.
"""

from __future__ import annotations

import builtins  # the submodule akasha.<pkg>.callable shadows the builtin name here
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from akasha.errors import ConfigError
from akasha.rerank.ordering import validate_ordering
from akasha.types import Hit

#: Reranker names accepted as strings (plus "local:<model>" / "bge:<model>").
RERANKER_NAMES = ("llm", "local", "bge")
DEFAULT_LOCAL_RERANKER = "BAAI/bge-reranker-base"


@dataclass
class Ranking:
    """A reranker's verdict: ``order`` lists candidate positions best first; ``scores`` per position."""

    order: list[int]
    scores: list[float] | None = None


@runtime_checkable
class Reranker(Protocol):
    """Orders every candidate for a query."""

    name: str

    def rank(self, query: str, hits: Sequence[Hit]) -> Ranking: ...


def validate_reranker(spec: object) -> None:
    """Raise ConfigError now if ``spec`` is not a reranker akasha knows (no import, no I/O)."""
    if spec is None or builtins.callable(spec) or isinstance(spec, Reranker):
        return
    if isinstance(spec, str):
        prefix, colon, rest = spec.partition(":")
        prefix = prefix.strip().lower()
        if prefix == "llm" and not colon:
            return
        if prefix in ("local", "bge") and (not colon or rest.strip()):
            return
    raise ConfigError(
        f"unknown reranker {spec!r}: use None, 'llm', 'local', 'bge', 'local:<model>', "
        "'bge:<model>' (a Hugging Face sequence-classification model name or folder), "
        "or a callable (query, documents) -> documents"
    )


def validate_top_k(rerank_top_k: object) -> int:
    """``rerank_top_k`` must be a positive integer (bools are refused)."""
    if isinstance(rerank_top_k, bool) or not isinstance(rerank_top_k, int) or rerank_top_k < 1:
        raise ConfigError(f"rerank_top_k must be a positive integer, got {rerank_top_k!r}")
    return rerank_top_k


def local_model_name(spec: str) -> str:
    """``"local"`` -> the default BGE model; ``"local:<model>"`` -> ``<model>``."""
    _, colon, rest = spec.partition(":")
    return rest.strip() if colon else DEFAULT_LOCAL_RERANKER


def resolve_reranker(spec: object, *, reranker_model: Any = None, **options: Any) -> Reranker | None:
    """Build the reranker object for ``spec`` (models inside it still load lazily)."""
    validate_reranker(spec)
    if spec is None:
        return None
    if isinstance(spec, Reranker):
        return spec
    if isinstance(spec, str):
        if spec.strip().lower() == "llm":
            from akasha.rerank.llm import LLMReranker

            return LLMReranker(reranker_model, **options)
        from akasha.rerank.local import LocalReranker

        return LocalReranker(local_model_name(spec))
    from akasha.rerank.callable import CallableReranker

    return CallableReranker(spec)  # type: ignore[arg-type]


def rerank(reranker: Reranker, query: str, hits: Sequence[Hit], top_k: int) -> list[Hit]:
    """Rank every hit, validate the complete ordering, then keep the best ``top_k``.

    Returned hits are copies whose ``score`` is the rerank score and whose
    ``details`` gain ``rerank`` (score) and ``rerank_rank`` (1-based position).
    """
    validate_top_k(top_k)
    hits = list(hits)
    if not hits:
        return []
    ranking = reranker.rank(query, hits)
    order = validate_ordering(ranking.order, len(hits), getattr(reranker, "name", "reranker"))
    out: list[Hit] = []
    n = len(hits)
    for rank, position in enumerate(order[:top_k], 1):
        hit = hits[position]
        score = float(ranking.scores[position]) if ranking.scores is not None else (n - rank + 1) / n
        details = {**hit.details, "rerank": score, "rerank_rank": float(rank)}
        out.append(dataclasses.replace(hit, score=score, details=details))
    return out


RerankerSpec = None | str | Callable[[str, list[Hit]], list[Hit]] | Reranker

__all__ = [
    "DEFAULT_LOCAL_RERANKER",
    "RERANKER_NAMES",
    "Ranking",
    "Reranker",
    "RerankerSpec",
    "local_model_name",
    "rerank",
    "resolve_reranker",
    "validate_reranker",
    "validate_top_k",
]
