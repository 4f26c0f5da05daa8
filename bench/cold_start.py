"""Cold start: what a new user waits for, as ratios to ``python -c "import numpy"`` measured in the same run.

    python -m bench.cold_start [--runs 3] [--chunks 300] [--skip-indexing] [--save NOW.json] [--before THEN.json]
    python -m bench.cold_start --report NOW.json --before THEN.json   # two saved runs side by side

Figures (each the median of ``--runs`` fresh processes, all measured in one run so the
ratios compare like with like on a loaded machine; akasha's modules are byte-compiled first,
as a pip install would leave them). Beside each wall time is the CPU time (user + system,
all threads) and its ratio: it barely moves when other processes load the machine, so it
shows what an idle machine would do (multi-threaded work, the embedding, counts every core).
The load average before and after the run is printed with the tables; ``--save`` keeps a run
and ``--before`` prints a saved run's ratios beside this one's (before/after a change):

* ``import numpy``: wall time of ``python -c "import numpy"`` (interpreter start included);
  the yardstick for the ratios, timed three times a round, between the other commands.
* ``import akasha``: the import itself, timed inside a fresh interpreter (target <= 150 ms).
* ``first ask``: the README's offline question (``akasha ask examples/docs ...``) in a fresh
  process on an empty cache folder: read, chunk, embed with the packaged MiniLM, index,
  answer (target <= 12x numpy).
* ``re-ask``: the same command again in a fresh process, the cache now built (target <= 3x).
* indexing throughput: in one fresh process, ``CorpusIndex.sync`` over ``--chunks`` files of
  one ~1,000-character chunk each with ``hf:all-MiniLM-L6-v2`` (embedder construction and
  model load included), then sentence-transformers on the same texts in the same process
  (``import sentence_transformers`` + ``SentenceTransformer(folder)`` + ``encode``). Two
  ratios: against sentence-transformers including its import (what a process that has not
  loaded it yet pays) and excluding it (torch already imported). Target >= 1.5x. Printed with
  them: the encoder's work on those texts in GFLOP (MiniLM's matrix multiplies, attention
  included) and this machine's float32 matrix-multiply rate (torch, every core), so a run shows
  how close each side is to what the CPU can do at that precision.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUESTION = "What caused the seal failure on P-102?"
TARGETS = {"re-ask": 3.0, "first ask": 12.0}
IMPORT_TARGET_MS = 150.0
THROUGHPUT_TARGET = 1.5

#: Run in a fresh interpreter by :func:`indexing_throughput`; prints one JSON line.
_THROUGHPUT_CHILD = r"""
import json, sys, time
from pathlib import Path
folder = Path(sys.argv[1])
timings = {}
cpu = time.process_time()
start = time.perf_counter()
from akasha.embeddings import resolve_embedder
from akasha.index import CorpusIndex
index = CorpusIndex(resolve_embedder("hf:all-MiniLM-L6-v2"), cache_dir=":memory:")
report = index.sync(folder)
timings["akasha_s"] = time.perf_counter() - start
timings["akasha_cpu"] = time.process_time() - cpu
timings["akasha_chunks"] = report.chunks
timings["akasha_embedded"] = report.embedded
timings["torch_loaded_by_akasha"] = "torch" in sys.modules
texts = [chunk.text for chunk in index.chunks]
from akasha.embeddings.local import packaged_model_dir
cpu = time.process_time()
start = time.perf_counter()
import sentence_transformers
imported = time.perf_counter()
imported_cpu = time.process_time()
model = sentence_transformers.SentenceTransformer(str(packaged_model_dir()), device="cpu")
model.encode(texts, normalize_embeddings=True, show_progress_bar=False)
done = time.perf_counter()
timings["st_import_s"] = imported - start
timings["st_load_encode_s"] = done - imported
timings["st_import_cpu"] = imported_cpu - cpu
timings["st_load_encode_cpu"] = time.process_time() - imported_cpu
timings["st_texts"] = len(texts)
# The model's work on these texts, and how fast this machine multiplies float32 matrices (torch's
# CPU kernels, every core, the shape of MiniLM's feed-forward layer over a 32-chunk batch).
from akasha.embeddings.bert_numpy import BertFolder
folder = BertFolder(packaged_model_dir())
hidden, inner = folder.hidden, int(folder.config["intermediate_size"])
lengths = [len(e.ids) for e in folder.tokenizer.encode_batch(texts)]
timings["model_gflop"] = folder.layers * sum(2 * n * (4 * hidden * hidden + 2 * hidden * inner)
                                             + 4 * n * n * hidden for n in lengths) / 1e9
import torch
a, b = torch.rand(8192, hidden), torch.rand(hidden, inner)
a @ b
start = time.perf_counter()
for _ in range(10):
    a @ b
