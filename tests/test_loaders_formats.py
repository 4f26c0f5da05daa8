"""Each supported file type loads into Documents with the promised text, ids and metadata."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from akasha.errors import LoaderError
from akasha.loaders import LOADERS, SUPPORTED_EXTENSIONS, load_file
from akasha.loaders.pdf import available_engines, load_pdf
from loaders_fixtures import docx_bytes, pdf_bytes, write


def test_supported_extensions_match_loaders():
    assert SUPPORTED_EXTENSIONS == frozenset({".txt", ".md", ".pdf", ".docx", ".csv", ".html", ".htm"})
    assert set(LOADERS) == set(SUPPORTED_EXTENSIONS)


@pytest.mark.parametrize("suffix", [".txt", ".md", ".TXT"])
def test_text_and_markdown_load_as_one_document(tmp_path: Path, suffix: str):
    path = write(tmp_path / f"guide{suffix}", "# Pumps\n\nGrease the bearing every 500 hours.\n".encode())
    [doc] = load_file(path)
    assert doc.text.startswith("# Pumps")
    assert "500 hours" in doc.text
    assert doc.id == str(path)
    assert doc.metadata == {"source": str(path), "file_type": suffix.lower()}


def test_data_argument_is_used_instead_of_reading(tmp_path: Path):
    path = tmp_path / "never-written.txt"
    [doc] = load_file(path, data=b"bytes the caller already read")
    assert doc.text == "bytes the caller already read"


@pytest.mark.parametrize("engine", [None, *available_engines()])
def test_pdf_gives_one_document_per_page_with_1_based_pages(tmp_path: Path, engine):
    pages = ["Pump P-101 inspected.\nBearing at 62 C.", "Valve V-7 replaced.", "Summary page."]
    path = write(tmp_path / "report.pdf", pdf_bytes(pages))
    docs = load_file(path) if engine is None else load_pdf(path, engine=engine)
    assert [d.text.strip() for d in docs] == pages
    assert [d.metadata["page"] for d in docs] == [1, 2, 3]
    assert [d.id for d in docs] == [f"{path}:p1", f"{path}:p2", f"{path}:p3"]
    assert "P-101" in docs[0].text and "V-7" in docs[1].text
    assert all(d.metadata["source"] == str(path) and d.metadata["file_type"] == ".pdf" for d in docs)


@pytest.mark.parametrize("engine", available_engines())
def test_pdf_blank_page_is_skipped_but_others_kept(tmp_path: Path, engine: str):
    path = write(tmp_path / "gap.pdf", pdf_bytes(["First page text.", "", "Third page text."]))
    docs = load_pdf(path, engine=engine)
    assert [d.metadata["page"] for d in docs] == [1, 3]


def test_docx_paragraphs_and_tables_in_document_order(tmp_path: Path):
    blocks = [
        "Inspection checklist",
        [["Item", "Interval", "Status"], ["Bearing grease", "500 h", "done"], ["Seal check", "1000 h", "open"]],
        "Signed off by the shift lead.",
    ]
    path = write(tmp_path / "checklist.docx", docx_bytes(blocks))
    [doc] = load_file(path)
    assert doc.text.splitlines() == [
        "Inspection checklist",
        "Item | Interval | Status",
        "Bearing grease | 500 h | done",
        "Seal check | 1000 h | open",
        "Signed off by the shift lead.",
    ]
    assert doc.metadata == {"source": str(path), "file_type": ".docx"}


def test_docx_merged_cells_are_counted_once(tmp_path: Path):
    import io

    import docx

    document = docx.Document()
    table = document.add_table(rows=2, cols=3)
    merged = table.cell(0, 0).merge(table.cell(0, 2))
    merged.text = "Pump P-101"
    for c, value in enumerate(["a", "b", "c"]):
        table.cell(1, c).text = value
    buffer = io.BytesIO()
    document.save(buffer)
    [doc] = load_file(write(tmp_path / "merged.docx", buffer.getvalue()))
    assert doc.text.splitlines() == ["Pump P-101", "a | b | c"]


@pytest.mark.parametrize("delimiter", [",", ";", "\t"])
def test_csv_rows_become_header_value_lines(tmp_path: Path, delimiter: str):
    rows = [["part", "interval_h", "note"], ["P-101 bearing", "500", "grease, 12 g"], ["V-7 seal", "2000", ""]]
    lines = []
    for row in rows:
        lines.append(delimiter.join(f'"{c}"' if delimiter in c or "," in c else c for c in row))
    path = write(tmp_path / "schedule.csv", ("\n".join(lines) + "\n").encode())
    [doc] = load_file(path)
    assert doc.text.splitlines() == [
        "part: P-101 bearing; interval_h: 500; note: grease, 12 g",
        "part: V-7 seal; interval_h: 2000",
    ]


def test_csv_header_only_is_still_text(tmp_path: Path):
    [doc] = load_file(write(tmp_path / "h.csv", b"part,interval\n"))
    assert doc.text == "part | interval"


def test_html_keeps_visible_text_and_drops_script_and_style(tmp_path: Path):
    markup = (
        "<!doctype html><html><head><title>Pump care</title><style>p{color:red}</style>"
        "<script>var secret = 'do not index';</script></head><body>"
        "<h1>Pump&nbsp;care</h1><p>Grease   every <b>500</b> hours.</p><br>"
        "<ul><li>Check seals</li><li>Check &amp; log vibration</li></ul>"
        "<table><tr><th>Part</th><th>Interval</th></tr><tr><td>Seal</td><td>2000 h</td></tr></table>"
        "<noscript>enable js</noscript></body></html>"
    )
    for suffix in (".html", ".htm"):
        [doc] = load_file(write(tmp_path / f"page{suffix}", markup.encode()))
        assert doc.text.splitlines() == [
            "Pump care",
            "Pump care",
            "Grease every 500 hours.",
            "Check seals",
            "Check & log vibration",
            "Part | Interval",
            "Seal | 2000 h",
        ]
        assert "secret" not in doc.text and "color" not in doc.text and "enable js" not in doc.text
        assert doc.metadata["file_type"] == suffix


def test_unsupported_extension_raises_loader_error_naming_file(tmp_path: Path):
    path = write(tmp_path / "image.png", b"\x89PNG")
    with pytest.raises(LoaderError) as info:
        load_file(path)
    assert str(path) in str(info.value) and "unsupported" in info.value.reason


# -- encodings -------------------------------------------------------------------------

ZH_HANS = "水泵每运行五百小时需要更换润滑油，并检查机械密封是否泄漏。"
ZH_HANT = "水泵每運行五百小時需要更換潤滑油，並檢查機械密封是否洩漏。"
JA = "ポンプは五百時間ごとに潤滑油を交換し、メカニカルシールの漏れを点検します。"


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("Café crème brûlée: le matériel doit être vérifié chaque année.", "latin-1"),
        ("Müller überprüft die Größe der Dichtung.", "latin-1"),
        (ZH_HANS * 3, "gb18030"),
        (ZH_HANT * 3, "big5"),
        (JA * 3, "shift_jis"),
        (ZH_HANS + " pump P-101", "utf-16"),  # Python writes a BOM
        (ZH_HANS + " pump P-101", "utf-8-sig"),
        (JA + " pump", "utf-32"),
    ],
)
def test_legacy_and_unicode_encodings_are_detected(tmp_path: Path, text: str, encoding: str):
    [doc] = load_file(write(tmp_path / "note.txt", text.encode(encoding)))
    assert doc.text == text


def test_utf16_without_bom_is_detected(tmp_path: Path):
    text = "Grease the bearing every 500 hours."
    [doc] = load_file(write(tmp_path / "le.txt", text.encode("utf-16-le")))
    assert doc.text == text


def test_html_and_csv_use_the_same_encoding_detection(tmp_path: Path):
    [page] = load_file(write(tmp_path / "p.html", f"<p>{ZH_HANT * 3}</p>".encode("big5")))
    assert page.text == ZH_HANT * 3
    [table] = load_file(write(tmp_path / "t.csv", "pièce;intervalle\nroulement;500\n".encode("latin-1")))
    assert table.text == "pièce: roulement; intervalle: 500"


def test_import_of_loaders_does_not_import_parsers():
    import subprocess
    import sys

    code = "import sys, akasha.loaders, akasha.chunking; print(sorted(m for m in ('pypdf','pypdfium2','docx','langchain_text_splitters','charset_normalizer') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_loaders_log_instead_of_print(tmp_path: Path, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    load_file(write(tmp_path / "a.txt", "Café".encode("latin-1") * 3))
    assert capsys.readouterr().out == ""


def test_html_meta_charset_is_honoured(tmp_path: Path):
    short = "ポンプ点検"  # too short for reliable detection on its own
    markup = f'<html><head><meta charset="shift_jis"></head><body><p>{short}</p></body></html>'
    [doc] = load_file(write(tmp_path / "ja.html", markup.encode("shift_jis")))
    assert doc.text == short
    wrong = '<meta charset="no-such-codec"><p>Grease every 500 hours.</p>'
    [doc] = load_file(write(tmp_path / "wrong.html", wrong.encode()))
    assert doc.text == "Grease every 500 hours."
