"""Per-file limits on what reading one document may cost, and the errors that report them.

A document is untrusted input (a 1 KB PDF can claim a million pages). Every loader works inside a
:class:`LoaderLimits`; a file over a limit is skipped with a :class:`LoaderLimitError` naming the
limit, its value and the ``AKASHA_LOADER_*`` variable (read per file) that raises it (docs/threat-model.md).

An index remembers a file over a limit only while that limit keeps its value (:func:`limit_changed`);
failures that say nothing about the file are :class:`TransientLoaderError`, retried on the next sync.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from akasha.errors import ConfigError, LoaderError

_MARK = re.compile(r"\(limit (AKASHA_LOADER_[A-Z_]+)=([^)\s]+)\)")


@dataclass(frozen=True)
class LoaderLimits:
    """What reading one file may cost; ``0`` turns a numeric limit off.

    ``max_inflated_mb``: megabytes (2**20 bytes) a file's compressed parts may expand to (a PDF's
    Flate streams, images excepted; every part of a .docx). ``max_pages``: pages of a PDF.
    ``max_chars``: characters of text extracted from one file. ``max_file_mb``: megabytes of one
    file on disk, checked before it is read. ``timeout``: seconds to read one PDF or .docx.
    ``max_memory_mb``: memory of the child process that reads a PDF or .docx (enforced on Linux,
    advisory elsewhere). ``isolate``: read PDFs and .docx files in that child process, so a crash in
    a native parser ends the child, not the program (other formats are always read in-process).
    """

    max_inflated_mb: float = 256
    max_pages: int = 10_000
    max_chars: int = 100_000_000
    max_file_mb: float = 1024
    timeout: float = 300.0
    max_memory_mb: float = 4096
    isolate: bool = True

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name == "isolate":
                if not isinstance(value, bool):
                    raise ConfigError(f"LoaderLimits.isolate must be True or False, got {value!r}")
            elif isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ConfigError(f"LoaderLimits.{item.name} must be a number >= 0 (0: no limit), got {value!r}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> LoaderLimits:
        """Defaults, overridden by ``AKASHA_LOADER_*`` variables (ConfigError names a bad one), then ``overrides``."""
        source = os.environ if environ is None else environ
        # Parsed once per distinct setting (a load is called per file; this stays a few microseconds).
        limits = _parse(tuple(map(source.get, ENVIRONMENT.values())))
        return replace(limits, **overrides) if overrides else limits  # __post_init__ checks the overrides

    # ------------------------------------------------------------------ checks
    @property
    def max_inflated_bytes(self) -> int | None:
        """``max_inflated_mb`` in bytes, or None when off."""
        return int(self.max_inflated_mb * 2**20) if self.max_inflated_mb else None

    def check_size(self, path: object, size: int, *, text: bool) -> None:
        """Raise :class:`LoaderLimitError` when a file of ``size`` bytes is surely over a limit, before it is read.

        Every file is held to ``max_file_mb``; a ``text`` format also to ``max_chars`` (no encoding
        spends more than 4 bytes on a character).
        """
        if text and self.max_chars and size // 4 > self.max_chars:
            raise LoaderLimitError(path, "max_chars", self.max_chars, f"{size:,} bytes of text (the file's size)")
        if self.max_file_mb and size > self.max_file_mb * 2**20:
            raise LoaderLimitError(path, "max_file_mb", self.max_file_mb, f"{size:,} bytes (the file's size)")

    def check(self, path: object, name: str, amount: float, what: str) -> None:
        """Raise :class:`LoaderLimitError` when ``amount`` is over the limit ``name`` (``what`` describes it)."""
        limit = getattr(self, name)
        if name == "max_inflated_mb":
            limit = self.max_inflated_bytes
        if limit and amount > limit:
            raise LoaderLimitError(path, name, getattr(self, name), what)


#: limit field -> the environment variable that sets it.
ENVIRONMENT: dict[str, str] = {item.name: f"AKASHA_LOADER_{item.name.upper()}" for item in fields(LoaderLimits)}


@functools.lru_cache(maxsize=32)
def _parse(raw_values: tuple[str | None, ...]) -> LoaderLimits:
    """The limits the ``AKASHA_LOADER_*`` values (in :data:`ENVIRONMENT` order) describe."""
    values: dict[str, Any] = {}
    for (name, variable), raw in zip(ENVIRONMENT.items(), raw_values, strict=True):
        if raw is None or not raw.strip():
            continue
        raw = raw.strip()
        if name == "isolate":
            if raw.lower() not in ("0", "1", "true", "false", "yes", "no", "on", "off"):
                raise ConfigError(f"{variable}={raw!r}: use 1 (read PDF/.docx in a child process) or 0")
            values[name] = raw.lower() in ("1", "true", "yes", "on")
            continue
        try:
            number = float(raw)
        except ValueError:
            raise ConfigError(f"{variable}={raw!r} is not a number; unset it or give a number (0: no limit)") from None
        if not number >= 0 or number == float("inf"):
            raise ConfigError(f"{variable}={raw!r} must be a finite number >= 0 (0: no limit)")
        values[name] = int(number) if name in ("max_pages", "max_chars") else number
    return LoaderLimits(**values)


def _shown(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


class LoaderLimitError(LoaderError):
    """Over the limit ``limit`` (``value``, env ``variable``; ``what`` was over); the message says how to raise it."""

    transient = False

    def __init__(self, path: object, limit: str, value: float, what: str) -> None:
        self.limit = limit
        self.value = value
        self.what = what
        self.variable = ENVIRONMENT[limit]
        shown = _shown(value)
        super().__init__(
            path,
            f"{what}: over the loader limit {limit}={shown} (limit {self.variable}={shown}); to read it, "
            f"set the environment variable {self.variable} higher (0: no limit) or pass LoaderLimits({limit}=...)",
        )


class TransientLoaderError(LoaderError):
    """Reading failed for a reason outside the file (the reader was killed); the next sync reads it again."""

    transient = True


def limit_changed(reason: str | None, limits: LoaderLimits | None = None) -> bool:
    """True when ``reason`` (a stored skip reason) names a loader limit that now has another value (read it again)."""
    match = _MARK.search(reason or "")
    if match is None:
        return False
    try:
        current = limits or LoaderLimits.from_env()
    except ConfigError:
        return False
    field = match.group(1).removeprefix("AKASHA_LOADER_").lower()
    return field not in ENVIRONMENT or _shown(getattr(current, field)) != match.group(2)


__all__ = ["ENVIRONMENT", "LoaderLimitError", "LoaderLimits", "TransientLoaderError", "limit_changed"]
