"""reranking.provider cross_encoder: a tiny randomly initialised local model (no hub)."""

from __future__ import annotations

import pytest

from akasha.spec import build, load_spec
from tests.spec_fixtures import CORPUS, body


def make(**sections):
    return build(load_spec(body(**sections)))


# ------------------------------------------------------------- cross_encoder
@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    """A randomly initialised one-layer BERT cross-encoder saved to a temp dir (no hub)."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("tiny-ce")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *(
        "the a air filter coolant tyre tyres radiator warranty cap engine every months years check "
        "of and is are to should be replaced changed pressure must never open while hot").split()]
    (folder / "vocab.txt").write_text("\n".join(words), encoding="utf-8")
    tokenizer = transformers.BertTokenizer(str(folder / "vocab.txt"))
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=128, num_labels=1)
    transformers.BertForSequenceClassification(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return str(folder)


def test_cross_encoder_scores_every_candidate(tiny_cross_encoder):
    from sentence_transformers import CrossEncoder

    pipeline = make(reranking={"enabled": True, "provider": "cross_encoder", "model": tiny_cross_encoder, "top_k": 3})
    assert pipeline.reranker.name == f"cross_encoder:{tiny_cross_encoder}"
    pipeline.ingest_sync(CORPUS)
    result = pipeline.query_sync("air filter coolant", k=5)
    assert len(result.hits) == 3
    reference = CrossEncoder(tiny_cross_encoder, device="cpu")
    expected = sorted(
        ((float(reference.predict([("air filter coolant", d["text"])])[0]), f"{d['id']}#0") for d in CORPUS),
        reverse=True,
    )[:3]
    got = [(h.score, h.chunk.id) for h in result.hits]
    assert [i for _, i in got] == [i for _, i in expected]
    assert [s for s, _ in got] == pytest.approx([s for s, _ in expected], abs=1e-5)
    assert all("vector" in h.details and "retrieval" in h.details for h in result.hits)


def test_cross_encoder_default_model_name():
    from akasha.rerank.cross_encoder import DEFAULT_MODEL

    assert DEFAULT_MODEL == "cross-encoder/ms-marco-MiniLM-L-6-v2"
