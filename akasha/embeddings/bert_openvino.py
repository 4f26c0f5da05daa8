"""A BERT sentence encoder on OpenVINO in bfloat16, for indexing on CPUs that compute bfloat16 natively.

Recent x86 server and desktop CPUs multiply bfloat16 matrices in hardware: Intel's AMX
tiles (Xeon since Sapphire Rapids) and the AVX-512 BF16 instructions (also AMD Zen 4).
Neither onnxruntime's CPU kernels nor numpy use them for a float32 model; OpenVINO's CPU
plugin does, at its default precision on such a CPU. This module builds MiniLM's layers as
an OpenVINO model from the weights of a sentence-transformers BERT folder (see
:class:`~akasha.embeddings.bert_numpy.BertFolder`; no export, no torch, no download) and
compiles it with ``INFERENCE_PRECISION_HINT=bf16``: the matrix multiplies run in bfloat16
with float32 accumulation (OpenVINO keeps the operations that need it in float32).

Measured on a 2-core Xeon with AMX (300 chunks of about 250 tokens, model load included):
144-156 chunks/s against 52-54 for onnxruntime in float32 (and 41 for
sentence-transformers); 20 chunks in 0.13 s instead of 0.37 s; 40 answer sentences in 30
instead of 80 ms. The vectors are within cosine 0.99996 of sentence-transformers' (0.99997
on average over those 300 chunks; the issue that asked for a torch-free encoder set 0.999).
A text's vector moves with the batch it runs in by bfloat16 rounding only (cosine 0.999994
at worst between a text alone and in a batch: other shapes take other kernels). A caller who
needs float32 vectors to 1e-6 picks ``precision="float32"`` on the embedder, which then uses
onnxruntime.

Where the CPU has no native bfloat16 OpenVINO would run float32 (no faster than
onnxruntime, and about 50 ms slower to start) or, on ARM, float16; so :func:`native_bfloat16`
is asked first and the embedder uses onnxruntime there. The word-embedding lookup (rows of
the memory-mapped 47 MB table, float32) and the mean pooling run in numpy, shared with the
other encoders; the rest of the input embeddings (positions, token types, LayerNorm) is in the
model, so a batch holds the GIL only for one numpy lookup: in a first ask, jieba tokenises on
another thread at the same time and holds the GIL for long stretches, and the numpy LayerNorm
waited for it (moving it into the model: a first ask 0.962 -> 0.947 s, 14 interleaved runs
each; small, near the noise). The weights enter the model as constants sharing a copy-on-write mapping of the
folder's file. One OpenVINO stream per core, each with its own inference request, runs one
small batch at a time (measured against one stream over both cores: 151-156 against 142-144
chunks/s, 30 against 35 ms for the sentences).

OpenVINO is imported without its model-conversion tools (:func:`import_openvino`):
``import openvino`` imports ``openvino.tools.ovc`` when it is installed, and that sends a
usage event to Google Analytics and writes a client id under ``~/intel`` unless the user has
opted out (found here: the event's thread also kept ``akasha ask`` from exiting). akasha
promises an offline path that talks to no one; a user who calls ``openvino.convert_model``
later still gets it, and OpenVINO's own behaviour with it.
"""

from __future__ import annotations

import importlib.util
import queue
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

from akasha.embeddings.bert_numpy import BertFolder, ThreadedBatchEncoder

#: Texts per inference call at most, and padded tokens per call (as for the onnxruntime encoder).
BATCH = 32
BATCH_TOKENS = 512
#: Inference requests run once while the encoder is built (see ``OpenVinoBertEncoder._warm_request``).
WARM_REQUESTS = 1
#: /proc/cpuinfo flags of hardware bfloat16 matrix arithmetic (x86).
BFLOAT16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})
CPUINFO = "/proc/cpuinfo"
#: What a masked (padding) key adds to an attention score before the softmax.
_MASKED = -1e4


def available() -> bool:
    """True when OpenVINO is installed (it is not imported here)."""
    return importlib.util.find_spec("openvino") is not None


def native_bfloat16(cpuinfo: str | Path = CPUINFO) -> bool | None:
    """Whether this CPU multiplies bfloat16 in hardware, from ``/proc/cpuinfo``; None where that file is absent.

    Reading the flags costs well under a millisecond, where asking OpenVINO means importing
    it (40-80 ms); None leaves the question to :class:`OpenVinoBertEncoder`, which asks
    OpenVINO's CPU plugin for its default precision.
    """
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return not BFLOAT16_FLAGS.isdisjoint(line.split(":", 1)[-1].split())
    except OSError:
        return None
    return False


