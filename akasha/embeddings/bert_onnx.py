"""A BERT sentence encoder on onnxruntime, for indexing without torch.

The bulk encoder of the packaged MiniLM (docs/quality.md, "Embedding runtimes"): onnxruntime
(installed with chromadb and the ``full`` extra) has fused CPU kernels for this model, and this
module writes the graph itself from a :class:`~akasha.embeddings.bert_numpy.BertFolder`, so no
ONNX export, torch or download is needed:

    [Attention -> MatMul -> Add -> Add -> LayerNormalization
     -> MatMul -> BiasGelu -> MatMul -> Add -> Add -> LayerNormalization] x layers

The residual adds and LayerNorm stay three plain operators: the ``SkipLayerNormalization``
onnxruntime's extended optimisations fuse them into ran about ten times slower on the CPU. The
session runs single-threaded while one thread per core runs its own small batch (at most
:data:`BATCH_TOKENS` tokens): no hand-offs, and a small batch's activations stay in cache.

The input embeddings and the mean pooling run in numpy, so the word-embedding table never enters
the graph; vectors agree with sentence-transformers' to about 1e-6. The protocol-buffer messages
are written below, not by the ``onnx`` package (seconds to import). Weights are external, handed
over as the memory-mapped arrays; transposes and the query/key/value concatenation are nodes
onnxruntime folds at build, so Python copies no weight. ``precision="int8"``: :func:`int8_model`.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from akasha.embeddings.bert_numpy import BertFolder, usable_cores

#: Texts per onnxruntime call at most (grouped by token length, so padding stays small).
BATCH = 32
#: Padded tokens per onnxruntime call at most: two full-length chunks, or a few dozen short sentences.
BATCH_TOKENS = 512
_MS = "com.microsoft"
#: TensorProto.DataType values.
_FLOAT, _INT32 = 1, 6
_ELEMENT_TYPES = {np.dtype(np.float32): _FLOAT, np.dtype(np.int32): _INT32}


def available() -> bool:
    """True when onnxruntime is installed (it is not imported here)."""
    import importlib.util

    return importlib.util.find_spec("onnxruntime") is not None


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


# Protocol-buffer wire format: each field is a varint key ``(number << 3) | wire type``, then its value.
def _message(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2): a sub-message, a string or raw bytes."""
    return _varint((number << 3) | 2) + _varint(len(payload)) + payload


def _text(number: int, value: str) -> bytes:
    return _message(number, value.encode("utf-8"))


def _integer(number: int, value: int) -> bytes:
    """A non-negative integer field (wire type 0)."""
    return _varint(number << 3) + _varint(value)


def _float32(number: int, value: float) -> bytes:
    """A 32-bit float field (wire type 5)."""
    return _varint((number << 3) | 5) + struct.pack("<f", value)


#: The location an external-data TensorProto names; never read: every such weight is handed over in memory.
_EXTERNAL_LOCATION = "akasha-weights"


def _external_tensor(name: str, array: np.ndarray) -> bytes:
    """TensorProto of a weight whose data comes separately: dims = 1, data_type = 2, name = 8,
    external_data = 13 (key/value entries: location), data_location = 14 (EXTERNAL = 1)."""
    fields: list[bytes] = [_integer(1, int(size)) for size in array.shape]
    fields += [_integer(2, _ELEMENT_TYPES[array.dtype]), _text(8, name),
               _message(13, b"".join([_text(1, "location"), _text(2, _EXTERNAL_LOCATION)])), _integer(14, 1)]
    return b"".join(fields)


def _node(op_type: str, inputs: list[str], outputs: list[str], domain: str = "", **attributes: float | int) -> bytes:
    """NodeProto: input = 1, output = 2, op_type = 4, attribute = 5, domain = 7."""
    fields: list[bytes] = [_text(1, name) for name in inputs]
    fields += [_text(2, name) for name in outputs]
    fields.append(_text(4, op_type))
    for key, value in attributes.items():
        # AttributeProto: name = 1, f = 2, i = 3, type = 20 (FLOAT = 1, INT = 2)
        if isinstance(value, float):
            attribute = b"".join([_text(1, key), _float32(2, value), _integer(20, 1)])
        else:
            attribute = b"".join([_text(1, key), _integer(3, value), _integer(20, 2)])
        fields.append(_message(5, attribute))
    if domain:
        fields.append(_text(7, domain))
    return b"".join(fields)


def _value_info(name: str, element_type: int, dims: Sequence[int | str]) -> bytes:
    """ValueInfoProto (name = 1, type = 2) of a tensor; a str dim is symbolic (dim_param), an int fixed."""
    shape = b"".join([_message(1, _text(2, dim) if isinstance(dim, str) else _integer(1, dim)) for dim in dims])
    tensor_type = b"".join([_integer(1, element_type), _message(2, shape)])  # TypeProto.Tensor
    return b"".join([_text(1, name), _message(2, _message(1, tensor_type))])


