"""Which jieba for Chinese and Japanese BM25 tokens: jieba's Python package (public API) or rjieba (jieba-rs).

    apt-get update && apt-get install -y debian-faq-zh-cn debian-reference-zh-cn   # once
    pip install jieba                                                          # the comparison's other side
    python -m bench.chinese_tokenizer [--runs 5] [--set debian-faq-zh-cn]

For each segmenter, side by side in one run:

* tokens: the share of the set's CJK runs (what akasha hands the segmenter) cut identically
  to jieba 0.42's ``lcut_for_search``; equal tokens keep the persisted tokenizer id valid;
* first text: seconds from a new interpreter to the first Chinese text cut (import and
  dictionary load included), median of ``--runs`` subprocesses;
* throughput: CJK characters per second over the whole set, once loaded;
* quality: recall@5 and MRR@10 of ``bm25`` through ``akasha.evaluation.evaluate`` on the set
  (hash embeddings: only the lexical side is scored), with character bigrams beside them.

Results print as a markdown table and land in bench/results/chinese_tokenizer.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
DATA = Path(__file__).resolve().parent / ".data"
ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger("bench.chinese_tokenizer")

#: How each segmenter is set up in a new interpreter, ending with ``cut(text) -> list[str]``.
SETUP = {
    "jieba (public API)": ("import jieba, logging\njieba.setLogLevel(logging.WARNING)\n"
                           "cut = jieba.Tokenizer().lcut_for_search"),
    "rjieba": "import rjieba\ncut = rjieba.cut_for_search",
}
FIRST_TEXT = "如何在 Debian 系统上安装软件包？请使用 apt 命令，或者使用 aptitude 图形界面工具来管理软件包。"


def _segmenter(name: str) -> Callable[[str], list[str]]:
    scope: dict = {}
    exec(SETUP[name], scope)  # noqa: S102 - the bench's own fixed setup lines
    return scope["cut"]


def _first_text_seconds(name: str, runs: int) -> float:
    code = (f"import time\nstart = time.perf_counter()\n{SETUP[name]}\ncut({FIRST_TEXT!r})\n"
            "print(time.perf_counter() - start)")
    times = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
        times.append(float(out.stdout.split()[-1]))
    return statistics.median(times)


def _cjk_runs(texts: list[str]) -> list[str]:
    """The pieces akasha's tokenizer hands the segmenter: runs of CJK characters."""
    import re

    from akasha.retrieval.tokenize import _CJK

    pattern = re.compile(rf"[{_CJK}]+")
    return [match.group() for text in texts for match in pattern.finditer(text.lower())]


def _bm25_quality(folder: Path, questions: Path, cut: Callable[[str], list[str]] | None) -> dict:
    """recall@5 and MRR@10 of bm25 with ``cut`` as jieba's segmenter (None: character bigrams)."""
    from akasha.evaluation import evaluate
    from akasha.retrieval import tokenize as module

    saved = module._jieba
    module._jieba = lambda: cut  # type: ignore[assignment]  # None: akasha falls back to character pairs
    try:
        table = evaluate(folder, questions, search_types=("bm25",), embeddings="hash", answers=False,
                         cache_dir=":memory:")
    finally:
        module._jieba = saved
    row = table.row("bm25")
    return {"recall@5": row["recall@5"], "mrr@10": row["mrr@10"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--set", default="debian-faq-zh-cn")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    folder = DATA / args.set
    if not (folder / "questions.jsonl").exists():
        from bench.build_debian_faq import build

        build(args.set.removeprefix("debian-faq-"), folder)
    texts = [path.read_text(encoding="utf-8") for path in sorted((folder / "corpus").rglob("*.txt"))]
    texts += [json.loads(line)["question"] for line in (folder / "questions.jsonl").open(encoding="utf-8")]
    runs = _cjk_runs(texts)
    chars = sum(map(len, runs))
    reference = _segmenter("jieba (public API)")
    expected = [reference(run) for run in runs]
    rows = []
    for name in SETUP:
        cut = _segmenter(name)
        start = time.perf_counter()
        got = [cut(run) for run in runs]
        seconds = time.perf_counter() - start
        rows.append({
            "segmenter": name,
            "same_tokens": sum(a == b for a, b in zip(got, expected, strict=True)) / len(runs),
            "first_text_s": _first_text_seconds(name, args.runs),
            "chars_per_s": chars / seconds,
            **_bm25_quality(folder / "corpus", folder / "questions.jsonl", cut),
        })
    rows.append({"segmenter": "character bigrams", "same_tokens": None, "first_text_s": None, "chars_per_s": None,
                 **_bm25_quality(folder / "corpus", folder / "questions.jsonl", None)})
    print(f"{args.set}: {len(runs)} CJK runs, {chars} characters\n")
    print("| segmenter | same tokens as jieba | first text (s) | CJK chars/s | bm25 recall@5 | bm25 MRR@10 |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        cells = [row["segmenter"],
                 "-" if row["same_tokens"] is None else f"{row['same_tokens']:.4f}",
                 "-" if row["first_text_s"] is None else f"{row['first_text_s']:.3f}",
                 "-" if row["chars_per_s"] is None else f"{row['chars_per_s']:,.0f}",
                 f"{row['recall@5']:.4f}", f"{row['mrr@10']:.4f}"]
        print("| " + " | ".join(cells) + " |")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "chinese_tokenizer.json").write_text(json.dumps({"set": args.set, "runs": len(runs), "chars": chars,
                                                                "rows": rows}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
