"""How fast the loaders refuse hostile files, as ratios to loading one ordinary small file in the same run.

    PYTHONPATH=.:tests python -m bench.hostile_refusals [--runs 3]

The reliability tests (tests/test_reliability_hostile_files.py) check that each hostile file is
refused with the right limit; whether it is refused *at once* is a timing, and timings are noisy on
a shared machine, so it is measured here instead: each refusal's median wall time over ``--runs``
and its ratio to loading a one-paragraph DOCX. A refusal that starts to read the bomb (the
million-page tree, the 8 MB content stream, the 7 MB DOCX XML) shows up as a ratio in the
hundreds or thousands instead of single digits. It also times a 2-page PDF read in the loader
worker against in process (the worker's overhead per file). Output goes to the log (INFO), one line a case.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from akasha.loaders import LoaderLimitError, LoaderLimits, load_file
from akasha.loaders.pdf import available_engines, load_pdf

log = logging.getLogger("bench.hostile_refusals")


def median_seconds(action: Callable[[], object], runs: int,
                   refusals: tuple[type[BaseException], ...] = (LoaderLimitError,)) -> float:
    """The median wall time of ``runs`` calls of ``action``; a raised ``refusals`` error counts as its outcome."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        try:
            action()
        except refusals:
            pass
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def parse_runs(description: str, argv: list[str] | None) -> int:
    """``--runs`` from ``argv`` (default 3), with INFO logging set up for the one-line-a-case output."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args(argv).runs
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    return runs


def main(argv: list[str] | None = None) -> None:
    """Time each refusal and the ordinary baseline; log their ratios."""
    from hostile_fixtures import docx_xml_bomb, inflate_bomb_pdf, page_tree_dag  # tests/ on PYTHONPATH
    from loaders_fixtures import docx_bytes, pdf_bytes, write

    runs = parse_runs(__doc__.splitlines()[0], argv)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        ordinary = write(tmp / "ok.docx", docx_bytes(["Grease every 500 h."]))
        load_file(ordinary, limits=LoaderLimits())  # warm-up: imports and the loader worker's start
        baseline = median_seconds(lambda: load_file(ordinary, limits=LoaderLimits()), runs)
        cases: dict[str, Callable[[], object]] = {}
        dag, bomb_pdf = page_tree_dag(levels=6, fanout=10), inflate_bomb_pdf(8_000_000)
        for engine in available_engines():
            cases[f"pdf page tree claiming 10**6 pages ({engine})"] = (
                lambda e=engine: load_pdf(tmp / "dag.pdf", dag, engine=e, limits=LoaderLimits()))
            cases[f"pdf content stream inflating to 8 MB, limit 1 MB ({engine})"] = (
                lambda e=engine: load_pdf(tmp / "bomb.pdf", bomb_pdf, engine=e, limits=LoaderLimits(max_inflated_mb=1)))
        docx_bomb = write(tmp / "bomb.docx", docx_xml_bomb(100_000))
        cases["docx expanding to 7 MB, limit 2 MB"] = (
            lambda: load_file(docx_bomb, limits=LoaderLimits(max_inflated_mb=2)))
        slow = write(tmp / "slow.docx", docx_xml_bomb(60_000))
        cases["docx reader stopped at a 0.5 s timeout"] = lambda: load_file(slow, limits=LoaderLimits(timeout=0.5))
        pdf = tmp / "a.pdf"
        pdf_data = pdf_bytes(["Pump P-101 grease 500 h.", "Valve V-7 seal 2000 h."])
        load_file(pdf, pdf_data)  # starts the loader worker
        isolated = median_seconds(lambda: load_file(pdf, pdf_data, limits=LoaderLimits()), 10 * runs)
        in_process = median_seconds(lambda: load_file(pdf, pdf_data, limits=LoaderLimits(isolate=False)),
                                     10 * runs)
        log.info("2-page pdf in the loader worker / in process: %.4f / %.4f s, ratio %.2f (was 1.84 / 1.71 ms)",
                 isolated, in_process, isolated / in_process)
        log.info("baseline (one-paragraph docx): %.4f s", baseline)
        for name, action in cases.items():
            seconds = median_seconds(action, runs)
            log.info("%-62s %.4f s  ratio %.2f", name, seconds, seconds / baseline)


if __name__ == "__main__":
    main()
