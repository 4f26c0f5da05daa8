"""Recursive character chunking: split on the coarsest separator that fits.

Wraps langchain-text-splitters' ``RecursiveCharacterTextSplitter`` with
separators that work for English, Chinese and Japanese: paragraph and line
breaks first, then sentence ends (``。！？`` and ``. ! ?``), then clause marks
(``；，、`` and ``; ,``), then spaces (including the full-width ``\\u3000``).
Sentence and clause marks stay at the *end* of the piece they close, so a
Chinese chunk ends with its ``。`` instead of the next chunk starting with it.

The final fallback, cutting a run that has no separator at all into
``chunk_size`` windows, is done here in one pass instead of by langchain's
character-by-character ``""`` separator: a 50 MB single-line file would
otherwise mean 50 million Python-level list items.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from akasha.types import Chunk, Document

#: Strategy name written to every chunk's metadata.
STRATEGY = "recursive"

#: Default separators, coarsest first. CJK punctuation comes before the
#: English forms because it needs no trailing space to be a boundary.
DEFAULT_SEPARATORS: tuple[str, ...] = (
    "\n\n",
    "\n",
    "。",
    "！",
    "？",
    "．",
    ". ",
    "! ",
    "? ",
    "；",
    "; ",
    "：",
    "，",
    "、",
    ", ",
    "\u3000",
    " ",
    "",
)


def validate_chunking(chunk_size: int, overlap: int) -> None:
    """Raise ``ValueError`` unless ``0 <= overlap < chunk_size`` (sizes in characters)."""
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size <= 0:
        raise ValueError(f"chunk_size must be a positive number of characters, got {chunk_size!r}")
    if not isinstance(overlap, int) or isinstance(overlap, bool) or overlap < 0:
        raise ValueError(f"chunk_overlap must be 0 or more characters, got {overlap!r}")
    if overlap >= chunk_size:
        raise ValueError(
            f"chunk_overlap ({overlap}) must be smaller than chunk_size ({chunk_size}); "
            f"try chunk_overlap={default_overlap(chunk_size)}"
        )


def default_overlap(chunk_size: int) -> int:
    """The overlap used when none is given: a tenth of the chunk, at most 200 characters."""
    return max(0, min(200, chunk_size // 10))


@lru_cache(maxsize=32)
def _splitter(chunk_size: int, overlap: int, separators: tuple[str, ...]) -> Any:
    # Imported here: langchain-text-splitters pulls in langchain-core (~0.4 s).
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    return RecursiveCharacterTextSplitter(
        separators=list(separators),
        keep_separator="end",
        chunk_size=chunk_size,
        chunk_overlap=overlap,
        strip_whitespace=True,
    )


def _hard_windows(piece: str, chunk_size: int, overlap: int) -> list[str]:
    """Cut a separator-free run into ``chunk_size`` windows that overlap by ``overlap``."""
    step = chunk_size - overlap
    out: list[str] = []
    start = 0
    n = len(piece)
    while start < n:
        window = piece[start : start + chunk_size].strip()
        if window:
            out.append(window)
        if start + chunk_size >= n:
            break
        start += step
    return out


def split_text(
    text: str,
    chunk_size: int = 1000,
    overlap: int | None = None,
    separators: Sequence[str] | None = None,
) -> list[str]:
    """Split ``text`` into pieces of at most ``chunk_size`` characters.

    ``overlap`` defaults to :func:`default_overlap`; it is an upper bound on how
    many characters consecutive pieces share (langchain keeps whole splits, so it
    is often less). Leading and trailing whitespace of each piece is stripped and
    whitespace-only pieces are dropped. Pieces are never longer than
    ``chunk_size``: a run with none of the ``separators`` is cut into windows.
    """
    if overlap is None:
        overlap = default_overlap(chunk_size)
    validate_chunking(chunk_size, overlap)
    if not text or text.isspace():
        return []
    seps = tuple(DEFAULT_SEPARATORS if separators is None else separators)
    # Drop the "" fallback: runs without separators are windowed below, in O(n).
    seps = tuple(s for s in seps if s != "") or ("\n",)
    pieces = _splitter(chunk_size, overlap, seps).split_text(text)
    out: list[str] = []
    for piece in pieces:
        # langchain returns pieces it could not split further as they are (unstripped).
        piece = piece.strip()
        if len(piece) > chunk_size:
            out.extend(_hard_windows(piece, chunk_size, overlap))
        elif piece:
            out.append(piece)
    return out


def document_id(document: Document) -> str:
    """``Document.id`` when set, else ``sha256:`` + the first 16 hex digits of the text's hash."""
    if document.id:
        return document.id
    return "sha256:" + hashlib.sha256(document.text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def chunk_documents(
    documents: Iterable[Document],
    chunk_size: int = 1000,
    overlap: int | None = None,
    separators: Sequence[str] | None = None,
) -> list[Chunk]:
    """Split each document with :func:`split_text` into :class:`~akasha.types.Chunk` objects.

    Chunk ids are ``"<doc_id>#<n>"`` (``n`` counts from 0 within the document);
    metadata is the document's metadata plus ``chunk_index``, ``chunk_id``,
    ``content_hash`` (sha256 hex of the chunk text) and ``strategy``.
    """
    if overlap is None:
        overlap = default_overlap(chunk_size)
    validate_chunking(chunk_size, overlap)
    chunks: list[Chunk] = []
    for document in documents:
        doc_id = document_id(document)
        for index, piece in enumerate(split_text(document.text, chunk_size, overlap, separators)):
            chunk_id = f"{doc_id}#{index}"
            metadata = dict(document.metadata)
            metadata.update(
                chunk_index=index,
                chunk_id=chunk_id,
                content_hash=hashlib.sha256(piece.encode("utf-8", "surrogatepass")).hexdigest(),
                strategy=STRATEGY,
            )
            chunks.append(Chunk(id=chunk_id, text=piece, metadata=metadata))
    return chunks
