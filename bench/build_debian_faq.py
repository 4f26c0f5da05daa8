"""Build question sets from the Debian FAQ (English, Simplified Chinese or Japanese), with distractors.

    apt-get update && apt-get install -y debian-faq debian-reference-en          # --lang en
    apt-get update && apt-get install -y debian-faq-zh-cn debian-reference-zh-cn # --lang zh-cn
    apt-get update && apt-get install -y debian-faq-ja                           # --lang ja (no distractors)
    python -m bench.build_debian_faq --lang en      # writes bench/.data/debian-faq-en/
    python -m bench.build_debian_faq --lang zh-cn   # writes bench/.data/debian-faq-zh-cn/

Text nobody on the team wrote, in the seed users' language too. Queries are the
FAQ's section titles that ask a question (contain "?" or "？"), without their
number ("1.2. What is Debian GNU/Linux?" -> "What is Debian GNU/Linux?"); the
relevant passage of each is its answer: the text from the title to the next
title of any level. Every FAQ chapter is indexed as plain text with the question
titles removed, and every cross-reference that quotes a question ("see Section
12.1, “What other documentation ...?”") is cut to its number ("see §12.1"), so
a question never matches its own title or a quotation of it. The chapters of
the Debian Reference in the same language (a system administration guide that
covers the same ground: packages, apt, the kernel, networking) are added as
distractors unless ``--distractors none``. Output::

    bench/.data/debian-faq-<lang>/corpus/faq/<chapter>.txt        FAQ chapters, question titles removed
    bench/.data/debian-faq-<lang>/corpus/reference/<chapter>.txt  Debian Reference chapters (distractors)
    bench/.data/debian-faq-<lang>/questions.jsonl                 {"question", "answer", "relevant_sources"}

The HTML is converted with the standard library only, so the set is the same
on every machine with the same package versions (recorded in ``build.json``).
Relevance is judged as for the Python FAQ set (akasha/evaluation/relevance.py:
answer overlap, restricted to the question's FAQ chapter).
"""

from __future__ import annotations

import argparse
import html
import json
import logging
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

log = logging.getLogger("bench.build_debian_faq")

FAQ_ROOT = Path("/usr/share/doc/debian/FAQ")
REFERENCE_ROOT = Path("/usr/share/debian-reference")
DATA = Path(__file__).resolve().parent / ".data"
LANGS = {
    # lang: (FAQ html folder, FAQ file suffix, FAQ package, Debian Reference suffix, reference package)
    "en": (FAQ_ROOT, ".en.html", "debian-faq", ".en.html", "debian-reference-en"),
    "zh-cn": (FAQ_ROOT / "zh-cn", ".zh-cn.html", "debian-faq-zh-cn", ".zh-cn.html", "debian-reference-zh-cn"),
    "ja": (FAQ_ROOT / "ja", ".ja.html", "debian-faq-ja", ".ja.html", "debian-reference-ja"),
}
#: Pages without questions (the table of contents, the FAQ's own colophon).
SKIP_PAGES = ("index", "faqinfo")
#: An answer needs this many tokens (akasha's tokenizer: words, or Chinese/Japanese words and pairs).
MIN_ANSWER_TOKENS = 20
HEAD = "\x00HEAD\x00"
_BLOCK = {"p", "div", "li", "dt", "dd", "tr", "pre", "table", "ul", "ol", "dl", "br", "h1", "h2", "h3", "h4", "h5", "blockquote"}
_NUMBER = re.compile(r"^\s*(?:\d+\.)+\d*\.?\s*")


class _Text(HTMLParser):
    """DocBook HTML -> text lines; headings marked with HEAD, cross-references cut to their number."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skip = 0  # inside navigation header/footer, <head>, <style>
        self.stack: list[str] = []
        self.heading = False
        self.xref = 0  # inside <a class="xref">: text replaced by its number
        self.pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        classes = (attr.get("class") or "").split()
        if self.skip:
            if tag == "div":
                self.skip += 1
            return
        if tag in ("head", "style", "script") or (tag == "div" and {"navheader", "navfooter", "toc"} & set(classes)):
            self.skip = 1
            self.stack.append(tag)
            return
        if tag in _BLOCK:
            self.out.append("\n")
        if tag == "pre":
            self.pre += 1
        if tag in ("h1", "h2", "h3", "h4", "h5") and "title" in classes:
            self.heading = True
            self.out.append(HEAD)
        if tag == "a" and "xref" in classes:
            title = attr.get("title") or ""
            number = _NUMBER.match(title)
            self.out.append(f"§{number.group(0).strip().rstrip('.')}" if number else "")
            self.xref += 1

    def handle_endtag(self, tag: str) -> None:
        if self.skip:
            if tag == "div" or (self.stack and tag == self.stack[-1]):
                self.skip -= 1
                if self.skip == 0 and self.stack:
                    self.stack.pop()
            return
        if tag == "a" and self.xref:
            self.xref -= 1
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag in ("h1", "h2", "h3", "h4", "h5") and self.heading:
            self.heading = False
            self.out.append("\n")
        elif tag in _BLOCK:
            self.out.append("\n")

    def handle_data(self, data: str) -> None:
        if self.skip or self.xref:
            return
        if self.heading or not self.pre:
            data = re.sub(r"\s+", " ", data)
            if not self.out or self.out[-1].endswith("\n") or self.out[-1] == HEAD:
                data = data.lstrip()
        self.out.append(data)

    def text(self) -> str:
        lines = []
        for line in "".join(self.out).split("\n"):
            line = line.rstrip()
            if line.strip() or (lines and lines[-1]):
                lines.append(line)
        joined = "\n".join(lines)
        return re.sub(r"\n{3,}", "\n\n", joined).strip() + "\n"


def html_to_text(markup: str) -> str:
    """The page's text with headings on their own lines, prefixed by :data:`HEAD`."""
    parser = _Text()
    parser.feed(markup)
    parser.close()
    return parser.text()


