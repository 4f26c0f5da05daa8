"""Second-stage rerankers: reorder the first-stage candidates before packing.

Values accepted for ``reranker``: ``None`` (no reranking); ``"llm"`` (``reranker_model`` orders
every candidate id, :mod:`akasha.rerank.llm`); ``"local"`` / ``"bge"`` (``BAAI/bge-reranker-base``
on this machine) and ``"local:<model>"`` / ``"bge:<model>"`` (any Hugging Face
sequence-classification model name or folder, :mod:`akasha.rerank.local`); a callable
``(query, documents) -> documents`` that may only reorder what it was given. A ``kind: RAGPipeline``
names its reranker in ``reranking.provider`` (``cross_encoder``, ``cohere`` or a registered one).

Every reranker returns a complete :class:`Ranking`; :func:`rerank` validates it
(:mod:`akasha.rerank.ordering`) and only then keeps the top ``rerank_top_k``. :func:`as_reranker`
adapts a plugin written for the older ``rerank(query, hits, top_k) -> hits`` contract. Models load
only when a reranker runs.
"""

from __future__ import annotations

import builtins  # the submodule akasha.<pkg>.callable shadows the builtin name here
import dataclasses
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from akasha.checks import positive_int
from akasha.errors import ConfigError, OrderingError
from akasha.rerank.ordering import validate_ordering
from akasha.types import Hit

DEFAULT_LOCAL_RERANKER = "BAAI/bge-reranker-base"


@dataclass
class Ranking:
    """A reranker's verdict: ``order`` lists candidate positions best first; ``scores`` per position."""

    order: list[int]
    scores: list[float] | None = None

    @classmethod
    def by_score(cls, scores: Sequence[float]) -> Ranking:
        """Every position, highest score first (ties keep the retrieval order)."""
        scores = [float(s) for s in scores]
        return cls(sorted(range(len(scores)), key=lambda i: (-scores[i], i)), scores)


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
        if (prefix == "llm" and not colon) or (prefix in ("local", "bge") and (not colon or rest.strip())):
            return
    raise ConfigError(f"unknown reranker {spec!r}: use None, 'llm', 'local', 'bge', 'local:<model>', "
                      "'bge:<model>' (a Hugging Face sequence-classification model name or folder), "
                      "or a callable (query, documents) -> documents")


def validate_top_k(rerank_top_k: object) -> int:
    """``rerank_top_k`` as an int: a positive integer (numpy's too, as for ``k``; bools are refused)."""
    return positive_int("rerank_top_k", rerank_top_k)


def is_llm(spec: object) -> bool:
    """True for ``reranker="llm"`` in any case and spacing (the one that uses ``reranker_model``)."""
    return isinstance(spec, str) and spec.strip().lower() == "llm"


def resolve_reranker(spec: object, *, reranker_model: Any = None, **options: Any) -> Reranker | None:
    """Build the reranker object for ``spec`` (models inside it still load lazily)."""
    validate_reranker(spec)
    if spec is None:
        return None
    if isinstance(spec, Reranker):
        return spec
    if isinstance(spec, str):
        if is_llm(spec):
            from akasha.rerank.llm import LLMReranker

            return LLMReranker(reranker_model, **options)
        from akasha.rerank.local import LocalReranker

        _, colon, model = spec.partition(":")  # "local" -> the default BGE model
        return LocalReranker(model.strip() if colon else DEFAULT_LOCAL_RERANKER, **options)  # device=, batch_size=
    # validate_reranker let only a callable through to here; its signature is checked when it runs
    return CallableReranker(spec)  # type: ignore[arg-type]


def rerank(reranker: Reranker, query: str, hits: Sequence[Hit], top_k: int) -> list[Hit]:
    """Rank every hit, validate the complete ordering, then keep the best ``top_k``: copies whose ``score``
    is the rerank score, ``details`` gaining ``rerank``, ``rerank_rank`` (1-based) and ``retrieval`` (the
    score before reranking)."""
    validate_top_k(top_k)
    hits = list(hits)
    if not hits:
        return []
    who = getattr(reranker, "name", "reranker")
    ranking = reranker.rank(query, hits)
    if not isinstance(ranking, Ranking):
        raise OrderingError(f"{who} must return a Ranking(order, scores) from rank(), got {type(ranking).__name__}")
    order = validate_ordering(ranking.order, len(hits), who)
    n = len(hits)
    if ranking.scores is not None and len(ranking.scores) != n:
        raise OrderingError(f"{who} returned {len(ranking.scores)} scores for {n} candidates; give one per candidate")
    out: list[Hit] = []
    for rank, position in enumerate(order[:top_k], 1):
        hit = hits[position]
        score = float(ranking.scores[position]) if ranking.scores is not None else (n - rank + 1) / n
        details = {**hit.details, "rerank": score, "rerank_rank": float(rank)}
        details.setdefault("retrieval", float(hit.score))
        out.append(dataclasses.replace(hit, score=score, details=details))
    return out


