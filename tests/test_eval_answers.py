"""Answer metrics (answer@80, answer_chars) and the Debian FAQ set builder's parsing."""

from __future__ import annotations

import json

import pytest

from akasha.evaluation.metrics import contains_span, normalize_text
from akasha.evaluation.relevance import Question
from akasha.evaluation.runner import evaluate_search, score_answers

GOLD = ("Python's ``list.sort()`` method sorts the list in place and returns None, "
        "so that nobody mistakes it for a copy; use sorted() when you need a new list.")


def test_a_reply_quoting_80_characters_of_the_reference_counts():
    quote = "Python's list.sort() method sorts the list in place and returns None, so that nobody mistakes it"
    assert contains_span(f"{quote} (faq/programming.txt)", GOLD)
    assert not contains_span("sorted() returns a new list; sort() works in place.", GOLD)
    assert contains_span("The answer: " + "x " * 5, "x x x")  # a short reference must appear whole
    assert not contains_span("", GOLD) and not contains_span(GOLD, "")
    with pytest.raises(ValueError):
        contains_span(GOLD, GOLD, span=0)


def test_normalisation_ignores_case_markup_and_cjk_punctuation():
    assert normalize_text("**Café**, `x`!") == "cafe x"
    assert normalize_text("什么是 Debian？它是……") == "什么是 debian 它是"


def test_score_answers_and_the_table_columns():
    questions = [Question("How does sort work?", answer=GOLD), Question("Which file?", ["a.txt"])]
    replies = {"How does sort work?": GOLD[:100]}
    scores = score_answers(lambda q, st, rr: replies[q], questions, "auto", None)
    assert scores == {"answer@80": 1.0, "answer_chars": 100.0}  # the question without a reference is skipped

    class Hit:
        text, path = GOLD, "faq.txt"

    table = evaluate_search(lambda q, st, rr, k: [Hit()], questions, search_types=["auto"],
                            answer=lambda q, st, rr: "nothing useful")
    row = table.row("auto")
    assert row["answer@80"] == 0.0 and row["answer_chars"] == len("nothing useful")
    assert "answer@80" in table.to_markdown() and "answer_chars" in str(table)
    without = evaluate_search(lambda q, st, rr, k: [Hit()], questions, search_types=["auto"])
    assert "answer@80" not in without.to_markdown()


PAGE = """<html><head><title>t</title></head><body>
<div class="navheader">Prev Next</div>
<div class="chapter"><h1 class="title">Chapter 5. Software</h1>
<div class="section"><h2 class="title"><a id="a"></a>5.1. What kinds of software does Debian ship?</h2>
<p>Debian ships more than fifty thousand packages, from compilers and editors to desktop environments,
servers and games, all built from source by the project. See
<a class="xref" href="x.html#b" title="5.2. Who wrote all that software?">Section 5.2, &#8220;Who wrote all that software?&#8221;</a>.</p>
<pre class="screen">apt search editor</pre></div>
<div class="section"><h2 class="title">5.2. Who wrote all that software?</h2><p>Too short.</p></div>
<div class="section"><h2 class="title">5.3. Packaging notes</h2><p>Not a question, stays in the text.</p></div>
</div><div class="navfooter">Home</div></body></html>"""


def test_debian_builder_removes_questions_and_quoted_cross_references():
    from bench.build_debian_faq import parse_page

    pairs, page = parse_page(PAGE)
    assert [q for q, _ in pairs] == ["What kinds of software does Debian ship?"]  # 5.2's answer is too short
    answer = pairs[0][1]
    assert answer.startswith("Debian ships more than fifty thousand packages") and "apt search editor" in answer
    assert "§5.2" in answer and "Who wrote" not in answer  # the quoted title is cut to its number
    assert "?" not in page and "Prev" not in page and "Home" not in page
    assert "5.3. Packaging notes" in page and "Not a question" in page


def test_debian_builder_names_the_package_to_install(tmp_path, monkeypatch):
    import bench.build_debian_faq as builder

    monkeypatch.setitem(builder.LANGS, "en", (tmp_path / "none", ".en.html", "debian-faq", ".en.html", "debian-reference-en"))
    with pytest.raises(SystemExit, match="apt-get install -y debian-faq"):
        builder.build("en", tmp_path / "out")
    faq = tmp_path / "faq"
    faq.mkdir()
    (faq / "software.en.html").write_text(PAGE, encoding="utf-8")
    monkeypatch.setitem(builder.LANGS, "en", (faq, ".en.html", "debian-faq", ".en.html", "debian-reference-en"))
    monkeypatch.setattr(builder, "REFERENCE_ROOT", tmp_path / "no-reference")
    with pytest.raises(SystemExit, match="debian-reference-en"):
        builder.build("en", tmp_path / "out")
    info = builder.build("en", tmp_path / "out", distractors=False)
    assert info["questions"] == 1
    record = json.loads((tmp_path / "out" / "questions.jsonl").read_text(encoding="utf-8"))
    assert record["relevant_sources"] == ["faq/software.txt"]
    assert (tmp_path / "out" / "corpus" / "faq" / "software.txt").is_file()
