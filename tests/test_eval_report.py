"""The HTML report: table, highlighted best row, and an inline SVG plot."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from akasha.evaluation.report import svg_plot, write_html_report
from akasha.evaluation.runner import EvalTable


def _table() -> EvalTable:
    rows = [
        {"search_type": "auto", "reranker": "none", "recall@1": 0.5, "recall@5": 0.9, "mrr@10": 0.65, "ndcg@10": 0.7, "ms_per_query": 1.5},
        {"search_type": "bm25", "reranker": "none", "recall@1": 0.4, "recall@5": 0.8, "mrr@10": 0.55, "ndcg@10": 0.6, "ms_per_query": 0.5},
        {"search_type": "knn", "reranker": "llm", "recall@1": 0.2, "recall@5": 0.6, "mrr@10": 0.35, "ndcg@10": 0.4, "ms_per_query": 9.0},
    ]
    return EvalTable(rows=rows, questions=20, info={"embeddings": "hash"})


def test_svg_plot_is_valid_and_scaled():
    svg = svg_plot(_table(), "mrr@10", height=320)
    root = ET.fromstring(svg)  # well-formed XML
    bars = [e for e in root.iter("{http://www.w3.org/2000/svg}rect") if e.get("class") == "bar"]
    assert len(bars) == 3 * 4
    heights = {(b.get("data-config"), b.get("data-metric")): float(b.get("height")) for b in bars}
    plot_h = 320 - 30 - 60
    assert heights[("auto", "mrr@10")] == pytest.approx(0.65 * plot_h, abs=0.1)
    assert heights[("knn+llm", "recall@1")] == pytest.approx(0.2 * plot_h, abs=0.1)


def test_html_report_has_the_table_and_an_inline_svg(tmp_path):
    path = write_html_report(_table(), tmp_path / "sub" / "r.html")
    text = path.read_text()
    assert "<svg" in text and "data:image/png" not in text
    assert '<tr style="font-weight:bold"><td>auto</td>' in text  # best MRR row highlighted
    assert "20 questions" in text and "embeddings: hash" in text


def test_unknown_metric_is_rejected():
    with pytest.raises(ValueError, match="unknown metric 'mrr@5'"):
        svg_plot(_table(), "mrr@5")
