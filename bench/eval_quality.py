"""Answer-finding and answer quality on several real question sets, per search type, plus a fusion study.

    apt-get update && apt-get install -y python3.11-doc debian-faq debian-reference-en \\
        debian-faq-zh-cn debian-reference-zh-cn debian-faq-ja \\
        debian-reference-ja                                            # once
    python -m bench.eval_quality                                       # every set, MiniLM (packaged, offline)
    python -m bench.eval_quality --sets python-faq --no-study          # one set, tables only
    python -m bench.eval_quality --answer-study --misses               # extractive answerer variants

The sets (built on first use by their builders, kept in the gitignored bench/.data/):

* ``python-faq``: the Python FAQ (python3.11-doc) among the tutorial, HOWTOs, language
  reference and "using" manuals (bench/build_eval_set.py);
* ``debian-faq-en``: the Debian FAQ among the Debian Reference chapters (bench/build_debian_faq.py);
  the tuning set: fusion settings were explored on it first, then checked on all others;
* ``debian-faq-zh-cn``: the same in Simplified Chinese (the packaged MiniLM does not read Chinese);
* ``debian-faq-ja``: the Japanese Debian FAQ alone (no Japanese Debian Reference installed by default);
* ``debian-reference-ja``: the Japanese Debian Reference, its section titles as queries and each
  section's text as the answer, titles removed from the corpus (bench/build_debian_reference_ja.py).

For every set it indexes the corpus once through ``akasha.evaluation.evaluate`` (the
pipeline ``akasha.RAG`` runs; vectors cached under bench/.data/eval-cache/<set>, so a
second run embeds nothing) and prints recall@1/5, MRR@10 and nDCG@10 per search type,
then answers every question with the offline ``extractive`` model over the default
``auto`` search (answer@80: share of replies quoting 80 characters of the reference;
answer_chars: mean reply length), checks the issue's rules (auto >= max(bm25, knn, hybrid)
on recall@5 and MRR@10) and, unless ``--no-study``, scores fusions computed offline from
the same bm25 and knn rankings (RRF variants, min-max sums, akasha's adaptive fusion
with its coverage signal switched off), so a fusion change is chosen on every set at once.
Results land in bench/results/eval_quality.json and one HTML report per set.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
DATA = Path(__file__).resolve().parent / ".data"
log = logging.getLogger("bench.eval_quality")


def _build_python_faq(out: Path) -> dict:
    from bench.build_eval_set import build

    return build(out=out)


def _debian(lang: str, distractors: bool = True) -> Callable[[Path], dict]:
    def run(out: Path) -> dict:
        from bench.build_debian_faq import build

        return build(lang, out, distractors)

    return run


def _build_reference_ja(out: Path) -> dict:
    from bench.build_debian_reference_ja import build

    return build(out)


SETS: dict[str, Callable[[Path], dict]] = {
    "python-faq": _build_python_faq,
    "debian-faq-en": _debian("en"),
    "debian-faq-zh-cn": _debian("zh-cn"),
    "debian-faq-ja": _debian("ja", distractors=False),
    "debian-reference-ja": _build_reference_ja,
}
TUNING_SET = "debian-faq-en"


class _Hit:
    """What the metrics need of a hit: its text and its file."""

    def __init__(self, chunk) -> None:
        self.text = chunk.text
        self.path = chunk.metadata.get("source")


def fusion_variants() -> dict[str, Callable]:
    """name -> fuse(query, bm25 list, knn list, corpus size) over (id, score) lists, best first."""
    from akasha.retrieval import fusion

    variants: dict[str, Callable] = {"bm25 only": lambda q, b, v, n: b, "knn only": lambda q, b, v, n: v}
    for k in (10, 60):
        variants[f"rrf k={k}"] = lambda q, b, v, n, k=k: fusion.rrf([v, b], k=k)
    for w in (0.2, 0.4, 0.6):
        variants[f"rrf k=10 bm25 w={w}"] = lambda q, b, v, n, w=w: fusion.rrf([v, b], k=10, weights=[1 - w, w])
    for w in (0.3, 0.5, 0.7):
        variants[f"minmax bm25 w={w}"] = lambda q, b, v, n, w=w: fusion.weighted([v, b], [1 - w, w])
    variants["adaptive (auto)"] = lambda q, b, v, n: fusion.smooth_neighbours(fusion.adaptive(q, v, b, n))
    variants["adaptive without neighbours"] = lambda q, b, v, n: fusion.adaptive(q, v, b, n)
    variants["adaptive without coverage"] = lambda q, b, v, n: fusion.smooth_neighbours(
        fusion.adaptive(q, v, b, n, dense_reads=True))
    return variants


def fusion_study(index, questions, folder: Path, depth: int = 50) -> list[dict]:
    """recall@1/5, MRR@10, nDCG@10 of each fusion of the index's own bm25 and knn rankings (``depth`` each)."""
    from akasha.evaluation.runner import evaluate_search

    chunks = {c.id: c for c in index.chunks}
    rankings = {}
    for q in questions:
        bm25 = [(h.id, h.score) for h in index.search(q.question, k=depth, search_type="bm25")]
        knn = [(h.id, h.score) for h in index.search(q.question, k=depth, search_type="knn")]
        rankings[q.question] = (bm25, knn)
    rows = []
    for name, fuse in fusion_variants().items():
        def search(question, _type, _reranker, k, fuse=fuse):
            b, v = rankings[question]
            return [_Hit(chunks[item]) for item, _ in fuse(question, b, v, len(chunks))[:k]]

        row = evaluate_search(search, questions, search_types=[name], folder=folder).rows[0]
        rows.append({"fusion": name, **{m: row[m] for m in ("recall@1", "recall@5", "mrr@10", "ndcg@10")}})
    return rows


