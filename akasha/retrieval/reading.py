"""Does an embedder read Chinese, Japanese or Korean? A twelve-question probe per script.

``auto`` leans on BM25 alone for a question its embedder cannot read. The lists' agreement cannot
tell that on small corpora (docs/quality.md), so this module asks the embedder, once per script:
twelve everyday questions and twelve answering passages (none sharing a content character with its
own answer more than with the others), and how often a question's nearest passage is its own. It
reads a script from :data:`PASS_SHARE` of them. The probe runs once per process and index cache.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from akasha.embeddings.base import Embedder
from akasha.retrieval.fusion import cjk_share

log = logging.getLogger(__name__)

#: Share of the probe's questions whose nearest passage must be their own.
PASS_SHARE = 0.5
#: Raised whenever the probe texts change, so nothing measured with other texts is reused.
PROBE_VERSION = 1

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")

#: (question, the passage that answers it) per script; topics are shared across scripts.
PROBES: dict[str, tuple[tuple[str, str], ...]] = {
    "zh": (
        ("怎样才能睡得更好？", "每晚固定时间上床，卧室保持黑暗安静，傍晚以后别喝咖啡或浓茶。"),
        ("小猫不吃东西怎么办？", "宠物食欲下降可能是生病的信号，应尽快带它去看兽医。"),
        ("下雨天出门要带什么？", "记得拿伞，穿防水的鞋子，以免衣服被淋湿。"),
        ("电脑运行很慢如何解决？", "关闭不用的程序，清理磁盘空间，必要时增加内存条。"),
        ("白饭怎么煮？", "将大米淘洗干净，加入适量清水，放进锅里加热约三十分钟。"),
        ("学习外语有什么好方法？", "每天坚持背单词，多听多说，找当地人练习对话。"),
        ("牙齿疼痛应该看哪个医生？", "口腔科可以检查蛀洞并进行填补或根管治疗。"),
        ("如何节省每个月的开支？", "制定预算，记录花费，减少外卖和冲动购物。"),
        ("股票市场为什么会下跌？", "经济衰退、利率上升和投资者恐慌都会让价格走低。"),
        ("为什么鸟和航空器能够在天上不掉下来？", "翅膀上下的气压差产生升力，发动机提供向前的推力。"),
        ("怎样种番茄？", "选阳光充足的地方，松土施肥，幼苗长高后搭支架并定期浇水。"),
        ("感冒了应该怎么办？", "多休息，多喝温水，发烧严重时服用退烧药或就医。"),
    ),
    "ja": (
        ("よく眠るにはどうすればいいですか？", "毎晩同じ時刻に布団に入り、寝室を暗く静かに保ち、夕方以降はコーヒーを控えましょう。"),
        ("猫が何も口にしないときは？", "ペットの食欲が落ちたら病気のサインかもしれないので、早めに獣医に相談してください。"),
        ("雨の日に出かけるとき、何を持っていけばいい？", "傘を忘れずに、防水の靴を履いて、服が濡れないようにしましょう。"),
        ("パソコンの動作が遅いときの対処法は？", "使っていないアプリを閉じ、ディスクの空き容量を増やし、必要ならメモリを増設します。"),
        ("外国語を上手に身につけるコツは？", "毎日ボキャブラリーを覚え、たくさん聞いて話し、現地の人とやり取りの練習をすること。"),
        ("歯が痛いときは何科に行けばいい？", "口の中を診る医院で、むし穴を調べて詰め物や根の治療をしてもらえます。"),
        ("毎月の出費を減らす方法は？", "予算を立てて支払いを記録し、外食や衝動買いを控えましょう。"),
        ("株価が下がるのはなぜ？", "景気の後退や金利の上昇、投資家の不安が相場を冷やします。"),
        ("飛行機はどうして空を飛べるの？", "翼の上と下の気圧の差が揚力を生み、エンジンが前へ進む力を出します。"),
        ("トマトの育て方を教えて", "日当たりのよい場所で土を耕して肥料を入れ、苗が伸びたら支柱を立てて定期的に水をやります。"),
        ("風邪をひいたらどうする？", "よく休んで温かい飲み物をとり、熱が高いときは解熱剤を飲むか病院へ。"),
        ("ご飯の炊き方は？", "お米をといで適量の水を加え、鍋で三十分ほど加熱します。"),
    ),
    "ko": (
        ("잠을 잘 자려면 어떻게 해야 하나요?", "매일 같은 시각에 눕고 침실은 캄캄하고 고요히 두며, 저녁 이후엔 커피를 삼가십시오."),
        ("고양이가 아무것도 먹지 않을 때는?", "반려동물의 식욕이 떨어지면 병의 신호일 수 있으니 빨리 수의사에게 데려가세요."),
        ("비 오는 날 외출할 때 무엇을 챙겨야 하나요?", "우산을 잊지 말고, 방수 신발을 신어 옷이 젖지 않도록 하세요."),
        ("컴퓨터가 느려졌을 때 해결 방법은?", "쓰지 않는 프로그램을 닫고, 디스크 공간을 비우고, 필요하면 메모리를 늘리세요."),
        ("외국어를 잘 배우는 비결은?", "날마다 낱말을 익히고 많이 듣고 말하며, 현지인과 대화로 연습하세요."),
        ("이가 아플 때 어느 병원에 가야 하나요?", "치과에서 충치를 검사하고 때우거나 신경 치료를 받을 수 있습니다."),
        ("매달 지출을 줄이는 방법은?", "예산을 세우고 쓴 돈을 기록하며, 배달 음식과 충동구매를 삼가세요."),
        ("주가가 떨어지는 이유는?", "경기 침체, 금리 인상, 투자자의 불안이 시세를 끌어내립니다."),
        ("비행기는 어떻게 하늘을 나나요?", "날개 위아래의 기압 차이가 양력을 만들고, 엔진이 앞으로 미는 힘을 냅니다."),
        ("토마토 재배 방법은?", "햇볕이 잘 드는 곳에서 흙을 갈고 거름을 준 뒤, 모종이 자라면 지지대를 세우고 물을 주세요."),
        ("감기에 걸리면 어떻게 하나요?", "푹 쉬고 따뜻한 물을 마시며, 열이 높으면 해열제를 먹거나 진료를 받으세요."),
        ("밥은 어떻게 짓나요?", "쌀을 씻어 알맞은 양의 물을 붓고, 냄비에 넣어 삼십 분쯤 가열합니다."),
    ),
}


def script_of(text: str) -> str | None:
    """``"zh"``, ``"ja"`` or ``"ko"`` for text written in Chinese, Japanese or Korean, else None.

    Korean when Hangul outnumbers Han and kana; Japanese when kana are at least a tenth; else Chinese.
    """
    han, kana, hangul = len(_HAN.findall(text)), len(_KANA.findall(text)), len(_HANGUL.findall(text))
    total = han + kana + hangul
    if total == 0:
        return None
    if hangul > han + kana:
        return "ko"
    if kana >= 0.1 * total:
        return "ja"
    return "zh"


def probe_share(embedder: Embedder, pairs: Sequence[tuple[str, str]]) -> float:
    """Share of ``pairs`` whose question (``embed_query``) is nearest, by cosine, to its own passage."""
    questions = np.asarray([embedder.embed_query(question) for question, _ in pairs], dtype=np.float32)
    passages = np.asarray(embedder.embed_documents([passage for _, passage in pairs]), dtype=np.float32)
    questions /= np.maximum(np.linalg.norm(questions, axis=1, keepdims=True), 1e-12)
    passages /= np.maximum(np.linalg.norm(passages, axis=1, keepdims=True), 1e-12)
    nearest = (questions @ passages.T).argmax(axis=1)
    return float(np.mean(nearest == np.arange(len(pairs))))


class VerdictStore(Protocol):
    """Where verdicts outlive the process: an index's manifest (``get_meta``/``set_meta``)."""

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...


