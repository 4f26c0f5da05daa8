"""Token counters that use the answer model's own tokenizer, read without the network.

* a GGUF file (``llama-cpp:``): its vocabulary is read from the header (no llama.cpp load) and
  rebuilt as a ``tokenizers`` byte-level BPE for the families whose pre-tokenizer is known; an
  embedded ``tokenizer.huggingface.json`` is used as is;
* a Hugging Face model (``hf:``) whose ``tokenizer.json`` is in a local folder or the HF cache;
* an OpenAI-compatible server with ``POST /tokenize`` (llama.cpp's ``llama-server``, vLLM).

Builders return ``None`` when the tokenizer cannot be had (:func:`akasha.tokens.counter_for` then
falls back to tiktoken with a margin). :func:`truncate` and the count cache :func:`count_many` serve
every counter.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import mmap
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

# ---------------------------------------------------------------- GGUF metadata
_GGUF_MAGIC = b"GGUF"
#: GGUF value type -> struct format for the scalar types.
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


class _Reader:
    """Sequential little-endian reads from a memory-mapped GGUF file."""

    def __init__(self, data: Any) -> None:
        self.data = data
        self.pos = 0

    def scalar(self, fmt: str) -> Any:
        value = struct.unpack_from("<" + fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize("<" + fmt)
        return value

    def value(self, kind: int, keep: bool = True) -> Any:
        """The next value of GGUF type ``kind``; with ``keep`` False it is skipped (None) without decoding."""
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind])
        if kind == _STRING:
            n = self.scalar("Q")
            self.pos += n
            return bytes(self.data[self.pos - n:self.pos]).decode("utf-8", "replace") if keep else None
        if kind == _ARRAY:
            item, n = self.scalar("I"), self.scalar("Q")
            if item in _SCALARS:
                fmt = f"<{n}{_SCALARS[item]}"
                values = list(struct.unpack_from(fmt, self.data, self.pos)) if keep else None
                self.pos += struct.calcsize(fmt)
                return values
            items = [self.value(item, keep) for _ in range(n)]
            return items if keep else None
        raise ValueError(f"unknown GGUF value type {kind}")


def read_gguf_metadata(path: str | Path, keys: Callable[[str], bool] = lambda key: True) -> dict[str, Any]:
    """The key/value metadata of a GGUF file (only the keys ``keys`` accepts are decoded), from the header
    alone; ValueError names a file that is not GGUF."""
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:4] != _GGUF_MAGIC:
            raise ValueError(f"{path} is not a GGUF file (no GGUF magic bytes)")
        reader = _Reader(data)
        reader.pos = 4
        version = reader.scalar("I")
        if version < 2:
            raise ValueError(f"{path} is GGUF version {version}; only versions 2 and later are read")
        reader.scalar("Q")  # tensor count
        n_keys = reader.scalar("Q")
        out: dict[str, Any] = {}
        for _ in range(n_keys):
            key = reader.value(_STRING)
            kind = reader.scalar("I")
            keep = keys(key)
            value = reader.value(kind, keep)
            if keep:
                out[key] = value
        return out


#: GGUF ``tokenizer.ggml.pre`` -> the split regexes llama.cpp applies before byte-level BPE
#: (llama.cpp src/llama-vocab.cpp); each is applied in turn, isolating its matches.
_LLAMA3_REGEX = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_GPT2_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
_QWEN2_REGEX = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
PRE_TOKENIZER_REGEXES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("default", "gpt2", "gpt-2"), (_GPT2_REGEX,)),
    **dict.fromkeys(("smollm", "starcoder", "refact"), (r"\p{N}", _GPT2_REGEX)),
    **dict.fromkeys(("llama3", "llama-bpe", "dbrx", "smaug-bpe"), (_LLAMA3_REGEX,)),
    **dict.fromkeys(("qwen2", "deepseek-r1-qwen"), (_QWEN2_REGEX,)),
}


def _bpe_tokenizer(tokens: list[str], merges: list[str], regexes: tuple[str, ...]) -> Any:
    """A byte-level BPE ``tokenizers.Tokenizer`` from a GGUF vocabulary and merge list."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    vocab = {token: i for i, token in enumerate(tokens)}
    pairs = [(left, right) for left, _, right in (m.partition(" ") for m in merges if " " in m)]
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=pairs, fuse_unk=False, byte_fallback=False))
    steps: list[pre_tokenizers.PreTokenizer] = [
        pre_tokenizers.Split(Regex(regex), behavior="isolated") for regex in regexes]
    steps.append(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(steps)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


@functools.lru_cache(maxsize=8)
def gguf_tokenizer(path: str) -> Any:
    """The ``tokenizers.Tokenizer`` of the GGUF at ``path``, or None (logged) when it cannot be built: byte-level
    BPE vocabularies (``tokenizer.ggml.model == "gpt2"``) with a known pre-tokenizer are rebuilt, SentencePiece
    ones (``"llama"``) are not."""
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        logger.info("the tokenizers package is not installed; %s is counted with tiktoken and a margin", path)
        return None
    try:
        meta = read_gguf_metadata(path, lambda key: key.startswith("tokenizer.") and key != "tokenizer.chat_template")
    except (OSError, ValueError, struct.error) as exc:
        logger.info("cannot read the vocabulary of %s (%s); counting with tiktoken and a margin", path, exc)
        return None
    embedded = meta.get("tokenizer.huggingface.json")
    if isinstance(embedded, str) and embedded:
        from tokenizers import Tokenizer

        return Tokenizer.from_str(embedded)
    kind, pre = meta.get("tokenizer.ggml.model"), str(meta.get("tokenizer.ggml.pre") or "default")
    tokens, merges = meta.get("tokenizer.ggml.tokens"), meta.get("tokenizer.ggml.merges")
    if kind != "gpt2" or pre not in PRE_TOKENIZER_REGEXES or not tokens or not merges:
        logger.info("%s has a %s/%s vocabulary that akasha does not rebuild; counting with tiktoken and a margin",
                    path, kind, pre)
        return None
    return _bpe_tokenizer(tokens, merges, PRE_TOKENIZER_REGEXES[pre])


def hf_tokenizer_file(name_or_path: str) -> Path | None:
    """``tokenizer.json`` of a local model folder, or of a Hub model already in the local cache (no download)."""
    folder = Path(name_or_path).expanduser()
    if folder.is_dir():
        candidate = folder / "tokenizer.json"
        return candidate if candidate.is_file() else None
    if name_or_path.count("/") != 1:
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(name_or_path, "tokenizer.json")
    except Exception as exc:  # an invalid repo id and the like: no tokenizer, not an error
        logger.debug("no cached tokenizer.json for %s: %s", name_or_path, exc)
        return None
    return Path(found) if isinstance(found, str) and Path(found).is_file() else None


@functools.lru_cache(maxsize=8)
def _tokenizer_from_file(path: str) -> Any:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(path)


# ------------------------------------------------------------------- counters
def truncate(counter: Any, text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` (to the character, found by bisection) that ``counter`` counts as at
    most ``max_tokens`` tokens: one way for every counter, tiktoken, a model's tokenizer or a server's."""
    if max_tokens <= 0:
        return ""
    if counter.count(text) <= max_tokens:
        return text
    low, high = 0, len(text)  # count(text[:low]) <= max_tokens < count(text[:high])
    while high - low > 1:
        middle = (low + high) // 2
        if counter.count(text[:middle]) <= max_tokens:
            low = middle
        else:
            high = middle
    return text[:low]


#: Content-keyed token counts shared by every counter of one tokenizer (see :func:`count_many`).
COUNT_CACHE_SIZE = 65_536
_counts: OrderedDict[tuple[str, bytes], int] = OrderedDict()
_counts_lock = threading.Lock()


def tokenizer_identity(counter: Any) -> str | None:
    """What makes two counters count alike: the counter's type, ``source`` and ``model`` (None without a
    ``source``). A server's counter that fell back reports the fallback's source, so its counts stay apart."""
    source = getattr(counter, "source", None)
    if not isinstance(source, str):
        return None
    return f"{type(counter).__name__}|{source}|{getattr(counter, 'model', '')}"


def count_many(counter: Any, texts: Sequence[str]) -> list[int]:
    """``counter.count`` of each text, each distinct text counted once per tokenizer identity in this process
    (the packer counts the same chunks question after question, with a server a request each).

    Counts are kept by (tokenizer identity, SHA-256 of the text); the texts not yet counted go to
    ``counter.count_batch`` in one call when the counter has it, else to ``count`` one by one."""
    identity = tokenizer_identity(counter)
    if identity is None:
        return [int(counter.count(text)) for text in texts]
    keys = [(identity, hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()) for text in texts]
    with _counts_lock:
        known = {key: _counts[key] for key in keys if key in _counts}
    missing = list({key: text for key, text in zip(keys, texts, strict=True) if key not in known}.items())
    if missing:
        batch = getattr(counter, "count_batch", None)
        fresh = batch([text for _, text in missing]) if batch else [counter.count(text) for _, text in missing]
        found = {key: int(n) for (key, _), n in zip(missing, fresh, strict=True)}
        if tokenizer_identity(counter) == identity:  # a server that failed meanwhile counted with its fallback
            with _counts_lock:
                _counts.update(found)
                while len(_counts) > COUNT_CACHE_SIZE:
                    _counts.popitem(last=False)
        known.update(found)
    return [known[key] for key in keys]


class TokenizerCounter:
    """Counts with a ``tokenizers.Tokenizer`` (special-token look-alikes count as plain text)."""

    exact = True

    def __init__(self, tokenizer: Any, source: str) -> None:
        self.tokenizer = tokenizer
        self.source = source

    def __repr__(self) -> str:
        return f"TokenizerCounter({self.source!r})"

    def count(self, text: str) -> int:
        """Number of tokens the model's tokenizer makes of ``text``."""
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids) if text else 0

    def count_batch(self, texts: list[str]) -> list[int]:
        """Counts of several texts in one ``encode_batch`` call (the tokenizer's threads share the work)."""
        return [len(e.ids) for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)]

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` with at most ``max_tokens`` tokens."""
        return truncate(self, text, max_tokens)


def gguf_counter(path: str | Path) -> TokenizerCounter | None:
    """A counter from the GGUF's own vocabulary, or None when it cannot be rebuilt."""
    tokenizer = gguf_tokenizer(str(path))
    return None if tokenizer is None else TokenizerCounter(tokenizer, f"gguf:{Path(path).name}")


def hf_counter(name_or_path: str) -> TokenizerCounter | None:
    """A counter from the model's local ``tokenizer.json``, or None when there is none offline."""
    path = hf_tokenizer_file(name_or_path)
    if path is None:
        return None
    try:
        tokenizer = _tokenizer_from_file(str(path))
    except Exception as exc:  # no tokenizers package, or a tokenizer.json this version cannot read
        logger.info("cannot load %s (%s); counting with tiktoken and a margin", path, exc)
        return None
    return TokenizerCounter(tokenizer, f"hf:{name_or_path}")


class ServerTokenCounter:
    """Counts by asking an OpenAI-compatible server's ``POST /tokenize`` (llama.cpp, vLLM); ``fallback`` counts
    once the endpoint failed (logged once). Each text is asked once (:func:`count_many` keeps the counts)."""

    def __init__(self, url: str, model: str, fallback: Any, *, timeout: float = 10.0,
                 headers: dict[str, str] | None = None, secrets: tuple[str, ...] = ()) -> None:
        self.url = url
        self.model = model
        self.fallback = fallback
        self.timeout = timeout
        self.headers = dict(headers or {})
        # keys never reach a log line: the ones given, and any sent in a header (a server may echo them)
        self._secrets = tuple(secrets) + tuple(
            v.split(" ", 1)[-1] for v in self.headers.values() if isinstance(v, str))
        self._lock = threading.Lock()
        self._failed = False
        self._client: Any = None  # one httpx.Client (keep-alive) for all counts

    def __repr__(self) -> str:
        return f"ServerTokenCounter({self.url!r})"

    @property
    def exact(self) -> bool:
        """True while the server answers (its tokenizer is the model's)."""
        return not self._failed

    @property
    def source(self) -> str:
        return f"server:{self.url}" if not self._failed else str(getattr(self.fallback, "source", "tiktoken"))

    def _ask(self, text: str) -> int | None:
        import httpx

        # llama.cpp reads content/add_special/parse_special, vLLM prompt/add_special_tokens; special-token
        # look-alikes count as plain text, as akasha's other counters count them
        payload = {"content": text, "prompt": text, "model": self.model, "add_special": False,
                   "parse_special": False, "add_special_tokens": False}
        try:
            with self._lock:
                if self._client is None:
                    from akasha.providers.bounded import transports

                    # the bounded transport: a reply's size and the request deadline are capped as everywhere
                    self._client = httpx.Client(timeout=self.timeout, headers=self.headers,
                                                transport=transports(httpx)[0]())
                client = self._client
            response = client.post(self.url, json=payload)
            if response.status_code in (404, 405, 501):
                logger.info("%s answered HTTP %d: the server has no tokenize endpoint; counting with %s",
                            self.url, response.status_code, getattr(self.fallback, "source", "tiktoken"))
                self._failed = True
                return None
            if response.status_code != 200:
                raise ValueError(f"HTTP {response.status_code}: {response.text[:200]}")
            data = response.json()
            if isinstance(data.get("tokens"), list):
                return len(data["tokens"])
            if isinstance(data.get("count"), int):
                return int(data["count"])
            raise ValueError(f"no 'tokens' or 'count' in the reply: {str(data)[:200]}")
        except (httpx.HTTPError, ValueError) as exc:
            if not self._failed:
                from akasha.providers.secrets import redact

                logger.warning("token counting through %s failed (%s); counting with %s from now on",
                               self.url, redact(exc, self._secrets), getattr(self.fallback, "source", "tiktoken"))
            self._failed = True
            return None

    def count(self, text: str) -> int:
        """Tokens the server's tokenizer makes of ``text`` (the fallback's count once the endpoint failed)."""
        return count_many(self, [text])[0] if text else 0

    def count_batch(self, texts: list[str]) -> list[int]:
        """The counts of ``texts`` not yet known to :func:`count_many`, one request each."""
        counts = [None if self._failed else self._ask(text) for text in texts]
        return [int(self.fallback.count(text)) if n is None else n for text, n in zip(texts, counts, strict=True)]

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix with at most ``max_tokens`` tokens."""
        return truncate(self, text, max_tokens)


__all__ = ["PRE_TOKENIZER_REGEXES", "ServerTokenCounter", "TokenizerCounter", "count_many", "gguf_counter",
           "gguf_tokenizer", "hf_counter", "hf_tokenizer_file", "read_gguf_metadata", "tokenizer_identity",
           "truncate"]
