"""Recursive chunking: sizes respected, nothing lost, overlap bounded, CJK-aware, stable ids."""

from __future__ import annotations

import hashlib
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from akasha.chunking import (
    DEFAULT_SEPARATORS,
    chunk_documents,
    default_overlap,
    split_text,
    validate_chunking,
)
from akasha.types import Document

# -- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "overlap", "words"),
    [(0, 0, ["chunk_size", "0"]), (-5, 0, ["-5"]), (100, -1, ["chunk_overlap", "-1"]),
     (100, 100, ["(100)", "100"]), (50, 80, ["80", "50"]), (1.5, 0, ["1.5"])],
)
def test_validate_chunking_rejects_bad_numbers_naming_them(size, overlap, words):
    with pytest.raises(ValueError) as info:
        validate_chunking(size, overlap)
    for word in words:
        assert word in str(info.value)


def test_validate_chunking_accepts_good_numbers():
    validate_chunking(1, 0)
    validate_chunking(1000, 999)


@pytest.mark.parametrize("size", [0, 100, 1000])
def test_split_text_and_chunk_documents_validate(size):
    with pytest.raises(ValueError):
        split_text("abc", size, size)
    with pytest.raises(ValueError):
        chunk_documents([Document("abc")], size, size)


@pytest.mark.parametrize(("size", "expected"), [(1, 0), (9, 0), (10, 1), (500, 50), (1000, 100), (5000, 200)])
def test_default_overlap_is_a_tenth_capped_at_200(size, expected):
    assert default_overlap(size) == expected
    validate_chunking(size, default_overlap(size))


# -- behaviour ------------------------------------------------------------------------------


def test_short_text_is_one_chunk_and_empty_text_none():
    assert split_text("Grease every 500 hours.") == ["Grease every 500 hours."]
    assert split_text("") == []
    assert split_text(" \n\t ") == []


def test_paragraphs_are_preferred_boundaries():
    text = "First paragraph about pumps.\n\nSecond paragraph about valves.\n\nThird about seals."
    assert split_text(text, 40, 0) == [
        "First paragraph about pumps.",
        "Second paragraph about valves.",
        "Third about seals.",
    ]


def test_chinese_splits_after_sentence_marks():
    text = "水泵每运行五百小时需要加注润滑脂。机械密封每两千小时检查一次！振动超过七毫米每秒时怎么办？立即停机。"
    chunks = split_text(text, 20, 0)
    assert chunks == [
        "水泵每运行五百小时需要加注润滑脂。",
        "机械密封每两千小时检查一次！",
        "振动超过七毫米每秒时怎么办？立即停机。",
    ]


def test_japanese_and_fullwidth_space_and_comma_separators():
    text = "ポンプの点検、バルブの交換、シールの確認\u3000ベアリングの給脂は五百時間ごと。"
    chunks = split_text(text, 12, 0)
    assert all(len(c) <= 12 for c in chunks)
    assert chunks[0] == "ポンプの点検、"
    assert "".join(chunks) == text.replace("\u3000", "")


def test_default_separators_cover_cjk_marks():
    for mark in ["。", "！", "？", "；", "，", "、", "\u3000"]:
        assert mark in DEFAULT_SEPARATORS
    assert DEFAULT_SEPARATORS[:2] == ("\n\n", "\n")


def test_run_without_separators_is_cut_into_overlapping_windows():
    text = "x" * 2500
    chunks = split_text(text, 1000, 100)
    assert [len(c) for c in chunks] == [1000, 1000, 700]


def test_custom_separators_are_used_and_sizes_still_respected():
    text = "alpha|beta|gamma|delta|" + "z" * 30
    chunks = split_text(text, 12, 0, separators=["|"])
    assert chunks[:4] == ["alpha|beta|", "gamma|delta|"] or chunks[:2] == ["alpha|beta|", "gamma|delta|"]
    assert all(len(c) <= 12 for c in chunks)


