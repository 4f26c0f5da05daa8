"""Shared plumbing for hosted and HTTP model providers.

- :mod:`akasha.retry`: bounded exponential backoff with jitter that honours
  ``Retry-After``; the one retry loop every provider uses (client libraries' own
  retries are switched off so behaviour is the same everywhere).
- :mod:`akasha.providers.faults`: translate openai / google-genai / httpx exceptions
  into a :class:`~akasha.retry.Fault` (status, message, retryable?).
- :mod:`akasha.providers.streaming`: open a stream with retries, then detect a stream
  that breaks part way and raise ``StreamInterruptedError`` carrying the partial text.
- :mod:`akasha.providers.secrets`: redact API keys from any text we emit.
- :mod:`akasha.providers.remote`: the base of the OpenAI/Gemini/Ollama chat models and
  embedders (connection, retry options, fault translation, row normalisation).
- :mod:`akasha.providers.env`: environment-variable lookup and missing-key errors.
- :mod:`akasha.providers.sync_bridge`: run a coroutine from sync code, even inside a
  running event loop (Jupyter).

Nothing here imports a client library at module import time.

The retry policy and fault types live in :mod:`akasha.retry` (shared with the store
servers); they are not re-exported here so that module can use :mod:`.secrets` without an
import cycle.
"""
