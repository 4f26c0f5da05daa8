"""``reranking.provider: cross_encoder``: a sentence-transformers CrossEncoder scores (query, chunk) pairs.

The model (or a local folder) is loaded at build, so a bad name fails there. Needs the ``full``
extra. :func:`rescore` applies the same score rule for plugins written for the older
``rerank(query, hits, top_k) -> hits`` contract.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from akasha.device import resolve_device
from akasha.errors import MissingExtraError
from akasha.rerank import Ranking
from akasha.types import Hit

DEFAULT_MODEL = "cross-encoder/ms-marco-MiniLM-L-6-v2"


def rescore(hits: Sequence[Hit], scores: Sequence[float], top_k: int) -> list[Hit]:
    """New hits ordered by ``scores`` (best first), at most ``top_k`` of them."""
    if len(scores) != len(hits):
        raise ValueError(f"reranker returned {len(scores)} scores for {len(hits)} hits")
    order = sorted(range(len(hits)), key=lambda i: -float(scores[i]))[: max(0, top_k)]
    out = []
    for i in order:
        hit = hits[i]
        details = dict(hit.details)
        details.setdefault("retrieval", hit.score)
        details["rerank"] = float(scores[i])
        out.append(Hit(chunk=hit.chunk, score=float(scores[i]), source=hit.source, details=details))
    return out


class CrossEncoderReranker:
    """Scores every candidate with a cross-encoder and keeps the best ``top_k``."""

    def __init__(self, model: str = DEFAULT_MODEL, batch_size: int = 32, device: str = "auto") -> None:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise MissingExtraError("sentence-transformers", "full", "reranking provider 'cross_encoder'") from None
        self.name = f"cross_encoder:{model}"
        self.model_name = model
        self.batch_size = batch_size
        self.device = resolve_device(device)
        self._model = CrossEncoder(model, device=self.device)

    def rank(self, query: str, hits: Sequence[Hit]) -> Ranking:
        """Every candidate, highest cross-encoder score first (ties keep the retrieval order)."""
        if not hits:
            return Ranking([])
        return Ranking.by_score(self._model.predict([(query, hit.chunk.text) for hit in hits],
                                                    batch_size=self.batch_size, show_progress_bar=False))


def make_cross_encoder_reranker(config: dict[str, Any], context: Any = None) -> CrossEncoderReranker:
    """Registry factory for ``reranking.provider: cross_encoder``."""
    return CrossEncoderReranker(str(config.get("model") or DEFAULT_MODEL))


__all__ = ["CrossEncoderReranker", "make_cross_encoder_reranker", "rescore", "DEFAULT_MODEL"]
