"""A local cross-encoder reranker (``"local"``, ``"bge"``, ``"local:<model>"``, ``"bge:<model>"``).

Any Hugging Face sequence-classification model (hub name or local folder) scores each (question,
chunk) pair on ``device`` (:mod:`akasha.device`), loaded on the first :meth:`LocalReranker.rank`
call; ``trust_remote_code`` stays False unless asked for. Needs the ``full`` extra.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from akasha.device import resolve_device, validate_device
from akasha.errors import ConfigError, MissingExtraError
from akasha.rerank import Ranking
from akasha.types import Hit

logger = logging.getLogger(__name__)


class LocalReranker:
    """Cross-encoder scores for (query, text) pairs, highest first."""

    def __init__(self, model: str = "BAAI/bge-reranker-base", *, batch_size: int = 16, max_length: int = 512,
                 device: str = "auto", trust_remote_code: bool = False) -> None:
        if batch_size < 1:
            raise ConfigError(f"reranker batch_size must be positive, got {batch_size}")
        self.model_name = model
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = validate_device(device)
        #: The device the model was loaded onto (``device`` with "auto" resolved), once loaded.
        self.loaded_device: str | None = None
        self.trust_remote_code = trust_remote_code
        self.name = f"local:{model}"
        self._tokenizer: Any = None
        self._model: Any = None

    def _load(self) -> None:
        if self._model is not None:
            return
        try:
            import torch  # noqa: F401
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError as exc:
            raise MissingExtraError(exc.name or "transformers", "full", "the local reranker") from exc
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(self.model_name, trust_remote_code=self.trust_remote_code)
            model = AutoModelForSequenceClassification.from_pretrained(self.model_name,
                                                                       trust_remote_code=self.trust_remote_code)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"could not load reranker model {self.model_name!r}: {exc}. Give a local folder or "
                              "a Hugging Face model name that is downloaded (or allow downloads: unset "
                              "HF_HUB_OFFLINE)") from exc
        device = resolve_device(self.device)
        self._model = model.to(device).eval()
        self.loaded_device = device
        logger.info("loaded reranker model %s on %s", self.model_name, device)

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance score per text (the single logit, or the last class's logit)."""
        self._load()  # MissingExtraError (not a bare ModuleNotFoundError) when torch/transformers are missing
        import torch

        out: list[float] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            encoded = self._tokenizer([query] * len(batch), batch, padding=True, truncation=True,
                                      max_length=self.max_length, return_tensors="pt").to(self.loaded_device)
            with torch.inference_mode():
                logits = self._model(**encoded).logits
            column = logits[:, 0] if logits.shape[-1] == 1 else logits[:, -1]
            out.extend(float(x) for x in column.float().cpu())
        return out

    def rank(self, query: str, hits: Sequence[Hit]) -> Ranking:
        return Ranking.by_score(self.scores(query, [h.chunk.text for h in hits]) if hits else [])
