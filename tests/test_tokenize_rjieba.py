"""Chinese and Japanese words come from rjieba (jieba-rs) and are the tokens jieba 0.42 gave (issue 34).

The persisted tokenizer id kept its ``+jieba`` when rjieba replaced jieba's Python package, so
indexes built before stay valid only while the tokens are the same: these tests pin them
(docs/results.md has the same measured on whole corpora).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("rjieba")

from akasha.retrieval.tokenize import resolve_tokenizer, tokenize, tokenizer_from_id  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

#: Tokens jieba 0.42 (``lcut_for_search`` over its own dictionary) gave through akasha before rjieba.
JIEBA_TOKENS = {
    "北京大学的泵维护手册": [
        "北京", "大学", "北京大学", "的", "泵", "维护", "手册", "京大",
        "学的", "的泵", "泵维", "护手",
    ],
    "水泵每运行五百小时需要润滑一次轴承，检查机械密封是否泄漏。": [
        "水泵", "每", "运行", "五百", "小时", "需要", "润滑", "一次",
        "轴承", "泵每", "每运", "行五", "百小", "时需", "要润", "滑一",
        "次轴", "检查", "机械", "密封", "是否", "泄漏", "查机", "械密",
        "封是", "否泄",
    ],
    "每五百小時潤滑軸承，檢查機械密封。": [  # traditional characters
        "每", "五百", "小時潤", "滑軸承", "每五", "百小", "小時", "時潤",
        "潤滑", "滑軸", "軸承", "檢查", "機械", "密封", "查機", "械密",
    ],
    "ポンプの点検は毎月行う。軸受のグリースを交換する。": [
        "ホ", "ン", "フ", "の", "点", "検", "は", "毎",
        "月", "行", "う", "ホン", "ンフ", "フの", "の点", "点検",
        "検は", "は毎", "毎月", "月行", "行う", "軸受", "の", "ク",
        "リ", "ー", "ス", "を", "交換", "す", "る", "受の",
        "のク", "クリ", "リー", "ース", "スを", "を交", "換す", "する",
    ],
    "P-102号泵的机械密封失效：进口阀门未打开导致干转。": [
        "p", "102号泵的机械密封失效", "进口", "阀门", "未", "打开", "导致", "干转",
        "口阀", "门未", "未打", "开导", "致干",
    ],
}


@pytest.mark.parametrize("text", list(JIEBA_TOKENS))
def test_tokens_are_those_jieba_gave(text):
    assert tokenize(text, use_jieba=True) == JIEBA_TOKENS[text]
    assert resolve_tokenizer("jieba")[0] == "words-v3+jieba"  # unchanged by rjieba: stored indexes stay valid
    assert tokenizer_from_id("words-v2+jieba")(text) == JIEBA_TOKENS[text]  # an index of the rules before v3


def test_rjieba_cuts_as_jieba_on_varied_text(monkeypatch):
    """Where jieba's Python package is installed (not a dependency), akasha's tokens are the same with
    either segmenter, on random text from the same characters too."""
    jieba = pytest.importorskip("jieba")
    import logging

    from akasha.retrieval import tokenize as module

    jieba.setLogLevel(logging.WARNING)
    texts = list(JIEBA_TOKENS) + [(REPO / "examples" / "docs" / "泵房安全须知.md").read_text(encoding="utf-8")]
    rng = random.Random(11)
    alphabet = "".join(sorted({ch for text in texts for ch in text if not ch.isspace()}))
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80))) for _ in range(300)]
    ours = [tokenize(text, use_jieba=True) for text in texts]
    reference = jieba.Tokenizer()
    monkeypatch.setattr(module, "_jieba", lambda: reference.lcut_for_search)
    assert ours == [tokenize(text, use_jieba=True) for text in texts]


def test_cutting_writes_nothing_and_imports_no_python_jieba(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["AKASHA_CACHE_DIR"] = str(tmp_path / "cache")
    (tmp_path / "tmp").mkdir()
    env["TMPDIR"] = str(tmp_path / "tmp")
    code = """
        import os, sys, tempfile
        from akasha.retrieval.tokenize import tokenize
        print("北京大学" in tokenize("北京大学的泵维护手册", use_jieba=True))
        print(os.listdir(tempfile.gettempdir()), "jieba" in sys.modules)
    """
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["True", "[] False"]
    assert not (tmp_path / "cache").exists()
