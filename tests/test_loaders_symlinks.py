"""Issue 14, item 2 (and the discover parts of 7 and 13): links stay inside the data folder.

Before: a link to /etc/passwd, or to /etc, was indexed without a word, and a
link to a file inside the folder doubled its hits. After: links that leave the
folder are not followed unless asked (one warning per link, naming it), and each
real file is listed once. Also: a data_source that is not a path, or that is
the index's own cache folder, is a clear ConfigError.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path

import pytest

from akasha.embeddings.hash import HashEmbedder
from akasha.errors import ConfigError
from akasha.index import CorpusIndex
from akasha.loaders import discover
from loaders_fixtures import write


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    module = importlib.import_module("akasha.loaders.discover")  # the package's ``discover`` is the function
    monkeypatch.setattr(module, "_warned_links", set())
    monkeypatch.delenv("AKASHA_FOLLOW_EXTERNAL_LINKS", raising=False)


def outside_world(tmp_path: Path) -> Path:
    """A data folder with links to a 'system' file and a 'system' folder outside it."""
    write(tmp_path / "etc" / "passwd.txt", b"root:x:0:0:root:/root:/bin/bash secretmarker")
    write(tmp_path / "etc" / "shadow.md", b"root:$6$secretmarker")
    docs = tmp_path / "docs"
    write(docs / "manual.md", b"Grease pump P-101 every 500 hours.")
    (docs / "passwd.txt").symlink_to(tmp_path / "etc" / "passwd.txt")
    (docs / "etc").symlink_to(tmp_path / "etc")
    return docs


def test_links_leaving_the_folder_are_not_followed_and_each_is_named_once(tmp_path, caplog):
    docs = outside_world(tmp_path)
    caplog.set_level(logging.WARNING, logger="akasha.loaders")
    assert discover(docs) == [docs / "manual.md"]
    assert discover(docs) == [docs / "manual.md"]
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2  # one per link, not one per call
    assert any(str(docs / "passwd.txt") in w for w in warnings) and any(str(docs / "etc") in w for w in warnings)
    assert all("AKASHA_FOLLOW_EXTERNAL_LINKS" in w for w in warnings)


def test_an_option_lets_links_leave_the_folder(tmp_path):
    docs = outside_world(tmp_path)
    found = discover(docs, follow_links=True)
    # passwd.txt is reachable twice (docs/etc/passwd.txt, docs/passwd.txt): listed once
    assert found == [docs / "etc" / "passwd.txt", docs / "etc" / "shadow.md", docs / "manual.md"]


def test_a_file_named_explicitly_is_read_wherever_it_points(tmp_path):
    docs = outside_world(tmp_path)
    assert discover(docs / "passwd.txt") == [docs / "passwd.txt"]


def test_links_inside_the_folder_never_double_a_file(tmp_path):
    docs = tmp_path / "docs"
    write(docs / "b-real" / "pump.md", b"Grease pump P-101 every 500 hours.")
    write(docs / "valve.md", b"Valve V-7 seal every 2000 hours.")
    (docs / "a-alias").symlink_to(docs / "b-real")  # sorts before its target
    (docs / "copy-of-valve.md").symlink_to(docs / "valve.md")
    (docs / "z-loop").symlink_to(docs)
    assert discover(docs) == [docs / "b-real" / "pump.md", docs / "valve.md"]


def test_a_link_into_a_hidden_folder_is_read_through_the_link(tmp_path):
    docs = tmp_path / "docs"
    write(docs / ".versions" / "v3.md", b"Current maintenance plan.")
    (docs / "current.md").symlink_to(docs / ".versions" / "v3.md")
    (docs / "archive").symlink_to(docs / ".versions")
    assert discover(docs) == [docs / "archive" / "v3.md"] or discover(docs) == [docs / "current.md"]
    assert len(discover(docs)) == 1


def test_the_index_reads_nothing_outside_and_counts_each_hit_once(tmp_path):
    docs = outside_world(tmp_path)
    (docs / "manual-link.md").symlink_to(docs / "manual.md")
    index = CorpusIndex(HashEmbedder(), cache_dir=tmp_path / "cache")
    report = index.sync(docs)
    assert report.indexed == 1 and report.skipped == 0
    assert all("secretmarker" not in c.text for c in index.chunks)
    hits = index.search("grease pump", k=5, search_type="bm25")
    assert [Path(h.path).name for h in hits] == ["manual.md"]


@pytest.mark.parametrize("bad", [None, 5, 3.5, b"/tmp", {"path": "docs"}, [None], ["docs", 7], [""]])
def test_a_data_source_that_is_not_a_path_is_a_clear_error(bad):
    with pytest.raises(ConfigError) as info:
        discover(bad)
    message = str(info.value)
    assert "data_source" in message and "path" in message and "NoneType' object is not iterable" not in message


def test_a_cache_folder_equal_to_the_data_folder_is_a_clear_error(tmp_path):
    write(tmp_path / "docs" / "manual.md", b"Grease pump P-101 every 500 hours.")
    index = CorpusIndex(HashEmbedder(), cache_dir=tmp_path / "docs")
    with pytest.raises(ConfigError, match="cache folder"):
        index.sync(tmp_path / "docs")
    assert (tmp_path / "docs" / "manual.md").read_bytes() == b"Grease pump P-101 every 500 hours."
