"""Turn a data_source (folder, file, or a list mixing both) into the files to load.

The order is stable: list order, each folder walked depth-first by name. Hidden entries, ``exclude``
folders (the index's cache) and unsupported files (a log line each) are skipped; supported entries
that are not regular files are listed (loading them raises a :class:`~akasha.errors.LoaderError`).

Symbolic links stay inside the folder (docs/threat-model.md): a link leaving it is not followed,
with one warning, unless ``follow_links=True`` or ``AKASHA_FOLLOW_EXTERNAL_LINKS=1``; a path named
explicitly is read wherever it points. Each real file is listed once and each real folder walked
once, so symlink loops end.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from akasha.errors import ConfigError, SourceNotFoundError
from akasha.loaders.paths import shown

logger = logging.getLogger(__name__)

#: Environment variable that lets links leave the data_source folder (``1``/``true``).
FOLLOW_LINKS_VARIABLE = "AKASHA_FOLLOW_EXTERNAL_LINKS"
#: Folders nested deeper than this below the data folder are not read (a warning names the first one);
#: the environment variable ``AKASHA_MAX_FOLDER_DEPTH`` changes it.
MAX_DEPTH = 64
DEPTH_VARIABLE = "AKASHA_MAX_FOLDER_DEPTH"
_warned_links: set[str] = set()  # links already warned about in this process

#: File extensions (lower case, with the dot) that have a loader.
SUPPORTED_EXTENSIONS: frozenset[str] = frozenset({".txt", ".md", ".pdf", ".docx", ".csv", ".html", ".htm"})


def _sources(data_source: object) -> list[Path]:
    if isinstance(data_source, (str, os.PathLike)):
        items: list[object] = [data_source]
    elif isinstance(data_source, (bytes, bytearray, dict)) or not isinstance(data_source, Iterable):
        raise ConfigError(
            f"data_source must be a folder or file path (str or Path) or a list of them, got "
            f"{type(data_source).__name__} {_short(data_source)}"
        )
    else:
        items = list(data_source)
    paths: list[Path] = []
    for number, item in enumerate(items):
        if not isinstance(item, (str, os.PathLike)) or not os.fspath(item):
            raise ConfigError(
                f"data_source item {number} must be a non-empty folder or file path (str or Path), got "
                f"{type(item).__name__} {_short(item)}"
            )
        paths.append(Path(item))
    return paths


def _flag(variable: str) -> bool:
    """An on/off environment variable: unset or empty is off; anything but 1/0, true/false, yes/no, on/off
    is a ConfigError naming it (a typo must not silently mean "off")."""
    value = os.environ.get(variable, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"the environment variable {variable}={os.environ[variable]!r} is not a yes/no value; "
                      "use 1 or 0 (true/false, yes/no, on/off), or unset it")


def max_depth() -> int:
    """How many folder levels below the data folder are read: ``AKASHA_MAX_FOLDER_DEPTH``, else :data:`MAX_DEPTH`."""
    raw = os.environ.get(DEPTH_VARIABLE, "").strip()
    if not raw:
        return MAX_DEPTH
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"the environment variable {DEPTH_VARIABLE}={raw!r} is not a whole number >= 1; "
                          f"unset it for the default {MAX_DEPTH}")
    return int(raw)


def _short(value: object) -> str:
    import reprlib

    shortener = reprlib.Repr()  # Python 3.11 has no keyword arguments here
    shortener.maxstring = shortener.maxother = 60
    return shortener.repr(value)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _outside(link: Path, target: str, root: str) -> None:
    key = str(link)
    if key not in _warned_links:
        _warned_links.add(key)
        logger.warning(
            "%s: symbolic link to %s, outside the data folder %s; not followed (set %s=1 or pass "
            "follow_links=True to follow links that leave the folder)", shown(link), shown(target), shown(root),
            FOLLOW_LINKS_VARIABLE,
        )


class _Walk:
    """One discover() pass: the files found (with their real paths) and the folders seen."""

    def __init__(self, excluded: set[str], follow: bool) -> None:
        self.excluded = excluded
        self.follow = follow
        self.visited: set[str] = set()
        self.found: list[tuple[Path, str, bool]] = []  # (path, real path, reached through a link)
        self.deferred: list[tuple[Path, str]] = []  # links to folders inside the root: walked last

    def folder(self, top: Path, root: str, via_link: bool) -> None:
        """Walk ``top`` depth first (names in sorted order), without recursion: a folder nested thousands
        of levels deep is cut at :func:`max_depth` with a warning instead of a RecursionError."""
        limit = max_depth()
        opened = self._open(top, os.path.realpath(top), via_link, 0)
        stack = [opened] if opened is not None else []
        while stack:
            entries, folder, real, linked, depth = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                continue
            if entry.name.startswith("."):
                continue
            path = folder / entry.name
            try:
                link = entry.is_symlink()
            except OSError:
                link = False
            target = os.path.realpath(path) if link else ""
            if link and not _within(target, root) and not self.follow:
                _outside(path, target, root)
                continue
            try:
                is_dir = entry.is_dir()  # follows symlinks; False for broken or looping links
            except OSError:
                is_dir = False
            # not a link: the folder's real path plus its name (realpath() costs a system call per component)
            real_path = target if link else os.path.join(real, entry.name)
            if is_dir:
                if real_path in self.excluded:
                    continue
                if link and _within(target, root):
                    self.deferred.append((path, root))  # its target is (probably) walked on its own
                    continue
                if depth + 1 > limit:
                    logger.warning("%s: more than %d folders deep; not read (and nothing below it; set %s higher "
                                   "to read deeper)", shown(path), limit, DEPTH_VARIABLE)
                    continue
                opened = self._open(path, real_path, linked or link, depth + 1)
                if opened is not None:
                    stack.append(opened)
            elif path.suffix.lower() in SUPPORTED_EXTENSIONS:
                self.found.append((path, real_path, linked or link))
            else:
                logger.info("%s: unsupported file type %r; skipped", shown(path), path.suffix or "(none)")

    def _open(self, folder: Path, real: str, via_link: bool, depth: int) -> tuple[Any, Path, str, bool, int] | None:
        """``(its entries, sorted, as an iterator; folder; real path; reached through a link; depth)``, or None
        for a folder already walked or that cannot be listed."""
        if real in self.visited:
            logger.debug("%s: already visited (symlink loop or duplicate link); skipped", shown(folder))
            return None
        self.visited.add(real)
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda entry: entry.name)
        except OSError as exc:
            logger.warning("%s: cannot list folder (%s); skipped", shown(folder), exc.strerror or exc)
            return None
        return iter(entries), folder, real, via_link, depth

    def finish_deferred(self) -> None:
        """Walk links to folders inside the root whose targets the walk never reached (hidden ones)."""
        while self.deferred:
            path, root = self.deferred.pop(0)
            self.folder(path, root, True)

    def unique(self) -> list[Path]:
        """Each real file once: under a path without links when there is one, else its first path."""
        best: dict[str, tuple[int, Path, bool]] = {}
        for order, (path, real, via_link) in enumerate(self.found):
            known = best.get(real)
            if known is None or (known[2] and not via_link):
                best[real] = (order if known is None else known[0], path, via_link)
        return [path for _order, path, _link in sorted(best.values(), key=lambda item: item[0])]


def discover(
    data_source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    exclude: Sequence[str | os.PathLike[str]] = (),
    follow_links: bool | None = None,
) -> list[Path]:
    """List the loadable files of ``data_source`` as absolute paths in a stable order.

    ``follow_links``: follow links that leave the data folder (default: ``AKASHA_FOLLOW_EXTERNAL_LINKS``).
    Raises :class:`~akasha.errors.SourceNotFoundError` naming the first missing path, and
    :class:`~akasha.errors.ConfigError` when ``data_source`` is not a path or a list of paths, or is an
    ``exclude`` folder. A supported file named explicitly is listed even when hidden.
    """
    sources = _sources(data_source)
    if follow_links is None:
        follow_links = _flag(FOLLOW_LINKS_VARIABLE)
    excluded = {os.path.realpath(p) for p in exclude}
    walk = _Walk(excluded, follow_links)
    for source in sources:
        path = Path(os.path.abspath(source.expanduser()))
        if not path.exists():
            raise SourceNotFoundError(
                f"data_source {str(source)!r} does not exist (resolved to {str(path)!r}); "
                "check the path or the current working directory"
            )
        if path.is_dir():
            real = os.path.realpath(path)
            if real in excluded:
                raise ConfigError(
                    f"data_source {str(source)!r} is the index's own cache folder (cache_dir): akasha keeps its "
                    "database and snapshots there and does not index them; pass a different cache_dir "
                    "(the default, or a folder outside the documents)"
                )
            walk.folder(path, real, False)
        elif path.suffix.lower() in SUPPORTED_EXTENSIONS:
            walk.found.append((path, os.path.realpath(path), False))
        else:
            logger.info("%s: unsupported file type %r; skipped", shown(path), path.suffix or "(none)")
    walk.finish_deferred()
    return walk.unique()
