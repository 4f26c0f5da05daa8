"""Turn a data_source (folder, file, or a list mixing both) into the files to load.

Order is stable: list order is kept and each folder is walked depth-first with
its entries sorted by name, so the same folder always yields the same list.
Hidden files and folders (names starting with ``.``) and the ``exclude``
folders (the index's own cache) are skipped; files with an extension no loader
handles are skipped with one log line each. Symlinked folders are followed,
but each real folder is visited once, so symlink loops end.

Entries with a supported extension that are not regular files (a FIFO, a
broken or looping symlink) are still listed: loading them raises a
:class:`~akasha.errors.LoaderError` that names them, so the user is told
rather than left guessing why a file is missing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from akasha.errors import SourceNotFoundError

logger = logging.getLogger(__name__)

#: File extensions (lower case, with the dot) that have a loader.
SUPPORTED_EXTENSIONS: frozenset[str] = frozenset({".txt", ".md", ".pdf", ".docx", ".csv", ".html", ".htm"})


def _sources(data_source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    if isinstance(data_source, (str, os.PathLike)):
        return [Path(data_source)]
    return [Path(item) for item in data_source]


def _walk(folder: Path, excluded: set[str], visited: set[str], out: list[Path]) -> None:
    real = os.path.realpath(folder)
    if real in visited:
        logger.debug("%s: already visited (symlink loop or duplicate link); skipped", folder)
        return
    visited.add(real)
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda entry: entry.name)
    except OSError as exc:
        logger.warning("%s: cannot list folder (%s); skipped", folder, exc.strerror or exc)
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = folder / entry.name
        try:
            is_dir = entry.is_dir()  # follows symlinks; False for broken or looping links
        except OSError:
            is_dir = False
        if is_dir:
            if os.path.realpath(path) in excluded:
                continue
            _walk(path, excluded, visited, out)
        elif path.suffix.lower() in SUPPORTED_EXTENSIONS:
            out.append(path)
        else:
            logger.info("%s: unsupported file type %r; skipped", path, path.suffix or "(none)")


def discover(
    data_source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    exclude: Sequence[str | os.PathLike[str]] = (),
) -> list[Path]:
    """List the loadable files of ``data_source`` as absolute paths in a stable order.

    Raises :class:`~akasha.errors.SourceNotFoundError` naming the first path
    that does not exist. A file named explicitly is listed even when hidden,
    unless its extension is unsupported (then it is skipped with a log line).
    """
    excluded = {os.path.realpath(p) for p in exclude}
    visited: set[str] = set()
    found: list[Path] = []
    for source in _sources(data_source):
        path = Path(os.path.abspath(source.expanduser()))
        if not path.exists():
            raise SourceNotFoundError(
                f"data_source {str(source)!r} does not exist (resolved to {str(path)!r}); "
                "check the path or the current working directory"
            )
        if path.is_dir():
            if os.path.realpath(path) not in excluded:
                _walk(path, excluded, visited, found)
        elif path.suffix.lower() in SUPPORTED_EXTENSIONS:
            found.append(path)
        else:
            logger.info("%s: unsupported file type %r; skipped", path, path.suffix or "(none)")
    seen: set[Path] = set()
    unique = []
    for path in found:
        if path not in seen:
            seen.add(path)
            unique.append(path)
    return unique
