"""The offline extractive answerer: verbatim quotes of the best sentences, each with its source."""

from __future__ import annotations

import pytest

import akasha
from akasha.embeddings.hash import HashEmbedder
from akasha.errors import ConfigError
from akasha.llm import resolve_chat_model
from akasha.llm.base import GenerationOptions
from akasha.llm.extractive import NO_ANSWER, ExtractiveAnswerer
from akasha.prompts import format_document, user_message
from akasha.types import Chunk, Hit
from facade_fixtures import CORPUS, write_corpus

OPTS = GenerationOptions()


def messages_for(question: str, docs: list[tuple[str, str, int | None]]) -> list[dict]:
    blocks = []
    for i, (source, text, page) in enumerate(docs, 1):
        meta = {"source": source}
        if page is not None:
            meta["page"] = page
        blocks.append(format_document(i, Hit(Chunk(f"c{i}", text, meta), 1.0)))
    return [{"role": "system", "content": "sys"}, {"role": "user", "content": user_message(question, blocks)}]


MANUAL = [
    ("manual.pdf", "Safety first. The pump must be serviced every 500 operating hours. Wear gloves when opening it.", 4),
    ("notes.md", "The office is closed on Sundays. Lunch is at noon.", None),
    ("faq.txt", "Servicing the pump takes about two hours and requires a 10 mm wrench.", None),
]


def test_quotes_the_supporting_sentences_with_sources_in_document_order():
    answer = resolve_chat_model("extractive").generate(messages_for("How often must the pump be serviced?", MANUAL), OPTS)
    lines = answer.splitlines()
    # A sentence under 80 characters brings the next sentence of its document along (a sentence window).
    assert lines[0] == "The pump must be serviced every 500 operating hours. Wear gloves when opening it. (manual.pdf, page 4)"
    assert all("office" not in line and "Lunch" not in line for line in lines)
    # Nothing invented: every quoted sentence occurs verbatim in a document.
    texts = " ".join(t for _, t, _ in MANUAL)
    for line in lines:
        assert line.rsplit(" (", 1)[0] in texts


def test_no_supporting_sentence_says_so():
    answer = ExtractiveAnswerer().generate(messages_for("What colour is the sky on Mars?", MANUAL), OPTS)
    assert answer == NO_ANSWER


def test_sentence_count_is_configurable():
    two = resolve_chat_model("extractive:1").generate(messages_for("pump serviced hours wrench", MANUAL), OPTS)
    assert len(two.splitlines()) == 1
    with pytest.raises(ConfigError):
        ExtractiveAnswerer("many")


@pytest.mark.parametrize("bad", [{"budget": 0}, {"sentences": 0}, {"weights": (0.5, 0.5)}, {"cjk_weights": (0, 0, 0)},
                                 {"weights": (1.0, -0.1, 0.1)}])
def test_settings_out_of_range_are_refused(bad):
    from akasha.llm.extractive import ExtractiveSettings

    with pytest.raises(ConfigError, match="ExtractiveSettings"):
        ExtractiveSettings(**bad)


def test_chinese_question_matches_chinese_text():
    docs = [("維護.md", "空氣濾網每十二個月更換一次。冷卻液每五年更換。", None), ("other.md", "辦公室週日休息。", None)]
    answer = ExtractiveAnswerer().generate(messages_for("空氣濾網多久更換？", docs), OPTS)
    assert answer.splitlines()[0] == "空氣濾網每十二個月更換一次。 (維護.md)"


def test_stream_matches_generate():
    model = ExtractiveAnswerer()
    msgs = messages_for("pump serviced wrench", MANUAL)
    assert "".join(model.stream(msgs, OPTS)) == model.generate(msgs, OPTS)


def test_end_to_end_with_the_facade_gives_useful_answers(tmp_path):
    corpus = write_corpus(tmp_path / "docs")
    rag = akasha.RAG(model="extractive", embeddings=HashEmbedder(), cache_dir=":memory:")
    expectations = {
        "How often should the air filter be replaced?": "every 12 months",
        "How long are batteries covered by the warranty?": "Batteries are covered for two years only.",
        "What is the recommended tyre pressure?": "2.4 bar front",
        "When should brake pads be replaced?": "replace them below 3 mm",
    }
    for question, expected in expectations.items():
        answer = rag(corpus, question)
        assert expected in answer, (question, answer)
        assert "(" in answer and any(name in answer for name in CORPUS)
        assert "Sources:" not in answer  # the extractive answer already cites inline


