"""Issue 14, items 10 and 11: lying HTML charsets and hostile CSV files.

Before: ``<meta charset="utf-16">`` on an ASCII page was indexed as CJK garbage
and ``charset="cp037"`` as control characters; a CSV with one 10 MB cell lost
all its valid rows; a crafted 63 KB line kept the dialect sniffer busy for 14 s.
After: the HTML standard's rules pick the encoding and mostly-control text is
refused; the valid rows are kept and the sniffer sees at most 4 KB.
"""

from __future__ import annotations

import logging

import pytest

from akasha.errors import LoaderError
from akasha.loaders import load_file
from akasha.loaders.csv import SNIFF_CHARS, sniff_sample
from akasha.loaders.html import html_encoding
from loaders_fixtures import write

PAGE = "<html><head><meta charset=\"{charset}\"><title>Pumps</title></head><body><p>Grease pump P-101 every 500 hours.</p></body></html>"


@pytest.mark.parametrize("pad", ["", " "])  # an even byte count decodes "fine" as UTF-16: into CJK garbage
@pytest.mark.parametrize("charset", ["utf-16", "UTF-16LE", "utf-16be", "unicode", "ucs-2"])
def test_utf16_declared_in_an_ascii_page_means_utf8(tmp_path, charset, pad):
    markup = PAGE.format(charset=charset).replace("500 hours", "500 hours (café)") + pad
    [doc] = load_file(write(tmp_path / "page.html", markup.encode("utf-8")))
    assert doc.text == "Pumps\nGrease pump P-101 every 500 hours (café)."


@pytest.mark.parametrize("charset", ["cp037", "ebcdic-cp-us", "utf-7", "utf-32", "x-no-such-codec"])
def test_encodings_that_cannot_be_declared_in_ascii_are_ignored(tmp_path, charset):
    [doc] = load_file(write(tmp_path / "page.htm", PAGE.format(charset=charset).encode("ascii")))
    assert doc.text == "Pumps\nGrease pump P-101 every 500 hours."


@pytest.mark.parametrize("charset", ["iso-8859-1", "latin1", "ascii", "windows-1252"])
def test_latin1_labels_mean_windows_1252(tmp_path, charset):
    markup = PAGE.format(charset=charset).replace("hours", "hours \u2013 \u20ac5")
    [doc] = load_file(write(tmp_path / "page.html", markup.encode("cp1252")))
    assert "every 500 hours \u2013 \u20ac5." in doc.text


def test_a_real_declared_encoding_is_still_honoured(tmp_path):
    markup = PAGE.format(charset="koi8-r").replace("Pumps", "Насосы")
    [doc] = load_file(write(tmp_path / "page.html", markup.encode("koi8-r")))
    assert doc.text.startswith("Насосы")


def test_a_byte_order_mark_outranks_the_declaration(tmp_path):
    markup = PAGE.format(charset="iso-8859-1").replace("Pumps", "Pompes à eau")
    [doc] = load_file(write(tmp_path / "page.html", b"\xef\xbb\xbf" + markup.encode("utf-8")))
    assert doc.text.startswith("Pompes à eau")


def test_declared_decoding_into_mostly_control_characters_is_refused(tmp_path):
    data = ("<meta charset=\"iso-8859-5\">" + "".join(chr(c) for c in range(1, 9)) * 200).encode("latin-1")
    with pytest.raises(LoaderError, match="binary|control"):
        load_file(write(tmp_path / "noise.html", data))


def test_html_encoding_table():
    assert html_encoding("UTF-16") == "utf-8" and html_encoding(" latin1 ") == "cp1252"
    assert html_encoding("cp037") is None and html_encoding("nonsense") is None
    assert html_encoding("shift_jis") == "shift_jis" and html_encoding("gb2312") == "gb2312"


# -- CSV -------------------------------------------------------------------------------------


def test_a_ten_megabyte_cell_costs_only_its_row(tmp_path, caplog):
    rows = ["part,interval,note", "P-101,500 h,grease", "V-7,2000 h," + "x" * 10_000_000, "M-3,1000 h,bearings"]
    caplog.set_level(logging.WARNING, logger="akasha.loaders")
    [doc] = load_file(write(tmp_path / "parts.csv", "\n".join(rows).encode()))
    assert doc.text.splitlines() == ["part: P-101; interval: 500 h; note: grease",
                                     "part: M-3; interval: 1000 h; note: bearings"]
    [warning] = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert "parts.csv" in warning and "1 CSV row" in warning and "line 3" in warning


@pytest.mark.parametrize("line", [',"' * 31_500, ",'" * 31_500, 'a,"b' * 15_750, ', "' * 21_000])
def test_a_crafted_63_kb_line_does_not_stall_the_sniffer(tmp_path, line):
    data = ("part,interval\n" + line + "\nP-101,500\n").encode()
    assert len(data) > 60_000
    try:
        load_file(write(tmp_path / "crafted.csv", data))  # its speed: python -m bench.hostile_inputs
    except LoaderError:
        pass  # refusing it is fine; hanging is not


def test_the_sniffer_sees_whole_lines_within_its_budget():
    text = "a;b\n" * 2000
    sample = sniff_sample(text)
    assert len(sample) <= SNIFF_CHARS and sample.endswith("\n") and sample == text[: len(sample)]
    assert sniff_sample("x" * 10_000) == "x" * SNIFF_CHARS
    assert sniff_sample("short;file\n1;2\n") == "short;file\n1;2\n"


def test_semicolon_tables_are_still_sniffed(tmp_path):
    data = "part;interval\n" + "".join(f"P-{i};{i} h\n" for i in range(5000))
    [doc] = load_file(write(tmp_path / "parts.csv", data.encode()))
    assert doc.text.splitlines()[0] == "part: P-0; interval: 0 h"


@pytest.mark.parametrize("charset, body, expected", [
    ("punycode", b"pump seal failed", "pump seal failed"),  # punycode raised a bare UnicodeError
    ("unicode_escape", b"pump \\ud800 seal", "pump \\ud800 seal"),  # decoded into a lone surrogate before
    ("raw-unicode-escape", b"valve \\u00e9", "valve \\u00e9"),
])
def test_an_html_charset_that_is_not_a_text_encoding_is_ignored(tmp_path, charset, body, expected):
    """issue 33: such a declaration is ignored (the bytes are detected instead); the text is valid UTF-8."""
    from akasha.loaders import load_file

    page = tmp_path / "page.html"
    page.write_bytes(b'<html><head><meta charset="' + charset.encode() + b'"></head><body>' + body + b"</body></html>")
    text = load_file(page)[0].text
    assert expected in text
    text.encode("utf-8")  # no lone surrogate: storing it cannot fail


def test_a_folder_with_such_pages_is_indexed_whole(tmp_path):
    import akasha

    (tmp_path / "a.html").write_bytes(b'<meta charset="unicode_escape"><p>pump \\ud800 seal</p>')
    (tmp_path / "b.html").write_bytes(b'<meta charset="punycode"><p>valve seal</p>')
    (tmp_path / "c.txt").write_text("filter seal")
    rag = akasha.RAG(embeddings="hash", model="extractive", cache_dir=str(tmp_path / "cache"))
    hits = rag.search(str(tmp_path), "seal", k=5, search_type="bm25")
    assert {h.chunk.metadata["source"] for h in hits} == {"a.html", "b.html", "c.txt"}
