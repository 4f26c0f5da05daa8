"""A BERT sentence encoder in plain numpy, for questions and small batches without importing torch.

A question needs one vector; sentence-transformers would import torch first (seconds). This runs the
same BERT forward pass in numpy: ``tokenizers`` cuts the text as ``tokenizer.json`` says, weights come
memory-mapped from ``model.safetensors``, output is pooled as ``modules.json`` asks, within about 1e-6
of sentence-transformers'. No maintained runtime comes close for one question (docs/quality.md).

:class:`BertFolder` (configuration, tokenizer, weights, length-sorted batches, pooling) is shared
with :mod:`akasha.embeddings.bert_onnx`, which runs the same model through onnxruntime for indexing.
Only plain BERT folders qualify (:func:`supports`): ``model_type`` bert, mean pooling, no Dense layer.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

#: Single texts (questions) whose vectors a :class:`BertFolder` remembers.
RECENT_TEXTS = 64
_SUPPORTED_MODULES = ("models.Transformer", "models.Pooling", "models.Normalize")
#: safetensors dtype names -> numpy dtypes this reader accepts (float16 is widened on use).
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


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
    )


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def read_safetensors(path: str | Path) -> dict[str, np.ndarray]:
    """The tensors of a ``.safetensors`` file as read-only, memory-mapped numpy arrays.

    Memory-mapped (``safetensors.numpy.load_file`` copies every tensor): a question reads only the
    few word-embedding rows it uses. Format: an 8-byte little-endian header length, a JSON header
    (each tensor's dtype, shape, byte range), the data. Raises ValueError for dtypes it does not know.
    """
    path = Path(path)
    with path.open("rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + length)
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name!r} has dtype {info['dtype']}, which akasha's reader does not load")
        start, end = info["data_offsets"]
        tensors[name] = np.asarray(data[start:end]).view(dtype).reshape(info["shape"])
    return tensors


class BertFolder:
    """A sentence-transformers BERT folder: settings, tokenizer and memory-mapped weights, read once."""

    def __init__(self, folder: str | Path) -> None:
        from tokenizers import Tokenizer

        self.root = Path(folder)
        self.config = json.loads((self.root / "config.json").read_text(encoding="utf-8"))
        modules = json.loads((self.root / "modules.json").read_text(encoding="utf-8"))
        self.normalize = any(str(m.get("type", "")).endswith("models.Normalize") for m in modules)
        self.heads = int(self.config["num_attention_heads"])
        self.layers = int(self.config["num_hidden_layers"])
        self.hidden = int(self.config["hidden_size"])
        self.eps = float(self.config.get("layer_norm_eps", 1e-12))
        max_length = int(self.config.get("max_position_embeddings", 512))
        st_config = self.root / "sentence_bert_config.json"
        if st_config.is_file():
            max_length = min(max_length, int(json.loads(st_config.read_text(encoding="utf-8")).get(
                "max_seq_length") or max_length))
        self.max_length = max_length
        self.tokenizer = Tokenizer.from_file(str(self.root / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_length)
        self._tensors = read_safetensors(self.root / "model.safetensors")
        self._prefix = "bert." if "bert.embeddings.word_embeddings.weight" in self._tensors else ""
        self._embedding: tuple[np.ndarray, ...] | None = None
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()
        self._recent_lock = threading.Lock()

    def tensor(self, name: str) -> np.ndarray:
        """The weight ``name`` (e.g. ``"encoder.layer.0.output.dense.bias"``) as float32, memory-mapped when it is."""
        array = self._tensors[self._prefix + name]
        return array if array.dtype == np.float32 else array.astype(np.float32)

    def token_count(self, texts: Sequence[str]) -> int:
        """How many tokens ``texts`` make for the model (each truncated at its maximum length)."""
        return sum(len(encoding.ids) for encoding in self.tokenizer.encode_batch(list(texts)))

    def batches(self, texts: Sequence[str], size: int, max_tokens: int | None = None,
                ) -> Iterator[tuple[list[int], np.ndarray, np.ndarray, np.ndarray]]:
        """``(rows, ids, type_ids, mask)`` per batch cut by :func:`length_groups` (at most ``size`` texts):
        ``rows`` are the texts' positions in ``texts``; the arrays are int32, right-padded with zeros."""
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        for rows in length_groups([len(encodings[i].ids) for i in order], size, max_tokens=max_tokens):
            rows = [order[i] for i in rows]
            length = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), length), dtype=np.int32)
            types = np.zeros_like(ids)
            mask = np.zeros_like(ids)
            for row, i in enumerate(rows):
                encoding = encodings[i]
                n = len(encoding.ids)
                ids[row, :n] = encoding.ids
                types[row, :n] = encoding.type_ids
                mask[row, :n] = 1
            yield rows, ids, types, mask

    def encode(self, texts: Sequence[str], forward: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
               batch_size: int, passages: list[np.ndarray | None] | None = None, *,
               max_tokens: int | None = None, workers: int = 1) -> np.ndarray:
        """Sentence vectors of ``texts``: ``forward(ids, types, mask) -> (batch, length, hidden)``, mean-pooled.

        A single text (a question, embedded for the search and again by the answerer) is remembered
        (the last :data:`RECENT_TEXTS`). ``passages`` (as long as ``texts``) receives each text's passage
        vectors (:func:`akasha.retrieval.passages.window_vectors`). ``max_tokens``: see :func:`length_groups`;
        ``workers`` > 1 batches run at once on threads (``forward`` thread-safe, releasing the GIL).
        """
        # A remembered vector has no hidden states to pool passages from: only plain calls use the memory.
        single = texts[0] if len(texts) == 1 and passages is None else None
        if single is not None:
            with self._recent_lock:
                vector = self._recent.get(single)
                if vector is not None:
                    self._recent.move_to_end(single)
                    return vector[None, :].copy()
        from akasha.retrieval.passages import window_vectors

        out = np.zeros((len(texts), self.hidden), dtype=np.float32)

        def run(batch: tuple[list[int], np.ndarray, np.ndarray, np.ndarray]) -> None:
            rows, ids, types, mask = batch
            hidden = forward(ids, types, mask)
            out[rows] = self.pool(hidden, mask)  # batches hold distinct rows: no lock needed
            if passages is not None:
                for position, row in enumerate(rows):
                    passages[row] = window_vectors(hidden[position, : int(mask[position].sum())])

        batches = list(self.batches(texts, batch_size, max_tokens))  # token ids only: small
        if workers > 1 and len(batches) > 1:
            # Largest first, so the threads finish together instead of one running a long batch alone.
            batches.sort(key=lambda batch: batch[1].size, reverse=True)
            with ThreadPoolExecutor(min(workers, len(batches)), thread_name_prefix="akasha-encode") as pool:
                for _ in pool.map(run, batches):  # re-raises a failed batch's error here
                    pass
        else:
            for batch in batches:
                run(batch)
        if single is not None:
            with self._recent_lock:
                self._recent[single] = out[0].copy()
                while len(self._recent) > RECENT_TEXTS:
                    self._recent.popitem(last=False)
        return out

    def embed(self, ids: np.ndarray, types: np.ndarray) -> np.ndarray:
        """BERT's input embeddings of a batch, ``(batch * length, hidden)``: word + position + token type, LayerNorm.
        Only the rows of the words present are read from the (memory-mapped) word-embedding table."""
        if self._embedding is None:
            self._embedding = (self.tensor("embeddings.word_embeddings.weight"),
                               self.tensor("embeddings.position_embeddings.weight"),
                               self.tensor("embeddings.token_type_embeddings.weight"),
                               self.tensor("embeddings.LayerNorm.weight"), self.tensor("embeddings.LayerNorm.bias"))
        word, position, token_type, weight, bias = self._embedding
        length = ids.shape[1]
        x = (word[ids] + position[:length][None, :, :] + token_type[types]).reshape(-1, self.hidden)
        return _layer_norm(x, weight, bias, self.eps)

    def pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean over real tokens, then L2-normalised when the folder has a Normalize module."""
        weights = mask.astype(np.float32)[:, :, None]
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        if self.normalize:
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled.astype(np.float32)


#: What one more batch costs, in padding tokens: a forward call's fixed work (embedding lookup,
#: dispatch, small matrices below full speed).
BATCH_COST_TOKENS = 32


def length_groups(lengths: Sequence[int], size: int, batch_cost: int = BATCH_COST_TOKENS,
                  max_tokens: int | None = None) -> list[list[int]]:
    """Cut ``lengths`` (sorted ascending) into runs of at most ``size`` that cost the fewest tokens in all.

    A run ``i..j`` costs ``(j - i) * lengths[j - 1]`` padded tokens plus ``batch_cost`` (a dynamic programme,
    at most ``len(lengths) * size`` steps). ``max_tokens`` also caps a run's padded tokens (a single text may
    exceed it), keeping activations in the CPU cache. Returns the positions of each run, in order.
    """
    n = len(lengths)
    best = [0.0] + [float("inf")] * n  # best[i]: cheapest cost of the first i texts
    cut = [0] * (n + 1)
    for end in range(1, n + 1):
        longest = lengths[end - 1]
        most = size if max_tokens is None else min(size, max(1, max_tokens // max(1, longest)))
        for start in range(max(0, end - most), end):
            cost = best[start] + (end - start) * longest + batch_cost
            if cost < best[end]:
                best[end], cut[end] = cost, start
    groups: list[list[int]] = []
    end = n
    while end > 0:
        groups.append(list(range(cut[end], end)))
        end = cut[end]
    return groups[::-1]


#: Where Linux tells a container's CPU quota: cgroup v2, then v1 (quota and period in microseconds).
CGROUP_CPU_FILES = ("/sys/fs/cgroup/cpu.max",
                    ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us"))


def usable_cores() -> int:
    """The CPU cores this process may keep busy: its affinity (else every core), capped by a cgroup CPU quota
    (a ``--cpus=2`` container on a 64-core host sees 64 cores in its affinity but gets two cores' time)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        cores = os.cpu_count() or 1
    quota = _cgroup_cpu_quota()
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, cores)


