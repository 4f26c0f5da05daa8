"""The recursive character splitter behind the ``recursive`` chunker.

It splits on the coarsest separator the text contains (kept at the end of its piece), splits
pieces still too long on the next ones, and merges neighbours back into stripped chunks of at most
``chunk_size`` (by ``length``), each sharing up to ``chunk_overlap`` with the next. Its chunks are,
character for character, those of langchain-text-splitters' ``RecursiveCharacterTextSplitter(separators,
keep_separator="end", strip_whitespace=True, ...)`` (``tests/test_chunking_recursive.py`` compares the
two), without that package's dependencies (README "Install size"). A piece that no separator splits
comes back as it is, even over ``chunk_size``; :func:`akasha.chunking.recursive.split_text` windows it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

Length = Callable[[str], int]


class RecursiveSplitter:
    """Recursive character splitting with separators kept at the end of their piece.

    ``separators``: plain strings, coarsest first, none empty. ``chunk_size`` and ``chunk_overlap``
    are in the unit of ``length`` (characters by default)."""

    def __init__(self, separators: Sequence[str], chunk_size: int, chunk_overlap: int, length: Length = len) -> None:
        if not separators or any(not s for s in separators):
            raise ValueError(f"separators must be non-empty strings, got {list(separators)!r}")
        if chunk_size <= 0 or not 0 <= chunk_overlap < chunk_size:
            raise ValueError(f"need 0 <= chunk_overlap < chunk_size, got {chunk_overlap} and {chunk_size}")
        self.separators = tuple(separators)
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.length = length

    def split_text(self, text: str) -> list[str]:
        """``text`` as stripped, non-empty chunks (see the module docstring)."""
        return self._split(text, self.separators)

    def _split(self, text: str, separators: tuple[str, ...]) -> list[str]:
        """Split on the first separator ``text`` contains (or the last one); recurse into long pieces."""
        finer: tuple[str, ...] = ()
        separator = separators[-1]
        for index, candidate in enumerate(separators):
            if candidate in text:
                separator, finer = candidate, separators[index + 1:]
                break
        chunks: list[str] = []
        short: list[str] = []  # consecutive pieces under chunk_size, merged together
        for piece in split_keeping_separator(text, separator):
            if self.length(piece) < self.chunk_size:
                short.append(piece)
                continue
            if short:
                chunks.extend(self._merge(short))
                short = []
            chunks.extend(self._split(piece, finer) if finer else [piece])
        if short:
            chunks.extend(self._merge(short))
        return chunks

    def _merge(self, pieces: list[str]) -> list[str]:
        """Join consecutive pieces into chunks of at most ``chunk_size``, overlapping by up to ``chunk_overlap``.

        A chunk is emitted when the next piece would not fit; then pieces leave the front of the
        window until what remains is at most ``chunk_overlap`` long and leaves room for the next piece.
        """
        chunks: list[str] = []
        window: deque[str] = deque()
        sizes: deque[int] = deque()
        total = 0
        for piece in pieces:
            size = self.length(piece)
            if total + size > self.chunk_size and window:
                chunk = "".join(window).strip()
                if chunk:
                    chunks.append(chunk)
                while total > self.chunk_overlap or (total + size > self.chunk_size and total > 0):
                    window.popleft()
                    total -= sizes.popleft()
            window.append(piece)
            sizes.append(size)
            total += size
        chunk = "".join(window).strip()
        if chunk:
            chunks.append(chunk)
        return chunks


def split_keeping_separator(text: str, separator: str) -> list[str]:
    """``text`` split after each ``separator`` (kept at the end of its piece); empty pieces dropped:
    ``split_keeping_separator("a. b. c", ". ")`` is ``["a. ", "b. ", "c"]``."""
    parts = text.split(separator)
    pieces = [part + separator for part in parts[:-1]]
    pieces.append(parts[-1])
    return [piece for piece in pieces if piece]


__all__ = ["RecursiveSplitter", "split_keeping_separator"]
