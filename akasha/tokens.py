"""Offline token counting for ``max_input_tokens`` packing.

Counts come from ``tiktoken`` with OpenAI's encodings (``o200k_base`` for the GPT-4o/4.1/5 and o-series
names, ``cl100k_base`` for the rest), read from the gzipped files shipped in ``akasha/tokenize_data/``
(checked against tiktoken's sha256); without them, four characters a token (logged).

:func:`counter_for` picks a model's counter: tiktoken for OpenAI names; the character estimate for
``extractive``; the model's own tokenizer for ``llama-cpp:``, ``hf:`` and servers with ``/tokenize``
(:mod:`akasha.model_tokens`); else cl100k times a safety margin, 1.25 plus the non-ASCII share (up to
1.75; docs/local-servers.md, "Token counts and cut answers").
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import logging
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from akasha.model_tokens import count_many, tokenizer_identity, truncate

logger = logging.getLogger(__name__)

#: Model name fragments that use the ``o200k_base`` encoding.
_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")
_WORD_RE = re.compile(r"\S+")


class _EncodingDefinition(NamedTuple):
    """What tiktoken's ``tiktoken_ext.openai_public`` says about one encoding."""

    pat_str: str
    special_tokens: dict[str, int]
    #: sha256 of the uncompressed ``.tiktoken`` file (tiktoken's ``expected_hash``).
    sha256: str


