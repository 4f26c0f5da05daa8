"""Fixed-size chunking, plus the splitter objects the RAGPipeline spec builds.

``fixed`` cuts every ``chunk_size`` characters, stepping ``chunk_size - overlap``.
:class:`PieceSplitter` turns any ``text -> pieces`` function into a splitter whose chunks have
the ids and metadata :func:`akasha.chunking.chunk_documents` gives.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from akasha.chunking.recursive import make_chunks, validate_chunking
from akasha.errors import SpecError
from akasha.types import Chunk, Document

#: The RAGPipeline reference's default separators for ``recursive`` (coarsest first).
SPEC_SEPARATORS: tuple[str, ...] = ("\n\n", "\n", ". ", " ")
#: RAGPipeline chunking defaults (characters).
SPEC_CHUNK_SIZE = 500
SPEC_OVERLAP = 50


def split_fixed(text: str, chunk_size: int, overlap: int = 0) -> list[str]:
    """Windows of ``chunk_size`` characters starting every ``chunk_size - overlap`` characters."""
    validate_chunking(chunk_size, overlap)
    step = chunk_size - overlap
    pieces = []
    for start in range(0, len(text), step):
        piece = text[start : start + chunk_size]
        if piece.strip():
            pieces.append(piece)
        if start + chunk_size >= len(text):
            break
    return pieces


class PieceSplitter:
    """A splitter from a ``text -> list[str]`` function; ``split_documents`` makes the chunks."""

    def __init__(self, strategy: str, split: Callable[[str], list[str]]) -> None:
        self.strategy = strategy
        self._split = split

    def split_documents(self, documents: Iterable[Document]) -> list[Chunk]:
        chunks: list[Chunk] = []
        for document in documents:
            chunks.extend(make_chunks(document, self._split(document.text), self.strategy))
        return chunks

    def __repr__(self) -> str:
        return f"PieceSplitter({self.strategy!r})"


def window(config: dict[str, Any]) -> tuple[int, int]:
    """``chunk_size`` and ``overlap`` from a chunking section, validated (SpecError)."""
    chunk_size = config.get("chunk_size", SPEC_CHUNK_SIZE)
    overlap = config.get("overlap", SPEC_OVERLAP)
    try:
        validate_chunking(chunk_size, overlap)
    except ValueError as exc:
        raise SpecError(
            f"chunking: chunk_size={chunk_size!r}, overlap={overlap!r} is not a valid window "
            f"(need chunk_size > 0 and 0 <= overlap < chunk_size): {exc}"
        ) from None
    return chunk_size, overlap


def size_only(config: dict[str, Any]) -> int:
    """``chunk_size`` for strategies that ignore ``overlap`` (sentence, semantic)."""
    chunk_size = config.get("chunk_size", SPEC_CHUNK_SIZE)
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size <= 0:
        raise SpecError(f"chunking.chunk_size must be a positive integer, got {chunk_size!r}")
    return chunk_size


def make_fixed_splitter(config: dict[str, Any], context: Any = None) -> PieceSplitter:
    """Registry factory for ``strategy: fixed``."""
    chunk_size, overlap = window(config)
    return PieceSplitter("fixed", lambda text: split_fixed(text, chunk_size, overlap))


def make_recursive_splitter(config: dict[str, Any], context: Any = None) -> PieceSplitter:
    """Registry factory for ``strategy: recursive`` (reference separators unless ``separators`` is set)."""
    from akasha.chunking.recursive import split_text

    chunk_size, overlap = window(config)
    separators = config.get("separators", list(SPEC_SEPARATORS))
    if not isinstance(separators, list) or not all(isinstance(s, str) for s in separators) or not separators:
        raise SpecError(f"chunking.separators must be a non-empty list of strings, got {separators!r}")
    return PieceSplitter("recursive", lambda text: split_text(text, chunk_size, overlap, separators))


__all__ = ["SPEC_SEPARATORS", "PieceSplitter", "make_chunks", "split_fixed", "make_fixed_splitter",
           "make_recursive_splitter"]
