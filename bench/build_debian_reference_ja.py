"""Build a Japanese question set from the Debian Reference (debian-reference-ja): headings as queries.

    apt-get update && apt-get install -y debian-reference-ja
    python -m bench.build_debian_reference_ja      # writes bench/.data/debian-reference-ja/

A second Japanese set beside the Japanese Debian FAQ (bench/build_debian_faq.py), from a
larger text of another kind: a system administration guide (380,000 characters of text in 12
chapters, the preface and an appendix), not a question-and-answer document, and not manual pages. Its section titles
are short topic names ("ホスト名の解決", "SSH の基本", "パスワード規則強化"), which is what
people type into a search box; each title that is mostly Japanese becomes a query, without
its number (titles used by two sections are left out), and its relevant passage is the
section's own text (from the title to the next title of any level), when that text is mostly Japanese too and at least
:data:`MIN_ANSWER_TOKENS` tokens long (parts of the Reference are untranslated English).
Every query title is removed from the indexed chapter text, so no chunk holds its own query
as a line, and cross-references quoting a title are cut to their number, as for the FAQ
sets. Relevance: answer overlap (akasha/evaluation/relevance.py), within the section's chapter.
Output::

    bench/.data/debian-reference-ja/corpus/<chapter>.txt   chapters, query titles removed
    bench/.data/debian-reference-ja/questions.jsonl        {"question", "answer", "relevant_sources"}
    bench/.data/debian-reference-ja/build.json             counts and the package version
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import sys
from pathlib import Path

from bench.build_debian_faq import HEAD, REFERENCE_ROOT, _package_version, html_to_text

DATA = Path(__file__).resolve().parent / ".data"
PACKAGE = "debian-reference-ja"
SUFFIX = ".ja.html"
#: A title or a section body is Japanese when at least this share of its letters and digits are.
MIN_JAPANESE = 0.3
#: A section needs this many tokens of text to be a query's answer.
MIN_ANSWER_TOKENS = 20
#: A section number: "5.1.2. ", or an appendix's "A.2. ".
_NUMBER = re.compile(r"^\s*(?:[A-Z]|\d+)(?:\.\d+)*\.?\s+")


def parse_chapter(markup: str) -> tuple[list[tuple[str, str]], str]:
    """(query, section text) pairs of one chapter, and the chapter's text without the query titles."""
    from akasha.retrieval.fusion import cjk_share
    from akasha.retrieval.tokenize import tokenize

    lines = html_to_text(markup).splitlines()
    heads = [i for i, line in enumerate(lines) if line.lstrip().startswith(HEAD)]
    pairs: list[tuple[str, str]] = []
    drop: set[int] = set()
    for n, i in enumerate(heads):
        title = _NUMBER.sub("", lines[i].replace(HEAD, "").strip()).strip()
        end = heads[n + 1] if n + 1 < len(heads) else len(lines)
        body = "\n".join(lines[i + 1 : end]).strip()
        if (n == 0 or cjk_share(title) < MIN_JAPANESE or cjk_share(body) < MIN_JAPANESE
                or len(tokenize(body)) < MIN_ANSWER_TOKENS):
            lines[i] = lines[i].replace(HEAD, "")  # the chapter title and the titles kept as text
            continue
        drop.add(i)
        pairs.append((title, body))
    page = "\n".join(line for i, line in enumerate(lines) if i not in drop)
    return pairs, re.sub(r"\n{3,}", "\n\n", page).strip() + "\n"


def build(out: Path | None = None) -> dict:
    """Write the corpus and questions; return counts. SystemExit with the apt-get line when the package is missing."""
    out = out or DATA / "debian-reference-ja"
    pages = sorted(p for p in REFERENCE_ROOT.glob(f"*{SUFFIX}") if p.name.removesuffix(SUFFIX) != "index")
    if not pages:
        raise SystemExit(f"error: no Japanese Debian Reference chapters ({SUFFIX}) under {REFERENCE_ROOT}. "
                         f"Install them with:  apt-get update && apt-get install -y {PACKAGE}")
    if out.exists():
        shutil.rmtree(out)
    (out / "corpus").mkdir(parents=True)
    records = []
    for path in pages:
        name = path.name.removesuffix(SUFFIX)
        pairs, text = parse_chapter(path.read_text(encoding="utf-8"))
        (out / "corpus" / f"{name}.txt").write_text(text, encoding="utf-8")
        records += [{"question": q, "answer": a, "relevant_sources": [f"{name}.txt"]} for q, a in pairs]
    titles = [r["question"] for r in records]
    records = [r for r in records if titles.count(r["question"]) == 1]  # a title used twice asks for two sections
    (out / "questions.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                                         encoding="utf-8")
    info = {"questions": len(records), "chapters": len(pages),
            "corpus_chars": sum(len(p.read_text(encoding="utf-8")) for p in (out / "corpus").glob("*.txt")),
            "packages": {PACKAGE: _package_version(PACKAGE)}, "out": str(out)}
    (out / "build.json").write_text(json.dumps(info, indent=1, ensure_ascii=False), encoding="utf-8")
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default bench/.data/debian-reference-ja)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sys.stdout.write(json.dumps(build(args.out), ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