class KeywordEmbedder:
    """Two-dimensional vectors: (mentions maintenance, mentions anything else); counts its calls."""

    name = "keyword-test"

    def __init__(self) -> None:
        self.documents = 0

    def _vector(self, text: str) -> list[float]:
        hit = any(word in text.lower() for word in ("maintenance", "overhaul", "inspect"))
        return [1.0, 0.0] if hit else [0.0, 1.0]

    def embed_documents(self, texts):
        self.documents += len(texts)
        return [self._vector(t) for t in texts]

    def embed_query(self, text):
        return self._vector(text)


DOCS = [
    ("a.md", "The office is closed on Sundays and opens at nine on weekdays for everyone.", None),
    ("b.md", "A full overhaul of the gearbox is due after 2,000 hours of operation in normal service.", None),
]


def test_the_embedder_finds_a_sentence_that_shares_no_word_with_the_question():
    question = "maintenance schedule?"
    assert ExtractiveAnswerer(embedder=False).generate(messages_for(question, DOCS), OPTS) == NO_ANSWER
    embedder = KeywordEmbedder()
    model = ExtractiveAnswerer(embedder=embedder)
    answer = model.generate(messages_for(question, DOCS), OPTS)
    assert answer.startswith("A full overhaul of the gearbox") and "office" not in answer
    calls = embedder.documents
    model.generate(messages_for(question, DOCS), OPTS)
    assert embedder.documents == calls  # sentence vectors are cached per answerer


def test_repeated_sentences_are_quoted_once_and_answers_stay_short():
    long_doc = " ".join(f"Pump check {i}: the pump must be serviced every 500 operating hours, no matter what." for i in range(12))
    docs = [("a.md", long_doc, None), ("b.md", "The pump must be serviced every 500 operating hours, as the manual says.", None)]
    answer = ExtractiveAnswerer("10", embedder=False).generate(messages_for("How often must the pump be serviced?", docs), OPTS)
    quoted = [line.rsplit(" (", 1)[0] for line in answer.splitlines()]
    assert len(quoted) == 1  # the others say the same thing
    assert sum(len(q) for q in quoted) <= 500


RST_DOC = """=====================
Library and Mail FAQ
=====================

.. only:: html

   .. contents::

.. _faq-send-mail:

Use the standard library module smtplib to send mail from a script.

Here is a very simple interactive mail sender that uses it. It works on any host
that supports an SMTP listener::

   import smtplib
   server = smtplib.SMTP('localhost')
   server.sendmail(fromaddr, toaddrs, msg)

The office opens at nine on weekdays and is closed on Sundays for everyone.
"""


def test_markup_is_not_quoted_and_code_is_told_apart():
    from akasha.llm.sentences import quotable_sentences

    pieces = quotable_sentences(RST_DOC)
    texts = [p.text for p in pieces]
    assert not any("FAQ" in t or ".. " in t or "====" in t for t in texts)  # title, directives, label dropped
    assert texts[0] == "Use the standard library module smtplib to send mail from a script."
    code = [p.text for p in pieces if p.code]
    assert code == ["import smtplib server = smtplib.SMTP('localhost') server.sendmail(fromaddr, toaddrs, msg)"]
    assert all(not p.code for p in pieces if p.text != code[0])


def test_markdown_fences_and_doctest_lines_are_code_units():
    from akasha.llm.sentences import quotable_sentences

    text = ("Install it first.\n\n```bash\npip install akasha\nakasha ask ./docs\n```\n\n"
            ">>> import akasha\n>>> akasha.RAG()\nThen ask your question in plain words.")
    pieces = quotable_sentences(text)
    assert ("pip install akasha akasha ask ./docs", True) in pieces
    assert (">>> import akasha >>> akasha.RAG()", True) in pieces
    assert pieces[-1] == ("Then ask your question in plain words.", False)


def test_a_short_fragment_opens_the_next_sentence_of_its_paragraph():
    from akasha.llm.sentences import quotable_sentences

    pieces = [p.text for p in quotable_sentences("Yes. Debian runs on many kernels, Linux first.\n\nSee below.")]
    assert pieces == ["Yes. Debian runs on many kernels, Linux first."]  # "See below." ends its paragraph alone


def test_chinese_and_japanese_sentences_do_not_end_inside_brackets_or_quotes():
    from akasha.llm.sentences import quotable_sentences

    zh = [p.text for p in quotable_sentences("本文档回答关于 Debian 的常见问题（以及解答！）。如果可能，会提供到其他文档的链接。")]
    assert zh == ["本文档回答关于 Debian 的常见问题（以及解答！）。", "如果可能，会提供到其他文档的链接。"]
    ja = [p.text for p in quotable_sentences("彼は「本当にそうですか？」と聞きました。それは正しいです、間違いありません。")]
    assert ja == ["彼は「本当にそうですか？」と聞きました。", "それは正しいです、間違いありません。"]