_IMPORT_LOCK = threading.Lock()
#: The module ``import openvino`` imports last, which sends telemetry (see the module doc).
_CONVERSION_TOOLS = "openvino.tools.ovc"


def import_openvino() -> Any:
    """``import openvino``, skipping its model-conversion tools and their telemetry; the module.

    While openvino's ``__init__`` runs, ``sys.modules`` names the tools as unimportable, so its
    ``from openvino.tools.ovc import convert_model`` raises ImportError, which that ``__init__``
    already tolerates. Afterwards the name is freed, and ``openvino.convert_model`` imports the
    tools on first use (a module ``__getattr__``). An openvino that is already imported is
    returned as it is.
    """
    with _IMPORT_LOCK:
        if "openvino" in sys.modules:
            return sys.modules["openvino"]
        blocked = _CONVERSION_TOOLS not in sys.modules
        if blocked:
            # None in sys.modules blocks an import (import system rule); typeshed types the values as modules
            sys.modules[_CONVERSION_TOOLS] = None  # type: ignore[assignment]
        try:
            import openvino
        finally:
            if blocked and sys.modules.get(_CONVERSION_TOOLS, 0) is None:
                del sys.modules[_CONVERSION_TOOLS]
        if blocked and "convert_model" not in vars(openvino) and "__getattr__" not in vars(openvino):
            openvino.__getattr__ = _conversion_tools_on_demand
        return openvino


def _conversion_tools_on_demand(name: str) -> Any:
    """``openvino.convert_model``, imported when a caller first asks for it (see :func:`import_openvino`)."""
    if name == "convert_model":
        import openvino
        from openvino.tools.ovc import convert_model

        openvino.convert_model = convert_model
        return convert_model
    raise AttributeError(f"module 'openvino' has no attribute {name!r}")


class NoNativeBfloat16(RuntimeError):
    """OpenVINO's CPU plugin would not run bfloat16 on this CPU: the float32 encoders serve it better."""


