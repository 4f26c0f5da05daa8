"""Record the sleeps the code under test asks for.

A test that must show "it did not wait" (no backoff, no lock wait) checks what was asked of
``time.sleep``, which does not depend on how loaded the machine is, instead of the wall clock.
"""

from __future__ import annotations

import time

import pytest


def record_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Seconds of every ``time.sleep`` call from now on (they still sleep), in call order."""
    slept: list[float] = []
    real_sleep = time.sleep

    def sleep(seconds: float) -> None:
        slept.append(float(seconds))
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", sleep)
    return slept