def check_rules(table) -> list[str]:
    """The issue's rules: auto >= each single retriever and hybrid on recall@5 and MRR@10."""
    lines: list[str] = []
    names = {r["search_type"] for r in table.rows}
    auto = table.row("auto") if "auto" in names else None
    for metric in ("recall@5", "mrr@10"):
        rivals = {name: table.row(name)[metric] for name in ("bm25", "knn", "hybrid") if name in names}
        if auto is None or not rivals:  # --search-types without auto or without a rival: nothing to compare
            break
        best_name, best = max(rivals.items(), key=lambda pair: pair[1])
        verdict = "MET " if auto[metric] >= best - 1e-9 else "MISS"
        lines.append(f"{verdict} auto {metric} {auto[metric]:.4f} vs best of {', '.join(rivals)} ({best_name}) {best:.4f}")
    return lines


def _set_paths(name: str) -> tuple[Path, Path, Path]:
    """(corpus folder, questions file, vector cache folder) of a set, building the set on first use."""
    root = DATA / name
    if not (root / "questions.jsonl").exists():
        log.info("building %s: %s", name, SETS[name](root))
    return root / "corpus", root / "questions.jsonl", DATA / "eval-cache" / name


def answer_prompts(name: str, args: argparse.Namespace) -> list[dict]:
    """The packed prompt of every answerable question of a set, as ``RAG(model="extractive")`` sends it (``auto``).

    Kept in ``bench/.data/eval-cache/<set>/answer-prompts.json`` (``--refresh-prompts`` rebuilds it), so an
    answerer study scores every variant on the same prompts without indexing or retrieving again; each
    entry holds the question, the reference answer, the messages, and the hits' file names and
    ``Sources:`` line (what the pipeline appends to a reply that names no file).
    """
    folder, questions_file, cache = _set_paths(name)
    path = cache / "answer-prompts.json"
    if path.exists() and not args.refresh_prompts:
        return json.loads(path.read_text(encoding="utf-8"))
    from akasha.assemble import Components, from_options
    from akasha.evaluation.relevance import load_questions
    from akasha.options import RAGOptions
    from akasha.prompts import sources_line

    start = time.perf_counter()
    options = RAGOptions(model="extractive", embeddings=args.embeddings, chunk_size=1000, cache_dir=cache,
                         search_type="auto")
    pipeline = from_options(options, Components())
    pipeline.sync(folder)
    prompts = []
    for q in load_questions(questions_file):
        if not q.answer:
            continue
        prepared = pipeline.prepare(q.question)
        prompts.append({"question": q.question, "answer": q.answer, "messages": prepared.messages,
                        "files": [Path(str(h.path)).name.lower() for h in prepared.docs if h.path],
                        "sources": sources_line(prepared.docs)})
    pipeline.close()
    path.write_text(json.dumps(prompts, ensure_ascii=False), encoding="utf-8")
    log.info("%s: %d prompts packed in %.1f s", name, len(prompts), time.perf_counter() - start)
    return prompts