def bert_model(folder: BertFolder) -> Any:
    """``folder``'s BERT as an ``openvino.Model``: the input embeddings' sums and LayerNorm, then the layers.

    Inputs: ``words`` (float32, batch x sequence x hidden: the rows of the word-embedding table for
    the token ids, see :func:`model_inputs`; the 47 MB table stays in numpy, memory-mapped),
    ``types`` (int32, batch x sequence: token type ids) and ``mask`` (float32, batch x sequence: 1
    for a real token, 0 for padding). Output: the last hidden state (float32, batch x sequence x
    hidden). Everything after the word lookup runs inside OpenVINO, which releases the GIL: a batch
    then needs Python only for one numpy lookup, however busy another thread keeps the GIL.
    """
    ov = import_openvino()
    import openvino.opset13 as ops

    hidden, heads = folder.hidden, folder.heads

    def t(name: str) -> np.ndarray:
        return folder.tensor(name, writable=True)

    def constant(array: np.ndarray) -> Any:
        """A weight as a Constant sharing the mapped file's memory (copying 40 MB held the GIL for 30-60 ms)."""
        shareable = array.flags.c_contiguous and array.flags.writeable
        return ops.constant(np.ascontiguousarray(array), shared_memory=shareable)

    def linear(x: Any, prefix: str) -> Any:
        """A Linear layer: its weight is stored (out, in), so MatMul transposes it."""
        return ops.add(ops.matmul(x, constant(t(prefix + ".weight")), False, True), constant(t(prefix + ".bias")))

    def layer_norm(x: Any, prefix: str) -> Any:
        normed = ops.mvn(x, ops.constant(np.array([-1], np.int64)), True, folder.eps, "inside_sqrt")
        return ops.add(ops.multiply(normed, constant(t(prefix + ".weight"))), constant(t(prefix + ".bias")))

    split_heads = ops.constant(np.array([0, 0, heads, hidden // heads], np.int64))
    join_heads = ops.constant(np.array([0, 0, hidden], np.int64))
    swap = ops.constant(np.array([0, 2, 1, 3], np.int64))

    def by_head(x: Any) -> Any:  # (batch, sequence, hidden) -> (batch, heads, sequence, head size)
        return ops.transpose(ops.reshape(x, split_heads, True), swap)

    words = ops.parameter([-1, -1, hidden], np.float32, name="words")
    types = ops.parameter([-1, -1], np.int32, name="types")
    mask = ops.parameter([-1, -1], np.float32, name="mask")
    length = ops.gather(ops.shape_of(words), ops.constant(np.array([1], np.int64)), ops.constant(np.int64(0)))
    positions = ops.slice(constant(t("embeddings.position_embeddings.weight")), ops.constant(np.array([0], np.int64)),
                          length, ops.constant(np.array([1], np.int64)), ops.constant(np.array([0], np.int64)))
    type_rows = ops.gather(constant(t("embeddings.token_type_embeddings.weight")), types, ops.constant(np.int64(0)))
    summed = ops.add(ops.add(words, ops.unsqueeze(positions, ops.constant(np.int64(0)))), type_rows)
    # (batch, 1, 1, keys): 0 for a real token, _MASKED for padding, added to every query's scores
    scores_mask = ops.multiply(ops.subtract(mask, ops.constant(np.float32(1))), ops.constant(np.float32(-_MASKED)))
    scores_mask = ops.unsqueeze(scores_mask, ops.constant(np.array([1, 2], np.int64)))
    x = layer_norm(summed, "embeddings.LayerNorm")
    for i in range(folder.layers):
        at = f"encoder.layer.{i}."
        q, k, v = (by_head(linear(x, at + f"attention.self.{name}")) for name in ("query", "key", "value"))
        attended = ops.scaled_dot_product_attention(q, k, v, scores_mask, causal=False)
        attended = ops.reshape(ops.transpose(attended, swap), join_heads, True)
        x = layer_norm(ops.add(linear(attended, at + "attention.output.dense"), x), at + "attention.output.LayerNorm")
        inner = ops.gelu(linear(x, at + "intermediate.dense"), "erf")
        x = layer_norm(ops.add(linear(inner, at + "output.dense"), x), at + "output.LayerNorm")
    return ov.Model([x], [words, types, mask], "akasha-bert")


def model_inputs(folder: BertFolder, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
    """The inputs of :func:`bert_model` for a batch of token ids (int arrays, batch x sequence, as
    :meth:`BertFolder.batches` gives them)."""
    return {"words": folder.tensor("embeddings.word_embeddings.weight")[ids],
            "types": np.ascontiguousarray(types, dtype=np.int32), "mask": mask.astype(np.float32)}


class OpenVinoBertEncoder(ThreadedBatchEncoder):
    """``encode(texts) -> (n, hidden)`` float32 sentence vectors from OpenVINO, computed in bfloat16.

    ``threads``: how many batches run at once, one OpenVINO stream (of one thread) each
    (default: the cores this process may use). Raises ImportError without OpenVINO,
    :class:`NoNativeBfloat16` on a CPU where OpenVINO would not run bfloat16, and OpenVINO's
    own error if it cannot compile the model.
    """

    batch, batch_tokens = BATCH, BATCH_TOKENS

    def __init__(self, folder: str | Path | BertFolder, threads: int | None = None, warm: int | None = None,
                 ) -> None:
        ov = import_openvino()
        super().__init__(folder, threads)
        core = ov.Core()
        if core.get_property("CPU", "INFERENCE_PRECISION_HINT") != ov.Type.bf16:
            raise NoNativeBfloat16("OpenVINO's CPU plugin does not default to bfloat16 on this CPU")
        self.compiled: Any = core.compile_model(bert_model(self.folder), "CPU", {
            "INFERENCE_PRECISION_HINT": "bf16",
            "NUM_STREAMS": str(self.workers),
            "INFERENCE_NUM_THREADS": str(self.workers),
        })
        # An inference request runs one batch at a time: each running batch takes an idle one.
        self._idle: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for _ in range(WARM_REQUESTS if warm is None else warm):
            self._idle.put(self._warm_request())

    def _warm_request(self) -> Any:
        """A new inference request running once on a short input, in the background: a request's first
        run sets up its kernels.

        Measured: 26 ms for the first run of one short text, and 40 ms less for the first batches
        of a first ask after it. It runs on OpenVINO's threads while the encoder is handed over
        (``start_async``: the build does not wait for it); a batch that takes this request first
        waits for the run to end (``_forward``).
        """
        request = self.compiled.create_infer_request()
        ids = np.zeros((1, 8), np.int32)
        request.start_async(model_inputs(self.folder, ids, ids, np.ones_like(ids)))
        return request

    def _forward(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        inputs = model_inputs(self.folder, ids, types, mask)
        try:
            request = self._idle.get_nowait()
        except queue.Empty:
            request = self.compiled.create_infer_request()
        try:
            request.wait()  # a warming run still going (see _warm_request); at once otherwise
            # infer() releases the GIL while the model runs, and copies the output out of the request
            outputs = request.infer(inputs, share_inputs=True)
            return outputs[0]
        finally:
            self._idle.put(request)


__all__ = ["BATCH", "BATCH_TOKENS", "NoNativeBfloat16", "OpenVinoBertEncoder", "available", "bert_model",
           "import_openvino", "model_inputs", "native_bfloat16"]
