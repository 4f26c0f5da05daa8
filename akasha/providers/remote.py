"""What every remote chat model and embedder shares: a connection, a retry policy, fault translation.

The OpenAI, Gemini and Ollama chat models and embedders inherit how they read their model name and
options and call with retries, so the six classes cannot drift apart; the embedders also share
their batching loop (:class:`RemoteEmbedder`).
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np

from akasha.embeddings.base import as_matrix, normalize_rows
from akasha.errors import ConfigError, ProviderError
from akasha.providers.endpoints import identity_suffix
from akasha.retry import DEFAULT_TIMEOUT_PER_TEXT, Fault, RetryPolicy, acall_with_retry, call_with_retry, scaled_timeout

C = TypeVar("C")


def plan_batches(texts: Sequence[str], max_items: int, max_chars: int | None = None) -> list[tuple[int, int]]:
    """``[(start, end), ...]`` slices of ``texts``: at most ``max_items`` texts each and, when ``max_chars``
    is given, at most that many characters (a single longer text gets its own batch)."""
    if max_items <= 0:
        raise ValueError(f"batch size must be positive, got {max_items}")
    spans: list[tuple[int, int]] = []
    start, chars = 0, 0
    for i, text in enumerate(texts):
        if i - start >= max_items or (max_chars is not None and i > start and chars + len(text) > max_chars):
            spans.append((start, i))
            start, chars = i, 0
        chars += len(text)
    if start < len(texts):
        spans.append((start, len(texts)))
    return spans


def connect(connection_type: Callable[..., C], options: dict[str, Any]) -> C:
    """``connection_type(...)`` from the entries of ``options`` that its keyword-only parameters name, taken
    out of ``options`` (what is left belongs to the model)."""
    names = [p.name for p in inspect.signature(connection_type).parameters.values() if p.kind is p.KEYWORD_ONLY]
    return connection_type(**{name: options.pop(name) for name in names if name in options})


class RemoteProvider:
    """Base for classes that talk to a provider through ``self.connection`` with retries; a subclass sets
    :attr:`provider` and :attr:`example`."""

    #: the model string's prefix (``"openai"``)
    provider: ClassVar[str]
    #: a model name the error for a missing one suggests
    example: ClassVar[str]
    connection: Any
    retry: RetryPolicy
    timeout: float

    def __init__(self, rest: str, options: dict[str, Any], connection_type: Callable[..., Any],
                 fault: Callable[..., Fault | None]) -> None:
        """Read the model name from ``rest``; take the connection's settings, the retry options and
        :meth:`_take_options` out of ``options`` (debug-logging the rest)."""
        self.model = rest.strip()
        if not self.model:
            raise ConfigError(f"{self.provider}: needs a model name, for example '{self.provider}:{self.example}'")
        #: ``provider:model``, plus what changes the output (an embedder's shortened size)
        self.base_name = f"{self.provider}:{self.model}"
        self.connection = connect(connection_type, options)
        self.retry = RetryPolicy.from_options(options)
        self._take_options(options)
        if options:
            logging.getLogger(type(self).__module__).debug("%s ignores unknown options %s", type(self).__name__,
                                                           sorted(options))
        self.timeout = float(self.connection.timeout)
        self._fault = fault

    @property
    def name(self) -> str:
        """``provider:model``, as traces, errors and logs name it."""
        return self.base_name

    def _take_options(self, options: dict[str, Any]) -> None:
        """Take a subclass's own options out of ``options``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, connection={self.connection!r})"

    def _retry_kwargs(self, timeout: float | None = None) -> dict[str, Any]:
        """Keyword arguments for ``call_with_retry`` and its kin (``timeout``: this request's own limit)."""
        translate = functools.partial(self._fault, timeout=self.timeout if timeout is None else timeout)
        return {"provider": self.name, "policy": self.retry, "translate": translate,
                "secrets": self.connection.secrets()}