def _answer_variants() -> dict:
    """name -> ExtractiveSettings of the answerer variants ``--answer-study`` scores (the first is the default).

    Each row after the first changes one setting of the default (docs/quality.md, "The extractive answerer").
    """
    from akasha.llm.extractive import ExtractiveSettings as S

    kept = S()
    return {
        "default": kept,
        "budget 560": S(budget=560),
        "budget 640": S(budget=640),
        "4 sentences": S(sentences=4),
        "weights 0.6/0.3/0.1": S(weights=(0.6, 0.3, 0.1)),
        "weights 0.6/0.2/0.2": S(weights=(0.6, 0.2, 0.2)),
        "weights 0.75/0.1/0.15": S(weights=(0.75, 0.1, 0.15)),
        "cjk weights = weights": S(cjk_weights=kept.weights),
        "cjk weights 0.6/0.3/0.1": S(cjk_weights=(0.6, 0.3, 0.1)),
        "cjk weights 0.4/0.4/0.2": S(cjk_weights=(0.4, 0.4, 0.2)),
        "window 60": S(min_quote_chars=60),
        "window 100": S(min_quote_chars=100),
        "keep 0.4": S(keep_fraction=0.4),
        "keep 0.6": S(keep_fraction=0.6),
        "embed 60": S(embed_candidates=60),
        "embed 30": S(embed_candidates=30),
        "embed 20": S(embed_candidates=20),
        "cjk weights 0.2/0.5/0.3": S(cjk_weights=(0.2, 0.5, 0.3)),
        "cjk weights 0/0.6/0.4": S(cjk_weights=(0.0, 0.6, 0.4)),
    }


def answer_study(name: str, args: argparse.Namespace) -> list[dict]:
    """answer@80 and mean reply length of each extractive answerer variant (``_answer_variants``) on the same prompts."""
    from akasha.embeddings import resolve_embedder
    from akasha.evaluation.metrics import SPAN_CHARS, contains_span
    from akasha.llm.base import GenerationOptions
    from akasha.llm.extractive import DEFAULT_EMBEDDINGS, ExtractiveAnswerer

    prompts = answer_prompts(name, args)
    embedder = resolve_embedder(DEFAULT_EMBEDDINGS)
    cache = DATA / "eval-cache" / name
    variants = _answer_variants()
    wanted = args.answer_variants.split(",") if args.answer_variants else list(variants)
    rows = []
    for variant in wanted:
        if variant not in variants:
            raise SystemExit(f"unknown answer variant {variant!r}; known: {', '.join(variants)}")
        answerer = ExtractiveAnswerer(embedder=embedder, cache_dir=cache, settings=variants[variant])
        start = time.perf_counter()
        quoted, lengths, misses = 0, 0, []
        for p in prompts:
            reply = answerer.generate(p["messages"], GenerationOptions())
            if not any(f in reply.lower() for f in p["files"]) and p["sources"]:
                reply = f"{reply.rstrip()}\n\n{p['sources']}"  # what the pipeline appends (with_sources)
            hit = contains_span(reply, p["answer"], SPAN_CHARS)
            quoted += hit
            lengths += len(reply)
            if not hit:
                misses.append({"question": p["question"], "reply": reply, "answer": p["answer"]})
        answerer.close()
        row = {"variant": variant, "answer@80": quoted / len(prompts), "answer_chars": lengths / len(prompts)}
        rows.append(row)
        log.info("%s %s: answer@80 %.4f, %.0f chars (%.1f s)", name, variant, row["answer@80"], row["answer_chars"],
                 time.perf_counter() - start)
        if args.misses:
            slug = re.sub(r"[^\w.-]+", "_", variant)
            (RESULTS / f"answer-misses-{name}-{slug}.json").write_text(
                json.dumps(misses, indent=1, ensure_ascii=False), encoding="utf-8")
    return rows


