"""Okapi BM25 over sparse postings held in numpy, updated incrementally.

A query touches only the postings of its own terms, with vectorised numpy arithmetic; nothing
loops over the corpus or is rebuilt per query.

Layout
    * every document gets an integer *slot*; ``_alive[slot]`` masks deletions;
    * the *main* segment is a CSC-style postings list: for term ``t`` the slots
      ``_doc[_indptr[t]:_indptr[t+1]]`` with term frequencies ``_tf[...]``;
    * new documents go to a small *delta* segment (unsorted ``(term, slot, tf)`` arrays) merged
      into main past max(50,000 postings, main / 8); a merge also drops deleted documents and
      renumbers slots. Removals only mask and lower the document frequencies.

``stem=True`` (off by default) stems English words (:mod:`akasha.retrieval.stem`); the tokenizer id
then carries ``+en-stem<version>``, so statistics built with other rules never mix.

Okapi BM25 (``k1=1.5``, ``b=0.75``) with the non-negative :func:`idf`, over live documents only.
A compound word of the question (``list.sort``) scores only where one live document holds it
(:func:`~akasha.retrieval.tokenize.counts_in_query`); otherwise its words score it.
``to_parts``/``from_parts``: the snapshot state as numpy arrays and plain lists (no pickle).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from akasha.errors import IndexMismatchError
from akasha.retrieval.stem import STEM_VERSION, stem_english
from akasha.retrieval.tokenize import Terms, counts_in_query, resolve_tokenizer, tokenizer_from_id

FORMAT = "akasha-bm25"
FORMAT_VERSION = 1
#: Documents tokenised per step of :meth:`BM25Index.add` (bounds the memory of token lists).
ADD_BATCH = 4096


#: Query postings from which BM25Index.search tries MaxScore pruning, and the most candidates it scores.
PRUNE_MIN_POSTINGS = 200_000
PRUNE_MAX_CANDIDATES = 100_000


#: Okapi BM25's term-frequency saturation (k1) and length normalisation (b): akasha's defaults wherever
#: it scores BM25 (this index, and the lexical sides of the Chroma and Qdrant stores).
K1 = 1.5
B = 0.75


def idf(documents: Any, frequency: Any) -> Any:
    """BM25's non-negative (Lucene) idf ``log(1 + (N - df + 0.5) / (df + 0.5))``, N ``documents``, df ``frequency``."""
    return np.log1p((documents - frequency + 0.5) / (frequency + 0.5))


def saturation(tf: Any, length: Any, average_length: float, k1: float = K1, b: float = B) -> Any:
    """BM25's term-frequency factor ``tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))``; dl: ``length`` (or arrays)."""
    norm = k1 * (1.0 - b + b * length / average_length)
    return tf * (k1 + 1.0) / (tf + norm)


#: Marks a stemmed tokenizer in the persisted tokenizer id ("words-v3+en-stem1+jieba").
STEM_MARK = f"+en-stem{STEM_VERSION}"


