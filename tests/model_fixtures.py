"""Chat-model wrappers shared by the live-model tests (llama.cpp server, SmolLM2 in-process)."""

from __future__ import annotations


class RecordingChatModel:
    """A chat model that records every request (messages, options) before passing it to ``inner``.

    It forwards what the prompt budget asks a model for (``context_window``, ``token_counter``),
    so a test sees the requests exactly as akasha sized them for the real model.
    """

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[tuple[list, object]] = []

    @property
    def context_window(self):
        return self.inner.context_window

    def token_counter(self):
        return self.inner.token_counter()

    def generate(self, messages, options):
        self.calls.append((messages, options))
        return self.inner.generate(messages, options)

    def stream(self, messages, options):
        self.calls.append((messages, options))
        return self.inner.stream(messages, options)
