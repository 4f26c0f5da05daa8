"""A self-contained HTML report of an evaluation: the table plus an inline SVG plot of every metric
per configuration (grouped bars, the chosen metric first); standard library only."""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from akasha.evaluation.runner import EvalTable

_COLOURS = ("#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#d53f8c", "#718096")


def _label(row: dict) -> str:
    return row["search_type"] if row["reranker"] == "none" else f"{row['search_type']}+{row['reranker']}"


def svg_plot(table: EvalTable, metric: str = "mrr@10", width: int = 720, height: int = 320) -> str:
    """Grouped bar chart of the metrics by configuration as an inline SVG string."""
    if metric not in table.metrics:
        raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(table.metrics)}")
    metrics = [metric, *(m for m in table.metrics if m != metric)]
    left, right, top, bottom = 50, 20, 30, 60
    plot_w, plot_h = width - left - right, height - top - bottom
    groups = max(len(table.rows), 1)
    group_w = plot_w / groups
    bar_w = group_w * 0.8 / len(metrics)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{html.escape(metric)} by configuration" font-family="sans-serif" font-size="11">',
        f'<text x="{left}" y="18" font-size="13">Metrics by configuration (first bar: {html.escape(metric)})</text>',
    ]
    for tick in range(0, 11, 2):
        y = top + plot_h * (1 - tick / 10)
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick / 10:.1f}</text>')
    for g, row in enumerate(table.rows):
        x0 = left + g * group_w + group_w * 0.1
        for m, name in enumerate(metrics):
            value = max(0.0, min(1.0, float(row[name])))
            bar_h = plot_h * value
            x = x0 + m * bar_w
            parts.append(
                f'<rect class="bar" data-config="{html.escape(_label(row))}" data-metric="{name}" '
                f'x="{x:.1f}" y="{top + plot_h - bar_h:.1f}" width="{bar_w * 0.9:.1f}" height="{bar_h:.1f}" '
                f'fill="{_COLOURS[m % len(_COLOURS)]}">'
                f'<title>{html.escape(_label(row))} {name} = {value:.4f}</title></rect>'
            )
        parts.append(
            f'<text x="{left + (g + 0.5) * group_w:.1f}" y="{top + plot_h + 16}" text-anchor="middle">'
            f"{html.escape(_label(row))}</text>"
        )
    for m, name in enumerate(metrics):
        x = left + m * 110
        parts.append(f'<rect x="{x}" y="{height - 22}" width="10" height="10" fill="{_COLOURS[m % len(_COLOURS)]}"/>')
        parts.append(f'<text x="{x + 14}" y="{height - 13}">{name}</text>')
    parts.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" stroke="#333"/>')
    parts.append("</svg>")
    return "\n".join(parts)


def render_html(table: EvalTable, metric: str = "mrr@10") -> str:
    """The report as one HTML string: info, table and the SVG plot."""
    head, body = table._cells()  # the same columns as the text table, answer metrics included
    best = table.best(metric) if table.rows else None
    rows = []
    for row, cells in zip(table.rows, body, strict=True):
        style = ' style="font-weight:bold"' if row is best else ""
        rows.append(f"<tr{style}>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    info = "".join(f"<li>{html.escape(str(k))}: {html.escape(str(v))}</li>" for k, v in table.info.items())
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>akasha eval</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}</style></head><body>"
        f"<h1>akasha eval: {table.questions} questions</h1><ul>{info}</ul>"
        f"<table><tr>{''.join(f'<th>{html.escape(h)}</th>' for h in head)}</tr>{''.join(rows)}</table>"
        f"<h2>{html.escape(metric)} by configuration</h2>{svg_plot(table, metric)}"
        "<p>recall@k: share of the relevant units (reference answer, or each relevant source) found in the top k; "
        "MRR@10: mean of 1/rank of the first relevant chunk; nDCG@10: binary gains, a chunk gains when it finds a "
        "new unit; answer@80: share of replies quoting 80 characters of the reference answer; answer_chars: mean "
        "reply length.</p></body></html>"
    )


def write_html_report(table: EvalTable, path: str | Path, metric: str = "mrr@10") -> Path:
    """Write the HTML report to ``path`` (parents created) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(table, metric), encoding="utf-8")
    return path