class RemoteEmbedder(RemoteProvider):
    """A :class:`RemoteProvider` that embeds in batches and returns normalised float32 rows.

    Option ``timeout_per_text`` (seconds, default 0.25) is added to ``timeout`` for every text in a
    request. A batch that still fails after its retries raises and nothing is returned, so an index
    never stores a half-embedded document.
    """

    #: the length of the vectors (None until known: a table of known models, or the first reply)
    dimension: int | None = None
    timeout_per_text: float = DEFAULT_TIMEOUT_PER_TEXT
    batch_size: int
    #: at most this many characters in one request (None: no limit)
    max_batch_chars: int | None = None

    @property
    def name(self) -> str:
        """Identity that keys the vector cache: ``base_name`` plus ``@<endpoint>`` unless the provider's
        default public endpoint answers (read from the current settings each time, as the requests are)."""
        return self.base_name + identity_suffix(self.connection.endpoint_identity())

    def _take_options(self, options: dict[str, Any]) -> None:
        per_text = options.pop("timeout_per_text", None)
        if per_text is not None:
            if float(per_text) < 0:
                raise ValueError(f"timeout_per_text must be >= 0 seconds, got {per_text}")
            self.timeout_per_text = float(per_text)

    def _batch_size(self, batch_size: int, most: int | None = None) -> int:
        """``batch_size`` as an int, or ConfigError unless it is 1..``most`` (the provider's limit)."""
        if int(batch_size) <= 0 or (most is not None and int(batch_size) > most):
            allowed = f"1..{most}" if most else "positive"
            raise ConfigError(f"{self.provider} embeddings batch_size must be {allowed}, got {batch_size}")
        return int(batch_size)

    def _output_size(self, size: int | None, known_sizes: dict[str, int]) -> int | None:
        """The shortened output size a caller asked for (None: the model's own). It is named in
        ``base_name`` and is the ``dimension``; without it, ``known_sizes`` may give the model's."""
        size = int(size) if size else None
        self.base_name += f"@{size}" if size else ""
        self.dimension = size or known_sizes.get(self.model)
        return size

    def request_timeout(self, texts: int) -> float:
        """Seconds a request embedding ``texts`` texts may take (``timeout + timeout_per_text * texts``)."""
        return scaled_timeout(self.timeout, texts, self.timeout_per_text)

    def _request(self, texts: list[str], task: str, timeout: float) -> Callable[[], Any]:
        """The call that sends one batch (``task``: ``"RETRIEVAL_DOCUMENT"`` or ``"RETRIEVAL_QUERY"``)."""
        raise NotImplementedError

    def _arequest(self, texts: list[str], task: str, timeout: float) -> Callable[[], Awaitable[Any]]:
        raise NotImplementedError

    def _vectors(self, reply: Any) -> Sequence[Any]:
        """The vectors in a reply, in the order of the texts sent."""
        raise NotImplementedError

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "RETRIEVAL_DOCUMENT")

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], "RETRIEVAL_QUERY")[0]

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Async twin of :meth:`embed_documents` (batches sent one after another)."""
        return await self._aembed(texts, "RETRIEVAL_DOCUMENT")

    async def aembed_query(self, text: str) -> np.ndarray:
        return (await self._aembed([text], "RETRIEVAL_QUERY"))[0]

    def _batches(self, texts: Sequence[str]) -> list[tuple[list[str], float]]:
        """The requests to send: each batch of texts with its time limit (:meth:`request_timeout`)."""
        texts = list(texts)
        return [(texts[start:end], self.request_timeout(end - start))
                for start, end in plan_batches(texts, self.batch_size, self.max_batch_chars)]

    def _embed(self, texts: Sequence[str], task: str) -> np.ndarray:
        parts = []
        for batch, limit in self._batches(texts):
            reply = call_with_retry(self._request(batch, task, limit), **self._retry_kwargs(limit))
            parts.append(self._rows(reply, batch))
        return self._finish(parts)

    async def _aembed(self, texts: Sequence[str], task: str) -> np.ndarray:
        parts = []
        for batch, limit in self._batches(texts):
            reply = await acall_with_retry(self._arequest(batch, task, limit), **self._retry_kwargs(limit))
            parts.append(self._rows(reply, batch))
        return self._finish(parts)

    def _rows(self, reply: Any, batch: list[str]) -> np.ndarray:
        """The reply's vectors as a matrix; ProviderError unless there is one per text."""
        vectors = self._vectors(reply)
        if len(vectors) != len(batch):
            raise ProviderError(self.name, f"returned {len(vectors)} embeddings for {len(batch)} inputs")
        return as_matrix(vectors, len(batch), self.name)

    def _finish(self, parts: list[np.ndarray]) -> np.ndarray:
        """Stack the per-batch rows, record the dimension, and normalise (an empty call gives 0 rows)."""
        if not parts:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        matrix = np.vstack(parts)
        self.dimension = int(matrix.shape[1])
        return normalize_rows(matrix)


__all__ = ["RemoteEmbedder", "RemoteProvider", "connect"]
