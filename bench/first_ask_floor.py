"""The least time a first ask over examples/docs can take with today's work, as a ratio to ``import numpy``.

    python -m bench.first_ask_floor [--runs 5]

``python -m bench.cold_start`` times the whole first ask (README question, empty cache). This
script times, each on its own, the parts of it that must happen one after another, and adds them
up: a lower bound for any scheduling of the same work on this machine, to set beside the issue's
target (12x ``import numpy``). The chain, and why each link waits for the one before:

1. the interpreter and the akasha modules a first ask imports before it reads a file;
2. ``import akasha.chunking.recursive`` (the chunker; its own splitter since langchain-text-splitters,
   which took about 0.5 s to import, left the base install): Python imports hold the GIL, so it
   cannot overlap step 1, and no chunk exists before it;
3. embedding the 20 chunks on every core (with the bulk encoder akasha picks here, OpenVINO in
   bfloat16 or onnxruntime; already built): the search needs every chunk's vector;
4. jieba for the Chinese file's BM25 tokens: it runs beside step 3, so at least its CPU time divided
   by the cores is added to it;
5. embedding the answer's 40 candidate sentences: they come from the documents the search returns.

Left out, though the real ask does them too: reading and parsing the files (the PDF and .docx in a
worker process), chunking, building the encoder, BM25, the index's writes, the search,
assembling the answer and exiting. So the real ask is slower than this sum on any machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from bench.cold_start import QUESTION, REPO, TARGETS, _env, _wall

#: The modules ``akasha ask`` imports before it reads its first file (the CLI, the facade, the index,
#: the packaged-model embedder and the loaders).
_FIRST_IMPORTS = "import akasha.cli, akasha.rag, akasha.index, akasha.embeddings.local, akasha.loaders"

#: Prints the splitter import's seconds, after the modules of step 1 (as in an ask: what they share,
#: numpy, asyncio, json and the like, is not counted twice).
_SPLITTER_IMPORT = (f"import time; {_FIRST_IMPORTS}; start = time.perf_counter(); import akasha.chunking.recursive; "
                    "print(time.perf_counter() - start)")

#: Prints one JSON line: the 20 chunks and 40 answer sentences of the README question, each embedded
#: ``runs`` times (median seconds, every core), and jieba's CPU seconds for the Chinese chunks.
_MODEL_CHILD = r"""
import json, statistics, sys, time
runs = int(sys.argv[1])
import akasha
import akasha.llm.extractive as extractive
sentences = []
original = extractive._similarity
def recording(embedder, question, texts, cache):
    sentences.extend(texts)
    return original(embedder, question, texts, cache)
extractive._similarity = recording
rag = akasha.RAG(model="extractive", embeddings="hf:all-MiniLM-L6-v2", cache_dir=":memory:")
rag("examples/docs", sys.argv[2])
from akasha.index import CorpusIndex
from akasha.embeddings import resolve_embedder
index = CorpusIndex(resolve_embedder("hash"), cache_dir=":memory:")
index.sync("examples/docs")
chunks = [chunk.text for chunk in index._chunks.values()]
embedder = resolve_embedder("hf:all-MiniLM-L6-v2")
embedder._folder = embedder._read_folder()
kind, encoder, _ = embedder._construct_bulk(embedder._folder)  # the bulk encoder the ask used
encoder.encode(chunks[:2])
def median_seconds(texts, passages):
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        encoder.encode(texts, [None] * len(texts) if passages else None)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)
figures = {"chunks": len(chunks), "sentences": len(sentences), "workers": encoder.workers, "encoder": kind,
           "chunk_tokens": encoder.folder.token_count(chunks),
           "sentence_tokens": encoder.folder.token_count(sentences),
           "chunks_s": median_seconds(chunks, True), "sentences_s": median_seconds(sentences, False)}
chinese = [text for text in chunks if any("\u4e00" <= ch <= "\u9fff" for ch in text)]
import subprocess
code = ("import json, sys, time; texts = json.loads(sys.stdin.read()); cpu = time.process_time(); "
        "from akasha.retrieval.tokenize import tokenize; [tokenize(t, use_jieba=True) for t in texts]; "
        "print(time.process_time() - cpu)")
jieba = [float(subprocess.run([sys.executable, "-c", code], input=json.dumps(chinese), capture_output=True,
                              text=True, check=True).stdout) for _ in range(runs)]
figures["jieba_cpu"] = statistics.median(jieba)
figures["chinese_chunks"] = len(chinese)
print(json.dumps(figures))
"""


def measure(runs: int) -> dict[str, float]:
    """Each link of the chain (median of ``runs``), in seconds."""
    env = _env()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "akasha")], check=True)
    numpy = [_wall([sys.executable, "-c", "import numpy"], env)[0] for _ in range(runs)]
    imports = [_wall([sys.executable, "-c", _FIRST_IMPORTS], env)[0] for _ in range(runs)]
    splitter = [float(subprocess.run([sys.executable, "-c", _SPLITTER_IMPORT], cwd=REPO, env=env,
                                     capture_output=True, text=True, check=True).stdout) for _ in range(runs)]
    out = subprocess.run([sys.executable, "-c", _MODEL_CHILD, str(runs), QUESTION], cwd=REPO, env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"the model measurements failed: {out.stderr[-2000:]}")
    model = json.loads(out.stdout.strip().splitlines()[-1])
    return {"numpy": statistics.median(numpy), "imports": statistics.median(imports),
            "splitter": statistics.median(splitter), **model}


def report(figures: dict[str, float]) -> None:
    """Print the chain, its sum and the sum's ratio to ``import numpy`` beside the target."""
    numpy = figures["numpy"]
    jieba_share = figures["jieba_cpu"] / figures["workers"]
    links = [
        ("interpreter and akasha's modules up to the first file", figures["imports"],
         f"`python -c \"{_FIRST_IMPORTS}\"`"),
        ("`import akasha.chunking.recursive`", figures["splitter"], "in a fresh process, after the modules above"),
        (f"embedding the {figures['chunks']:.0f} chunks", figures["chunks_s"],
         f"{figures['chunk_tokens']:.0f} tokens, {figures['encoder']}, {figures['workers']:.0f} batches at once, "
         "encoder built"),
        (f"jieba for {figures['chinese_chunks']:.0f} Chinese chunk(s), beside the embedding", jieba_share,
         f"{figures['jieba_cpu']:.3f} CPU-s / {figures['workers']:.0f} cores"),
        (f"embedding the {figures['sentences']:.0f} answer sentences", figures["sentences_s"],
         f"{figures['sentence_tokens']:.0f} tokens"),
    ]
    print(f"`python -c \"import numpy\"`: {numpy:.3f} s (the yardstick)\n")
    print("| link | seconds | ratio to `import numpy` | measured as |\n|---|---|---|---|")
    total = 0.0
    for label, seconds, how in links:
        total += seconds
        print(f"| {label} | {seconds:.3f} | {seconds / numpy:.1f}x | {how} |")
    target = TARGETS["first ask"]
    print(f"| **sum: the least a first ask can take** | **{total:.3f}** | **{total / numpy:.1f}x** | "
          f"target <= {target:.0f}x = {target * numpy:.3f} s |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    report(measure(args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