_verdicts: dict[tuple[str, str, int], bool] = {}
_lock = threading.Lock()


def reads_script(embedder: Embedder, script: str, store: VerdictStore | None = None) -> bool | None:
    """Whether ``embedder`` reads ``script`` (a key of :data:`PROBES`); None when the probe failed to run.

    Measured once per process for each embedder ``name`` and script and kept in ``store`` (the index's
    manifest); an embedder that raises during the probe (a server down) gets None and is asked again.
    """
    key = (embedder.name, script, PROBE_VERSION)
    stored_as = f"reads:{PROBE_VERSION}:{script}:{embedder.name}"
    with _lock:
        if key in _verdicts:
            return _verdicts[key]
        kept = _recall(store, stored_as)
        if kept is not None:
            _verdicts[key] = kept
            return kept
        try:
            share = probe_share(embedder, PROBES[script])
        except Exception:  # the question's own embedding call reports the real error to the user
            log.warning("could not probe whether %s reads %s text; auto falls back to list agreement",
                        embedder.name, script, exc_info=True)
            return None
        verdict = share >= PASS_SHARE
        log.info("embedder %s %s %s text (probe: %.0f%% of questions found their answer)",
                 embedder.name, "reads" if verdict else "does not read", script, 100 * share)
        _verdicts[key] = verdict
        _remember(store, stored_as, verdict)
        return verdict


def _recall(store: VerdictStore | None, key: str) -> bool | None:
    if store is None:
        return None
    try:
        value = store.get_meta(key)
    except Exception:  # an unreadable cache only costs the probe
        log.debug("could not read the stored reading verdict %s", key, exc_info=True)
        return None
    return {"1": True, "0": False}.get(value or "")


def _remember(store: VerdictStore | None, key: str, verdict: bool) -> None:
    if store is None:
        return
    try:
        store.set_meta(key, "1" if verdict else "0")
    except Exception:  # a read-only cache keeps the verdict for this process only
        log.debug("could not store the reading verdict %s", key, exc_info=True)


def reads_question(embedder: Embedder, question: str, min_share: float,
                   store: VerdictStore | None = None) -> bool | None:
    """Whether ``embedder`` reads ``question``'s script (``store`` as in :func:`reads_script`).

    None when less than ``min_share`` of its letters and digits are CJK, or the probe failed."""
    if cjk_share(question) < min_share:
        return None
    script = script_of(question)
    return reads_script(embedder, script, store) if script is not None else None