def test_a_sentence_ending_with_a_colon_brings_its_code_along():
    answer = ExtractiveAnswerer(embedder=False).generate(
        messages_for("How do I send mail from a Python script with an SMTP listener?", [("library.rst", RST_DOC, 3)]), OPTS)
    assert "It works on any host that supports an SMTP listener:: import smtplib" in answer
    assert "office" not in answer
    # The quotes of one source form one line with one citation.
    assert len(answer.splitlines()) == 1 and answer.endswith("(library.rst, page 3)")
    assert answer.count("(library.rst") == 1


def test_quotes_of_one_source_share_a_line_with_gaps_marked():
    docs = [("pump.md", "The pump must be serviced every 500 operating hours by a trained technician.", 2),
            ("office.md", "The office is closed on Sundays and opens at nine on weekdays for every visitor.", None),
            ("pump.md", "A serviced pump gets a green sticker dated by the technician who serviced it.", 2)]
    answer = ExtractiveAnswerer(embedder=False).generate(
        messages_for("Who services the pump?", docs), OPTS)
    assert answer == ("The pump must be serviced every 500 operating hours by a trained technician. … "
                      "A serviced pump gets a green sticker dated by the technician who serviced it. (pump.md, page 2)")


def test_the_reply_budget_counts_citations_and_answers_are_deterministic():
    from akasha.llm.extractive import ExtractiveSettings

    facts = ["The pump must be serviced every 500 operating hours by a trained technician with a torque wrench.",
             "A technician who services the pump signs the maintenance log and notes the oil colour and level.",
             "Serviced pumps get a green sticker; the technician dates it and the supervisor checks it monthly.",
             "If the pump is serviced late, the warranty lapses and the technician files an incident report.",
             "Spare seals for servicing the pump are kept in cabinet B, next to the technician's workbench.",
             "The pump's bearings are greased at every second service, by the same technician if possible."]
    docs = [(f"doc{i}.md", fact, None) for i, fact in enumerate(facts, 1)]
    settings = ExtractiveSettings(budget=300, keep_fraction=0.0)
    model = ExtractiveAnswerer(embedder=False, settings=settings)
    msgs = messages_for("How often must the pump be serviced by a technician?", docs)
    answer = model.generate(msgs, OPTS)
    assert 1 < len(answer.splitlines()) and len(answer) <= 300
    assert all(line.endswith(".md)") for line in answer.splitlines())
    assert ExtractiveAnswerer(embedder=False, settings=settings).generate(msgs, OPTS) == answer
    wider = ExtractiveAnswerer(embedder=False, settings=ExtractiveSettings(budget=600, keep_fraction=0.0)).generate(msgs, OPTS)
    assert 300 < len(wider) <= 600


def test_the_best_sentence_brings_the_passage_after_it():
    doc = ("Lists and tuples are used in different ways. Tuples are small records of related values, "
           "like a coordinate. Lists hold many items of one kind, handled one by one.")
    answer = ExtractiveAnswerer(embedder=False).generate(
        messages_for("Why are tuples and lists different?", [("design.txt", doc, None)]), OPTS)
    assert answer == f"{doc} (design.txt)"


def test_a_chinese_question_leans_on_bm25_with_an_english_embedder():
    from akasha.llm.extractive import ExtractiveSettings, _scores, _candidates

    docs = [{"source": "a.md", "page": None, "text": "空氣濾網每十二個月更換一次。"},
            {"source": "b.md", "page": None, "text": "辦公室週日休息，午餐在中午。"}]
    sentences = _candidates(docs)
    dense_only = ExtractiveSettings(weights=(1.0, 0.0, 0.0), cjk_weights=(0.0, 1.0, 0.0), min_cosine=0.0)
    embedder = KeywordEmbedder()  # finds nothing in Chinese: every sentence looks alike to it
    scores = _scores("空氣濾網多久更換？", sentences, embedder, None, dense_only)
    assert scores[0] == pytest.approx(1.0) and scores.get(1, 0.0) == pytest.approx(0.0)  # BM25 alone decided
    english = _scores("How often is the air filter replaced?", sentences, embedder, None, dense_only)
    assert set(english.values()) <= {0.0}  # the cosine weights apply, and they see no difference here
