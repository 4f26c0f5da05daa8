"""One way to write a path as text (akasha/loaders/paths.py), used by discovery's logs, the file-stat
table and the portable document keys (issue 34: three copies of the escape became one)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from akasha.index.portable import document_key
from akasha.loaders.paths import shown, storable

UNDECODABLE = os.fsdecode(b"caf\xe9.txt")  # Latin-1 bytes: not UTF-8, decoded with a surrogate escape


def test_undecodable_bytes_become_backslash_escapes_everywhere():
    assert storable(UNDECODABLE) == "caf\\xe9.txt"
    assert storable("泵房.md") == "泵房.md" and storable("café.txt") == "café.txt"
    assert shown(UNDECODABLE) == "caf\\xe9.txt"
    assert document_key(Path("/data") / UNDECODABLE, Path("/data"), "docs") == "docs/caf\\xe9.txt"


def test_shown_also_escapes_control_characters():
    assert shown(Path("/a/evil\nakasha: WARNING: forged.txt")) == "/a/evil\\nakasha: WARNING: forged.txt"
    assert storable("evil\nname") == "evil\nname"  # a stored key keeps the name as it is


@pytest.mark.parametrize("module", ["akasha.loaders.discover", "akasha.index.sources", "akasha.index.portable"])
def test_no_other_copy_of_the_escape(module):
    import importlib
    import inspect

    source = inspect.getsource(importlib.import_module(module))
    assert "backslashreplace" not in source