#: The encodings akasha counts with, as tiktoken defines them (a test compares the two).
ENCODINGS: dict[str, _EncodingDefinition] = {
    "cl100k_base": _EncodingDefinition(
        pat_str=r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501 - tiktoken's pattern, verbatim
        special_tokens={"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                        "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": _EncodingDefinition(
        pat_str="|".join([
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]),
        special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}

#: The folder holding ``<name>.tiktoken.gz`` for every encoding above (package data of the wheel).
DATA_DIR = Path(__file__).resolve().parent / "tokenize_data"


def encoding_name_for(model: object) -> str:
    """Pick the BPE encoding that counts ``model``'s tokens (``"openai:gpt-4o"`` -> ``o200k_base``)."""
    if not isinstance(model, str):
        return "cl100k_base"
    name = model.partition(":")[2] if ":" in model else model
    return "o200k_base" if _bare_name(name).startswith(_O200K_PREFIXES) else "cl100k_base"


def _bare_name(name: str) -> str:
    """A model name without a served address (``gpt-4o@http://host/v1``) or an organisation prefix."""
    name = name.strip().lower()
    for marker in ("@http://", "@https://"):
        name = name.split(marker, 1)[0]
    return name.rsplit("/", 1)[-1]


def encoding_file(name: str) -> Path | None:
    """akasha's own ``tokenize_data/<name>.tiktoken.gz``, or ``None`` when it is absent (a broken install)."""
    candidate = DATA_DIR / f"{name}.tiktoken.gz"
    return candidate if candidate.is_file() else None


def read_mergeable_ranks(path: Path, sha256: str | None = None) -> dict[bytes, int]:
    """The ``token bytes -> rank`` table of a gzipped ``.tiktoken`` file (base64 token, space, rank per line);
    with ``sha256``, the uncompressed file must have that digest (ValueError otherwise)."""
    import binascii

    data = gzip.decompress(path.read_bytes())
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError(f"{path} is not the {path.name.split('.')[0]} file tiktoken expects (sha256 differs)")
    parts = data.split()
    tokens = map(binascii.a2b_base64, parts[::2])
    if sha256 is not None:
        # The files tiktoken expects list their tokens in rank order, 0 to n - 1 (a test checks
        # it); with the digest verified, counting is the same as parsing every rank, and faster.
        return dict(zip(tokens, range(len(parts) // 2), strict=True))
    return dict(zip(tokens, map(int, parts[1::2]), strict=True))


#: The encoding name of counts estimated from characters (:func:`estimate_tokens`): no tokenizer is built.
ESTIMATE = "estimate"


@functools.lru_cache(maxsize=4)
def _encoding(name: str) -> Any:
    """The ``tiktoken.Encoding`` called ``name``, or ``None`` (logged) when it cannot be built offline
    (:data:`ESTIMATE` on purpose: tiktoken is not even imported)."""
    if name == ESTIMATE:
        return None
    import tiktoken

    definition = ENCODINGS[name]
    path = encoding_file(name)
    if path is None:
        logger.warning("%s not found (the akasha-rag install is incomplete: reinstall it); token counts are estimated",
                       DATA_DIR / f"{name}.tiktoken.gz")
        return None
    try:
        ranks = read_mergeable_ranks(path, definition.sha256)
    except (OSError, ValueError) as exc:
        logger.warning("cannot read %s (%s); token counts are estimated", path, exc)
        return None
    return tiktoken.Encoding(name, pat_str=definition.pat_str, mergeable_ranks=ranks,
                             special_tokens=dict(definition.special_tokens))


def estimate_tokens(text: str) -> int:
    """The fallback estimate: ceil(chars / 4), and never fewer tokens than words."""
    return max(math.ceil(len(text) / 4), len(_WORD_RE.findall(text)))


#: Factor on cl100k counts for a model whose tokenizer akasha cannot have (see the module docstring).
FALLBACK_MARGIN = 1.25
#: Added to the factor per share of non-ASCII characters (up to :data:`NON_ASCII_CAP`): small vocabularies
#: split CJK and accented text into more pieces than cl100k does.
NON_ASCII_MARGIN = 1.0
NON_ASCII_CAP = 0.5
#: Model name fragments tiktoken counts exactly (OpenAI's own models).
_OPENAI_FAMILIES = ("gpt-", "gpt4", "o1", "o3", "o4", "chatgpt", "text-davinci", "davinci", "babbage")


@dataclass(frozen=True)
class TokenCounter:
    """Counts and truncates text in tokens of one encoding (``exact`` False means estimated).

    ``margin`` and ``non_ascii_margin`` make the count a safe upper estimate for another model's tokenizer:
    ``ceil(count * (margin + non_ascii_margin * min(non-ASCII share, 0.5)))``; the defaults count exactly.
    """

    encoding_name: str = "cl100k_base"
    margin: float = 1.0
    non_ascii_margin: float = 0.0

    @property
    def exact(self) -> bool:
        """True when counts come from the real encoding with no margin, False when they are estimates."""
        return _encoding(self.encoding_name) is not None and self.margin == 1.0 and not self.non_ascii_margin

    @property
    def source(self) -> str:
        """What the counts come from, as the trace shows it (``"cl100k_base x1.25+"`` with a margin)."""
        name = self.encoding_name if _encoding(self.encoding_name) is not None else "estimate"
        if self.margin == 1.0 and not self.non_ascii_margin:
            return name
        return f"{name} x{self.margin:g}{'+' if self.non_ascii_margin else ''}"

    def factor(self, text: str) -> float:
        """The margin applied to ``text``'s raw count."""
        if not self.non_ascii_margin or not text:
            return self.margin
        share = sum(1 for ch in text if ord(ch) > 127) / len(text)
        return self.margin + self.non_ascii_margin * min(share, NON_ASCII_CAP)

    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (special-token look-alikes count as plain text), margin included."""
        if not text:
            return 0
        encoding = _encoding(self.encoding_name)
        raw = estimate_tokens(text) if encoding is None else len(encoding.encode_ordinary(text))
        factor = self.factor(text)
        return raw if factor == 1.0 else math.ceil(raw * factor - 1e-9)

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` that has at most ``max_tokens`` tokens (margin included)."""
        return truncate(self, text, max_tokens)


def fallback_counter(model: object = None) -> TokenCounter:
    """cl100k (o200k for OpenAI's newer names) with the safety margin, for a model whose tokenizer is unknown."""
    return TokenCounter(encoding_name_for(model), FALLBACK_MARGIN, NON_ASCII_MARGIN)


def is_openai_model_name(name: str) -> bool:
    """True for OpenAI's own model names (``gpt-4o-mini``, ``o3``...), which tiktoken counts exactly."""
    return _bare_name(name).startswith(_OPENAI_FAMILIES)


def counter_for(model: object) -> Any:
    """The token counter for an answer model (a model string, a chat model object or a callable; the choice:
    module docstring; ``None`` counts plain cl100k): every counter has ``count``, ``truncate``, ``exact``, ``source``.
    """
    if model is None:
        return TokenCounter()
    own = getattr(model, "token_counter", None)
    if own is not None and callable(own) and not isinstance(model, (str, type)):
        counter = own()
        if counter is not None:
            return counter
    if not isinstance(model, str):
        name = getattr(model, "name", None)
        model = name if isinstance(name, str) and ":" in name else model
    if not isinstance(model, str):
        return fallback_counter(None)
    prefix, _, rest = model.partition(":") if ":" in model else ("", "", model)
    prefix = prefix.strip().lower()
    if prefix == "extractive" or model.strip().lower() == "extractive":
        # It quotes text: no tokenizer and no context window, so building cl100k buys nothing.
        return TokenCounter(ESTIMATE)
    if prefix in ("", "openai") and is_openai_model_name(rest):
        return TokenCounter(encoding_name_for(model))
    if prefix == "llama-cpp":
        from akasha.errors import AkashaError
        from akasha.model_tokens import gguf_counter

        try:
            from akasha.llm.llamacpp import resolve_gguf

            path = resolve_gguf(rest)
        except AkashaError:
            path = None  # the model itself will report the missing file when it runs
        counter = None if path is None else gguf_counter(path)
        if counter is not None:
            return counter
    if prefix == "hf" and rest.strip():
        from akasha.model_tokens import hf_counter

        counter = hf_counter(rest.strip())
        if counter is not None:
            return counter
    return fallback_counter(model)


def count_tokens(text: str, model: object = None) -> int:
    """Count ``text``'s tokens as ``model`` would (see :func:`counter_for`; None: plain cl100k)."""
    return counter_for(model).count(text)


__all__ = ["DATA_DIR", "ENCODINGS", "FALLBACK_MARGIN", "NON_ASCII_MARGIN", "TokenCounter", "count_many", "count_tokens",
           "counter_for", "tokenizer_identity", "truncate", "encoding_file", "encoding_name_for", "estimate_tokens",
           "fallback_counter", "is_openai_model_name", "read_mergeable_ranks"]
