"""The local cross-encoder reranker, offline, with a tiny randomly initialised BERT saved to a temp folder."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from akasha.errors import ConfigError  # noqa: E402
from akasha.rerank import rerank, resolve_reranker  # noqa: E402
from akasha.rerank.local import LocalReranker  # noqa: E402
from akasha.types import Chunk, Hit  # noqa: E402

WORDS = "the air filter should be replaced every months brake pads wear warranty covers defects coolant tyre pressure".split()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A 1-layer BERT sequence classifier (num_labels=1) with a WordPiece tokenizer from a small vocab."""
    folder = tmp_path_factory.mktemp("tiny-reranker")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "?", ".", ","]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64, num_labels=1,
    )
    transformers.BertForSequenceClassification(config).save_pretrained(folder)
    return folder


def hits() -> list[Hit]:
    texts = [
        "the air filter should be replaced every months",
        "brake pads wear",
        "the warranty covers defects",
        "coolant",
        "tyre pressure",
    ]
    return [Hit(Chunk(f"d{i}#0", t, {"source": f"/d{i}.md"}), score=0.1) for i, t in enumerate(texts)]


def test_local_reranker_scores_every_candidate_and_orders_by_score(tiny_model):
    reranker = LocalReranker(str(tiny_model), batch_size=2)
    candidates = hits()
    ranking = reranker.rank("when should the air filter be replaced?", candidates)
    assert sorted(ranking.order) == list(range(5))
    assert len(ranking.scores) == 5
    assert [ranking.scores[i] for i in ranking.order] == sorted(ranking.scores, reverse=True)

    # Scores equal a direct forward pass of the same model, one pair at a time.
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_model)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(tiny_model).eval()
    for i, hit in enumerate(candidates):
        enc = tokenizer(["when should the air filter be replaced?"], [hit.text], return_tensors="pt")
        with torch.inference_mode():
            expected = float(model(**enc).logits[0, 0])
        assert ranking.scores[i] == pytest.approx(expected, abs=1e-4)


def test_batches_do_not_change_scores(tiny_model):
    one = LocalReranker(str(tiny_model), batch_size=1).scores("brake pads", [h.text for h in hits()])
    many = LocalReranker(str(tiny_model), batch_size=16).scores("brake pads", [h.text for h in hits()])
    assert one == pytest.approx(many, abs=1e-4)


def test_local_spec_through_rerank_trims_after_the_complete_ordering(tiny_model):
    reranker = resolve_reranker(f"local:{tiny_model}")
    assert reranker._model is None  # nothing loaded until it runs
    out = rerank(reranker, "tyre pressure", hits(), top_k=2)
    assert len(out) == 2
    assert out[0].details["rerank"] >= out[1].details["rerank"]
    assert out[0].details["rerank_rank"] == 1.0
    model = reranker._model
    rerank(reranker, "coolant", hits(), top_k=1)
    assert reranker._model is model  # loaded once


def test_bge_spec_takes_a_folder_too(tiny_model):
    reranker = resolve_reranker(f"bge:{tiny_model}")
    assert reranker.name == f"local:{tiny_model}"
    assert len(rerank(reranker, "q", hits(), top_k=5)) == 5


def test_trust_remote_code_is_off_by_default(tiny_model):
    assert LocalReranker(str(tiny_model)).trust_remote_code is False


def test_a_missing_model_says_what_to_do(tmp_path):
    reranker = LocalReranker(str(tmp_path / "no-such-model"))
    with pytest.raises(ConfigError, match="could not load reranker model"):
        reranker.rank("q", hits())


def test_local_reranker_without_torch_raises_missing_extra(monkeypatch):
    import sys

    from akasha.errors import MissingExtraError
    from akasha.rerank.local import LocalReranker
    from akasha.types import Chunk, Hit

    monkeypatch.setitem(sys.modules, "torch", None)  # torch "not installed"
    reranker = LocalReranker("BAAI/bge-reranker-base")
    with pytest.raises(MissingExtraError, match="full"):
        reranker.rank("q", [Hit(Chunk("a#0", "text"), 1.0)])