def test_chunk_documents_ids_and_metadata():
    doc = Document(
        text="Pump P-101 manual.\n\n" + "Grease the bearing every 500 hours. " * 10,
        metadata={"source": "/docs/manual.pdf", "file_type": ".pdf", "page": 3},
        id="/docs/manual.pdf:p3",
    )
    chunks = chunk_documents([doc], chunk_size=100, overlap=10)
    assert len(chunks) > 2
    for n, chunk in enumerate(chunks):
        assert chunk.id == f"/docs/manual.pdf:p3#{n}"
        assert chunk.doc_id == "/docs/manual.pdf:p3"
        assert chunk.metadata["chunk_index"] == n
        assert chunk.metadata["chunk_id"] == chunk.id
        assert chunk.metadata["content_hash"] == hashlib.sha256(chunk.text.encode()).hexdigest()
        assert chunk.metadata["strategy"] == "recursive"
        assert chunk.metadata["source"] == "/docs/manual.pdf" and chunk.metadata["page"] == 3
    assert doc.metadata == {"source": "/docs/manual.pdf", "file_type": ".pdf", "page": 3}  # not mutated


def test_document_without_id_gets_a_content_derived_id():
    text = "Seal check every 2000 hours."
    [a] = chunk_documents([Document(text)])
    [b] = chunk_documents([Document(text, metadata={"x": 1})])
    assert a.id == b.id == "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16] + "#0"
    [c] = chunk_documents([Document(text + " Changed.")])
    assert c.id != a.id


def test_chunking_is_deterministic_and_keeps_document_order():
    docs = [Document("one. " * 50, id="a"), Document("two. " * 50, id="b")]
    first = chunk_documents(docs, 60, 6)
    assert first == chunk_documents(docs, 60, 6)
    ids = [c.doc_id for c in first]
    assert ids == sorted(ids) and set(ids) == {"a", "b"}


# -- properties -----------------------------------------------------------------------------


def locate(text: str, chunks: list[str], overlap: int) -> list[tuple[int, int]] | None:
    """Place every chunk in ``text`` so that, in order, nothing but whitespace is skipped
    between chunks, consecutive chunks share at most ``overlap`` characters and only
    whitespace follows the last one. Returns the spans, or None when no placement exists.

    Repetitive text can match a chunk at several offsets, so this searches all
    placements (depth first, remembering dead ends so it stays polynomial)
    instead of taking the first match.
    """
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * len(chunks) + 100))
    dead_ends: set[tuple[int, int]] = set()

    def place(i: int, prev_start: int, prev_end: int) -> list[tuple[int, int]] | None:
        if (i, prev_start) in dead_ends:
            return None
        result = _place(i, prev_start, prev_end)
        if result is None:
            dead_ends.add((i, prev_start))
        return result

    def _place(i: int, prev_start: int, prev_end: int) -> list[tuple[int, int]] | None:
        if i == len(chunks):
            return [] if text[prev_end:].strip() == "" else None
        # Not prev_start + 1: with a large overlap langchain can emit a chunk that is a
        # prefix of the next one ("pump pump pump" then "pump pump pump pump" at the same
        # offset). The text they share is still within the overlap, which is what we promise.
        lower = 0 if i == 0 else max(prev_start, prev_end - overlap)
        upper = prev_end
        while upper < len(text) and text[upper].isspace():
            upper += 1  # the splitter may drop whitespace between chunks, nothing else
        start = text.find(chunks[i], lower, upper + len(chunks[i]))
        while 0 <= start <= upper:
            rest = place(i + 1, start, start + len(chunks[i]))
            if rest is not None:
                return [(start, start + len(chunks[i])), *rest]
            start = text.find(chunks[i], start + 1, upper + len(chunks[i]))
        return None

    return place(0, -1, 0)


def check_properties(text: str, size: int, overlap: int, separators=None) -> None:
    chunks = split_text(text, size, overlap, separators)
    assert all(0 < len(c) <= size for c in chunks), "chunk longer than chunk_size"
    assert all(c == c.strip() for c in chunks)
    if not chunks:
        assert text.strip() == "", "all text lost"
        return
    spans = locate(text, chunks, overlap)
    assert spans is not None, "text lost, reordered or duplicated beyond the overlap"
    duplicated = sum(len(c) for c in chunks) - len(text.strip())
    assert duplicated <= overlap * (len(chunks) - 1)