def _residual_norm(prefix: str, projected: str, bias: str, residual: str, weight: str, shift: str,
                   out: str, eps: float) -> list[bytes]:
    """``LayerNorm(projected + bias + residual)`` as three plain operators (see the module doc)."""
    return [
        _node("Add", [projected, bias], [prefix + ".biased"]),
        _node("Add", [prefix + ".biased", residual], [prefix + ".sum"]),
        _node("LayerNormalization", [prefix + ".sum", weight, shift], [out], axis=2, epsilon=eps),
    ]


def bert_graph(folder: BertFolder) -> tuple[bytes, dict[str, np.ndarray]]:
    """The serialized ONNX model of ``folder``'s BERT layers, and its weights by name (the folder's own arrays).

    Inputs: ``embeddings`` (float32, batch x sequence x hidden, from :meth:`BertFolder.embed`) and ``mask_index``
    (int32, batch: real tokens per right-padded row); output ``last_hidden_state`` (as ``embeddings``).
    Every weight is external: pass the dict to ``SessionOptions.add_external_initializers``.
    """
    nodes: list[bytes] = []
    initializers: list[bytes] = []
    weights: dict[str, np.ndarray] = {}

    def weight(name: str, array: np.ndarray) -> str:
        weights[name] = np.asarray(array, dtype=np.float32)  # float32 weights stay memory-mapped: no copy
        initializers.append(_external_tensor(name, weights[name]))
        return name

    def transposed(name: str, array: np.ndarray) -> str:
        """A Linear layer's weight as MatMul wants it: stored (out, in), used (in, out); folded at the build."""
        nodes.append(_node("Transpose", [weight(name + ".stored", array)], [name]))
        return name

    def stacked(name: str, parts: list[tuple[str, np.ndarray]]) -> str:
        """The rows of ``parts`` one after another (the query, key and value projections as one)."""
        nodes.append(_node("Concat", [weight(f"{name}.{part}", array) for part, array in parts], [name], axis=0))
        return name

    t = folder.tensor
    eps = folder.eps
    x = "embeddings"
    for i in range(folder.layers):
        at = f"encoder.layer.{i}."
        projections = ("query", "key", "value")
        qkv = stacked(f"l{i}.qkv_rows", [(n, t(at + f"attention.self.{n}.weight")) for n in projections])
        nodes.append(_node("Transpose", [qkv], [f"l{i}.qkv"]))
        qkv_bias = stacked(f"l{i}.qkv_bias", [(n, t(at + f"attention.self.{n}.bias")) for n in projections])
        nodes += [
            _node("Attention", [x, f"l{i}.qkv", qkv_bias, "mask_index"], [f"l{i}.attention"], _MS,
                  num_heads=folder.heads),
            _node("MatMul", [f"l{i}.attention", transposed(f"l{i}.out", t(at + "attention.output.dense.weight"))],
                  [f"l{i}.projected"]),
            *_residual_norm(f"l{i}.norm1", f"l{i}.projected",
                            weight(f"l{i}.out_bias", t(at + "attention.output.dense.bias")), x,
                            weight(f"l{i}.norm1_weight", t(at + "attention.output.LayerNorm.weight")),
                            weight(f"l{i}.norm1_bias", t(at + "attention.output.LayerNorm.bias")),
                            f"l{i}.attended", eps),
            _node("MatMul", [f"l{i}.attended", transposed(f"l{i}.up", t(at + "intermediate.dense.weight"))],
                  [f"l{i}.up_out"]),
            _node("BiasGelu", [f"l{i}.up_out", weight(f"l{i}.up_bias", t(at + "intermediate.dense.bias"))],
                  [f"l{i}.gelu"], _MS),
            _node("MatMul", [f"l{i}.gelu", transposed(f"l{i}.down", t(at + "output.dense.weight"))],
                  [f"l{i}.down_out"]),
            *_residual_norm(f"l{i}.norm2", f"l{i}.down_out",
                            weight(f"l{i}.down_bias", t(at + "output.dense.bias")), f"l{i}.attended",
                            weight(f"l{i}.norm2_weight", t(at + "output.LayerNorm.weight")),
                            weight(f"l{i}.norm2_bias", t(at + "output.LayerNorm.bias")),
                            "last_hidden_state" if i == folder.layers - 1 else f"hidden{i + 1}", eps),
        ]
        x = f"hidden{i + 1}"
    # GraphProto: node = 1, name = 2, initializer = 5, input = 11, output = 12
    graph = b"".join([
        *(_message(1, n) for n in nodes),
        _text(2, "bert"),
        *(_message(5, i) for i in initializers),
        _message(11, _value_info("embeddings", _FLOAT, ["batch", "sequence", folder.hidden])),
        _message(11, _value_info("mask_index", _INT32, ["batch"])),
        _message(12, _value_info("last_hidden_state", _FLOAT, ["batch", "sequence", folder.hidden])),
    ])
    # ModelProto: ir_version = 1, producer_name = 2, graph = 7, opset_import = 8 (domain = 1, version = 2)
    model = b"".join([
        _integer(1, 8), _text(2, "akasha"), _message(7, graph),
        _message(8, _integer(2, 17)),
        _message(8, b"".join([_text(1, _MS), _integer(2, 1)])),
    ])
    return model, weights


