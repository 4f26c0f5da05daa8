"""Checks of option values shared by every layer, importing nothing of akasha but its errors.

:func:`positive_int` lives here, not in :mod:`akasha.options` (which re-exports it), because
:mod:`akasha.options` imports the modules whose own options it checks (:mod:`akasha.rerank`) to
validate a whole option set: importing it back from them would be a cycle.
"""

from __future__ import annotations

import numbers
from typing import overload

from akasha.errors import ConfigError


@overload
def positive_int(name: str, value: object) -> int: ...
@overload
def positive_int(name: str, value: object, *, allow_none: bool) -> int | None: ...
def positive_int(name: str, value: object, *, allow_none: bool = False) -> int | None:
    """``value`` as an int when it is an integer >= 1 (numpy's too; None with ``allow_none``); else
    ConfigError (a ValueError) naming ``name``."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


__all__ = ["positive_int"]
