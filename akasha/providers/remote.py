"""What every remote chat model and embedder shares: a connection, a retry policy, fault translation.

The OpenAI, Gemini and Ollama chat models and embedders all read the retry options,
log the options they ignore, translate their client's exceptions with the request
timeout, and pass the same four arguments to every retried call. They inherit that
here so the six classes cannot drift apart.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from akasha.embeddings.base import normalize_rows
from akasha.providers.endpoints import identity_suffix
from akasha.retry import DEFAULT_TIMEOUT_PER_TEXT, Fault, RetryPolicy, scaled_timeout


class RemoteProvider:
    """Base for classes that talk to a provider through ``self.connection`` with retries.

    A subclass sets ``name`` and then calls :meth:`_setup_calls` in its constructor.
    """

    name: str
    connection: Any
    retry: RetryPolicy
    timeout: float

    def _setup_calls(
        self,
        connection: Any,
        fault: Callable[..., Fault | None],
        timeout: float,
        options: dict[str, Any],
    ) -> None:
        """Keep ``connection``; read the retry options out of ``options`` (debug-logging the rest)."""
        self.retry = RetryPolicy.from_options(options)
        if options:
            logging.getLogger(type(self).__module__).debug(
                "%s ignores unknown options %s", self.name, sorted(options)
            )
        self.timeout = float(timeout)
        self.connection = connection
        self._fault = fault
        self._translate = functools.partial(fault, timeout=self.timeout)

    def _retry_kwargs(self, timeout: float | None = None) -> dict[str, Any]:
        """Keyword arguments for ``call_with_retry`` / ``acall_with_retry`` / the retrying streams.

        ``timeout``: the limit this request was sent with, when it differs from
        ``self.timeout`` (a scaled embedding batch), so a timeout error names it.
        """
        translate = self._translate if timeout is None else functools.partial(self._fault, timeout=timeout)
        return {"provider": self.name, "policy": self.retry, "translate": translate,
                "secrets": self.connection.secrets()}


class RemoteEmbedder(RemoteProvider):
    """A :class:`RemoteProvider` that returns normalised float32 rows and learns its dimension.

    Option ``timeout_per_text`` (seconds, default 0.25) is added to ``timeout`` for
    every text in a request: see :meth:`request_timeout`. Its :attr:`name` names the
    endpoint too, so two servers answering for one model never share cached vectors.
    """

    dimension: int | None
    timeout_per_text: float = DEFAULT_TIMEOUT_PER_TEXT
    #: ``provider:model[@dimensions]``; :attr:`name` adds the endpoint.
    base_name: str

    @property
    def name(self) -> str:  # type: ignore[override]  # computed, where RemoteProvider has a plain attribute
        """Identity that keys the vector cache: ``base_name`` plus ``@<endpoint>`` unless the
        provider's default public endpoint answers (so those names stay as they always were).

        Read from the current settings each time: ``OPENAI_BASE_URL`` set after the
        embedder was built still counts, as it does for the requests.
        """
        connection = getattr(self, "connection", None)
        label = connection.endpoint_identity() if connection is not None else None
        return self.base_name + identity_suffix(label)

    def _setup_calls(
        self,
        connection: Any,
        fault: Callable[..., Fault | None],
        timeout: float,
        options: dict[str, Any],
    ) -> None:
        """As :meth:`RemoteProvider._setup_calls`, also reading ``timeout_per_text``."""
        per_text = options.pop("timeout_per_text", None)
        if per_text is not None:
            if float(per_text) < 0:
                raise ValueError(f"timeout_per_text must be >= 0 seconds, got {per_text}")
            self.timeout_per_text = float(per_text)
        super()._setup_calls(connection, fault, timeout, options)

    def request_timeout(self, texts: int) -> float:
        """Seconds a request embedding ``texts`` texts may take (``timeout + timeout_per_text * texts``)."""
        return scaled_timeout(self.timeout, texts, self.timeout_per_text)

    def _finish(self, parts: list[np.ndarray]) -> np.ndarray:
        """Stack the per-batch rows, record the dimension, and normalise (an empty call gives 0 rows)."""
        if not parts:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        matrix = np.vstack(parts)
        self.dimension = int(matrix.shape[1])
        return normalize_rows(matrix)


__all__ = ["RemoteEmbedder", "RemoteProvider"]