def int8_model(folder: BertFolder, cache: Path) -> Path:
    """The file of ``folder``'s graph quantised to int8 weights, made once under ``cache`` and reused.

    onnxruntime writes the folded float32 graph; its ``quantize_dynamic`` (needs ``onnx``) quantises every
    MatMul and Attention per output channel. The name hashes the graph, the weights' file and onnxruntime's
    version; the file is renamed into place when complete (never a partial model, whatever crashes).
    """
    import onnxruntime

    weights = folder.root / "model.safetensors"
    info = weights.stat()
    stamp = f"{weights.resolve()}|{info.st_size}|{info.st_mtime_ns}|{onnxruntime.__version__}"
    key = hashlib.sha256(bert_graph(folder)[0] + stamp.encode()).hexdigest()[:16]
    path = cache / f"{folder.root.name}-{key}.int8.onnx"
    if path.is_file():
        return path
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        from akasha.errors import MissingExtraError

        raise MissingExtraError("onnx", "full", "precision 'int8'") from exc
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".int8-") as work:
        folded = os.path.join(work, "float32.onnx")
        _session(folder, onnxruntime, save=folded)
        quantized = os.path.join(work, "int8.onnx")
        # DefaultTensorType: the com.microsoft operators' outputs carry no type for onnx's shape inference
        quantize_dynamic(folded, quantized, per_channel=True, weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": _FLOAT})
        os.replace(quantized, path)
    return path


def _session(folder: BertFolder, onnxruntime: Any, model: str | None = None, save: str = "") -> Any:
    """A CPU session over ``model`` (a file), else over ``folder``'s float32 graph (written to ``save`` if given)."""
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # warnings about unused initializers and the like are noise here
    # One thread per run, no pool to hand work to; the encoder's workers share the session (run() is thread-safe).
    options.intra_op_num_threads = 1
    # not the extended level: it fuses Add + LayerNormalization into the slower SkipLayerNormalization
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = save
    if model is None:
        graph, weights = bert_graph(folder)
        # onnxruntime copies these into the graph (and folds the transposes) before building; no Python copy.
        options.add_external_initializers(
            list(weights), [onnxruntime.OrtValue.ortvalue_from_numpy(array) for array in weights.values()])
    return onnxruntime.InferenceSession(graph if model is None else model, options,
                                        providers=["CPUExecutionProvider"])


class OnnxBertEncoder:
    """``encode(texts) -> (n, hidden)`` float32 sentence vectors from onnxruntime, as sentence-transformers would give.

    Batches of at most :data:`BATCH` texts and :data:`BATCH_TOKENS` padded tokens, ``threads`` at once (default:
    usable cores). ``"int8"`` runs :func:`int8_model`, kept under ``cache`` (default: akasha's cache + ``models``).
    Raises ImportError without onnxruntime (int8: onnx), else onnxruntime's error if the graph does not build.
    """

    def __init__(self, folder: str | Path | BertFolder, threads: int | None = None, precision: str = "float32",
                 cache: Path | None = None) -> None:
        import onnxruntime

        self.folder = folder if isinstance(folder, BertFolder) else BertFolder(folder)
        self.dimension = self.folder.hidden
        self.workers = int(threads) if threads else usable_cores()
        model = None
        if precision == "int8":
            from akasha.index.paths import default_cache_dir

            model = str(int8_model(self.folder, cache or default_cache_dir() / "models"))
        self.session: Any = _session(self.folder, onnxruntime, model)

    def encode(self, texts: Sequence[str], passages: list[np.ndarray | None] | None = None) -> np.ndarray:
        """Sentence vectors of ``texts`` (batched by similar token length); ``passages`` as in ``BertFolder.encode``."""
        return self.folder.encode(texts, self._forward, BATCH, passages, max_tokens=BATCH_TOKENS,
                                  workers=self.workers)

    def _forward(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """One batch through the session (which releases the GIL while it runs): the last hidden states."""
        embeddings = self.folder.embed(ids, types).reshape(ids.shape[0], ids.shape[1], self.dimension)
        feed = {"embeddings": embeddings, "mask_index": mask.sum(axis=1, dtype=np.int32)}
        return self.session.run(["last_hidden_state"], feed)[0]


__all__ = ["BATCH", "BATCH_TOKENS", "OnnxBertEncoder", "available", "bert_graph", "int8_model"]