def _positions(candidates: Sequence[Hit], returned: object, key: Callable[[Any], object], who: str) -> list[int]:
    """The candidate positions of the hits a reranker returned, matched by ``key``; OrderingError for
    anything that is not one of the candidates (:func:`rerank` checks that each comes exactly once)."""
    if isinstance(returned, (str, bytes)) or not hasattr(returned, "__iter__"):
        raise OrderingError(f"{who} must return a list of the candidate documents, got {type(returned).__name__}")
    position = {key(hit): i for i, hit in enumerate(candidates)}
    order = []
    for item in returned:
        if key(item) not in position:
            raise OrderingError(f"{who} returned an object that is not one of the original candidates "
                                f"({str(item)[:80]!r}); it may only reorder the documents it was given")
        order.append(position[key(item)])
    return order


class CallableReranker:
    """A user function ``fn(query, documents) -> documents`` as a reranker: it gets the candidate hits (they
    read like LangChain documents) and must return the same objects, each exactly once, best first."""

    def __init__(self, fn: Callable[[str, list[Hit]], Sequence[Hit]]) -> None:
        self.fn = fn
        self.name = f"callable:{getattr(fn, '__name__', type(fn).__name__)}"

    def rank(self, query: str, hits: Sequence[Hit]) -> Ranking:
        candidates = list(hits)
        return Ranking(_positions(candidates, self.fn(query, list(candidates)), id, self.name))


class LegacyReranker:
    """A reranker with the older ``rerank(query, hits, top_k) -> hits`` (or async ``arerank``) method.

    Asked for every candidate, its hits are mapped back to positions by chunk id (so an omitted,
    duplicated or invented one fails validation); their scores become the rerank scores.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = str(getattr(inner, "name", None) or type(inner).__name__)

    def rank(self, query: str, hits: Sequence[Hit]) -> Ranking:
        candidates = list(hits)
        if not candidates:
            return Ranking([])
        arerank = getattr(self.inner, "arerank", None)
        if not hasattr(self.inner, "rerank") and arerank is not None and inspect.iscoroutinefunction(arerank):
            from akasha.providers.sync_bridge import run_sync

            returned = list(run_sync(arerank(query, candidates, len(candidates))))
        else:
            returned = list(self.inner.rerank(query, candidates, len(candidates)))
        order = _positions(candidates, returned, lambda hit: getattr(getattr(hit, "chunk", None), "id", None),
                           self.name)
        scores = [0.0] * len(candidates)
        for position, item in zip(order, returned, strict=True):
            scores[position] = float(getattr(item, "score", 0.0))
        return Ranking(order, scores)


def as_reranker(obj: object) -> Reranker:
    """``obj`` as a :class:`Reranker`: itself, a :class:`LegacyReranker` around it, or a callable wrapped;
    ConfigError for anything with neither ``rank``, ``rerank``/``arerank`` nor ``__call__``."""
    if isinstance(obj, Reranker):
        return obj
    if hasattr(obj, "rerank") or hasattr(obj, "arerank"):
        return LegacyReranker(obj)
    if builtins.callable(obj):
        return CallableReranker(obj)
    raise ConfigError(f"{obj!r} is not a reranker: give an object with rank(query, hits) -> Ranking, "
                      "or a callable (query, documents) -> documents")


RerankerSpec = None | str | Callable[[str, list[Hit]], list[Hit]] | Reranker

__all__ = ["CallableReranker", "DEFAULT_LOCAL_RERANKER", "LegacyReranker", "as_reranker", "is_llm", "Ranking",
           "Reranker", "RerankerSpec", "rerank", "resolve_reranker", "validate_reranker", "validate_top_k"]
