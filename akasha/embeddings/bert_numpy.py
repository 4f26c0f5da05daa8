"""A BERT sentence encoder in plain numpy, for questions and small batches without importing torch.

Asking a question over an index that is already built needs one vector: the
question's. Loading it through sentence-transformers imports torch and
transformers first (seconds on a small machine, most of an offline re-run).
This module runs the same computation with numpy on the same weights: the
``tokenizers`` package (fast, Rust) cuts the text exactly as the model's
``tokenizer.json`` says, the weights come from ``model.safetensors``, and the
encoder is the BERT forward pass (embeddings, then per layer self-attention and
a GELU feed-forward block, each followed by LayerNorm), mean-pooled over real
tokens and L2-normalised, as ``modules.json`` asks. The vectors agree with
sentence-transformers' to about 1e-6.

Only plain sentence-transformers BERT folders qualify (:func:`supports`):
``model_type`` bert, mean pooling, no Dense layer. Anything else keeps using
sentence-transformers.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

_SUPPORTED_MODULES = ("models.Transformer", "models.Pooling", "models.Normalize")


def supports(folder: str | Path) -> bool:
    """True when ``folder`` holds a BERT sentence-transformers model this encoder can run."""
    root = Path(folder)
    try:
        config = json.loads((root / "config.json").read_text(encoding="utf-8"))
        modules = json.loads((root / "modules.json").read_text(encoding="utf-8"))
        pooling = next((m for m in modules if str(m.get("type", "")).endswith("models.Pooling")), None)
        if pooling is None:
            return False
        pool = json.loads((root / pooling["path"] / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError, KeyError):
        return False
    mean_only = pool.get("pooling_mode_mean_tokens") and not any(
        pool.get(key) for key in ("pooling_mode_cls_token", "pooling_mode_max_tokens",
                                  "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens",
                                  "pooling_mode_lasttoken"))
    return (
        config.get("model_type") == "bert"
        and config.get("hidden_act") == "gelu"
        and config.get("position_embedding_type", "absolute") == "absolute"
        and bool(mean_only)
        and all(str(m.get("type", "")).endswith(_SUPPORTED_MODULES) for m in modules)
        and (root / "model.safetensors").is_file()
        and (root / "tokenizer.json").is_file()
        and _has_module("tokenizers")
        and _has_module("safetensors")
    )


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


class NumpyBertEncoder:
    """``encode(texts) -> (n, hidden)`` float32 sentence vectors, as sentence-transformers would give."""

    def __init__(self, folder: str | Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        root = Path(folder)
        config = json.loads((root / "config.json").read_text(encoding="utf-8"))
        modules = json.loads((root / "modules.json").read_text(encoding="utf-8"))
        self.normalize = any(str(m.get("type", "")).endswith("models.Normalize") for m in modules)
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        max_length = int(config.get("max_position_embeddings", 512))
        st_config = root / "sentence_bert_config.json"
        if st_config.is_file():
            max_length = min(max_length, int(json.loads(st_config.read_text(encoding="utf-8")).get(
                "max_seq_length") or max_length))
        self.tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_length)
        weights = load_file(str(root / "model.safetensors"))
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""

        def get(name: str) -> np.ndarray:
            return np.ascontiguousarray(weights[prefix + name], dtype=np.float32)

        self.word = get("embeddings.word_embeddings.weight")
        self.position = get("embeddings.position_embeddings.weight")
        self.token_type = get("embeddings.token_type_embeddings.weight")
        self.embed_norm = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))
        self.layers: list[dict[str, Any]] = []
        for i in range(int(config["num_hidden_layers"])):
            at = f"encoder.layer.{i}."
            # one fused (hidden, 3 * hidden) projection for query, key and value
            qkv = np.concatenate([get(at + f"attention.self.{n}.weight") for n in ("query", "key", "value")])
            self.layers.append({
                "qkv": np.ascontiguousarray(qkv.T),
                "qkv_bias": np.concatenate([get(at + f"attention.self.{n}.bias") for n in ("query", "key", "value")]),
                "out": np.ascontiguousarray(get(at + "attention.output.dense.weight").T),
                "out_bias": get(at + "attention.output.dense.bias"),
                "norm1": (get(at + "attention.output.LayerNorm.weight"), get(at + "attention.output.LayerNorm.bias")),
                "up": np.ascontiguousarray(get(at + "intermediate.dense.weight").T),
                "up_bias": get(at + "intermediate.dense.bias"),
                "down": np.ascontiguousarray(get(at + "output.dense.weight").T),
                "down_bias": get(at + "output.dense.bias"),
                "norm2": (get(at + "output.LayerNorm.weight"), get(at + "output.LayerNorm.bias")),
            })
        self.dimension = int(self.word.shape[1])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Sentence vectors of ``texts`` (batched by similar length to keep padding small)."""
        texts = list(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), 16):
            rows = order[start : start + 16]
            out[rows] = self._forward([encodings[i] for i in rows])
        return out

    def _forward(self, encodings: list[Any]) -> np.ndarray:
        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), length), dtype=np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros((len(encodings), length), dtype=np.float32)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            types[row, :n] = encoding.type_ids
            mask[row, :n] = 1.0
        batch, hidden = len(encodings), self.dimension
        head = hidden // self.heads
        # Dense layers work on one (batch * length, hidden) matrix: one BLAS call each.
        x = (self.word[ids] + self.position[:length][None, :, :] + self.token_type[types]).reshape(-1, hidden)
        x = _layer_norm(x, *self.embed_norm, self.eps)
        attention_bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        scale = np.float32(1.0 / math.sqrt(head))
        for layer in self.layers:
            qkv = x @ layer["qkv"] + layer["qkv_bias"]
            # (3, batch, heads, length, head), contiguous so the batched matmuls below use BLAS
            q, k, v = np.ascontiguousarray(qkv.reshape(batch, length, 3, self.heads, head).transpose(2, 0, 3, 1, 4))
            scores = (q * scale) @ k.transpose(0, 1, 3, 2) + attention_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(-1, hidden)
            x = _layer_norm(x + context @ layer["out"] + layer["out_bias"], *layer["norm1"], self.eps)
            inner = _gelu(x @ layer["up"] + layer["up_bias"])
            x = _layer_norm(x + inner @ layer["down"] + layer["down_bias"], *layer["norm2"], self.eps)
        x = x.reshape(batch, length, hidden)
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        if self.normalize:
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled.astype(np.float32)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    variance = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / np.sqrt(variance + eps) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, ``x * Phi(x)``, with erf from Abramowitz & Stegun 7.1.26 (error < 1.5e-7)."""
    z = np.abs(x) * np.float32(1.0 / math.sqrt(2.0))
    t = 1.0 / (1.0 + np.float32(0.3275911) * z)
    poly = t * (np.float32(0.254829592) + t * (np.float32(-0.284496736) + t * (
        np.float32(1.421413741) + t * (np.float32(-1.453152027) + t * np.float32(1.061405429)))))
    erf = (1.0 - poly * np.exp(-z * z)) * np.sign(x)
    return np.float32(0.5) * x * (1.0 + erf)


__all__ = ["NumpyBertEncoder", "supports"]
