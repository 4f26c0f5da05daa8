"""Issue 7, "Bad input": every damaged or odd file either loads or raises LoaderError naming it.

Every input is generated here. Each test asserts which of the two outcomes
happens and, for errors, that the message names the file and gives the reason.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from akasha.chunking import split_text
from akasha.errors import LoaderError
from akasha.loaders import discover, load_file
from akasha.loaders.pdf import available_engines, load_pdf
from loaders_fixtures import (
    docx_bytes,
    encrypted_pdf_bytes,
    pdf_bytes,
    write,
    zip_of_something_else,
)

PAGES = ["Pump P-101: grease the drive-end bearing every 500 hours.", "Valve V-7: replace the seal every 2000 hours."]


@pytest.fixture(params=available_engines())
def engine(request) -> str:
    """Every PDF test runs with each installed extractor (pypdfium2 when present, pypdf always)."""
    return request.param


def assert_loader_error(path: Path, *words: str, engine: str | None = None) -> LoaderError:
    with pytest.raises(LoaderError) as info:
        load_pdf(path, engine=engine) if engine else load_file(path)
    error = info.value
    assert error.path == str(path)
    assert str(path) in str(error)
    for word in words:
        assert word in error.reason, (word, error.reason)
    return error


# -- PDFs --------------------------------------------------------------------------------


def test_both_pdf_engines_are_tested_when_installed():
    assert "pypdf" in available_engines()
    try:
        import pypdfium2  # noqa: F401
    except ImportError:
        return
    assert available_engines()[0] == "pypdfium2"  # the faster one is the default


def test_corrupt_pdf_raises(tmp_path: Path, engine: str):
    good = pdf_bytes(PAGES)
    # Keep the header and trailer but overwrite the body with noise.
    damaged = good[:20] + bytes((i * 37) % 251 for i in range(len(good) - 40)) + good[-20:]
    assert_loader_error(write(tmp_path / "corrupt.pdf", damaged), "corrupt", engine=engine)


def test_garbage_with_pdf_name_raises(tmp_path: Path, engine: str):
    path = write(tmp_path / "notes.pdf", b"this is plain text, not a PDF")
    assert_loader_error(path, "not a PDF", engine=engine)


# fpdf2 writes the catalog and the cross-reference table last, so a cut file has no
# root object. PDFium still finds the pages when only the table's tail is missing.
TRUNCATED_LOADS = {("pypdfium2", 0.99)}


@pytest.mark.parametrize("keep", [0.25, 0.5, 0.9, 0.99])
def test_truncated_pdf_loads_when_possible_else_raises(tmp_path: Path, engine: str, keep: float):
    good = pdf_bytes(PAGES)
    path = write(tmp_path / "partial.pdf", good[: int(len(good) * keep)])
    if (engine, keep) in TRUNCATED_LOADS:
        docs = load_pdf(path, engine=engine)
        assert [d.metadata["page"] for d in docs] == [1, 2] and "P-101" in docs[0].text
    else:
        assert_loader_error(path, "corrupt or truncated", engine=engine)


def test_pdf_encrypted_with_empty_password_is_opened(tmp_path: Path, engine: str):
    path = write(tmp_path / "print-protected.pdf", encrypted_pdf_bytes(PAGES, user_password=""))
    docs = load_pdf(path, engine=engine)
    assert [d.metadata["page"] for d in docs] == [1, 2]
    assert "P-101" in docs[0].text and "V-7" in docs[1].text


def test_pdf_encrypted_with_real_password_raises(tmp_path: Path, engine: str):
    path = write(tmp_path / "secret.pdf", encrypted_pdf_bytes(PAGES, user_password="hunter2"))
    assert_loader_error(path, "encrypted", "password", engine=engine)


def test_pdf_without_text_layer_raises_scanned(tmp_path: Path, engine: str):
    path = write(tmp_path / "scan.pdf", pdf_bytes(["", "", ""], draw_only=True))
    error = assert_loader_error(path, "no extractable text (scanned?)", engine=engine)
    assert "3 page" in error.reason


def test_unknown_pdf_engine_is_a_value_error(tmp_path: Path):
    with pytest.raises(ValueError, match="pypdf"):
        load_pdf(tmp_path / "x.pdf", data=pdf_bytes(PAGES), engine="ocr")


# -- empty and binary --------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".txt", ".md", ".pdf", ".docx", ".csv", ".html"])
def test_zero_byte_file_raises_empty(tmp_path: Path, suffix: str):
    assert_loader_error(write(tmp_path / f"zero{suffix}", b""), "empty")


@pytest.mark.parametrize("suffix", [".txt", ".md", ".csv", ".html"])
def test_whitespace_only_file_raises_empty(tmp_path: Path, suffix: str):
    assert_loader_error(write(tmp_path / f"blank{suffix}", b" \n\t\r\n  \n"), "empty")


def test_markup_without_visible_text_raises_empty(tmp_path: Path):
    path = write(tmp_path / "blank.html", b"<html><head><script>x=1</script></head><body> </body></html>")
    assert_loader_error(path, "empty")


def test_docx_without_text_raises_empty(tmp_path: Path):
    assert_loader_error(write(tmp_path / "blank.docx", docx_bytes(["", "  "])), "empty")


@pytest.mark.parametrize(
    "payload",
    [
        bytes(range(256)) * 8,  # every byte value, NULs included
        b"\x7fELF\x02\x01\x01" + bytes(120) + b"\x03\x00>\x00",  # an executable header
        b"\x89PNG\r\n\x1a\n" + bytes(range(1, 200)) * 3,  # an image
        bytes((i * 7 + 1) % 32 for i in range(4000)),  # control characters, no NUL
    ],
    ids=["all-bytes", "elf", "png", "controls"],
)
def test_binary_file_with_txt_name_raises(tmp_path: Path, payload: bytes):
    assert_loader_error(write(tmp_path / "readme.txt", payload), "binary")


def test_latin1_text_loads(tmp_path: Path):
    text = "Contrôle annuel: la pompe n° 3 a été révisée, coût 1 200 €? Non: 1 200 francs."
    [doc] = load_file(write(tmp_path / "latin1.txt", text.replace("€", "E").encode("latin-1")))
    assert doc.text == text.replace("€", "E")


def test_utf16_text_loads(tmp_path: Path):
    text = "维护记录：水泵 P-101 轴承每 500 小时加注润滑脂。"
    for encoding in ("utf-16", "utf-16-le", "utf-16-be"):
        raw = text.encode(encoding) if encoding == "utf-16" else "\ufeff".encode(encoding) + text.encode(encoding)
        [doc] = load_file(write(tmp_path / f"{encoding}.txt", raw))
        assert doc.text == text


# -- big input ---------------------------------------------------------------------------


def test_50_mb_single_line_loads_and_chunks(tmp_path: Path):
    sentence = "Pump P-101 bearing temperature stayed below 70 C during the 500 hour run. "
    text = sentence * (50_000_000 // len(sentence) + 1)
    assert "\n" not in text and len(text) >= 50_000_000
    path = write(tmp_path / "one-line.txt", text.encode())
    del text
    [doc] = load_file(path)
    chunks = split_text(doc.text, 1000, 100)  # its speed: python -m bench.hostile_inputs
    assert len(doc.text) >= 50_000_000
    assert all(len(c) <= 1000 for c in chunks)
    assert sum(len(c) for c in chunks) >= len(doc.text.strip()) - len(chunks)  # nothing dropped


def test_5_mb_single_line_without_separators_chunks_fast(tmp_path: Path):
    path = write(tmp_path / "blob.txt", b"x" * 5_000_000)
    [doc] = load_file(path)
    chunks = split_text(doc.text, 1000, 100)  # its speed: python -m bench.hostile_inputs
    assert all(len(c) <= 1000 for c in chunks) and len(chunks) >= 5_000_000 // 900
    assert 5_000_000 <= sum(map(len, chunks)) <= 5_000_000 + 100 * len(chunks)  # overlap only


# -- names and paths ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "維護手冊/水泵保養說明.md",
        "维护/泵维修记录.txt",
        "🔧 maintenance/pump 🚰 notes 😀.txt",
        "Ünïcödé façade/résumé.md",
        ("l" * 240) + ".txt",  # 244 bytes: near the 255-byte file name limit
        ("水" * 80) + ".txt",  # 244 bytes of UTF-8
    ],
)
def test_long_and_non_ascii_paths_load(tmp_path: Path, name: str):
    path = write(tmp_path / name, "Grease every 500 hours.".encode())
    assert discover(tmp_path) == [path]
    [doc] = load_file(path)
    assert doc.metadata["source"] == str(path) and doc.text == "Grease every 500 hours."


def test_file_name_too_long_for_the_filesystem_raises_loader_error(tmp_path: Path):
    path = tmp_path / (("長" * 100) + ".txt")  # 304 bytes: no filesystem stores this name
    assert_loader_error(path, "cannot read")


# -- files that vanish or cannot be opened -------------------------------------------------


def test_file_deleted_between_listing_and_reading(tmp_path: Path):
    keep = write(tmp_path / "a.txt", b"stays")
    gone = write(tmp_path / "b.txt", b"will be deleted")
    listed = discover(tmp_path)
    assert listed == [keep, gone]
    gone.unlink()
    assert load_file(keep)[0].text == "stays"
    assert_loader_error(gone, "not found")


def test_symlink_loop_file_raises(tmp_path: Path):
    (tmp_path / "a.txt").symlink_to(tmp_path / "b.txt")
    (tmp_path / "b.txt").symlink_to(tmp_path / "a.txt")
    assert sorted(p.name for p in discover(tmp_path)) == ["a.txt", "b.txt"]
    assert_loader_error(tmp_path / "a.txt", "symlink loop")


def test_dangling_symlink_raises(tmp_path: Path):
    (tmp_path / "notes.txt").symlink_to(tmp_path / "deleted-target.txt")
    assert discover(tmp_path) == [tmp_path / "notes.txt"]
    assert_loader_error(tmp_path / "notes.txt", "broken symlink")


def test_fifo_with_text_name_raises_instead_of_blocking(tmp_path: Path):
    # Stands in for "unreadable" when running as root (root ignores chmod): opening a
    # FIFO would block forever, so the loader must refuse it before opening.
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    assert discover(tmp_path) == [fifo]
    assert_loader_error(fifo, "not a regular file")


def test_directory_named_like_a_file_raises(tmp_path: Path):
    (tmp_path / "folder.txt").mkdir()
    assert_loader_error(tmp_path / "folder.txt", "not a regular file")


def test_permission_denied_raises(tmp_path: Path):
    """chmod 000 a file and load it as an unprivileged user.

    Root ignores file modes, so when the tests run as root the load runs in a
    forked child that switches to uid/gid 65534 (nobody) first; the test is
    skipped only when that switch is impossible.
    """
    folder = Path(tempfile.mkdtemp(prefix="akasha-perm-"))
    try:
        folder.chmod(0o755)
        secret = write(folder / "secret.txt", b"classified")
        secret.chmod(0o000)
        if os.geteuid() != 0:
            assert_loader_error(secret, "permission denied")
            return
        load_file(folder / "warm-up.txt", data=b"import the text loader before forking")
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: drop privileges, try to load, report through the pipe
            outcome = b"SKIP"
            try:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                try:
                    load_file(secret)
                    outcome = b"LOADED"
                except LoaderError as error:
                    outcome = ("ERR " + str(error)).encode()
            finally:
                os.write(write_end, outcome)
                os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            outcome = pipe.read().decode()
        os.waitpid(pid, 0)
        if outcome == "SKIP":
            pytest.skip("cannot switch to an unprivileged user here")
        assert outcome.startswith("ERR "), outcome
        assert str(secret) in outcome and "permission denied" in outcome
    finally:
        for path in folder.iterdir():
            path.chmod(0o644)
            path.unlink()
        folder.rmdir()


# -- DOCX ----------------------------------------------------------------------------------


def test_docx_that_is_a_zip_of_something_else_raises(tmp_path: Path):
    assert_loader_error(write(tmp_path / "report.docx", zip_of_something_else()), "not a Word document")


def test_docx_that_is_not_a_zip_raises(tmp_path: Path):
    assert_loader_error(write(tmp_path / "report.docx", b"PK\x03\x04 but then nothing"), "not a Word document")


def test_docx_truncated_raises(tmp_path: Path):
    good = docx_bytes(["Paragraph one.", [["a", "b"], ["c", "d"]]])
    assert_loader_error(write(tmp_path / "cut.docx", good[: len(good) // 2]), "not a Word document")


def test_docx_with_broken_xml_raises(tmp_path: Path):
    import io
    import zipfile

    source = zipfile.ZipFile(io.BytesIO(docx_bytes(["Paragraph one."])))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            target.writestr(item, data[: len(data) // 2] if item.filename == "word/document.xml" else data)
    assert_loader_error(write(tmp_path / "broken.docx", out.getvalue()), "corrupt Word document")


def test_malformed_csv_raises(tmp_path: Path):
    # An unterminated quote that swallows the rest of the file is fine for csv; a NUL-free
    # field over the csv module's limit (128 KiB) is not. With no other row, nothing is left.
    path = write(tmp_path / "huge-field.csv", b'"' + b"x" * 200_000 + b'",1\n')
    assert_loader_error(path, "malformed CSV", "field limit")


def test_csv_row_over_the_field_limit_is_dropped_and_the_others_kept(tmp_path: Path, caplog):
    path = write(tmp_path / "huge-field.csv", b'a,b\n"' + b"x" * 200_000 + b'",1\nseal,2\n')
    [doc] = load_file(path)
    assert doc.text == "a: seal; b: 2"
    assert any("huge-field.csv" in r.getMessage() and "dropped" in r.getMessage() for r in caplog.records)


def test_a_huge_sparse_text_file_is_skipped_by_its_size_without_being_read(tmp_path, monkeypatch):
    """issue 33: a 4 GB sparse file was read whole before the size check; now its size decides, and the
    reason names the file's size and the limit to raise."""
    import akasha

    monkeypatch.setenv("AKASHA_LOADER_MAX_CHARS", "1000")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.txt").write_text("pump seal")
    with open(docs / "huge.txt", "wb") as handle:
        handle.truncate(4 * 2**30)  # sparse: 4 GB on paper, nothing on disk
    read = []
    real = Path.read_bytes

    def spying(self):  # noqa: ANN001, ANN202
        read.append(self.name)
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", spying)
    rag = akasha.RAG(embeddings="hash", model="extractive", cache_dir=str(tmp_path / "cache"))
    report = rag.index(str(docs))
    assert "huge.txt" not in read
    [(path, reason)] = report.skipped_files
    assert path.endswith("huge.txt") and "4,294,967,296 bytes" in reason and "AKASHA_LOADER_MAX_CHARS" in reason


def test_a_docx_zip_of_an_unsupported_zip_version_is_a_loader_error():
    """Found by the long fuzz run: zipfile raises NotImplementedError ("zip file version 6.4") for such a package."""
    import io
    import struct
    import zipfile

    from akasha.errors import LoaderError
    from akasha.loaders.docx import load_docx

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<w:document/>")
    data = bytearray(buffer.getvalue())
    at = data.find(b"PK\x01\x02")
    while at != -1:
        data[at + 6 : at + 8] = struct.pack("<H", 64)  # "version needed to extract": 6.4
        at = data.find(b"PK\x01\x02", at + 4)
    with pytest.raises(LoaderError, match="zip file version"):
        load_docx(Path("case.docx"), bytes(data))
