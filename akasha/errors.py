"""One hierarchy for every error akasha raises on purpose.

Catch :class:`AkashaError` to handle anything akasha reports; the messages say what to do next.
Several also derive from the built-in exception a user would naturally catch (``ValueError``,
``ImportError``, ``FileNotFoundError``) so existing ``except`` clauses keep working.
"""

from __future__ import annotations

from collections.abc import Iterable


class AkashaError(Exception):
    """Base class of every error raised by akasha on purpose."""


#: The RAGPipeline reference calls the base class ``RAGError``; both names work.
RAGError = AkashaError


class ConfigError(AkashaError, ValueError):
    """An option has a value akasha does not know (bad name, bad number)."""


class SpecError(AkashaError, ValueError):
    """A ``kind: RAGPipeline`` document is malformed or names unknown components."""


#: The name akasha is published under on the package index (``import akasha`` and the ``akasha``
#: command keep the short name; ``akasha`` itself is an unrelated package there).
DISTRIBUTION = "akasha-rag"


class MissingExtraError(AkashaError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, package: str, extra: str, purpose: str = "", install: str | None = None) -> None:
        self.package = package
        self.extra = extra
        #: The command that installs it: the extra, unless the package is installed on its own (``install``).
        self.install = install or f"pip install '{DISTRIBUTION}[{extra}]'"
        what = f" for {purpose}" if purpose else ""
        super().__init__(f"{package} is required{what} but is not installed. Install it with: {self.install}")


class StageError(AkashaError):
    """A pipeline stage failed; ``stage`` and ``name`` say which, ``cause`` says why."""

    def __init__(self, stage: str, name: str, cause: BaseException) -> None:
        self.stage = stage
        self.name = name
        self.cause = cause
        super().__init__(f"{stage} stage {name!r} failed: {type(cause).__name__}: {cause}")


class StageValueError(StageError, ValueError):
    """A StageError whose cause is a ValueError (a reranker's invalid ordering): ``except ValueError`` still
    catches it, as the reference documents promise both doors."""


def stage_error(stage: str, name: str, cause: BaseException) -> StageError:
    """``StageError(stage, name, cause)``, a :class:`StageValueError` when ``cause`` is a ValueError."""
    kind = StageValueError if isinstance(cause, ValueError) else StageError
    return kind(stage, name, cause)


class MissingAPIKeyError(AkashaError):
    """A hosted provider was selected but its API key is not set."""

    def __init__(self, provider: str, variables: Iterable[str], offline_hint: str = "") -> None:
        names = list(variables)
        self.provider = provider
        self.variables = names
        hint = offline_hint or ("or use the offline stack: embeddings='hf:all-MiniLM-L6-v2' and "
                                "model='extractive' (or 'llama-cpp:smollm2')")
        super().__init__(f"{provider} needs an API key: set the environment variable {' or '.join(names)}, {hint}")


class ProviderError(AkashaError):
    """A model provider answered with an error (after any retries)."""

    def __init__(self, provider: str, message: str, status: int | None = None) -> None:
        self.provider = provider
        self.status = status
        code = f" (HTTP {status})" if status is not None else ""
        super().__init__(f"{provider}{code}: {message}")


class StreamInterruptedError(ProviderError):
    """A streamed answer broke off part way; ``partial`` holds what had arrived."""

    def __init__(self, provider: str, message: str, partial: str = "") -> None:
        self.partial = partial
        super().__init__(provider, f"stream interrupted after {len(partial)} characters: {message}")


class SourceNotFoundError(AkashaError, FileNotFoundError):
    """A data_source path does not exist."""


class EmptySourceError(AkashaError, ValueError):
    """A data_source exists but yields no text at all."""


class EmptyStoreError(EmptySourceError):
    """``data_source=None`` (answer from the store as it is) and the store holds no chunks to search."""


class LoaderError(AkashaError):
    """One file could not be read; the indexer reports it and skips the file."""

    def __init__(self, path: object, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class OrderingError(AkashaError, ValueError):
    """A reranker returned something other than a complete ordering of the candidates."""


class BudgetError(AkashaError, ValueError):
    """The prompt alone does not fit ``max_input_tokens``."""


class IndexLockError(AkashaError, TimeoutError):
    """Another process holds the index lock for longer than the timeout."""


class IndexWriteError(AkashaError, OSError):
    """The index cache folder refused a write (read-only, disk full, not a folder); the index there is unchanged."""

    #: The cache folder that refused the write, when known.
    cache_dir: str | None = None


class IndexMismatchError(AkashaError, ValueError):
    """An index was built with another embedding model or settings than requested."""


class ServerError(AkashaError):
    """A shared index server (Chroma, PostgreSQL) failed; the message names it and says what to do."""


class ServerUnavailableError(ServerError, ConnectionError):
    """The index server could not be reached (down, restarting, wrong host or port) after the retries."""


class ServerAuthError(ServerError, PermissionError):
    """The index server refused the credentials (token, user or password)."""
