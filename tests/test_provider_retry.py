"""The shared provider plumbing: backoff policy, Retry-After parsing, redaction, batching, sync bridge."""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest

from akasha.errors import MissingAPIKeyError, ProviderError
from akasha.providers.env import env_lookup, require_api_key
from akasha.providers.remote import plan_batches
from akasha.providers.secrets import redact
from akasha.providers.sync_bridge import run_sync
from akasha.retry import Fault, RetryPolicy, call_with_retry, parse_retry_after


def test_backoff_grows_exponentially_with_bounded_jitter():
    policy = RetryPolicy(initial_delay=1.0, multiplier=2.0, max_delay=5.0, jitter=0.5)
    for n, base in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 5.0), (6, 5.0)]:
        samples = [policy.delay(n) for _ in range(200)]
        assert all(base <= s <= base * 1.5 for s in samples)
        assert max(samples) > min(samples)  # jitter actually varies


def test_retry_after_is_a_floor():
    policy = RetryPolicy(initial_delay=0.01, jitter=0.0)
    assert policy.delay(0, retry_after=3.0) == 3.0
    assert policy.delay(0, retry_after=0.0) == pytest.approx(0.01)


def test_parse_retry_after_forms():
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= parse_retry_after({"retry-after": future}) <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_options_build_policy():
    options = {"max_retries": 1, "retry_initial_delay": 0.1, "retry_jitter": 0.0, "other": 1}
    policy = RetryPolicy.from_options(options)
    assert (policy.max_retries, policy.initial_delay, policy.jitter) == (1, 0.1, 0.0)
    assert options == {"other": 1}
    with pytest.raises(ValueError):
        RetryPolicy(max_retries=-1)


class Boom(Exception):
    def __init__(self, status, retry_after=None):
        super().__init__(f"boom {status}")
        self.status, self.retry_after = status, retry_after


def translate(exc):
    if isinstance(exc, Boom):
        return Fault(f"provider said no (key sk-test-SECRET-123)", exc.status, exc.status in (429, 500),
                     exc.retry_after)
    return None


def flaky(statuses):
    calls = []

    def fn():
        calls.append(1)
        if len(calls) <= len(statuses):
            raise Boom(statuses[len(calls) - 1])
        return "ok"

    return fn, calls


FAST = RetryPolicy(max_retries=3, initial_delay=0.001, max_delay=0.01)


def test_call_with_retry_recovers_and_bounds():
    fn, calls = flaky([429, 500])
    assert call_with_retry(fn, provider="p", policy=FAST, translate=translate) == "ok"
    assert len(calls) == 3
    fn, calls = flaky([500] * 10)
    with pytest.raises(ProviderError) as info:
        call_with_retry(fn, provider="p", policy=FAST, translate=translate, secrets=["sk-test-SECRET-123"])
    assert len(calls) == 4 and info.value.status == 500
    assert "sk-test-SECRET-123" not in str(info.value) and "***" in str(info.value)


def test_non_retryable_fails_at_once_and_unknown_errors_propagate():
    fn, calls = flaky([400])
    with pytest.raises(ProviderError):
        call_with_retry(fn, provider="p", policy=FAST, translate=translate)
    assert len(calls) == 1
    with pytest.raises(ZeroDivisionError):
        call_with_retry(lambda: 1 / 0, provider="p", policy=FAST, translate=translate)


def test_reopen_gives_a_refused_setting_one_more_round_under_the_same_deadline():
    """``reopen`` True: one more round of attempts (sync and async), sharing the first round's deadline;
    False or a second refusal: the error is raised; the refusal never becomes the next error's context."""
    from akasha.providers.bounded import _CURRENT
    from akasha.retry import acall_with_retry

    seen, deadlines = [], []

    def reopen(error):
        seen.append(error.status)
        return len(seen) == 1

    def fn_for(statuses):
        fn, calls = flaky(statuses)

        def traced():
            deadlines.append(_CURRENT.get())
            return fn()

        return traced, calls

    fn, calls = fn_for([400])
    assert call_with_retry(fn, provider="p", policy=FAST, translate=translate, reopen=reopen) == "ok"
    assert len(calls) == 2 and seen == [400] and deadlines[0] is deadlines[1] is not None
    fn, calls = fn_for([400, 400])
    with pytest.raises(ProviderError) as info:
        call_with_retry(fn, provider="p", policy=FAST, translate=translate, reopen=reopen)
    assert len(calls) == 1 and seen == [400, 400] and info.value.__context__ is None
    seen.clear()
    fn, calls = fn_for([400, 400])
    with pytest.raises(ProviderError) as info:
        call_with_retry(fn, provider="p", policy=FAST, translate=translate, reopen=reopen)
    assert len(calls) == 2 and seen == [400] and info.value.__context__ is None
    seen.clear()

    async def acall(statuses):
        fn, calls = fn_for(statuses)

        async def afn():
            return fn()

        return await acall_with_retry(afn, provider="p", policy=FAST, translate=translate, reopen=reopen), calls

    assert asyncio.run(acall([400]))[0] == "ok" and seen == [400]


def test_excessive_retry_after_gives_up_instead_of_waiting(monkeypatch):
    from sleeps import record_sleeps

    slept = record_sleeps(monkeypatch)
    calls = []

    def fn():
        calls.append(1)
        raise Boom(429, retry_after=3600)

    with pytest.raises(ProviderError):
        call_with_retry(fn, provider="p", policy=RetryPolicy(max_retry_after=5), translate=translate)
    assert len(calls) == 1 and slept == []


def test_redact_and_env(monkeypatch):
    assert redact("key=abcd1234 again abcd1234", ["abcd1234", None, ""]) == "key=*** again ***"
    monkeypatch.delenv("AK_A", raising=False)
    monkeypatch.setenv("AK_B", "value")
    assert env_lookup("AK_A", "AK_B") == ("AK_B", "value")
    with pytest.raises(MissingAPIKeyError) as info:
        require_api_key("demo", None, ["AK_A"])
    assert "AK_A" in str(info.value)


def test_plan_batches():
    texts = ["x" * 10] * 7
    assert plan_batches(texts, 3) == [(0, 3), (3, 6), (6, 7)]
    assert plan_batches(texts, 100, max_chars=25) == [(0, 2), (2, 4), (4, 6), (6, 7)]
    assert plan_batches(["y" * 50, "z"], 10, max_chars=20) == [(0, 1), (1, 2)]
    assert plan_batches([], 5) == []


def test_run_sync_outside_and_inside_a_loop():
    async def answer():
        await asyncio.sleep(0)
        return 42

    assert run_sync(answer()) == 42

    async def cell():
        return run_sync(answer())

    assert asyncio.run(cell()) == 42
