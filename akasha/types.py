"""Plain data objects that flow between the pipeline stages: Document -> Chunk -> Hit -> QueryResult."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Document:
    """Text with metadata, as produced by a loader or passed in by a user. ``id`` identifies the document for
    re-ingestion (a new version replaces the old one); None: the chunker derives ``sha256:<16 hex>`` from the text.
    """

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str | None = None

    @property
    def page_content(self) -> str:
        """LangChain-style alias of :attr:`text`."""
        return self.text


@dataclass
class Chunk:
    """A piece of a document: the unit that is embedded, indexed and retrieved. ``metadata`` carries the
    document's plus at least ``chunk_index``; chunks from files also carry ``source`` (path), ``page`` (PDF,
    1-based), ``chunk_id`` and ``content_hash`` (sha256 of ``text``)."""

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def page_content(self) -> str:
        """LangChain-style alias of :attr:`text`."""
        return self.text

    @property
    def doc_id(self) -> str:
        """The id of the document this chunk came from (the part before ``#``)."""
        return self.id.rsplit("#", 1)[0]


@dataclass
class Hit:
    """A chunk ranked for a question: ``score`` from the last stage that ranked it (fusion or rerank),
    ``source`` the retrievers that found it (``vector``, ``bm25`` or ``bm25+vector``), ``details`` every score
    collected on the way (``vector``, ``bm25``, ``rrf``/``fused``, ``rerank``)."""

    chunk: Chunk
    score: float
    source: str = "vector"
    details: dict[str, float] = field(default_factory=dict)

    # Conveniences so a Hit reads like the document it wraps.
    @property
    def id(self) -> str:
        return self.chunk.id

    @property
    def text(self) -> str:
        return self.chunk.text

    @property
    def page_content(self) -> str:
        return self.chunk.text

    @property
    def metadata(self) -> dict[str, Any]:
        return self.chunk.metadata

    @property
    def path(self) -> str | None:
        """The file the chunk came from, when it came from a file."""
        return self.chunk.metadata.get("source")

    @property
    def page(self) -> int | None:
        """The 1-based PDF page, when the chunk came from a PDF."""
        return self.chunk.metadata.get("page")

    def citation(self) -> str:
        """``file`` or ``file, page N``: how an answer names this hit's origin."""
        where = str(self.path or self.chunk.doc_id)
        return f"{where}, page {self.page}" if self.page is not None else where


@dataclass
class QueryResult:
    """The outcome of one retrieval: ranked hits plus a per-stage trace."""

    hits: list[Hit] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)

    @property
    def context(self) -> str:
        """The hit texts joined by blank lines, ready for a prompt."""
        return "\n\n".join(hit.chunk.text for hit in self.hits)

    def to_list(self) -> list[dict[str, Any]]:
        """The Astromesh runtime shape: doc_id (the chunk id), content, metadata, score, source."""
        return [{"doc_id": hit.chunk.id, "content": hit.chunk.text, "metadata": dict(hit.chunk.metadata),
                 "score": hit.score, "source": hit.source} for hit in self.hits]

    def __len__(self) -> int:
        return len(self.hits)

    def _repr_html_(self) -> str:
        return hits_to_html(self.hits)


def hits_to_html(hits: list[Hit], snippet_chars: int = 160) -> str:
    """Render hits as an HTML table (source, page, scores, snippet) for notebooks."""
    rows = []
    for rank, hit in enumerate(hits, 1):
        scores = ", ".join(f"{k}={v:.4g}" for k, v in hit.details.items())
        snippet = hit.chunk.text[:snippet_chars].replace("\n", " ")
        if len(hit.chunk.text) > snippet_chars:
            snippet += "…"
        rows.append(f"<tr><td>{rank}</td><td>{html.escape(str(hit.path or hit.chunk.doc_id))}</td>"
                    f"<td>{'' if hit.page is None else hit.page}</td><td>{hit.score:.4g}</td>"
                    f"<td>{html.escape(scores)}</td><td>{html.escape(snippet)}</td></tr>")
    head = "<tr><th>#</th><th>source</th><th>page</th><th>score</th><th>scores</th><th>snippet</th></tr>"
    return f"<table>{head}{''.join(rows)}</table>"
