"""akasha's jieba dictionary (filled in per first character) cuts exactly as jieba's own full prefix dictionary.

Issue 16: building jieba's whole prefix dictionary (about 500,000 entries) cost about a second of a first
run; :class:`akasha.retrieval.tokenize._JiebaWords` fills in only the characters texts contain. These tests
check that every key jieba can look up answers the same, that tokens are the same on varied text, and
that jieba's default tokenizer (and the temp folder) are left alone.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

jieba = pytest.importorskip("jieba")

from akasha.retrieval import tokenize as tok  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DICT = Path(jieba.__file__).with_name("dict.txt")


@pytest.fixture(scope="module")
def full():
    """jieba's own prefix dictionary of its dict.txt (``gen_pfdict``): the reference."""
    with DICT.open("rb") as handle:
        return jieba.Tokenizer().gen_pfdict(handle)


def test_every_word_and_prefix_of_a_covered_character_is_jiebas(full):
    freq, total = full
    words = tok._JiebaWords(DICT.read_bytes())
    assert words.total == total
    rng = random.Random(3)
    chars = sorted({key[0] for key in freq})
    sample = rng.sample(chars, 300) + ["北", "泵", "水", "A", "c"]
    words.cover("".join(sample))
    covered = set(sample)
    expected = {key: value for key, value in freq.items() if key[0] in covered}
    got = {key: value for key, value in words.freq.items()}
    assert got == expected  # the same keys (words and prefixes) and counts, nothing else
    words.cover("".join(chars))
    assert words.freq == freq  # once every character is covered: jieba's whole dictionary


def test_a_word_listed_twice_keeps_its_last_count_as_in_jieba():
    data = "泵站 5 n\n泵 3 n\n泵站 9 n\n水泵房 2 n\n".encode()
    words = tok._JiebaWords(data)
    words.cover("泵水")
    import io

    expected, total = jieba.Tokenizer().gen_pfdict(io.BytesIO(data))
    assert words.freq == expected and words.total == total == 19
    assert words.freq["泵站"] == 9 and words.freq["水泵"] == 0


@pytest.mark.parametrize("piece_bytes", [1, 200, 4096, 1 << 18])
def test_the_file_read_in_pieces_of_any_size_and_order_gives_jiebas_dictionary(monkeypatch, piece_bytes):
    """Pieces are cut at line breaks; a piece out of order is sorted; later lines still win (shuffled lines)."""
    lines = DICT.read_bytes().splitlines(keepends=True)[:3000]
    random.Random(5).shuffle(lines)
    lines += [lines[1].split()[0] + b" 7 n\n", lines[0]]  # a word listed again with another count; a line twice
    data = b"".join(lines).rstrip(b"\n")  # the last line without its line break
    monkeypatch.setattr(tok, "_DICT_PIECE_BYTES", piece_bytes)
    words = tok._JiebaWords(data)
    import io

    expected, total = jieba.Tokenizer().gen_pfdict(io.BytesIO(data))
    words.cover("".join({key[0] for key in expected}))
    assert words.freq == expected and words.total == total
    pieces = tok._line_pieces(data, piece_bytes)
    assert b"".join(pieces) == data and len(words._pieces) == len(pieces)
    assert len(pieces) == {1: len(lines), 1 << 18: 1}.get(piece_bytes, len(pieces))  # a line each; all in one


def test_a_dictionary_in_another_layout_is_refused():
    with pytest.raises(ValueError):
        tok._JiebaWords("泵站 5\n泵 3 n\n".encode())


TEXTS = [
    "北京大学的泵维护手册",
    "水泵每运行五百小时需要润滑一次轴承，检查机械密封是否泄漏。",
    "每五百小時潤滑軸承，檢查機械密封。",  # traditional characters
    "ポンプの点検は毎月行う。軸受のグリースを交換する。",
    "P-102号泵的机械密封失效：进口阀门未打开导致干转。",
]


def test_tokens_are_those_of_jiebas_own_dictionary(full):
    freq, total = full
    reference = jieba.Tokenizer()
    reference.FREQ, reference.total, reference.initialized = freq, total, True
    texts = TEXTS + [(REPO / "examples" / "docs" / "泵房安全须知.md").read_text(encoding="utf-8")]
    rng = random.Random(11)
    alphabet = "".join(sorted({ch for text in texts for ch in text if not ch.isspace()}))
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80))) for _ in range(200)]
    segmenter = tok._JiebaWords(DICT.read_bytes())
    ours = jieba.Tokenizer()
    ours.FREQ, ours.total, ours.initialized = segmenter.freq, segmenter.total, True
    for text in texts:
        segmenter.cover(text)
        assert ours.lcut_for_search(text) == reference.lcut_for_search(text), text


def test_akashas_tokens_are_those_it_gave_with_the_full_dictionary(full, monkeypatch):
    freq, total = full
    reference = jieba.Tokenizer()
    reference.FREQ, reference.total, reference.initialized = freq, total, True
    monkeypatch.setattr(jieba.dt, "initialized", False)  # as in a program that never used jieba itself
    monkeypatch.setattr(jieba.dt, "dictionary", None)
    tok._jieba.cache_clear()
    assert tok._jieba()[1] is not tok._nothing_to_prepare  # akasha's own tokenizer, filled in per character
    ours = [tok.tokenize(text, use_jieba=True) for text in TEXTS]
    monkeypatch.setattr(tok, "_jieba", lambda: (reference, tok._nothing_to_prepare))
    assert ours == [tok.tokenize(text, use_jieba=True) for text in TEXTS]


def test_jiebas_default_tokenizer_and_the_temp_folder_are_left_alone(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["AKASHA_CACHE_DIR"] = str(tmp_path / "cache")
    (tmp_path / "tmp").mkdir()
    env["TMPDIR"] = str(tmp_path / "tmp")
    code = """
        import os, tempfile
        import jieba
        from akasha.retrieval.tokenize import tokenize
        print(tokenize("北京大学的泵维护手册", use_jieba=True))
        print(jieba.dt.initialized, os.listdir(tempfile.gettempdir()))
        print(jieba.lcut_for_search("北京大学的泵维护手册") == jieba.Tokenizer().lcut_for_search("北京大学的泵维护手册"))
    """
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    tokens, initialized, same = result.stdout.split("\n")[:3]
    assert "北京大学" in tokens and "北京" in tokens and "大学" in tokens
    assert initialized == "False []"  # akasha cut with its own tokenizer; jieba wrote no cache into the temp folder
    assert same == "True"  # the program's own jieba works as ever (and only then writes its cache)
    assert not (tmp_path / "cache").exists()  # nothing written: the dictionary is read, never cached


def test_a_program_that_set_up_jieba_keeps_its_tokenizer(monkeypatch):
    """A program that already used jieba (or gave it a dictionary) gets its tokenizer used, as before."""
    monkeypatch.setattr(jieba.dt, "initialized", True)
    tok._jieba.cache_clear()
    try:
        tokenizer, prepare = tok._jieba()
        assert tokenizer is jieba and prepare is tok._nothing_to_prepare
    finally:
        tok._jieba.cache_clear()
