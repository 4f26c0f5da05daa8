"""The chat-model contract every answer/reranker model implements.

Messages use the OpenAI shape: ``[{"role": "system"|"user"|"assistant", "content": str}]``.
Providers translate that into their own wire format.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

logger = logging.getLogger("akasha.llm")

Message = dict[str, str]

#: Finish reasons (lower-cased) that mean the reply hit the output limit: OpenAI-compatible servers,
#: Ollama and llama.cpp say ``length``, Gemini ``MAX_TOKENS``, Anthropic ``max_tokens``.
TRUNCATED_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})


@dataclass
class GenerationReport:
    """How one reply ended: the provider's own ``finish_reason`` (``"stop"``, ``"length"``,
    ``"MAX_TOKENS"``...; None when it gave none), and whether ``max_output_tokens`` cut it."""

    finish_reason: str | None = None
    truncated: bool = False


@dataclass(frozen=True)
class GenerationOptions:
    """Per-request generation settings shared by all providers.

    ``json_schema``: ask for a JSON reply matching this JSON Schema through the provider's structured-output
    switch (providers without one ignore it: validate the reply). ``report``: a :class:`GenerationReport`
    the provider fills with the reply's finish reason (the pipeline copies it into the trace).
    """

    max_output_tokens: int | None = None
    temperature: float = 0.0
    json_schema: Mapping[str, Any] | None = None
    report: GenerationReport | None = field(default=None, compare=False, hash=False, repr=False)


def note_finish(model_name: str, options: GenerationOptions | None, reason: object) -> None:
    """Record how a reply ended (the provider's finish reason: an enum's value, a string or None): fill
    ``options.report``, and log a WARNING when the output limit cut it."""
    if reason is None or reason == "":
        return
    reason = str(getattr(reason, "value", None) or reason)
    truncated = reason.lower() in TRUNCATED_REASONS
    report = options.report if options is not None else None
    if report is not None:
        report.finish_reason = reason
        report.truncated = truncated
    if truncated:
        limit = options.max_output_tokens if options is not None else None
        logger.warning(
            "%s stopped at the output limit (finish reason %r, max_output_tokens=%s): the answer is cut short; "
            "raise max_output_tokens to let it finish", model_name, reason, limit)


def context_window(model: object) -> int | None:
    """The model's context size in tokens when it is known (a ``context_window`` attribute), else None."""
    value = getattr(model, "context_window", None)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


@runtime_checkable
class ChatModel(Protocol):
    """Generates text from chat messages, whole or streamed (providers with async clients add
    ``agenerate`` and ``astream``, the same with ``async``)."""

    #: Display name, e.g. ``"openai:gpt-4o-mini"``; never contains secrets.
    name: str

    def generate(self, messages: list[Message], options: GenerationOptions) -> str:
        """Return the whole answer."""
        ...

    def stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str]:
        """Yield the answer in pieces as the provider produces them."""
        ...
