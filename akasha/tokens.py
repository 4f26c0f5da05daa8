"""Offline token counting for ``max_input_tokens`` packing.

Counts come from ``bpe-openai`` (a packaged, tiktoken-compatible BPE that needs
no download): ``o200k_base`` for the GPT-4o/4.1/o-series family and
``cl100k_base`` for everything else (GPT-3.5/4, and as a stand-in for Gemini,
Ollama, Hugging Face and llama.cpp models, whose own tokenizers land within a
few percent of it on English text). When bpe-openai is not installed the counter
falls back to an estimate of one token per four characters (at least one token
per word), which is what OpenAI documents as the English average.

Encodings are loaded once per process and cached.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from dataclasses import dataclass

logger = logging.getLogger(__name__)

#: Model name fragments that use the ``o200k_base`` encoding.
_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")
_WORD_RE = re.compile(r"\S+")


def encoding_name_for(model: object) -> str:
    """Pick the BPE encoding that counts ``model``'s tokens (``"openai:gpt-4o"`` -> ``o200k_base``)."""
    if not isinstance(model, str):
        return "cl100k_base"
    name = model.partition(":")[2] if ":" in model else model
    name = name.strip().lower().rsplit("/", 1)[-1]
    return "o200k_base" if name.startswith(_O200K_PREFIXES) else "cl100k_base"


@functools.lru_cache(maxsize=4)
def _encoding(name: str):
    try:
        import bpe_openai
    except ImportError:
        logger.info("bpe-openai is not installed; token counts are estimated (4 characters per token)")
        return None
    return bpe_openai.get_encoding(name)


def estimate_tokens(text: str) -> int:
    """The fallback estimate: ceil(chars / 4), and never fewer tokens than words."""
    if not text:
        return 0
    return max(math.ceil(len(text) / 4), len(_WORD_RE.findall(text)))


@dataclass(frozen=True)
class TokenCounter:
    """Counts and truncates text in tokens of one encoding (``exact`` False means estimated)."""

    encoding_name: str = "cl100k_base"

    @property
    def exact(self) -> bool:
        return _encoding(self.encoding_name) is not None

    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (special-token look-alikes count as plain text)."""
        if not text:
            return 0
        encoding = _encoding(self.encoding_name)
        if encoding is None:
            return estimate_tokens(text)
        return len(encoding.encode(text, disallowed_special=()))

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` that has at most ``max_tokens`` tokens."""
        if max_tokens <= 0:
            return ""
        encoding = _encoding(self.encoding_name)
        if encoding is None:
            if estimate_tokens(text) <= max_tokens:
                return text
            cut = text[: max_tokens * 4]
            while cut and estimate_tokens(cut) > max_tokens:
                cut = cut[: int(len(cut) * 0.9)]
            return cut
        ids = encoding.encode(text, disallowed_special=())
        if len(ids) <= max_tokens:
            return text
        cut = encoding.decode(ids[:max_tokens])
        # A cut inside a multi-byte character decodes to U+FFFD; drop it, then re-check.
        cut = cut.rstrip("\ufffd")
        while cut and self.count(cut) > max_tokens:
            cut = cut[:-1]
        return cut


def counter_for(model: object) -> TokenCounter:
    """The :class:`TokenCounter` for an answer model string (or callable: cl100k)."""
    return TokenCounter(encoding_name_for(model))


def count_tokens(text: str, model: object = None) -> int:
    """Count ``text``'s tokens as ``model`` would (see :func:`encoding_name_for`)."""
    return counter_for(model).count(text)


__all__ = ["TokenCounter", "count_tokens", "counter_for", "encoding_name_for", "estimate_tokens"]
