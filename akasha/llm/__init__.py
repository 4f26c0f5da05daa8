"""Chat model strings -> :class:`~akasha.llm.base.ChatModel` objects.

``"openai:<model>"``, ``"gemini:<model>"``, ``"ollama:<model>"`` (each optionally
``"...:<model>@http://host:port/..."`` for a server of your own),
``"hf:<name-or-path>"`` (local transformers), ``"llama-cpp:<gguf path or packaged name>"``,
``"extractive"`` (offline, quotes the best supporting sentences), a callable
``prompt -> str``, or a LangChain chat model object.

Provider modules are imported only when a model is built, so validating a name
at construction costs nothing and creates no client.
"""

from __future__ import annotations

import builtins  # the submodule akasha.<pkg>.callable shadows the builtin name here
import importlib
from typing import Any

from akasha.embeddings import split_model_string
from akasha.errors import ConfigError
from akasha.llm.base import ChatModel, GenerationOptions, Message

#: prefix -> "module:factory"; each factory takes the part after the colon ("" if none).
CHAT_PROVIDERS: dict[str, str] = {
    "openai": "akasha.llm.openai:OpenAIChat",
    "gemini": "akasha.llm.gemini:GeminiChat",
    "ollama": "akasha.llm.ollama:OllamaChat",
    "hf": "akasha.llm.hf:TransformersChat",
    "llama-cpp": "akasha.llm.llamacpp:LlamaCppChat",
    "extractive": "akasha.llm.extractive:ExtractiveAnswerer",
}


def validate_model(spec: object) -> None:
    """Raise ConfigError now if ``spec`` can never become a chat model (no import, no I/O)."""
    if isinstance(spec, str):
        split_model_string(spec, CHAT_PROVIDERS, "model", "openai:gpt-4o-mini")
    elif not builtins.callable(spec) and not hasattr(spec, "invoke") and not isinstance(spec, ChatModel):
        raise ConfigError(f"model must be a model string, a callable or a chat model object, got {spec!r}")


def resolve_chat_model(spec: Any, **options: Any) -> ChatModel:
    """Build the chat model named by ``spec`` (see the module docstring for the forms)."""
    validate_model(spec)
    if isinstance(spec, str):
        prefix, rest = split_model_string(spec, CHAT_PROVIDERS, "model", "openai:gpt-4o-mini")
        from akasha.providers.endpoints import endpoint_options

        rest, options = endpoint_options(prefix, rest, options)  # "<model>@<address>" -> base_url=
        module_name, factory_name = CHAT_PROVIDERS[prefix].split(":")
        factory = getattr(importlib.import_module(module_name), factory_name)
        return factory(rest, **options)
    # LangChain chat models also have .name/.generate/.stream (with other signatures), so
    # objects with .invoke are wrapped before the ChatModel protocol check.
    if hasattr(spec, "invoke"):
        from akasha.llm.langchain import LangChainChat

        return LangChainChat(spec)
    if isinstance(spec, ChatModel):
        return spec
    from akasha.llm.callable import CallableChat  # validate_model let only a callable through to here

    return CallableChat(spec)


__all__ = ["CHAT_PROVIDERS", "ChatModel", "GenerationOptions", "Message", "resolve_chat_model", "validate_model"]