def _stemming(tokenize: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """``tokenize`` followed by :func:`~akasha.retrieval.stem.stem_english` on every token."""
    def run(text: str) -> list[str]:
        tokens = tokenize(text)
        stemmed = [stem_english(token) for token in tokens]
        if isinstance(tokens, Terms):  # keep the count of words (the compounds come after them)
            stemmed = Terms(stemmed)
            stemmed.words = tokens.words
        return stemmed

    return run


class _Vocab(dict):
    """term -> id; looking up an unknown term gives it the next id (first-seen order, one dict pass per token)."""

    __slots__ = ()

    def __missing__(self, term: str) -> int:
        tid = self[term] = len(self)
        return tid


class BM25Index:
    """An incrementally updated Okapi BM25 index keyed by string ids."""

    # Set by _main_saturation on demand (read with getattr until then).
    _sat: np.ndarray | None
    _sat_key: tuple[float, int, int, int] | None
    _sat_pending: tuple[float, int, int, int] | None

    def __init__(self, *, k1: float = K1, b: float = B, tokenizer: str = "auto", stem: bool = False) -> None:
        if k1 < 0 or not 0 <= b <= 1:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        self.k1 = float(k1)
        self.b = float(b)
        self.tokenizer_id, self._tokenize = resolve_tokenizer(tokenizer)
        if stem:  # "words-v3+jieba" -> "words-v3+en-stem1+jieba"
            head, plus, tail = self.tokenizer_id.partition("+")
            self.tokenizer_id, self._tokenize = f"{head}{STEM_MARK}{plus}{tail}", _stemming(self._tokenize)
        self._init_empty()

    # ------------------------------------------------------------------ state
    def _init_empty(self) -> None:
        self._vocab: dict[str, int] = _Vocab()
        self._df = np.zeros(0, dtype=np.int64)  # live document frequency per term
        self._ids: list[str | None] = []  # slot -> id (None once removed)
        self._slot: dict[str, int] = {}
        self._alive = np.zeros(0, dtype=bool)
        self._dl = np.zeros(0, dtype=np.float32)  # document length in tokens
        self._n_live = 0
        self._total_len = 0.0
        self._indptr = np.zeros(1, dtype=np.int64)
        self._doc = np.zeros(0, dtype=np.int32)
        self._tf = np.zeros(0, dtype=np.float32)
        # delta segment: unsorted (term, slot, tf) triples, one array triple per add() call
        self._delta_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._delta_cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._delta_size = 0

    def __len__(self) -> int:
        return self._n_live

    def __contains__(self, item: object) -> bool:
        return item in self._slot

    @property
    def ids(self) -> list[str]:
        """Live ids in insertion order."""
        return [i for i in self._ids if i is not None]

    # ---------------------------------------------------------------- updates
    def tokenize(self, text: str) -> list[str]:
        """The tokens this index uses for ``text``."""
        return self._tokenize(text)

    def add(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        """Index ``texts`` under ``ids`` (replacing ids present), tokenised :data:`ADD_BATCH` at a time."""
        if len(ids) != len(texts):
            raise ValueError(f"add() needs one id per text: {len(ids)} ids, {len(texts)} texts")
        ids = _unique_ids(ids)
        for start in range(0, len(ids), ADD_BATCH):
            stop = start + ADD_BATCH
            self._add_batch(ids[start:stop], [self._tokenize(t) for t in texts[start:stop]])
        self._maybe_merge()

    def add_tokens(self, ids: Sequence[str], token_lists: Iterable[Sequence[str]]) -> None:
        """Index pre-tokenised documents (tokens must come from :meth:`tokenize`)."""
        ids = _unique_ids(ids)
        token_lists = list(token_lists)
        if len(ids) != len(token_lists):
            raise ValueError(f"add() needs one token list per id: {len(ids)} ids, {len(token_lists)} lists")
        self._add_batch(ids, token_lists)
        self._maybe_merge()

    def _maybe_merge(self) -> None:
        """Fold the delta segment into main once it is large next to main."""
        if self._delta_size > max(50_000, len(self._doc) // 8):
            self._merge()

    def _add_batch(self, ids: list[str], token_lists: list[Sequence[str]]) -> None:
        """Add documents given their token lists: their postings go to a new delta part."""
        if not ids:
            return
        flat_terms = [tok for tokens in token_lists for tok in tokens]
        entries = np.fromiter((len(t) for t in token_lists), dtype=np.int64, count=len(ids))
        # a compound word kept whole beside its parts (retry_max_delay) adds no length: a document's length is its words
        lengths = np.fromiter((getattr(t, "words", len(t)) for t in token_lists), dtype=np.int64, count=len(ids))
        replaced = [i for i in ids if i in self._slot]
        if replaced:
            self.remove(replaced)
        # new terms get ids in first-seen order (deterministic) via _Vocab.__missing__
        tids = np.fromiter(map(self._vocab.__getitem__, flat_terms), dtype=np.int64, count=len(flat_terms))
        start = len(self._ids)
        n_docs = len(ids)
        n_terms = len(self._vocab)
        # (term, slot)-major keys: the delta part comes out sorted by term, so _merge's stable sort sees sorted runs
        keys = tids * n_docs + np.repeat(np.arange(n_docs, dtype=np.int64), entries)
        pairs, tf = np.unique(keys, return_counts=True)
        p_terms, p_slots = np.divmod(pairs, n_docs)
        p_slots += start
        if n_terms > len(self._df):
            self._df = np.concatenate([self._df, np.zeros(n_terms - len(self._df), dtype=np.int64)])
        self._df += np.bincount(p_terms, minlength=n_terms)
        self._delta_parts.append((p_terms.astype(np.int32), p_slots.astype(np.int32), tf.astype(np.float32)))
        self._delta_cache = None
        self._delta_size += len(pairs)
        self._ids.extend(ids)
        self._slot.update(zip(ids, range(start, start + len(ids)), strict=True))
        self._alive = np.concatenate([self._alive, np.ones(len(ids), dtype=bool)])
        self._dl = np.concatenate([self._dl, np.asarray(lengths, dtype=np.float32)])
        self._n_live += len(ids)
        self._total_len += float(np.sum(lengths))

    def _delta(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._delta_cache is None:
            if len(self._delta_parts) == 1:
                self._delta_cache = self._delta_parts[0]
            elif self._delta_parts:
                terms, docs, tfs = zip(*self._delta_parts, strict=True)
                self._delta_cache = (np.concatenate(terms), np.concatenate(docs), np.concatenate(tfs))
            else:
                self._delta_cache = (np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32))
            self._delta_parts = [self._delta_cache] if self._delta_parts else []
        return self._delta_cache

    def remove(self, ids: Iterable[str]) -> None:
        """Forget ``ids``; unknown ids are ignored."""
        slots = []
        for doc_id in ids:
            slot = self._slot.pop(doc_id, None)
            if slot is not None:
                slots.append(slot)
                self._ids[slot] = None
        if not slots:
            return
        gone = np.zeros(len(self._alive), dtype=bool)
        gone[slots] = True
        self._alive[slots] = False
        self._n_live -= len(slots)
        self._total_len -= float(self._dl[slots].sum())
        # Document frequencies drop for every term of the removed documents (one vectorised pass).
        positions = np.flatnonzero(gone[self._doc])
        main_terms = np.searchsorted(self._indptr, positions, side="right") - 1
        d_terms, d_docs, _ = self._delta()
        n_terms = len(self._df)
        self._df -= np.bincount(main_terms, minlength=n_terms)
        self._df -= np.bincount(d_terms[gone[d_docs]], minlength=n_terms)
        dead = len(self._ids) - self._n_live
        if dead > 1000 and dead > self._n_live:
            self._merge()

    def _merge(self) -> None:
        """Fold the delta into main, drop dead postings and renumber slots."""
        n_terms = len(self._vocab)
        main_terms = np.repeat(np.arange(len(self._indptr) - 1, dtype=np.int32), np.diff(self._indptr))
        d_terms, d_docs, d_tfs = self._delta()
        terms = np.concatenate([main_terms, d_terms])
        docs = np.concatenate([self._doc, d_docs])  # int32 slots: half the memory of int64 during the merge
        tfs = np.concatenate([self._tf, d_tfs])
        live_slots = np.flatnonzero(self._alive)
        if len(live_slots) != len(self._alive):
            keep = self._alive[docs]
            terms, docs, tfs = terms[keep], docs[keep], tfs[keep]
            # Renumber slots so deleted documents take no room.
            remap = np.full(len(self._alive), -1, dtype=np.int32)
            remap[live_slots] = np.arange(len(live_slots))
            docs = remap[docs]
        # Main and each delta part are sorted by (term, slot), each part's slots newer than those before:
        # a stable sort on the term alone gives (term, slot) order, timsort merging those sorted runs.
        order = np.argsort(terms, kind="stable")
        terms, docs, tfs = terms[order], docs[order], tfs[order]
        self._indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=n_terms), out=self._indptr[1:])
        self._doc = docs.astype(np.int32, copy=False)
        self._tf = tfs.astype(np.float32, copy=False)
        if len(live_slots) != len(self._ids):
            self._ids = [self._ids[s] for s in live_slots]
            self._slot = {doc_id: i for i, doc_id in enumerate(self._ids) if doc_id is not None}
            self._alive = np.ones(len(live_slots), dtype=bool)
            self._dl = self._dl[live_slots]
        self._delta_parts = []
        self._delta_cache = None
        self._delta_size = 0
        self._sat_key = None

    # ----------------------------------------------------------------- search
    def _query_terms(self, query: str | Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        counts = Counter(self._tokenize(query) if isinstance(query, str) else query)
        vocab, df = self._vocab, self._df  # .get: an unknown term is not added (_Vocab.__missing__ would)
        pairs = [(tid, c) for t, c in counts.items()
                 if (tid := vocab.get(t)) is not None and counts_in_query(t, df[tid])]
        if not pairs:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        pairs.sort()
        tids, qtf = zip(*pairs, strict=True)
        return np.asarray(tids, dtype=np.int64), np.asarray(qtf, dtype=np.float32)

    def score_slots(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """``(slots, scores)`` of every live document matching ``query`` (unsorted)."""
        return self._score_terms(*self._query_terms(query))

    def score_tokens(self, tokens: Iterable[str]) -> dict[str, float]:
        """Id -> BM25 score of every live document matching the tokenised query ``tokens`` (repeats weigh each time)."""
        slots, scores = self._score_terms(*self._query_terms(list(tokens)))
        return dict(zip(self.slot_ids(slots.tolist()), scores.tolist(), strict=True))

    def sole_holder(self, query: str | Sequence[str], doc_id: str) -> bool:
        """True when ``doc_id`` is the only live document holding one of ``query``'s terms (an exact match)."""
        if doc_id not in self._slot:
            return False
        tokens = self._tokenize(query) if isinstance(query, str) else list(query)
        rare = [t for t in dict.fromkeys(tokens) if t in self._vocab and self._df[self._vocab[t]] == 1]
        return any(doc_id in self.score_tokens([term]) for term in rare)

    def _score_terms(self, tids: np.ndarray, qtf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not len(tids) or not self._n_live:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        n = self._n_live
        df = self._df[tids].astype(np.float64)
        weights = (idf(n, df) * qtf).astype(np.float32)
        doc_parts, c_parts = [], []
        n_main = len(self._indptr) - 1
        saturation = self._main_saturation() if n_main else None
        for tid, weight in zip(tids.tolist(), weights.tolist(), strict=True):
            if tid < n_main:
                lo, hi = self._indptr[tid], self._indptr[tid + 1]
                if hi > lo:
                    doc_parts.append(self._doc[lo:hi])
                    sat = saturation[lo:hi] if saturation is not None else self._saturate(self._tf[lo:hi],
                                                                                          self._doc[lo:hi])
                    c_parts.append(sat * np.float32(weight))
        if self._delta_size:
            d_terms, d_docs, d_tfs = self._delta()
            hit = np.flatnonzero(np.isin(d_terms, tids))
            if len(hit):
                doc_parts.append(d_docs[hit])
                term_weights = weights[np.searchsorted(tids, d_terms[hit])]
                c_parts.append(term_weights * self._saturate(d_tfs[hit], d_docs[hit]))
        if not doc_parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        docs = np.concatenate(doc_parts)
        contrib = np.concatenate(c_parts)
        if n != len(self._alive):
            contrib *= self._alive[docs]
        slots: np.ndarray
        if len(docs) * 8 < len(self._alive):
            slots, inverse = np.unique(docs, return_inverse=True)
            scores = np.bincount(inverse, weights=contrib, minlength=len(slots))
        else:
            full = np.bincount(docs, weights=contrib, minlength=len(self._alive))
            slots = np.flatnonzero(full > 0)
            scores = full[slots]
        live = scores > 0
        return slots[live].astype(np.int64), scores[live].astype(np.float32)

    def _saturate(self, tf: np.ndarray, docs: np.ndarray) -> np.ndarray:
        """BM25's length-normalised term-frequency factor ``tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))``."""
        avgdl = self._total_len / self._n_live if self._total_len > 0 else 1.0
        return saturation(tf, self._dl[docs], avgdl, self.k1, self.b).astype(np.float32)

    def _main_saturation(self) -> np.ndarray | None:
        """:meth:`_saturate` for every main posting, cached while the corpus statistics stay, or None.

        Built on the second query at unchanged statistics (None on the first): alternating updates and
        queries never build a table in vain."""
        key = (self._total_len, self._n_live, id(self._doc), len(self._doc))
        if getattr(self, "_sat_key", None) == key:
            return self._sat
        if getattr(self, "_sat_pending", None) != key:
            self._sat_pending = key
            return None
        self._sat = self._saturate(self._tf, self._doc)
        self._sat_key = key
        return self._sat

    def search(self, query: str | Sequence[str], k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` best ``(id, score)`` pairs for ``query`` (a text or its tokens), best first, ties by insertion."""
        if k <= 0:
            return []
        tids, qtf = self._query_terms(query)  # tokenised once for both paths
        pruned = self._search_pruned(tids, qtf, k)
        slots, scores = pruned if pruned is not None else self._score_terms(tids, qtf)
        if not len(slots):
            return []
        top = _top_k(scores, k, tiebreak=slots)
        return [(self._ids[s], float(scores[i])) for i, s in zip(top, slots[top].tolist(), strict=True)]

    def _search_pruned(self, tids: np.ndarray, qtf: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Exact top-``k`` candidates without touching the long postings of common terms, or None.

        MaxScore: documents of the rarest terms and of the delta are scored completely (common terms by
        binary search); if the k-th best beats the most (``idf (k1 + 1)`` each) the common terms alone could
        add, the top-k is exact. None (full scan) for short postings or no split.
        """
        n_main = len(self._indptr) - 1
        n = self._n_live
        if len(tids) < 2 or not n:
            return None
        df = self._df[tids].astype(np.float64)
        weights = (idf(n, df) * qtf).astype(np.float32)
        terms = []  # (main postings, tid, weight, lo, hi), rarest first
        for tid, weight in zip(tids.tolist(), weights.tolist(), strict=True):
            lo, hi = (int(self._indptr[tid]), int(self._indptr[tid + 1])) if tid < n_main else (0, 0)
            terms.append((hi - lo, tid, weight, lo, hi))
        terms.sort()
        total = sum(t[0] for t in terms)
        if total < PRUNE_MIN_POSTINGS:
            return None
        saturation = self._main_saturation()
        d_slots: np.ndarray = np.zeros(0, dtype=np.int64)
        d_scores: np.ndarray = np.zeros(0, dtype=np.float64)
        if self._delta_size:
            d_terms, d_docs, d_tfs = self._delta()
            hit = np.flatnonzero(np.isin(d_terms, tids))
            if len(hit):
                contrib = weights[np.searchsorted(tids, d_terms[hit])] * self._saturate(d_tfs[hit], d_docs[hit])
                d_slots, inverse = np.unique(d_docs[hit].astype(np.int64), return_inverse=True)
                d_scores = np.bincount(inverse, weights=contrib, minlength=len(d_slots)) * self._alive[d_slots]
        for split in range(1, len(terms)):
            essential, rest = terms[:split], terms[split:]
            if sum(t[0] for t in essential) > PRUNE_MAX_CANDIDATES:
                break
            bound = sum(t[2] for t in rest) * (self.k1 + 1.0)
            if bound >= 0.5 * sum(t[2] for t in essential) * (self.k1 + 1.0):
                continue  # the rare terms' scores could not beat what the common ones may add: don't try
            parts = [self._doc[t[3] : t[4]] for t in essential]
            cand = np.unique(np.concatenate(parts)).astype(np.int64) if parts else np.zeros(0, np.int64)
            scores = np.zeros(len(cand), dtype=np.float64)
            for length, _, weight, lo, hi in terms:
                if not length or not len(cand):
                    continue
                docs = self._doc[lo:hi]
                pos = np.minimum(np.searchsorted(docs, cand), length - 1)
                found = docs[pos] == cand
                at = pos[found] + lo
                sat = saturation[at] if saturation is not None else self._saturate(self._tf[at], self._doc[at])
                scores[found] += sat * np.float32(weight)
            if n != len(self._alive):
                scores *= self._alive[cand]
            slots = np.concatenate([cand, d_slots])
            all_scores = np.concatenate([scores, d_scores])
            live = all_scores > 0
            slots, all_scores = slots[live], all_scores[live].astype(np.float32)
            if len(slots) >= k:
                kth = all_scores[_top_k(all_scores, k, tiebreak=slots)[-1]]
                if kth > bound:
                    return slots, all_scores
        return None

    def slot_ids(self, slots: Iterable[int]) -> list[str]:
        """Ids for slots returned by :meth:`score_slots`."""
        return [self._ids[s] for s in slots]  # type: ignore[misc]  # live slots only: their ids are never None

    # ---------------------------------------------------------- persistence
    def to_parts(self) -> dict[str, Any]:
        """Snapshot state: numeric arrays and JSON-ready lists; delta and deletions kept unmerged (edits stay cheap)."""
        d_terms, d_docs, d_tfs = self._delta()
        return {
            "bm25_meta": [FORMAT, FORMAT_VERSION, self.tokenizer_id, self.k1, self.b],
            "bm25_ids": list(self._ids),  # None marks a removed slot
            "bm25_vocab": list(self._vocab),
            "bm25_indptr": self._indptr,
            "bm25_doc": self._doc,
            "bm25_tf": self._tf,
            "bm25_dl": self._dl,
            "bm25_df": self._df,
            "bm25_alive": self._alive.astype(np.uint8),
            "bm25_delta_terms": d_terms.astype(np.int32, copy=False),
            "bm25_delta_docs": d_docs.astype(np.int32, copy=False),
            "bm25_delta_tf": d_tfs.astype(np.float32, copy=False),
        }

    @classmethod
    def from_parts(cls, parts: dict[str, Any]) -> BM25Index:
        """Rebuild an index from :meth:`to_parts` output (arrays are used as they are, not copied)."""
        fmt, version, tokenizer_id, k1, b = parts["bm25_meta"]
        if fmt != FORMAT or int(version) != FORMAT_VERSION:
            raise ValueError(f"not an {FORMAT} v{FORMAT_VERSION} snapshot: {[fmt, version]}")
        stemmed = STEM_MARK + "+" in tokenizer_id
        fn = tokenizer_from_id(tokenizer_id.replace(STEM_MARK, "", 1) if stemmed else tokenizer_id)
        if fn is None:
            raise IndexMismatchError(
                f"this BM25 index was built with tokenizer {tokenizer_id!r}, which this installation "
                "cannot reproduce (install rjieba for jieba's words, or rebuild the index)"
            )
        index = cls.__new__(cls)
        index.k1, index.b = float(k1), float(b)
        index.tokenizer_id, index._tokenize = tokenizer_id, _stemming(fn) if stemmed else fn
        index._init_empty()
        ids = list(parts["bm25_ids"])
        vocab = parts["bm25_vocab"]
        index._vocab = _Vocab(zip(vocab, range(len(vocab)), strict=True))
        index._indptr = np.asarray(parts["bm25_indptr"], dtype=np.int64)
        index._doc = np.asarray(parts["bm25_doc"], dtype=np.int32)
        index._tf = np.asarray(parts["bm25_tf"], dtype=np.float32)
        index._dl = np.asarray(parts["bm25_dl"], dtype=np.float32)
        index._ids = ids
        index._slot = {doc_id: i for i, doc_id in enumerate(ids) if doc_id is not None}
        if "bm25_alive" in parts:  # saved unmerged: deletion mask, live df and the delta segment
            index._alive = np.asarray(parts["bm25_alive"]).astype(bool)
            index._df = np.asarray(parts["bm25_df"], dtype=np.int64)
            delta = (np.asarray(parts["bm25_delta_terms"], dtype=np.int32),
                     np.asarray(parts["bm25_delta_docs"], dtype=np.int32),
                     np.asarray(parts["bm25_delta_tf"], dtype=np.float32))
            if len(delta[0]):
                index._delta_parts = [delta]
                index._delta_size = len(delta[0])
        else:  # saved merged
            index._alive = np.ones(len(ids), dtype=bool)
            index._df = np.diff(index._indptr)
        if len(index._alive) != len(ids) or len(index._dl) != len(ids) or len(index._df) != len(vocab):
            raise ValueError("BM25 snapshot parts disagree in length")
        index._n_live = len(index._slot)
        index._total_len = float(index._dl[index._alive].sum())
        return index


def _unique_ids(ids: Sequence[str]) -> list[str]:
    ids = list(ids)
    if len(set(ids)) != len(ids):
        raise ValueError("add() got the same id twice in one call")
    return ids


def _top_k(scores: np.ndarray, k: int, tiebreak: np.ndarray | None = None) -> np.ndarray:
    """Indices of the ``k`` largest scores, best first, via argpartition (no full sort)."""
    n = len(scores)
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        if tiebreak is not None:  # argpartition picks arbitrarily among ties at the k-th score: pick by tiebreak
            kth = scores[part].min()
            better = part[scores[part] > kth]
            ties = np.flatnonzero(scores == kth)
            part = np.concatenate([better, ties[np.argsort(tiebreak[ties], kind="stable")][: k - len(better)]])
    else:
        part = np.arange(n)
    if tiebreak is None:
        return part[np.argsort(-scores[part], kind="stable")]
    return part[np.lexsort((tiebreak[part], -scores[part]))]


top_k = _top_k

__all__ = ["B", "K1", "BM25Index", "idf", "saturation", "top_k"]
