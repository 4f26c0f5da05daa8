"""The eval runner, CLI and report on a tiny generated corpus with the hash embedder."""

from __future__ import annotations

import json

import pytest

from akasha.cli import main as cli_main
from akasha.evaluation import evaluate, load_questions
from akasha.evaluation.runner import evaluate_search

TOPICS = {
    "volcano.txt": "Basalt lava erupts from the volcano crater and cools into black obsidian rock.",
    "bakery.txt": "Sourdough bread rises overnight because wild yeast ferments the flour and water.",
    "orbit.txt": "Satellites stay in orbit because their sideways speed balances the pull of gravity.",
    "violin.txt": "A violin bow strung with horsehair makes the strings vibrate when rosin is applied.",
    "glacier.txt": "Glaciers carve U-shaped valleys as compacted snow slowly grinds the bedrock below.",
}


@pytest.fixture()
def corpus(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in TOPICS.items():
        filler = " ".join(f"filler{name[:3]}{i}" for i in range(30))
        (docs / name).write_text(f"{text}\n\n{filler}\n", encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    lines = [
        {"question": "why does sourdough bread rise overnight with wild yeast", "relevant_sources": ["bakery.txt"]},
        {"question": "how do satellites stay in orbit against gravity", "answer": TOPICS["orbit.txt"]},
        {"question": "what makes violin strings vibrate with rosin", "relevant_sources": ["violin.txt"]},
        {"question": "how do glaciers carve valleys in bedrock", "answer": "compacted snow slowly grinds the bedrock"},
    ]
    questions.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return docs, questions


def test_evaluate_reports_every_configuration(corpus, tmp_path):
    docs, questions = corpus
    report = tmp_path / "out" / "report.html"
    table = evaluate(docs, questions, search_types=["auto", "bm25", "knn"], embeddings="hash", chunk_size=400, report=report)
    assert table.questions == 4
    assert [(r["search_type"], r["reranker"]) for r in table.rows] == [("auto", "none"), ("bm25", "none"), ("knn", "none")]
    bm25 = table.row("bm25")
    assert bm25["recall@1"] == 1.0 and bm25["mrr@10"] == 1.0 and bm25["ndcg@10"] == 1.0
    for row in table.rows:
        for metric in table.metrics:
            assert 0.0 <= row[metric] <= 1.0
    assert table.info["chunks"] and table.info["embeddings"] == "hash"
    text = report.read_text()
    assert "mrr@10" in text and "<svg" in text
    assert "| auto | none |" in table.to_markdown()
    assert "(4 questions)" in str(table)


def test_reranker_is_applied(corpus):
    docs, questions = corpus

    def volcano_first(question, hits):
        # volcano.txt answers none of the questions: putting it first must empty recall@1.
        return sorted(hits, key=lambda hit: not str(hit.path).endswith("volcano.txt"))

    table = evaluate(docs, questions, search_types=["knn"], rerankers=[None, volcano_first], embeddings="hash", chunk_size=400)
    assert table.row("knn", "none")["recall@1"] > 0.0
    assert table.row("knn", "volcano_first")["recall@1"] == 0.0
    assert table.row("knn", "volcano_first")["mrr@10"] < table.row("knn", "none")["mrr@10"]


def test_unknown_search_type_is_rejected(corpus):
    docs, questions = corpus
    with pytest.raises(ValueError, match="known"):
        evaluate(docs, questions, search_types=["nope"], embeddings="hash")


def test_evaluate_search_with_a_plain_function(corpus):
    docs, questions = corpus

    class FakeHit:
        def __init__(self, path):
            self.path, self.text = str(path), ""

    def search(question, search_type, reranker, k):
        order = sorted(TOPICS) if search_type == "alpha" else sorted(TOPICS, reverse=True)
        return [FakeHit(docs / name) for name in order][:k]

    qs = [q for q in load_questions(questions) if q.relevant_sources]  # bakery.txt, violin.txt
    table = evaluate_search(search, qs, search_types=["alpha", "reverse"], folder=docs)
    # alpha order: bakery, glacier, orbit, violin, volcano -> ranks 1 and 4; reverse -> ranks 5 and 2.
    assert table.row("alpha")["mrr@10"] == pytest.approx((1 + 1 / 4) / 2)
    assert table.row("reverse")["mrr@10"] == pytest.approx((1 / 5 + 1 / 2) / 2)
    assert table.row("alpha")["recall@1"] == 0.5 and table.row("reverse")["recall@5"] == 1.0


def test_cli_prints_table_and_writes_report(corpus, tmp_path, capsys):
    docs, questions = corpus
    report = tmp_path / "r.html"
    code = cli_main(["eval", str(docs), str(questions), "--search-types", "bm25,knn", "--chunk-size", "400", "--report", str(report), "--format", "json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["search_type"] for r in out["rows"]] == ["bm25", "knn"] and out["questions"] == 4
    assert report.exists()


def test_cli_reports_bad_input_clearly(corpus, tmp_path, capsys):
    docs, _ = corpus
    code = cli_main(["eval", str(docs), str(tmp_path / "missing.jsonl")])
    assert code == 2
    assert "missing.jsonl does not exist" in capsys.readouterr().err
