"""Build the answer-finding evaluation set from Debian's python3.11-doc (text nobody on the team wrote).

    apt-get update && apt-get install -y python3.11-doc
    python -m bench.build_eval_set            # writes bench/.data/python-faq/

Queries are the questions of the Python FAQ pages (the section titles that end
in "?"); the relevant passage of each is its answer section. The FAQ pages are
indexed with every question line removed, so a question cannot match its own
title, and other manuals (tutorial, HOWTOs, language reference and "using" by
default, ~2,000 chunks; ``--distractors ...,library`` adds ~7,500 more) are
added as distractors. Output::

    bench/.data/python-faq/corpus/faq/<page>.txt        FAQ pages, question lines removed
    bench/.data/python-faq/corpus/<manual>/<...>.txt    distractor manuals (reStructuredText sources)
    bench/.data/python-faq/questions.jsonl              {"question", "answer", "relevant_sources"}

Only this script ships with akasha; the documentation text stays in the
gitignored bench/.data/. The rules for what counts as a hit are in
akasha/evaluation/relevance.py (answer overlap restricted to the FAQ page).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import sys
from pathlib import Path

log = logging.getLogger("bench.build_eval_set")

DOC_SOURCES = Path("/usr/share/doc/python3.11/html/_sources")
OUT = Path(__file__).resolve().parent / ".data" / "python-faq"
DEFAULT_DISTRACTORS = ("tutorial", "howto", "reference", "using")  # add "library" for ~7,500 more chunks
MIN_ANSWER_WORDS = 20
_UNDERLINE = re.compile(r"^([=\-^~*+#\"'`])\1{2,}\s*$")


def _sections(lines: list[str]) -> list[tuple[int, str, str]]:
    """(line index of the title, underline char, title) for every underlined rst title."""
    found = []
    for i in range(1, len(lines)):
        match = _UNDERLINE.match(lines[i])
        title = lines[i - 1].strip()
        if match and title and not _UNDERLINE.match(lines[i - 1]) and len(lines[i].rstrip()) >= len(title):
            overline = i >= 2 and _UNDERLINE.match(lines[i - 2]) is not None
            found.append((i - 2 if overline else i - 1, match.group(1) + ("o" if overline else ""), title))
    return found


def parse_faq(text: str) -> tuple[list[tuple[str, str]], str]:
    """Split one FAQ page into (question, answer) pairs and the page text without question lines.

    A question is a section title containing "?"; its answer runs to the next
    title of any level. Question titles (and their underlines) are dropped from
    the returned page text; everything else stays.
    """
    lines = text.splitlines()
    sections = _sections(lines)
    pairs: list[tuple[str, str]] = []
    drop: set[int] = set()
    for n, (start, kind, title) in enumerate(sections):
        if "?" not in title:
            continue
        title_line = start + (1 if kind.endswith("o") else 0)
        body_start = title_line + 2
        body_end = sections[n + 1][0] if n + 1 < len(sections) else len(lines)
        answer = "\n".join(lines[body_start:body_end]).strip()
        # Drop trailing rst labels ("_faq-foo:") that belong to the next section.
        answer = re.sub(r"(\n\s*\.\. _[^\n]+:\s*)+$", "", answer).strip()
        drop.update(range(start, title_line + 2))
        if len(answer.split()) >= MIN_ANSWER_WORDS:
            pairs.append((title, answer))
    page = "\n".join(line for i, line in enumerate(lines) if i not in drop)
    return pairs, page


def build(sources: Path = DOC_SOURCES, out: Path = OUT, distractors: tuple[str, ...] = DEFAULT_DISTRACTORS) -> dict:
    """Write the corpus and questions; return counts. Raises SystemExit with the apt command if the docs are missing."""
    faq_dir = sources / "faq"
    if not faq_dir.is_dir():
        raise SystemExit(
            f"error: {faq_dir} not found. The evaluation set is built from Debian's python3.11-doc package; "
            "install it with:  apt-get update && apt-get install -y python3.11-doc"
        )
    if out.exists():
        shutil.rmtree(out)
    corpus = out / "corpus"
    (corpus / "faq").mkdir(parents=True)
    records = []
    for path in sorted(faq_dir.glob("*.rst.txt")):
        name = path.name.removesuffix(".rst.txt")
        pairs, page = parse_faq(path.read_text(encoding="utf-8"))
        if name == "index":
            continue
        target = corpus / "faq" / f"{name}.txt"
        target.write_text(page, encoding="utf-8")
        for question, answer in pairs:
            records.append({"question": question, "answer": answer, "relevant_sources": [f"faq/{name}.txt"]})
    files = 0
    for manual in distractors:
        root = sources / manual
        candidates = [root] if root.is_file() else sorted(root.rglob("*.rst.txt"))
        if not candidates or not candidates[0].exists():
            candidates = [sources / f"{manual}.rst.txt"] if (sources / f"{manual}.rst.txt").exists() else []
        if not candidates:
            log.warning("distractor manual %r not found under %s; skipped", manual, sources)
        for path in candidates:
            relative = path.relative_to(sources).as_posix().removesuffix(".rst.txt") + ".txt"
            target = corpus / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
            files += 1
    (out / "questions.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    size = sum(p.stat().st_size for p in corpus.rglob("*.txt"))
    return {"questions": len(records), "faq_pages": len(list((corpus / "faq").iterdir())), "distractor_files": files, "corpus_bytes": size, "out": str(out)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=Path, default=DOC_SOURCES, help="python3.11-doc _sources folder")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--distractors", default=",".join(DEFAULT_DISTRACTORS), help="comma-separated manuals ('' for none)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    result = build(args.sources, args.out, tuple(d for d in args.distractors.split(",") if d))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
