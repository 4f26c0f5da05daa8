"""One retry loop for every remote call: model providers and store servers.

:func:`retry_calls` is the loop (:func:`aretry_calls` its async twin). Providers
(:func:`call_with_retry`, :class:`RetryPolicy`, :class:`Fault`) retry HTTP faults and end as
:class:`~akasha.errors.ProviderError` with the key redacted; store servers (:class:`Retry`) retry
connection failures and end as ``ServerUnavailableError`` or ``ServerAuthError``.

The openai and google-genai clients' own retries are off, so every provider retries the same faults
(HTTP 408/409/429, 5xx, timeouts, dropped connections) the same bounded number of times, waiting at
least the server's ``Retry-After``; deterministic answers (other 4xx, 501, 505, "unsupported", input
too large) fail at once. One deadline covers a call and its retries (:mod:`akasha.providers.bounded`).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from akasha.errors import AkashaError, ProviderError, ServerAuthError, ServerError, ServerUnavailableError
from akasha.providers.bounded import Deadline, request_deadline
from akasha.providers.secrets import redact

logger = logging.getLogger("akasha.providers")
store_logger = logging.getLogger("akasha.stores")

T = TypeVar("T")

#: Seconds a single request may take before it is abandoned (option ``timeout``).
DEFAULT_TIMEOUT = 60.0
#: Seconds added to ``timeout`` per text in an embedding request (option ``timeout_per_text``).
DEFAULT_TIMEOUT_PER_TEXT = 0.25

#: Statuses that say "this request will never work here" although they are 5xx.
_DETERMINISTIC_5XX = frozenset({501, 505})
#: Messages that say the server or model lacks the operation, or that the input can never fit
#: (llama.cpp: "input (151 tokens) is too large to process. increase the physical batch size", an HTTP
#: 500); no retry changes that.
_UNSUPPORTED = re.compile(
    r"(does not|doesn't|do not|cannot|can't) support|not supported|unsupported|not implemented|not_supported"
    r"|input (\(\d+ tokens\) )?is too large|too many tokens|exceeds? the (\w+ )?context|maximum context length"
    r"|context length exceeded",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Fault:
    """What went wrong with one request, in provider-neutral terms."""

    message: str
    status: int | None = None
    retryable: bool = False
    retry_after: float | None = None


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait between attempts.

    The n-th retry waits ``initial_delay * multiplier**n`` (capped at ``max_delay``) plus up to ``jitter``
    times that at random, and never less than the server's ``Retry-After``. A ``Retry-After`` longer than
    ``max_retry_after`` is not waited for: the error is raised at once.
    """

    max_retries: int = 3
    initial_delay: float = 0.5
    max_delay: float = 20.0
    multiplier: float = 2.0
    jitter: float = 0.5
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.initial_delay < 0 or self.max_delay < 0 or self.jitter < 0:
            raise ValueError("retry delays and jitter must be >= 0")

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> RetryPolicy:
        """Pop ``max_retries``, ``retry_initial_delay``, ``retry_max_delay``, ``retry_jitter``,
        ``retry_max_wait`` from a provider's keyword options (``retry=RetryPolicy(...)`` wins)."""
        given = options.pop("retry", None)
        names = {"max_retries": "max_retries", "initial_delay": "retry_initial_delay", "max_delay": "retry_max_delay",
                 "jitter": "retry_jitter", "max_retry_after": "retry_max_wait"}  # field -> option
        fields = {field: options.pop(option, None) for field, option in names.items()}
        if isinstance(given, RetryPolicy):
            return given
        return cls(**{k: v for k, v in fields.items() if v is not None})

    def delay(self, retry_number: int, retry_after: float | None = None) -> float:
        """Seconds to sleep before retry ``retry_number`` (0-based)."""
        base = min(self.max_delay, self.initial_delay * (self.multiplier**retry_number))
        wait = base + random.uniform(0.0, self.jitter * base)
        if retry_after is not None:
            wait = max(wait, retry_after)
        return wait


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms``, ``Retry-After: <seconds>`` or ``Retry-After: <HTTP date>``."""
    lowered = {str(k).lower(): str(v) for k, v in (headers or {}).items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            return max(0.0, float(lowered[name]) / scale)
        except (KeyError, ValueError):
            pass
    try:
        when = email.utils.parsedate_to_datetime(lowered["retry-after"])
    except (KeyError, TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def is_retryable(status: int | None, message: str | None = None) -> bool:
    """Whether an error answer may succeed when sent again: HTTP 408, 409 (lock timeout), 429 and 5xx
    except 501/505, unless the message says the operation is unsupported (some servers answer
    "does not support embeddings" with a 500)."""
    if status is None or not (status in (408, 409, 429) or (status >= 500 and status not in _DETERMINISTIC_5XX)):
        return False
    return not (message and _UNSUPPORTED.search(message))


def scaled_timeout(timeout: float, items: int, per_item: float = DEFAULT_TIMEOUT_PER_TEXT) -> float:
    """Seconds one request carrying ``items`` texts may take: ``timeout + per_item * items``."""
    if timeout <= 0 or per_item < 0:
        raise ValueError(f"timeout must be > 0 and timeout_per_text >= 0, got {timeout} and {per_item}")
    return float(timeout) + float(per_item) * max(0, int(items))


#: What a retry loop does after a failed attempt: wait this many seconds, or raise this exception.
WaitOrRaise = Callable[[Exception, int], "float | BaseException"]


def retry_calls(fn: Callable[[], T], wait_after: WaitOrRaise, on_retry: Callable[[], None] | None = None) -> T:
    """The retry loop: call ``fn`` until it returns or ``wait_after`` says to give up.

    After attempt ``n`` (0-based) fails with ``exc``, ``wait_after(exc, n)`` returns the seconds to sleep
    before the next attempt, or the exception to raise. It is raised *outside* the ``except`` block, so a
    client's exception (whose text may echo an API key) is not kept as ``__context__``. ``on_retry`` runs
    after each wait (a store reconnects there); its own failure is ignored: the next attempt reports it.
    """
    retry_number = 0
    while True:
        try:
            return fn()
        except Exception as exc:
            outcome = wait_after(exc, retry_number)
        if isinstance(outcome, BaseException):
            raise outcome
        time.sleep(outcome)
        if on_retry is not None:
            with contextlib.suppress(Exception):
                on_retry()
        retry_number += 1


async def aretry_calls(fn: Callable[[], Awaitable[T]], wait_after: WaitOrRaise) -> T:
    """Async twin of :func:`retry_calls` (sleeps with ``asyncio.sleep``)."""
    retry_number = 0
    while True:
        try:
            return await fn()
        except Exception as exc:
            outcome = wait_after(exc, retry_number)
        if isinstance(outcome, BaseException):
            raise outcome
        await asyncio.sleep(outcome)
        retry_number += 1


def _provider_wait(exc: Exception, retry_number: int, provider: str, policy: RetryPolicy,
                   translate: Callable[[BaseException], Fault | None], secrets: tuple[str | None, ...],
                   deadline: Deadline) -> float | BaseException:
    """Seconds to wait before retrying after ``exc``, or the exception the caller must raise: ``exc`` itself
    when akasha's own or not recognised by ``translate``; a :class:`ProviderError` for a fault that may not be
    retried, has no retries left, asks for too long a ``Retry-After`` or would wait past ``deadline``."""
    if isinstance(exc, AkashaError):
        return exc
    fault = translate(exc)
    if fault is None:
        return exc
    message, attempts = redact(fault.message, secrets), retry_number + 1
    if fault.retryable and retry_number < policy.max_retries:
        if fault.retry_after is not None and fault.retry_after > policy.max_retry_after:
            logger.warning("%s asked to retry after %.0f s, longer than retry_max_wait=%.0f s; giving up",
                           provider, fault.retry_after, policy.max_retry_after)
        else:
            wait = policy.delay(retry_number, fault.retry_after)
            left = deadline.remaining()
            if wait >= left:
                why = (f"{deadline.describe()} has passed" if left <= 0
                       else f"a retry in {wait:.2f} s would pass {deadline.describe()}, {left:.2f} s from now")
                note = (f"gave up after {attempts} attempt{'s' if attempts > 1 else ''}: {why}; raise it if the "
                        "server is genuinely this slow")
                return ProviderError(provider, f"{message} ({note})", fault.status)
            logger.warning("%s request failed (%s); retry %d of %d in %.2f s",
                           provider, message, attempts, policy.max_retries, wait)
            return wait
    note = f" (gave up after {attempts} attempts)" if attempts > 1 else ""
    return ProviderError(provider, message + note, fault.status)


def call_with_retry(fn: Callable[[], T], *, provider: str, policy: RetryPolicy,
                    translate: Callable[[BaseException], Fault | None], secrets: Iterable[str | None] = (),
                    reopen: Callable[[ProviderError], bool] | None = None) -> T:
    """Call ``fn`` until it succeeds, a fault is not retryable, or retries run out.

    Exceptions ``translate`` does not recognise (returns None) propagate unchanged; recognised ones end as
    :class:`ProviderError` with the key redacted and no chained cause (its text could carry the key). All
    attempts and sleeps share one request deadline. ``reopen(error)``: True when the call failed on a setting
    the provider refused and ``fn`` now leaves out; ``fn`` then gets one more round of attempts, under the
    same deadline.
    """
    secrets = tuple(secrets)
    with request_deadline() as deadline:
        def wait_after(exc: Exception, n: int) -> float | BaseException:
            return _provider_wait(exc, n, provider, policy, translate, secrets, deadline)

        try:
            return retry_calls(fn, wait_after)
        except ProviderError as error:
            if reopen is None or not reopen(error):
                raise
        return retry_calls(fn, wait_after)  # outside the except block: the refusal is not its __context__


async def acall_with_retry(fn: Callable[[], Awaitable[T]], *, provider: str, policy: RetryPolicy,
                           translate: Callable[[BaseException], Fault | None], secrets: Iterable[str | None] = (),
                           reopen: Callable[[ProviderError], bool] | None = None) -> T:
    """Async twin of :func:`call_with_retry` (sleeps with ``asyncio.sleep``)."""
    secrets = tuple(secrets)
    with request_deadline() as deadline:
        def wait_after(exc: Exception, n: int) -> float | BaseException:
            return _provider_wait(exc, n, provider, policy, translate, secrets, deadline)

        try:
            return await aretry_calls(fn, wait_after)
        except ProviderError as error:
            if reopen is None or not reopen(error):
                raise
        return await aretry_calls(fn, wait_after)


@dataclass
class Retry:
    """Bounded retries with exponential backoff (and a little jitter) for the calls of server-backed stores
    (Chroma over HTTP, PostgreSQL, Qdrant). ``attempts`` counts the first try; the waits are ``base * 2**i``
    capped at ``max_delay`` seconds, so the defaults give up after about 15 s of outage."""

    attempts: int = 6
    base: float = 0.5
    max_delay: float = 8.0

    def delays(self) -> Iterator[float]:
        """The waits between attempts, in seconds."""
        for i in range(max(0, self.attempts - 1)):
            yield min(self.max_delay, self.base * 2**i) * (0.8 + 0.4 * random.random())

    def run(self, fn: Callable[[], T], *, server: str, what: str,
            transient: tuple[type[BaseException], ...] | Callable[[BaseException], bool],
            auth: Callable[[BaseException], bool] = lambda exc: False, on_retry: Callable[[], None] | None = None,
            hint: str = "", lock: AbstractContextManager[Any] | None = None) -> T:
        """Call ``fn``; retry on ``transient`` errors (exception types, or a test of the exception), raise
        ServerAuthError / ServerUnavailableError. ``lock`` (a client one thread at a time may use) is held
        during each attempt, not while waiting; ``on_retry`` (a reconnect) runs after each wait.
        """
        delays = self.delays()
        is_transient = transient if callable(transient) else (lambda exc: isinstance(exc, transient))

        def attempt() -> T:
            with lock if lock is not None else contextlib.nullcontext():
                return fn()

        def wait_after(exc: Exception, retry_number: int) -> float | BaseException:
            if isinstance(exc, ServerError):
                return exc
            if auth(exc):
                return _caused_by(ServerAuthError(
                    f"{server} refused the credentials while {what}: {first_line(exc)}. {hint}"), exc)
            if not is_transient(exc):
                return exc
            delay = next(delays, None)
            if delay is None:
                return _caused_by(ServerUnavailableError(
                    f"cannot reach {server} while {what} after {self.attempts} attempts "
                    f"({first_line(exc)}). Start the server or check its address; the store on it stays "
                    "consistent, so run the same call again once it is back"), exc)
            store_logger.warning("store server %s failed while %s (%s); retrying in %.1f s", server, what,
                           first_line(exc), delay)
            return delay

        return retry_calls(attempt, wait_after, on_retry=on_retry)


def _caused_by(error: BaseException, cause: BaseException) -> BaseException:
    """``error`` chained to ``cause`` as ``raise error from cause`` would, for raising later."""
    error.__cause__ = cause
    error.__suppress_context__ = True
    return error


def first_line(exc: BaseException) -> str:
    """``Type: first line of the message``, for error messages and logs."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


__all__ = ["DEFAULT_TIMEOUT", "DEFAULT_TIMEOUT_PER_TEXT", "Fault", "Retry", "RetryPolicy", "acall_with_retry",
           "aretry_calls", "call_with_retry", "first_line", "is_retryable", "parse_retry_after", "retry_calls",
           "scaled_timeout"]
