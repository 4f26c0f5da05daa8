"""Portable document keys: a file is known by its path relative to the folder given as data_source.

Two machines that index the same folder write the same records (ids ``<relative path>#<n>``),
so a shared store holds one copy of a corpus and citations never show a machine's home folder.
An optional corpus name (``vector_store_options={"corpus": "handbook"}``) prefixes the keys
(``handbook/guide.md``), so several folders share one store without colliding.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from akasha.loaders.paths import storable
from akasha.stores.urls import check_corpus_name

DataSource = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def source_items(data_source: DataSource) -> list[Path]:
    """The data source's paths, absolute, with ``~`` expanded (not resolved: a symlinked root keeps its name)."""
    items = [data_source] if isinstance(data_source, (str, os.PathLike)) else list(data_source)
    return [Path(os.path.abspath(Path(os.fspath(p)).expanduser())) for p in items]


def source_root(data_source: DataSource) -> Path:
    """The folder document keys are relative to: the folder itself, the folder holding a single file, or
    the deepest folder holding every path of a list."""
    folders = [p if p.is_dir() else p.parent for p in source_items(data_source)]
    if not folders:
        return Path(os.getcwd())
    if len(folders) == 1:
        return folders[0]
    return Path(os.path.commonpath([str(f) for f in folders]))


def document_key(path: str | os.PathLike[str], root: Path, corpus: str = "") -> str:
    """The portable key of ``path`` (a file under ``root``): its relative POSIX path, after ``corpus/``; a path
    outside ``root`` (a symlink's target) is ``_outside/<hash of its folder>/<file name>``."""
    absolute = os.path.abspath(os.fspath(path))
    try:
        relative = os.path.relpath(absolute, root)
    except ValueError:  # another drive (Windows)
        relative = ".."
    if relative == ".." or relative.startswith(".." + os.sep) or os.path.isabs(relative):
        import hashlib

        where = hashlib.sha256(os.path.dirname(absolute).encode("utf-8", "surrogateescape")).hexdigest()[:8]
        relative = os.path.join("_outside", where, os.path.basename(absolute))
    key = PurePosixPath(*Path(relative).parts).as_posix()
    key = storable(key)  # a file name that is not valid UTF-8 keeps its bytes as backslash escapes
    return f"{corpus}/{key}" if corpus else key


def portable_keys(paths: Sequence[str], data_source: DataSource, corpus: str = "") -> dict[str, str]:
    """``{path: portable key}`` for files read from ``data_source`` (keys are unique by construction).

    Plain absolute paths under the root are cut by prefix, far cheaper than ``os.path.relpath``.
    """
    root = source_root(data_source)
    prefix = os.path.join(str(root), "")
    head = f"{corpus}/" if corpus else ""
    keys = {}
    for path in paths:
        if path.startswith(prefix) and "/." not in path[len(prefix) - 1 :] and path.isprintable():
            rest = path[len(prefix):]
            keys[path] = head + (rest if os.sep == "/" else rest.replace(os.sep, "/"))
        else:
            keys[path] = document_key(path, root, corpus)
    return keys


__all__ = ["check_corpus_name", "document_key", "portable_keys", "source_items", "source_root"]