def run_set(name: str, args: argparse.Namespace) -> dict:
    """Evaluate one set; return its tables as JSON-ready data."""
    from akasha.evaluation.relevance import load_questions
    from akasha.evaluation.runner import evaluate

    folder, questions_file, cache = _set_paths(name)
    if args.answer_study:
        rows = answer_study(name, args)
        print(f"\n#### Extractive answerer variants on {name} (the same packed prompts, auto)\n")
        print("| variant | answer@80 | answer_chars |\n|---|---|---|")
        for row in rows:
            print(f"| {row['variant']} | {row['answer@80']:.4f} | {row['answer_chars']:.0f} |")
        return {"set": name, "answer_study": rows}
    common = dict(embeddings=args.embeddings, cache_dir=cache, chunk_size=1000)
    questions = load_questions(questions_file)
    out: dict = {"set": name, "questions": len(questions)}
    if not args.answers_only:
        start = time.perf_counter()
        table = evaluate(folder, questions_file, search_types=args.search_types.split(","), answers=False,
                         report=RESULTS / f"eval_quality-{name}.html", **common)
        log.info("%s: retrieval table in %.1f s", name, time.perf_counter() - start)
        print(f"\n### {name}: {len(questions)} questions, {table.info['chunks']:,} chunks, {args.embeddings}"
              f"{' (tuning set)' if name == TUNING_SET else ''}\n")
        print(table.to_markdown())
        print()
        for line in check_rules(table):
            print(line)
        out.update(chunks=table.info["chunks"], rows=table.rows)
    else:
        print(f"\n### {name}: {len(questions)} questions (answers only)")
    if not args.no_answers:
        start = time.perf_counter()
        answered = evaluate(folder, questions_file, search_types=args.answer_types.split(","), answers=True, **common)
        log.info("%s: answers in %.1f s", name, time.perf_counter() - start)
        print("\n| search_type | answer@80 | answer_chars |\n|---|---|---|")
        for row in answered.rows:
            print(f"| {row['search_type']} | {row['answer@80']:.4f} | {row['answer_chars']:.0f} |")
        out["answers"] = [{k: row[k] for k in ("search_type", "answer@80", "answer_chars")} for row in answered.rows]
    if not args.no_study and not args.answers_only:
        from akasha.embeddings import resolve_embedder
        from akasha.index import CorpusIndex

        with CorpusIndex(resolve_embedder(args.embeddings), chunk_size=1000, cache_dir=cache) as index:
            index.sync(folder, progress=False)
            study = fusion_study(index, questions, folder, args.depth)
        print(f"\n#### Fusion study on {name} (the same bm25/knn rankings, top {args.depth} each)\n")
        print("| fusion | recall@1 | recall@5 | MRR@10 | nDCG@10 |\n|---|---|---|---|---|")
        for row in study:
            print(f"| {row['fusion']} | {row['recall@1']:.4f} | {row['recall@5']:.4f} | {row['mrr@10']:.4f} | {row['ndcg@10']:.4f} |")
        out["fusion_study"] = study
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, from {', '.join(SETS)}")
    parser.add_argument("--embeddings", default="hf:all-MiniLM-L6-v2")
    parser.add_argument("--search-types", default="auto,bm25,knn,hybrid,mmr")
    parser.add_argument("--answer-types", default="auto", help="search types whose answers are scored (default auto)")
    parser.add_argument("--depth", type=int, default=50, help="candidates per retriever in the fusion study")
    parser.add_argument("--no-answers", action="store_true", help="skip answering (retrieval metrics only)")
    parser.add_argument("--no-study", action="store_true", help="skip the offline fusion study")
    parser.add_argument("--answers-only", action="store_true",
                        help="only the answer table (no retrieval table, no fusion study)")
    parser.add_argument("--answer-study", action="store_true",
                        help="only score extractive answerer variants on cached packed prompts (_answer_variants in this file)")
    parser.add_argument("--answer-variants", default="", help="comma-separated variant names for --answer-study")
    parser.add_argument("--refresh-prompts", action="store_true", help="re-pack the prompts of --answer-study")
    parser.add_argument("--misses", action="store_true",
                        help="with --answer-study, write each variant's missed questions to bench/results/")
    parser.add_argument("--out", type=Path, default=RESULTS / "eval_quality.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    unknown = [name for name in args.sets.split(",") if name not in SETS]
    if unknown:
        parser.error(f"unknown set(s) {', '.join(unknown)}; known: {', '.join(SETS)}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    results = [run_set(name, args) for name in args.sets.split(",")]
    args.out.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"\n(results: {args.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
