"""Hostile text inputs against ordinary ones of the same size, timed side by side in one run.

    python -m bench.hostile_inputs [--runs 3]

The unit tests check that these inputs load, chunk or are refused correctly; how fast that
happens is a timing, and timings are noisy on a shared machine, so the bounds those tests used
to assert (a 50 MB line in under 30 s, a crafted CSV line in under 3 s, a YAML alias bomb in
under 1 s) are measured here instead, each as a ratio to an ordinary input of the same size:

- a 50 MB text file of one line, loaded and chunked, against the same text with a newline
  after each sentence;
- 5 MB of one repeated character (no separator for the splitter) against 5 MB of sentences;
- a crafted 63 KB CSV line that once stalled the dialect sniffer (14 s) against a plain CSV of
  the same size;
- a YAML alias bomb (9**9 strings once expanded) refused by ``load_spec_file``, against loading
  an ordinary spec file (a ratio in the tens: the refusal reads the ~100 anchors of a 1 KB file;
  expanding them would take minutes and gigabytes).

For the first three a ratio near 1 means the hostile input costs what its size costs; a
quadratic path shows up as a ratio in the tens or hundreds. Output goes to the log (INFO), one line a case.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from pathlib import Path

from akasha.chunking import split_text
from akasha.errors import AkashaError, LoaderError
from akasha.loaders import load_file
from akasha.spec import load_spec_file
from bench.hostile_refusals import median_seconds, parse_runs

#: A refusal is the expected outcome of some cases.
REFUSALS = (LoaderError, AkashaError)

log = logging.getLogger("bench.hostile_inputs")

SENTENCE = "Pump P-101 bearing temperature stayed below 70 C during the 500 hour run. "
SPEC = ("kind: RAGPipeline\nmetadata: {name: demo}\n"
        "spec: {embeddings: {provider: hash}, vector_store: {backend: memory}}\n")


def _load_and_chunk(path: Path) -> None:
    for document in load_file(path):
        split_text(document.text, 1000, 100)


def _alias_bomb(levels: int = 9, width: int = 9) -> str:
    lines = [f'a0: &a0 [{", ".join(["lol"] * width)}]']
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def cases(folder: Path) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """(name, hostile action, ordinary action of the same size) for each case."""
    big = SENTENCE * (50_000_000 // len(SENTENCE) + 1)
    one_line = folder / "one-line.txt"
    one_line.write_text(big)
    lines = folder / "lines.txt"
    lines.write_text(big.replace(". ", ".\n"))
    del big
    blob = folder / "blob.txt"
    blob.write_bytes(b"x" * 5_000_000)
    prose = folder / "prose.txt"
    prose.write_text((SENTENCE * (5_000_000 // len(SENTENCE) + 1))[:5_000_000])
    crafted = folder / "crafted.csv"
    crafted.write_bytes(("part,interval\n" + ',"' * 31_500 + "\nP-101,500\n").encode())
    plain = folder / "plain.csv"
    size = crafted.stat().st_size
    rows = "".join(f"P-{i},{i % 900 + 100}\n" for i in range(size // 10))
    plain.write_text(("part,interval\n" + rows)[:size])
    bomb = folder / "bomb.yaml"
    bomb.write_text(_alias_bomb() + "kind: *a9\nmetadata: {name: demo}\n")
    spec = folder / "spec.yaml"
    spec.write_text(SPEC)
    return [
        ("50 MB text in one line, loaded and chunked",
         lambda: _load_and_chunk(one_line), lambda: _load_and_chunk(lines)),
        ("5 MB without a separator, loaded and chunked",
         lambda: _load_and_chunk(blob), lambda: _load_and_chunk(prose)),
        ("crafted 63 KB CSV line (sniffer)", lambda: load_file(crafted), lambda: load_file(plain)),
        ("YAML alias bomb refused by load_spec_file", lambda: load_spec_file(bomb), lambda: load_spec_file(spec)),
    ]


def main(argv: list[str] | None = None) -> None:
    """Time each hostile input beside its ordinary twin; log both and their ratio."""
    runs = parse_runs(__doc__.splitlines()[0], argv)
    with tempfile.TemporaryDirectory() as folder:
        for name, hostile, ordinary in cases(Path(folder)):
            ordinary()  # warm-up: imports and caches
            base = median_seconds(ordinary, runs, REFUSALS)
            seconds = median_seconds(hostile, runs, REFUSALS)
            log.info("%-48s %.4f s  ordinary %.4f s  ratio %.2f", name, seconds, base, seconds / base)


if __name__ == "__main__":
    main()