def _cgroup_cpu_quota() -> float | None:
    """The cores' worth of CPU time this process's cgroup allows, or None when it sets no limit (or says nothing)."""
    v2, (v1_quota, v1_period) = CGROUP_CPU_FILES
    try:
        if os.path.exists(v2):
            quota, _, period = Path(v2).read_text(encoding="ascii").strip().partition(" ")
        elif os.path.exists(v1_quota):
            quota = Path(v1_quota).read_text(encoding="ascii").strip()
            period = Path(v1_period).read_text(encoding="ascii").strip()
        else:
            return None
        if quota in ("max", "-1") or not period:
            return None
        return max(float(quota) / float(period), 0.01)
    except (OSError, ValueError):  # unreadable or unexpected: no cap rather than a wrong one
        return None


def single_threaded_blas() -> contextlib.AbstractContextManager[Any]:
    """Limit numpy's BLAS to one thread for a moment, when ``threadpoolctl`` is installed: OpenBLAS splits
    even small matrices over every core (on a busy machine 0.1-0.5 s per question instead of 15 ms)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


class NumpyBertEncoder:
    """``encode(texts) -> (n, hidden)`` float32 sentence vectors, as sentence-transformers would give."""

    def __init__(self, folder: str | Path | BertFolder) -> None:
        self.folder = folder if isinstance(folder, BertFolder) else BertFolder(folder)
        f = self.folder
        self.dimension = f.hidden
        self.workers = usable_cores()  # batches running at once (see encode)
        self.layers: list[dict[str, Any]] = []
        for i in range(f.layers):
            at = f"encoder.layer.{i}."
            # Linear weights stay (out, in) as stored; ``x @ w.T`` hands BLAS the transpose flag, no copy.
            self.layers.append({
                "qkv": [(f.tensor(at + f"attention.self.{n}.weight"), f.tensor(at + f"attention.self.{n}.bias"))
                        for n in ("query", "key", "value")],
                "out": (f.tensor(at + "attention.output.dense.weight"), f.tensor(at + "attention.output.dense.bias")),
                "norm1": (f.tensor(at + "attention.output.LayerNorm.weight"),
                          f.tensor(at + "attention.output.LayerNorm.bias")),
                "up": (f.tensor(at + "intermediate.dense.weight"), f.tensor(at + "intermediate.dense.bias")),
                "down": (f.tensor(at + "output.dense.weight"), f.tensor(at + "output.dense.bias")),
                "norm2": (f.tensor(at + "output.LayerNorm.weight"), f.tensor(at + "output.LayerNorm.bias")),
            })

    def encode(self, texts: Sequence[str], passages: list[np.ndarray | None] | None = None) -> np.ndarray:
        """Sentence vectors of ``texts``; ``passages`` as in :meth:`BertFolder.encode`. BLAS runs one thread
        per call; batches run side by side, one per core (numpy releases the GIL in its matrix work)."""
        with single_threaded_blas():
            return self.folder.encode(texts, self._forward, 16, passages, workers=self.workers)

    def _forward(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch, length = ids.shape
        hidden, heads, eps = self.dimension, self.folder.heads, self.folder.eps
        head = hidden // heads
        # Dense layers work on one (batch * length, hidden) matrix: one BLAS call each.
        x = self.folder.embed(ids, types)
        attention_bias = ((1.0 - mask.astype(np.float32)) * np.finfo(np.float32).min)[:, None, None, :]
        scale = np.float32(1.0 / math.sqrt(head))

        def heads_of(projection: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
            weight, bias = projection
            return np.ascontiguousarray((x @ weight.T + bias).reshape(batch, length, heads, head).transpose(0, 2, 1, 3))

        for layer in self.layers:
            q, k, v = (heads_of(p) for p in layer["qkv"])
            scores = (q * scale) @ k.transpose(0, 1, 3, 2) + attention_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(-1, hidden)
            weight, bias = layer["out"]
            gamma, beta = layer["norm1"]
            x = _layer_norm(x + context @ weight.T + bias, gamma, beta, eps)
            weight, bias = layer["up"]
            inner = _gelu(x @ weight.T + bias)
            weight, bias = layer["down"]
            gamma, beta = layer["norm2"]
            x = _layer_norm(x + inner @ weight.T + bias, gamma, beta, eps)
        return x.reshape(batch, length, hidden)


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


__all__ = ["BertFolder", "NumpyBertEncoder", "length_groups", "read_safetensors", "single_threaded_blas", "supports"]