timings["matmul_gflops"] = 10 * 2 * 8192 * hidden * inner / (time.perf_counter() - start) / 1e9
print(json.dumps(timings))
"""


def _env(cache: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if cache is not None:
        env["AKASHA_CACHE_DIR"] = str(cache)
    return env


def _wall(argv: list[str], env: dict[str, str], cwd: Path = REPO) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system, all threads) of one command; raises if it fails.

    CPU time barely moves when other processes load the machine, wall time does: the CPU
    figures show what an idle machine would do (for single-threaded work, about the wall time).
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr[-2000:]}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_akasha_ms(env: dict[str, str]) -> float:
    """Milliseconds of ``import akasha`` alone, in a fresh interpreter."""
    code = "import time; t = time.perf_counter(); import akasha; print((time.perf_counter() - t) * 1000)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def ask_times(runs: int, work: Path) -> dict[str, list[float]]:
    """Wall times of the README question on an empty cache, then again on the built cache."""
    argv = [sys.executable, "-m", "akasha", "ask", "examples/docs", QUESTION]
    times: dict[str, list[float]] = {"import akasha ms": []}
    plain = _env()
    numpy = [("numpy", [sys.executable, "-c", "import numpy"], plain)]
    for run in range(runs):
        cache = work / f"cache{run}"
        # The yardstick three times a round: 70-90 ms, it swings the most, and every ratio divides by it.
        for name, command, env in (*numpy, ("first ask", argv, _env(cache)), *numpy, ("re-ask", argv, _env(cache)),
                                   *numpy):
            wall, cpu = _wall(command, env)
            times.setdefault(name, []).append(wall)
            times.setdefault(f"{name} cpu", []).append(cpu)
        times["import akasha ms"].append(import_akasha_ms(plain))
        shutil.rmtree(cache, ignore_errors=True)
    return times


def write_corpus(folder: Path, chunks: int, seed: int = 0) -> None:
    """``chunks`` files of about 1,000 characters each (sentences of examples/docs' English files, shuffled)."""
    sentences: list[str] = []
    for name in ("pump-maintenance-guide.md", "incident-notes.txt"):
        text = (REPO / "examples" / "docs" / name).read_text(encoding="utf-8")
        sentences.extend(s.strip() + "." for s in text.replace("\n", " ").split(". ") if len(s.strip()) > 20)
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(chunks):
        parts = [f"Record {n}."]
        while sum(len(p) + 1 for p in parts) < 940:
            parts.append(rng.choice(sentences))
        (folder / f"record{n:04d}.txt").write_text(" ".join(parts)[:990], encoding="utf-8")


def indexing_throughput(chunks: int, work: Path) -> dict[str, float]:
    """One fresh process: akasha indexes the corpus, then sentence-transformers encodes the same texts."""
    folder = work / "corpus"
    if not folder.exists():
        write_corpus(folder, chunks)
    out = subprocess.run([sys.executable, "-c", _THROUGHPUT_CHILD, str(folder)], cwd=REPO, env=_env(),
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"throughput run failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(runs: int, chunks: int, skip_indexing: bool) -> dict:
    """Every figure of one run (see the module docstring), as JSON-ready data."""
    # As a pip install would: akasha's modules byte-compiled (PYTHONDONTWRITEBYTECODE=1 would
    # otherwise make every fresh process compile them from source).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "akasha")], check=True)
    with tempfile.TemporaryDirectory(prefix="akasha-cold-") as tmp:
        work = Path(tmp)
        figures: dict = {"load": os.getloadavg(), "runs": ask_times(runs, work)}
        if not skip_indexing:
            figures["indexing"] = indexing_throughput(chunks, work)
        figures["load_after"] = os.getloadavg()
    return figures


def summary(figures: dict) -> dict[str, float]:
    """The headline numbers of a run: medians, ratios to ``import numpy`` and throughput ratios."""
    times = figures["runs"]
    out: dict[str, float] = {"numpy s": statistics.median(times["numpy"]),
                             "numpy cpu": statistics.median(times["numpy cpu"]),
                             "import akasha ms": statistics.median(times["import akasha ms"])}
    for name in ("re-ask", "first ask"):
        out[f"{name} s"] = statistics.median(times[name])
        out[f"{name} x"] = out[f"{name} s"] / out["numpy s"]
        out[f"{name} cpu"] = statistics.median(times[f"{name} cpu"])
        out[f"{name} cpu x"] = out[f"{name} cpu"] / out["numpy cpu"]
    t = figures.get("indexing")
    if t:
        akasha_rate = t["akasha_chunks"] / t["akasha_s"]
        out["akasha chunks/s"] = akasha_rate
        out["akasha s"] = t["akasha_s"]
        out["akasha cpu"] = t["akasha_cpu"]
        out["st cold x"] = akasha_rate / (t["st_texts"] / (t["st_import_s"] + t["st_load_encode_s"]))
        out["st warm x"] = akasha_rate / (t["st_texts"] / t["st_load_encode_s"])
        out["st cold cpu x"] = (t["st_import_cpu"] + t["st_load_encode_cpu"]) / t["akasha_cpu"]
        out["st warm cpu x"] = t["st_load_encode_cpu"] / t["akasha_cpu"]
    return out


def report(figures: dict, before: dict | None = None) -> bool:
    """Print the tables (with a ``before`` column when given a saved run); True when every target is met."""
    ok = True
    times = figures["runs"]
    now = summary(figures)
    was = summary(before) if before else None

    def then(key: str, fmt: str, unit: str = "") -> str:
        return "" if was is None or key not in was else format(was[key], fmt) + unit

    print(f"load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in figures['load'])}; after: "
          f"{', '.join(f'{x:.2f}' for x in figures['load_after'])}"
          + (f"; the saved run's before: {', '.join(f'{x:.2f}' for x in before['load'])}" if before else ""))
    print("| figure | median wall | runs | ratio to `import numpy` | before | target | | CPU (user+sys) | CPU ratio "
          "| CPU ratio before |\n|---|---|---|---|---|---|---|---|---|---|")
    print(f"| `python -c \"import numpy\"` | {now['numpy s']:.3f} s | "
          f"{', '.join(f'{t:.2f}' for t in times['numpy'])} | 1.0x | {then('numpy s', '.3f', ' s')} | | | "
          f"{now['numpy cpu']:.3f} s | 1.0x | |")
    met = now["import akasha ms"] <= IMPORT_TARGET_MS
    ok &= met
    print(f"| `import akasha` | {now['import akasha ms']:.0f} ms | "
          f"{', '.join(f'{t:.0f}' for t in times['import akasha ms'])} | | {then('import akasha ms', '.0f', ' ms')} "
          f"| <= {IMPORT_TARGET_MS:.0f} ms | {'met' if met else 'MISSED'} | | | |")
    for name in ("re-ask", "first ask"):
        met = now[f"{name} x"] <= TARGETS[name]
        ok &= met
        print(f"| {name} (`akasha ask examples/docs ...`) | {now[f'{name} s']:.3f} s | "
              f"{', '.join(f'{t:.2f}' for t in times[name])} | {now[f'{name} x']:.1f}x | {then(f'{name} x', '.1f', 'x')} "
              f"| <= {TARGETS[name]:.0f}x | {'met' if met else 'MISSED'} | {now[f'{name} cpu']:.3f} s | "
              f"{now[f'{name} cpu x']:.1f}x | {then(f'{name} cpu x', '.1f', 'x')} |")
    t = figures.get("indexing")
    if t:
        print(f"\nindexing {t['akasha_chunks']} chunks ({t['akasha_embedded']} embedded), model load included; "
              f"torch imported by akasha: {t['torch_loaded_by_akasha']}")
        print("| system | seconds | chunks/s | akasha's throughput ratio | before | target | | CPU s "
              "| CPU ratio | CPU ratio before |\n|---|---|---|---|---|---|---|---|---|---|")
        print(f"| akasha CorpusIndex.sync | {t['akasha_s']:.2f} | {now['akasha chunks/s']:.1f} | | "
              f"{then('akasha s', '.2f', ' s')} | | | {t['akasha_cpu']:.2f} | | |")
        for label, key, seconds, cpu in (
            ("sentence-transformers, import included", "st cold", t["st_import_s"] + t["st_load_encode_s"],
             t["st_import_cpu"] + t["st_load_encode_cpu"]),
            ("sentence-transformers, torch already imported", "st warm", t["st_load_encode_s"],
             t["st_load_encode_cpu"]),
        ):
            ratio = now[f"{key} x"]
            met = ratio >= THROUGHPUT_TARGET
            print(f"| {label} | {seconds:.2f} | {t['st_texts'] / seconds:.1f} | {ratio:.2f}x | "
                  f"{then(f'{key} x', '.2f', 'x')} | >= {THROUGHPUT_TARGET}x | {'met' if met else 'MISSED'} | "
                  f"{cpu:.2f} | {now[f'{key} cpu x']:.2f}x | {then(f'{key} cpu x', '.2f', 'x')} |")
        if "model_gflop" in t:
            work, peak = t["model_gflop"], t["matmul_gflops"]
            needed = THROUGHPUT_TARGET * work / t["st_load_encode_s"]
            print(f"\nthe encoder's work: {work:.0f} GFLOP ({work / t['akasha_chunks']:.2f} a chunk); "
                  f"float32 matrix multiply on this machine (torch, every core): {peak:.0f} GFLOP/s. "
                  f"akasha sustained {work / t['akasha_s']:.0f} GFLOP/s, model load included; "
                  f"sentence-transformers {work / t['st_load_encode_s']:.0f} with torch imported; "
                  f"{THROUGHPUT_TARGET}x that needs {needed:.0f} GFLOP/s ({needed / peak:.0%} of the multiply rate).")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--skip-indexing", action="store_true", help="only the process timings")
    parser.add_argument("--save", type=Path, help="write this run's figures as JSON (e.g. bench/results/cold.json)")
    parser.add_argument("--before", type=Path, help="a run saved with --save: printed beside this one")
    parser.add_argument("--report", type=Path, help="print a saved run (with --before, beside it) and exit")
    args = parser.parse_args(argv)
    before = json.loads(args.before.read_text(encoding="utf-8")) if args.before else None
    if args.report:
        return 0 if report(json.loads(args.report.read_text(encoding="utf-8")), before) else 1
    figures = measure(args.runs, args.chunks, args.skip_indexing)
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0 if report(figures, before) else 1


if __name__ == "__main__":
    sys.exit(main())
