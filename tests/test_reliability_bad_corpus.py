"""Issue 7, "Bad input" at the index level: a whole damaged folder through CorpusIndex.sync.

The loaders' own tests check each damaged file one at a time (tests/test_loaders_bad_input.py);
here every case sits in ONE generated folder next to good files, and the test checks
what a user sees: each bad file skipped with exactly one warning naming the file and
the reason, every good file indexed and searchable, and the counts in the SyncReport
(indexed / skipped / unchanged) right on the first and on the second run.
"""

from __future__ import annotations

import logging
import os
import random
from pathlib import Path


from akasha.embeddings.hash import HashEmbedder
from akasha.index import CorpusIndex
from loaders_fixtures import docx_bytes, encrypted_pdf_bytes, pdf_bytes, write, zip_of_something_else
from reliability_helpers import assert_internally_consistent

PAGES = ["Pump P-101: grease the drive-end bearing every 500 hours.", "Valve V-7: replace the seal every 2000 hours."]

def build_corpus(root: Path) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """Write the good and the bad files.

    Returns (good name -> a word only that file contains, bad name -> words its skip reason must contain).
    """
    good: dict[str, str] = {}
    bad: dict[str, tuple[str, ...]] = {}

    def ok(name: str, data: bytes, word: str) -> None:
        write(root / name, data)
        good[name] = word

    def no(name: str, data: bytes, *reason: str) -> None:
        write(root / name, data)
        bad[name] = reason

    # -- files that load --------------------------------------------------------------
    ok("plain.txt", b"Alpha notes: the zanzibarplain pump runs hot in summer.", "zanzibarplain")
    ok("notes.md", b"# Notes\n\nThe quokkamarkdown valve needs a new seal.", "quokkamarkdown")
    ok("report.pdf", pdf_bytes([PAGES[0] + " okapipdf", PAGES[1]]), "okapipdf")
    ok("manual.docx", docx_bytes(["The narwhaldocx motor is serviced yearly.", [["part", "hours"], ["belt", "900"]]]),
       "narwhaldocx")
    ok("table.csv", b"part,hours\nwombatcsv,500\nbelt,900\n", "wombatcsv")
    ok("page.html", b"<html><body><h1>Boiler</h1><p>The axolotlhtml boiler is checked daily.</p></body></html>",
       "axolotlhtml")
    ok("latin1.txt", "Café crème: the pangolinlatin compressor, über-quiet, naïve design.".encode("latin-1"),
       "pangolinlatin")
    ok("utf16.txt", "UTF-16 notes: the capybarautf sensor reads 20 °C.".encode("utf-16"), "capybarautf")
    ok("維護手冊/水泵保養說明.md", "水泵保養：每五百小時潤滑軸承。 dugongchinese".encode(), "dugongchinese")
    ok("🔧 maintenance/pump 🚰 notes 😀.txt", "Emoji folder: the tapiremoji filter is cleaned weekly.".encode(),
       "tapiremoji")
    ok(("l" * 240) + ".txt", b"A very long file name: the ibexlongname gasket.", "ibexlongname")
    ok("print-protected.pdf", encrypted_pdf_bytes([PAGES[0] + " lemurencrypted"], user_password=""),
       "lemurencrypted")

    # -- files that cannot be indexed -------------------------------------------------
    good_pdf = pdf_bytes(PAGES)
    no("corrupt.pdf", good_pdf[:20] + bytes((i * 37) % 251 for i in range(len(good_pdf) - 40)) + good_pdf[-20:],
       "corrupt")
    no("truncated.pdf", good_pdf[: len(good_pdf) // 2], "corrupt", "truncated")
    no("not-a-pdf.pdf", b"this is plain text, not a PDF", "not a PDF")
    no("secret.pdf", encrypted_pdf_bytes(PAGES, user_password="hunter2"), "encrypted", "password")
    no("scan.pdf", pdf_bytes(["", ""], draw_only=True), "no extractable text")
    no("zero.txt", b"", "empty")
    no("binary.txt", bytes(range(256)) * 40, "binary")
    no("fake.docx", zip_of_something_else(), "not a Word document")
    no("cut.docx", docx_bytes(["Paragraph one."])[:300], "not a Word document", "corrupt")
    (root / "loop-a.txt").symlink_to(root / "loop-b.txt")
    (root / "loop-b.txt").symlink_to(root / "loop-a.txt")
    bad["loop-a.txt"] = bad["loop-b.txt"] = ("symbolic link", "symlink")
    (root / "dangling.txt").symlink_to(root / "deleted-target.txt")
    bad["dangling.txt"] = ("No such file", "not found", "broken symlink")
    os.mkfifo(root / "pipe.txt")  # would block a naive read forever
    bad["pipe.txt"] = ("not a regular file",)
    return good, bad


def warnings_naming(caplog, path: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING and path in r.getMessage()]


def test_a_whole_bad_corpus_is_indexed_where_possible_and_reported(tmp_path, caplog):
    root = tmp_path / "docs"
    good, bad = build_corpus(root)
    index = CorpusIndex(HashEmbedder(), chunk_size=300, chunk_overlap=0, cache_dir=tmp_path / "cache")
    with caplog.at_level(logging.WARNING):
        report = index.sync(root)
        second = index.sync(root)

    # counts
    assert (report.indexed, report.skipped, report.unchanged, report.removed) == (len(good), len(bad), 0, 0)
    assert (second.indexed, second.skipped, second.unchanged, second.embedded) == (0, len(bad), len(good), 0)
    assert report.chunks == second.chunks == len(index.chunks)

    # every bad file: listed with a reason, and ONE warning naming it and the reason
    skipped = {Path(p).relative_to(root).as_posix(): reason for p, reason in report.skipped_files}
    assert set(skipped) == set(bad), (set(skipped) ^ set(bad))
    for name, words in bad.items():
        reason = skipped[name]
        assert any(w.lower() in reason.lower() for w in words), (name, reason)
        records = warnings_naming(caplog, str(root / name))
        assert len(records) == 1, (name, [r.getMessage() for r in records])
        assert reason in records[0].getMessage()

    # every good file is indexed and findable by its own word
    indexed = {c.metadata["source"] for c in index.chunks}  # portable: relative to the data_source folder
    assert indexed == set(good)
    for name, word in good.items():
        hits = index.search(word, k=1, search_type="bm25")
        assert hits and hits[0].path == name, (name, word)
    assert index.search("水泵保養", k=1, search_type="bm25")[0].path.endswith("水泵保養說明.md")
    assert "Café crème" in next(c.text for c in index.chunks if c.metadata["source"].endswith("latin1.txt"))
    pdf_pages = sorted(c.metadata.get("page") for c in index.chunks if c.metadata["source"].endswith("report.pdf"))
    assert pdf_pages == [1, 2]
    assert_internally_consistent(index)

    # a new process on the same cache: same counts, and warns again (once) for each bad file
    caplog.clear()
    embedder = HashEmbedder()
    with caplog.at_level(logging.WARNING):
        third = CorpusIndex(embedder, chunk_size=300, chunk_overlap=0, cache_dir=tmp_path / "cache").sync(root)
    assert (third.indexed, third.skipped, third.unchanged, embedder.calls) == (0, len(bad), len(good), 0)
    for name in bad:
        assert len(warnings_naming(caplog, str(root / name))) == 1, name


def test_file_deleted_between_listing_and_reading_is_skipped(tmp_path, caplog, monkeypatch):
    import akasha.loaders

    root = tmp_path / "docs"
    for i in range(4):
        (root / f"f{i}.txt").parent.mkdir(parents=True, exist_ok=True)
        (root / f"f{i}.txt").write_text(f"file {i} talks about gizmo{i}")
    real = akasha.loaders.discover

    def discover_then_delete(*args, **kwargs):
        listed = real(*args, **kwargs)
        (root / "f2.txt").unlink()  # another program removes it right after the listing
        return listed

    monkeypatch.setattr(akasha.loaders, "discover", discover_then_delete)
    index = CorpusIndex(HashEmbedder(), cache_dir=":memory:")
    with caplog.at_level(logging.WARNING):
        report = index.sync(root)
    assert (report.indexed, report.skipped) == (3, 1)
    [(path, reason)] = report.skipped_files
    assert path == str(root / "f2.txt") and "No such file" in reason
    assert len(warnings_naming(caplog, str(root / "f2.txt"))) == 1
    assert {Path(c.metadata["source"]).name for c in index.chunks} == {"f0.txt", "f1.txt", "f3.txt"}


def test_file_that_turns_bad_is_dropped_and_good_again_is_back(tmp_path):
    """A file half-written by another program: skipped while broken, its old chunks leave, back when fixed."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text("stable file about turbines")
    write(root / "b.pdf", pdf_bytes(["The flamingo pump manual."]))
    index = CorpusIndex(HashEmbedder(), cache_dir=tmp_path / "cache")
    assert index.sync(root).indexed == 2
    complete = (root / "b.pdf").read_bytes()
    (root / "b.pdf").write_bytes(complete[: len(complete) // 3])  # being rewritten
    report = index.sync(root)
    assert (report.skipped, report.unchanged, report.removed) == (1, 1, 1)
    assert all(not c.metadata["source"].endswith("b.pdf") for c in index.chunks)
    (root / "b.pdf").write_bytes(complete)
    report = index.sync(root)
    assert (report.indexed, report.skipped, report.embedded) == (1, 0, 0)  # its vectors were kept
    assert index.search("flamingo", k=1, search_type="bm25")[0].path.endswith("b.pdf")


def test_two_megabyte_single_line_file_is_indexed(tmp_path):
    """No newline, no sentence end: the splitter must still cut it into chunk_size pieces."""
    rng = random.Random(7)
    root = tmp_path / "docs"
    root.mkdir()
    words = [f"w{rng.randrange(5000)}" for _ in range(300_000)]
    words[150_000] = "needleword"
    (root / "long.txt").write_text(" ".join(words))
    index = CorpusIndex(HashEmbedder(), chunk_size=1000, chunk_overlap=0, cache_dir=":memory:")
    report = index.sync(root)
    assert report.indexed == 1 and report.chunks > 1000
    assert max(len(c.text) for c in index.chunks) <= 1000
    assert "needleword" in index.search("needleword", k=1, search_type="bm25")[0].chunk.text


def test_the_facade_reports_counts_and_warns_once_per_bad_file(tmp_path, caplog):
    import akasha

    root = tmp_path / "docs"
    write(root / "good.txt", b"The pump P-101 bearing is greased every 500 hours.")
    write(root / "also-good.md", b"# Valve\n\nThe valve V-7 seal is replaced every 2000 hours.")
    write(root / "zero.txt", b"")
    write(root / "binary.txt", bytes(range(256)) * 8)
    write(root / "fake.docx", zip_of_something_else())
    rag = akasha.RAG(model="extractive", embeddings="hash", cache_dir=tmp_path / "cache")
    report = rag.index(root)
    assert (report.indexed, report.unchanged, report.skipped) == (2, 0, 3)
    with caplog.at_level(logging.WARNING):
        rag(str(root), "How often is the pump greased?")
        rag(str(root), "How often is the valve seal replaced?")
    for name in ("zero.txt", "binary.txt", "fake.docx"):
        assert len(warnings_naming(caplog, str(root / name))) <= 1, name  # warned by rag.index() already
    again = akasha.RAG(model="extractive", embeddings="hash", cache_dir=tmp_path / "cache")
    with caplog.at_level(logging.WARNING):
        caplog.clear()
        again(str(root), "How often is the pump greased?")
        again(str(root), "How often is the valve seal replaced?")
    for name in ("zero.txt", "binary.txt", "fake.docx"):
        assert len(warnings_naming(caplog, str(root / name))) == 1, name
    report = again.index(root)
    assert (report.indexed, report.unchanged, report.skipped, report.embedded) == (0, 2, 3, 0)