def _is_question(title: str) -> bool:
    return "?" in title or "？" in title


def parse_page(markup: str) -> tuple[list[tuple[str, str]], str]:
    """(question, answer) pairs of one FAQ chapter and its text without question titles.

    The question is the title without its number; the answer runs to the next
    title of any level. Titles that are not questions stay in the text.
    """
    from akasha.retrieval.tokenize import tokenize

    lines = html_to_text(markup).splitlines()
    heads = [i for i, line in enumerate(lines) if line.lstrip().startswith(HEAD)]
    pairs: list[tuple[str, str]] = []
    drop: set[int] = set()
    for n, i in enumerate(heads):
        title = lines[i].replace(HEAD, "").strip()
        if not _is_question(title):
            lines[i] = title
            continue
        drop.add(i)
        end = heads[n + 1] if n + 1 < len(heads) else len(lines)
        answer = "\n".join(lines[i + 1 : end]).strip()
        question = _NUMBER.sub("", title).strip()
        if len(tokenize(answer)) >= MIN_ANSWER_TOKENS:
            pairs.append((question, answer))
    page = "\n".join(line.replace(HEAD, "") for i, line in enumerate(lines) if i not in drop)
    return pairs, re.sub(r"\n{3,}", "\n\n", page).strip() + "\n"


def _package_version(package: str) -> str | None:
    try:
        done = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True, check=False)
    except OSError:
        return None
    return done.stdout.strip() or None


def build(lang: str = "en", out: Path | None = None, distractors: bool = True) -> dict:
    """Write the corpus and questions of one language; return counts.

    Raises SystemExit with the apt-get command when a package is missing.
    """
    if lang not in LANGS:
        raise SystemExit(f"error: unknown --lang {lang!r}; known: {', '.join(LANGS)}")
    faq_dir, suffix, faq_package, ref_suffix, ref_package = LANGS[lang]
    out = out or DATA / f"debian-faq-{lang}"
    pages = sorted(p for p in faq_dir.glob(f"*{suffix}") if p.name.removesuffix(suffix) not in SKIP_PAGES)
    if not pages:
        raise SystemExit(
            f"error: no Debian FAQ pages ({suffix}) under {faq_dir}. Install the package with:  "
            f"apt-get update && apt-get install -y {faq_package}"
        )
    references = sorted(REFERENCE_ROOT.glob(f"*{ref_suffix}")) if distractors else []
    references = [p for p in references if p.name.removesuffix(ref_suffix) != "index"]
    if distractors and not references:
        raise SystemExit(
            f"error: no Debian Reference chapters ({ref_suffix}) under {REFERENCE_ROOT} for the distractors. "
            f"Install them with:  apt-get update && apt-get install -y {ref_package}   "
            "(or pass --distractors none)"
        )
    if out.exists():
        shutil.rmtree(out)
    (out / "corpus" / "faq").mkdir(parents=True)
    records = []
    for path in pages:
        name = path.name.removesuffix(suffix)
        pairs, page = parse_page(path.read_text(encoding="utf-8"))
        (out / "corpus" / "faq" / f"{name}.txt").write_text(page, encoding="utf-8")
        records += [{"question": q, "answer": a, "relevant_sources": [f"faq/{name}.txt"]} for q, a in pairs]
    if references:
        (out / "corpus" / "reference").mkdir()
    for path in references:
        text = html_to_text(path.read_text(encoding="utf-8")).replace(HEAD, "")
        (out / "corpus" / "reference" / f"{path.name.removesuffix(ref_suffix)}.txt").write_text(text, encoding="utf-8")
    (out / "questions.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    info = {
        "lang": lang,
        "questions": len(records),
        "faq_pages": len(pages),
        "distractor_files": len(references),
        "corpus_chars": sum(len(p.read_text(encoding="utf-8")) for p in (out / "corpus").rglob("*.txt")),
        "packages": {faq_package: _package_version(faq_package), **({ref_package: _package_version(ref_package)} if references else {})},
        "out": str(out),
    }
    (out / "build.json").write_text(json.dumps(info, indent=1, ensure_ascii=False), encoding="utf-8")
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", default="en", choices=list(LANGS))
    parser.add_argument("--out", type=Path, default=None, help="output folder (default bench/.data/debian-faq-<lang>)")
    parser.add_argument("--distractors", choices=["reference", "none"], default="reference",
                        help="add the Debian Reference chapters of the same language (default) or nothing")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    result = build(args.lang, args.out, args.distractors == "reference")
    sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