WORDS = st.sampled_from(
    ["pump", "P-101", "bearing", "grease", "500", "hours", "seal", "valve", "check", "a", "ok", "vibration"]
)
SEPS = st.sampled_from([" ", " ", " ", ". ", ", ", "\n", "\n\n", "; ", "! ", "  ", "\t"])
ENGLISH = st.lists(st.tuples(WORDS, SEPS), max_size=120).map(lambda pairs: "".join(w + s for w, s in pairs))
CJK = st.text(alphabet="水泵轴承润滑脂密封检查每小时运行五百两千。！？；，、\u3000\nポンプ点検 ", max_size=400)
ANY = st.text(max_size=300)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=ENGLISH, size=st.integers(1, 120), data=st.data())
def test_property_english_no_text_lost_sizes_and_overlap_respected(text, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    check_properties(text, size, overlap)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=CJK, size=st.integers(1, 80), data=st.data())
def test_property_chinese_and_japanese(text, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    check_properties(text, size, overlap)


@settings(max_examples=100, deadline=None)
@given(text=ANY, size=st.integers(1, 60), data=st.data())
def test_property_arbitrary_unicode(text, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    check_properties(text, size, overlap)


@settings(max_examples=60, deadline=None)
@given(text=ENGLISH, size=st.integers(2, 60), separators=st.lists(st.sampled_from([" ", "\n", ".", "e", "|"]), max_size=3, unique=True))
def test_property_custom_separators(text, size, separators):
    check_properties(text, size, size // 3, separators)


@pytest.mark.parametrize(
    ("text", "size", "overlap", "separators"),
    [
        # Found by longer hypothesis runs: windows cut across whitespace that is not a
        # separator used to be stripped into duplicates of their neighbours.
        ("pump\tpump ", 2, 1, None),
        ("0\x1f00", 2, 1, None),
        ("pump pump pump pump pump  P-101 ", 3, 1, []),
        # langchain hands back an unsplittable piece unstripped.
        ("bearing ", 8, 0, None),
        ("ププ\u3000", 3, 0, None),
        # repetitive text matches a chunk at several offsets.
        ("pump pump pump ", 12, 4, [" "]),
        # overlap 15 of 20: the second chunk is a prefix of the third.
        ("pump  pump pump pump pump ", 20, 15, None),
    ],
)
def test_property_regressions(text, size, overlap, separators):
    check_properties(text, size, overlap, separators)


@pytest.mark.parametrize("block", [50, 97, 400])
@pytest.mark.parametrize(
    "text",
    [
        "Grease the bearing every 500 hours. Check the seal. " * 40,
        "word " * 300,
        "x" * 1000,
        "水泵每运行五百小时加注润滑脂。机械密封每两千小时检查一次，" * 30,
        "para one\n\npara two is longer than the rest\nline\n" * 25,
    ],
)
def test_long_texts_split_block_by_block_keep_every_property(monkeypatch, text, block):
    import akasha.chunking.recursive as recursive

    monkeypatch.setattr(recursive, "_BLOCK", block)
    for size, overlap in [(10, 0), (30, 5), (64, 16), (200, 20)]:
        check_properties(text, size, overlap)
    blocks = recursive._blocks(text, recursive.DEFAULT_SEPARATORS[:-1])
    assert "".join(blocks) == text and all(len(b) <= block for b in blocks)


@pytest.mark.slow
def test_50_mb_line_of_words_stays_in_bounded_memory():
    """Ten million words on one line: about 16 s on 2 cores, so marked slow."""
    import subprocess
    import sys

    code = (
        "import re\n"
        "from akasha.chunking import split_text\n"
        "text = 'word ' * 10_000_000\n"
        "chunks = split_text(text, 1000, 100)\n"
        "assert all(len(c) <= 1000 for c in chunks) and len(chunks) > 50_000\n"
        # VmHWM is this process's own peak (ru_maxrss would include the forking pytest's size).
        "status = open('/proc/self/status').read()\n"
        "print(int(re.search(r'VmHWM:\\s+(\\d+) kB', status).group(1)) // 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert int(out.strip()) < 600, f"peak RSS {out.strip()} MB"  # was 1.6 GB before block splitting


# -- same chunks as langchain-text-splitters (what earlier versions called) -------------------
# akasha's own splitter (chunking/character_splitter.py) replaced langchain-text-splitters'
# RecursiveCharacterTextSplitter, which stays in the dev extra as the reference for these tests.


def _langchain(size: int, overlap: int, separators, length=len):
    """langchain's splitter with the settings akasha used (separators kept at the end, stripped)."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    return RecursiveCharacterTextSplitter(separators=list(separators), keep_separator="end", chunk_size=size,
                                          chunk_overlap=overlap, strip_whitespace=True, length_function=length)


def _langchain_split(text: str, size: int, overlap: int, separators: tuple[str, ...]) -> list[str]:
    """What akasha's split_text gave when it wrapped langchain's splitter (same pre- and post-processing)."""
    from akasha.chunking.recursive import _finish

    seps = tuple(s for s in separators if s != "") or ("\n",)
    return _finish(_langchain(size, overlap, seps).split_text(text), size, overlap)


def _same_raw_pieces(text: str, size: int, overlap: int, separators, length=len) -> None:
    """The splitters themselves (no windowing, no blocks) give identical pieces."""
    from akasha.chunking.character_splitter import RecursiveSplitter

    ours = RecursiveSplitter(separators, size, overlap, length).split_text(text)
    assert ours == _langchain(size, overlap, separators, length).split_text(text)


MIXED = st.one_of(ENGLISH, CJK, ANY, st.lists(st.sampled_from(["pump", "。", ". ", "\n\n", " ", "，", "seal", "\n"]),
                                             max_size=200).map("".join))
AKASHA_SEPARATORS = tuple(s for s in DEFAULT_SEPARATORS if s)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=MIXED, size=st.integers(1, 150), data=st.data())
def test_same_chunks_as_langchain_recursive_splitter(text, size, data):
    pytest.importorskip("langchain_text_splitters")
    overlap = data.draw(st.integers(0, size - 1))
    if not text.strip():
        return
    assert split_text(text, size, overlap) == _langchain_split(text, size, overlap, DEFAULT_SEPARATORS)
    _same_raw_pieces(text, size, overlap, AKASHA_SEPARATORS)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=MIXED, size=st.integers(1, 120), data=st.data(),
       separators=st.lists(st.sampled_from(["\n\n", "\n", "。", ". ", " ", "，", "e", "pump", "|", "ab"]),
                           min_size=1, max_size=5, unique=True))
def test_same_pieces_as_langchain_with_other_separators_and_lengths(text, size, data, separators):
    """User separators (RAG(chunk_separators=...)) and a length function that is not len."""
    pytest.importorskip("langchain_text_splitters")
    overlap = data.draw(st.integers(0, size - 1))
    _same_raw_pieces(text, size, overlap, separators)
    _same_raw_pieces(text, size, overlap, separators, length=lambda piece: len(piece.encode("utf-8")))
    if text.strip():
        assert split_text(text, size, overlap, separators) == _langchain_split(text, size, overlap, tuple(separators))


def _texts_of(folder: str) -> list[str]:
    from pathlib import Path

    from akasha.loaders import discover, load_file

    root = Path(__file__).resolve().parent.parent / folder
    texts = [doc.text for path in discover(root) for doc in load_file(path)]
    assert texts, f"no documents under {root}"
    return texts


CHINESE = ("泵房安全须知：进入泵房前必须确认通风良好。检查水泵时应先切断电源！为什么要定期润滑轴承？"
           "因为缺少润滑会导致过热、磨损和振动；严重时会造成停机。\n\n" * 12
           + "ポンプ室では必ず保護具を着用してください。点検は二人で行います。" * 10)


@pytest.mark.parametrize("size", [40, 200, 1000])
@pytest.mark.parametrize("folder", ["examples/docs", "docs"])
def test_same_chunks_as_langchain_on_the_example_documents_and_the_docs(size, folder):
    pytest.importorskip("langchain_text_splitters")
    overlap = default_overlap(size)
    for text in _texts_of(folder) + [CHINESE]:
        assert split_text(text, size, overlap) == _langchain_split(text, size, overlap, DEFAULT_SEPARATORS)
        _same_raw_pieces(text, size, overlap, AKASHA_SEPARATORS)


def test_the_splitter_refuses_an_empty_separator_and_bad_sizes():
    from akasha.chunking.character_splitter import RecursiveSplitter, split_keeping_separator

    with pytest.raises(ValueError, match="separators"):
        RecursiveSplitter(["\n", ""], 10, 0)
    with pytest.raises(ValueError, match="chunk_overlap"):
        RecursiveSplitter(["\n"], 10, 10)
    assert split_keeping_separator("a. b. c", ". ") == ["a. ", "b. ", "c"]
    assert split_keeping_separator(". a. ", ". ") == [". ", "a. "]
