"""discover(): folders, files and lists in, loadable files out, in a stable order."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from akasha.errors import AkashaError, SourceNotFoundError
from akasha.loaders import discover
from loaders_fixtures import write


def make_tree(root: Path) -> None:
    for rel in [
        "b.md",
        "a.txt",
        "sub/z.pdf",
        "sub/c.docx",
        "sub/deeper/d.csv",
        "sub/deeper/e.HTML",
        "sub/page.htm",
        ".hidden.txt",
        ".git/config.txt",
        "sub/.cache/x.txt",
        "photo.jpg",
        "Makefile",
    ]:
        write(root / rel, b"x")


def test_folder_is_walked_recursively_sorted_and_absolute(tmp_path: Path, monkeypatch):
    make_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    found = discover(".")
    assert all(p.is_absolute() for p in found)
    assert [p.relative_to(tmp_path).as_posix() for p in found] == [
        "a.txt",
        "b.md",
        "sub/c.docx",
        "sub/deeper/d.csv",
        "sub/deeper/e.HTML",
        "sub/page.htm",
        "sub/z.pdf",
    ]
    assert discover(tmp_path) == found  # str/Path and relative/absolute give the same list


def test_unknown_extensions_get_one_log_line_each(tmp_path: Path, caplog):
    make_tree(tmp_path)
    caplog.set_level(logging.INFO, logger="akasha.loaders")
    discover(tmp_path)
    skipped = [r.getMessage() for r in caplog.records if "unsupported" in r.getMessage()]
    assert len(skipped) == 2
    assert any("photo.jpg" in m for m in skipped) and any("Makefile" in m for m in skipped)


def test_hidden_and_excluded_folders_are_skipped(tmp_path: Path):
    make_tree(tmp_path)
    write(tmp_path / "cache" / "index.txt", b"x")
    names = [p.name for p in discover(tmp_path, exclude=[tmp_path / "cache", tmp_path / "sub" / "deeper"])]
    assert "index.txt" not in names and "d.csv" not in names
    assert ".hidden.txt" not in names and "config.txt" not in names and "x.txt" not in names
    assert "a.txt" in names and "z.pdf" in names


def test_list_mixing_files_and_folders_keeps_list_order_without_duplicates(tmp_path: Path):
    make_tree(tmp_path)
    single = tmp_path / "sub" / "z.pdf"
    found = discover([single, str(tmp_path / "sub" / "deeper"), tmp_path / "a.txt", single])
    assert [p.name for p in found] == ["z.pdf", "d.csv", "e.HTML", "a.txt"]


def test_explicit_hidden_file_is_loaded_but_explicit_unknown_type_is_skipped(tmp_path: Path, caplog):
    make_tree(tmp_path)
    caplog.set_level(logging.INFO, logger="akasha.loaders")
    assert discover([tmp_path / ".hidden.txt", tmp_path / "photo.jpg"]) == [tmp_path / ".hidden.txt"]
    assert any("photo.jpg" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("bad", ["no-such-folder", ["a.txt", "missing.md"]])
def test_missing_path_raises_source_not_found_naming_it(tmp_path: Path, bad):
    write(tmp_path / "a.txt", b"x")
    items = [tmp_path / b for b in bad] if isinstance(bad, list) else tmp_path / bad
    with pytest.raises(SourceNotFoundError) as info:
        discover(items)
    missing = "missing.md" if isinstance(bad, list) else "no-such-folder"
    assert missing in str(info.value)
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, AkashaError)


def test_symlink_loops_end_and_each_folder_is_listed_once(tmp_path: Path):
    write(tmp_path / "docs" / "a.txt", b"x")
    write(tmp_path / "docs" / "inner" / "b.txt", b"x")
    (tmp_path / "docs" / "inner" / "loop").symlink_to(tmp_path / "docs")  # inner/loop -> docs
    (tmp_path / "docs" / "self").symlink_to(".")  # docs/self -> docs
    found = discover(tmp_path / "docs")
    assert [p.name for p in found] == ["a.txt", "b.txt"]


def test_symlinked_folder_outside_the_tree_is_followed_only_when_asked(tmp_path: Path, monkeypatch):
    write(tmp_path / "elsewhere" / "shared.md", b"x")
    write(tmp_path / "docs" / "own.md", b"x")
    (tmp_path / "docs" / "linked").symlink_to(tmp_path / "elsewhere")
    assert discover(tmp_path / "docs") == [tmp_path / "docs" / "own.md"]
    both = [tmp_path / "docs" / "linked" / "shared.md", tmp_path / "docs" / "own.md"]
    assert discover(tmp_path / "docs", follow_links=True) == both
    monkeypatch.setenv("AKASHA_FOLLOW_EXTERNAL_LINKS", "1")
    assert discover(tmp_path / "docs") == both


def test_empty_folder_gives_empty_list(tmp_path: Path):
    assert discover(tmp_path) == []


def test_unlistable_folder_is_skipped_with_a_warning(tmp_path: Path, caplog, monkeypatch):
    write(tmp_path / "ok" / "a.txt", b"x")
    write(tmp_path / "locked" / "b.txt", b"x")
    real_scandir = os.scandir

    def scandir(path):  # root can list any folder, so simulate EACCES for one of them
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    caplog.set_level(logging.WARNING, logger="akasha.loaders")
    assert [p.name for p in discover(tmp_path)] == ["a.txt"]
    assert any("locked" in r.getMessage() and "Permission denied" in r.getMessage() for r in caplog.records)


def test_a_folder_thousands_of_levels_deep_is_cut_quickly(tmp_path, caplog):
    """issue 33: 1,200 nested folders raised RecursionError after 8 s; now the walk stops at MAX_DEPTH."""
    import logging

    from akasha.loaders.discover import MAX_DEPTH, discover

    (tmp_path / "top.txt").write_text("top")
    current = tmp_path / "deep"
    current.mkdir()
    for _ in range(1200):
        current = current / "d"
        current.mkdir()
    (current / "bottom.txt").write_text("bottom")
    caplog.set_level(logging.WARNING)
    try:
        found = discover(tmp_path)
        assert [p.name for p in found] == ["top.txt"]
        assert any(f"more than {MAX_DEPTH} folders deep" in r.getMessage() for r in caplog.records)
    finally:  # removed bottom-up here: pytest's own recursive clean-up of old temp folders would overflow
        (current / "bottom.txt").unlink()
        while current != tmp_path:
            current.rmdir()
            current = current.parent


def test_odd_file_names_are_indexed_and_logged_escaped(tmp_path, caplog):
    """A name that is not UTF-8 no longer breaks the index; a newline in a name cannot forge a log line."""
    import logging
    import os

    import akasha

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.txt").write_text("ok pump")
    with open(os.fsencode(docs) + b"/bad\xff.txt", "w") as handle:
        handle.write("latin pump")
    (docs / "new\nline.txt").write_text("newline pump")
    (docs / "forged\nWARNING fake.xyz").write_text("x")  # unsupported: logged with its name
    caplog.set_level(logging.INFO)
    rag = akasha.RAG(embeddings="hash", model="extractive", cache_dir=str(tmp_path / "cache"))
    for _ in range(2):  # the second call reads the stat cache the first one wrote
        hits = rag.search(str(docs), "pump", k=5, search_type="bm25")
        assert {h.chunk.metadata["source"] for h in hits} == {"ok.txt", "bad\\xff.txt", "new\nline.txt"}
    assert not [r for r in caplog.records if "\n" in r.getMessage()]


def test_the_folder_depth_bound_is_changed_by_its_variable(tmp_path, monkeypatch, caplog):
    """issue 33: AKASHA_MAX_FOLDER_DEPTH sets how deep a walk goes; the warning names it; a bad value is a ConfigError."""
    from akasha.errors import ConfigError
    from akasha.loaders.discover import discover

    folder = tmp_path
    for level in range(5):
        folder = folder / f"d{level}"
        folder.mkdir()
        (folder / f"f{level}.txt").write_text("x")
    monkeypatch.setenv("AKASHA_MAX_FOLDER_DEPTH", "3")
    names = sorted(p.name for p in discover(str(tmp_path)))
    assert names == ["f0.txt", "f1.txt", "f2.txt"]
    assert any("AKASHA_MAX_FOLDER_DEPTH" in r.getMessage() for r in caplog.records)
    monkeypatch.setenv("AKASHA_MAX_FOLDER_DEPTH", "deep")
    with pytest.raises(ConfigError, match="AKASHA_MAX_FOLDER_DEPTH"):
        discover(str(tmp_path))
