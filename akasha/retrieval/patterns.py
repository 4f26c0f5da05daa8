"""Retrieval patterns of a RAGPipeline: which queries run against which retrievers, fused how.

* ``naive``: the question against the vector index.
* ``hybrid``: the question against the vector index and BM25, fused by ``rrf`` (default, k=60),
  ``weighted`` (``hybrid.weights`` = [vector, bm25], default [0.5, 0.5]) or ``adaptive`` (as the
  facade's ``auto``, with the index's :class:``akasha.retrieval.search.SearchSettings``).
* ``multi_query``: the question and ``variants`` LLM rewrites against the vector index, fused by RRF.
* ``hyde``: the question and an LLM-written hypothetical answer against the vector index, fused by RRF.
* :class:`IndexSearch`: the facade's ``search_type``: the index's own search, which fuses inside.

A pattern's :meth:`Pattern.transform` (a method or a plugin's coroutine) is the pipeline's ``transform`` stage.
"""

from __future__ import annotations

import inspect
import math
import re
from dataclasses import dataclass
from typing import Any

from akasha.errors import SpecError

FUSIONS = ("rrf", "weighted", "adaptive")


def ask_model(llm: Any, prompt: str) -> str:
    """One user message to a chat model, returning its text (an async-only model runs to completion)."""
    from akasha.llm.base import GenerationOptions

    messages = [{"role": "user", "content": prompt}]
    options = GenerationOptions(max_output_tokens=512, temperature=0.0)
    generate = getattr(llm, "generate", None)
    if generate is None:
        agenerate = getattr(llm, "agenerate", None)
        if agenerate is None or not inspect.iscoroutinefunction(agenerate):
            raise TypeError(f"{llm!r} is not a chat model: it needs generate(messages, options)")
        from akasha.providers.sync_bridge import run_sync

        return str(run_sync(agenerate(messages, options)))
    return str(generate(messages, options))


@dataclass
class Pattern:
    """How a question becomes ranked candidates: queries, retrievers and fusion."""

    name: str
    retrievers: tuple[str, ...] = ("vector",)
    fusion: str = "none"  # none | rrf | weighted | adaptive
    weights: tuple[float, ...] | None = None
    needs_llm: bool = False

    def transform(self, query: str, llm: Any) -> list[str]:
        """The queries to run; the base pattern runs the question as it is."""
        return [query]

    @property
    def has_transform(self) -> bool:
        return type(self).transform is not Pattern.transform


_NUMBERING = re.compile(r"^\s*(?:[-*•]|\d+[.)]|q\d*[:.)])\s*", re.IGNORECASE)


def parse_variants(text: str, limit: int, question: str) -> list[str]:
    """Non-empty, de-duplicated lines of an LLM answer, list markers stripped, at most ``limit``."""
    seen = {question.strip().lower()}
    out: list[str] = []
    for line in text.splitlines():
        line = _NUMBERING.sub("", line).strip().strip('"').strip()
        if line and line.lower() not in seen:
            seen.add(line.lower())
            out.append(line)
        if len(out) == limit:
            break
    return out


@dataclass
class MultiQuery(Pattern):
    """Rewrites the question ``variants`` times and fuses every list by RRF."""

    variants: int = 3

    def transform(self, query: str, llm: Any) -> list[str]:
        prompt = (
            f"Write {self.variants} different rewordings of the question below, one per line, "
            "without numbering or commentary. Keep the meaning; vary the wording.\n\n"
            f"Question: {query}"
        )
        return [query, *parse_variants(ask_model(llm, prompt), self.variants, query)]


@dataclass
class HyDE(Pattern):
    """Searches with a hypothetical answer passage as well as the question (RRF)."""

    def transform(self, query: str, llm: Any) -> list[str]:
        prompt = (
            "Write a short passage (3-5 sentences) that answers the question below, as it might "
            f"appear in a reference document.\n\nQuestion: {query}"
        )
        passage = ask_model(llm, prompt).strip()
        return [query, passage] if passage else [query]


@dataclass
class IndexSearch(Pattern):
    """The facade's ``search_type`` as a pattern: the index's own search answers (fusion inside)."""

    search_type: Any = "auto"


def search_type_pattern(search_type: Any) -> IndexSearch:
    """The pattern for a facade ``search_type`` (a name from SEARCH_TYPES or a callable; ConfigError otherwise)."""
    from akasha.retrieval.search import validate_search_type

    checked = validate_search_type(search_type)
    name = checked if isinstance(checked, str) else getattr(checked, "__name__", type(checked).__name__)
    return IndexSearch(str(name), ("index",), "none", None, False, search_type=checked)


def _section(config: dict[str, Any], key: str) -> dict[str, Any]:
    value = config.get(key) or {}
    if not isinstance(value, dict):
        raise SpecError(f"retrieval.{key} must be a mapping, got {type(value).__name__}")
    return value


def make_naive(config: dict[str, Any], context: Any = None) -> Pattern:
    """Registry factory for ``pattern: naive``."""
    return Pattern("naive")


def make_hybrid(config: dict[str, Any], context: Any = None) -> Pattern:
    """Registry factory for ``pattern: hybrid`` (``retrieval.fusion`` wins over ``hybrid.fusion``)."""
    hybrid = _section(config, "hybrid")
    fusion = config.get("fusion") or hybrid.get("fusion") or "rrf"
    if fusion not in FUSIONS:
        raise SpecError(f"unknown retrieval fusion {fusion!r}; known: {', '.join(FUSIONS)}")
    weights = hybrid.get("weights")
    if weights is None:
        weights = [0.5, 0.5]
    if (
        not isinstance(weights, list)
        or len(weights) != 2
        or not all(isinstance(w, (int, float)) and not isinstance(w, bool) for w in weights)
        or not all(math.isfinite(w) and w >= 0 for w in weights)
        or sum(weights) <= 0
    ):
        raise SpecError(f"retrieval.hybrid.weights must be exactly two finite, non-negative numbers [vector, bm25], "
                        f"not both 0; got {weights!r}")
    return Pattern("hybrid", ("vector", "bm25"), fusion, tuple(float(w) for w in weights))


def make_multi_query(config: dict[str, Any], context: Any = None) -> MultiQuery:
    """Registry factory for ``pattern: multi_query`` (``multi_query.variants`` wins over ``variants``)."""
    nested = _section(config, "multi_query")
    variants = nested.get("variants", config.get("variants", 3))
    if not isinstance(variants, int) or isinstance(variants, bool) or variants <= 0:
        raise SpecError(f"retrieval.multi_query.variants must be a positive integer, got {variants!r}")
    return MultiQuery("multi_query", ("vector",), "rrf", None, True, variants)


def make_hyde(config: dict[str, Any], context: Any = None) -> HyDE:
    """Registry factory for ``pattern: hyde``."""
    return HyDE("hyde", ("vector",), "rrf", None, True)


__all__ = ["Pattern", "MultiQuery", "HyDE", "IndexSearch", "search_type_pattern", "parse_variants", "ask_model",
           "make_naive", "make_hybrid", "make_multi_query", "make_hyde"]
