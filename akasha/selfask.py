"""Self-ask: decompose a question into follow-ups, answer each, then answer the original.

1. The answer model is asked for ``{"questions": ["...", ...]}`` (at most
   ``MAX_FOLLOWUPS`` simple questions whose answers together answer the original).
2. Each follow-up is answered with retrieval (search, rerank, pack, generate).
3. The original question is answered from the follow-up answers plus the union
   of the documents retrieved for it and for the follow-ups (deduplicated by
   chunk id, first occurrence first, packed under ``max_input_tokens``).

``rag.docs`` is that union as packed for the final answer; ``rag.followups``
lists ``{"question", "answer", "docs"}``. If the model's decomposition is not
valid JSON of that shape (the offline extractive model never produces any), a
warning is logged and the call degrades to a plain RAG call.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from akasha.llm.base import GenerationOptions, Message
from akasha.options import RAGOptions

if TYPE_CHECKING:
    from akasha.rag import RAG, DataSource, _Run
    from akasha.types import Hit

logger = logging.getLogger(__name__)

MAX_FOLLOWUPS = 3

DECOMPOSE_SYSTEM = (
    "Break the user's question into at most {n} simple follow-up questions whose answers, "
    'taken together, answer it. Reply with JSON only, exactly {{"questions": ["...", "..."]}}. '
    'If the question is already simple, reply {{"questions": []}}.'
)


def parse_followups(text: str, limit: int = MAX_FOLLOWUPS) -> list[str]:
    """The follow-up questions in ``{"questions": [...]}``; ValueError on anything else."""
    raw = text.strip()
    fence = re.match(r"^```(?:json)?\s*(.*?)\s*```$", raw, re.DOTALL | re.IGNORECASE)
    if fence:
        raw = fence.group(1)
    data = json.loads(raw)  # JSONDecodeError is a ValueError
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise ValueError(f'expected {{"questions": [...]}}, got {raw[:200]!r}')
    questions = [q.strip() for q in data["questions"] if isinstance(q, str) and q.strip()]
    if len(questions) != len(data["questions"]):
        raise ValueError("every follow-up question must be a non-empty string")
    return questions[:limit]


def _decompose(rag: RAG, run: _Run, question: str) -> list[str] | None:
    model = rag._chat_model(run.options.model, run.options)
    messages: list[Message] = [
        {"role": "system", "content": DECOMPOSE_SYSTEM.format(n=MAX_FOLLOWUPS)},
        {"role": "user", "content": question},
    ]
    with run.stage("decompose", model.name, 1) as entry:
        reply = model.generate(messages, GenerationOptions(max_output_tokens=256, temperature=0.0))
        try:
            questions = parse_followups(reply)
        except ValueError as exc:
            logger.warning(
                "self-ask: the model's follow-up questions were not valid JSON (%s); answering directly instead", exc
            )
            entry["out"] = "fallback"
            return None
        entry["out"] = len(questions)
    return questions


def _union(groups: Sequence[Sequence[Hit]]) -> list[Hit]:
    seen: set[str] = set()
    out: list[Hit] = []
    for group in groups:
        for hit in group:
            if hit.id not in seen:
                seen.add(hit.id)
                out.append(hit)
    return out


def run_selfask(
    rag: RAG,
    options: RAGOptions,
    data_source: DataSource,
    prompt: str,
    history: Sequence[object] | None,
) -> str | Iterator[str]:
    """The body of :meth:`akasha.rag.RAG.selfask_RAG` (``options`` already merged and validated)."""
    from akasha.rag import _Run

    run = _Run(options, prompt)
    followups = _decompose(rag, run, prompt)
    if not followups:
        if followups is None:
            # Degrade: a plain call, keeping the decomposition attempt in the trace.
            result = rag(data_source, prompt, history, **_as_overrides(options))
            rag.trace[:0] = run.trace
            return result
        followups = []

    rag.followups = []
    groups: list[list[Hit]] = []
    main_hits = rag._rerank(run, prompt, rag._retrieve(run, data_source, prompt))
    groups.append(main_hits)
    model = rag._chat_model(options.model, options)
    for question in followups:
        sub = _Run(options, question)
        hits = rag._rerank(sub, question, rag._retrieve(sub, data_source, question, sync=False))
        packed = rag._pack(sub, question, hits, None)
        with sub.stage("generate", model.name, packed.prompt_tokens) as entry:
            answer = model.generate(packed.messages, rag._generation_options(options))
            entry["out"] = len(answer)
        for item in sub.trace:
            item["followup"] = question
        run.trace.extend(sub.trace)
        rag.followups.append({"question": question, "answer": answer, "docs": list(packed.hits)})
        groups.append(list(packed.hits))

    notes = "\n".join(f"- {f['question']} -> {f['answer'].strip()}" for f in rag.followups)
    final_question = prompt if not notes else f"{prompt}\n\nAnswers to follow-up questions (from the same documents):\n{notes}"
    run.packed = rag._pack(run, final_question, _union(groups), history)
    run.docs = list(run.packed.hits)
    run.question = prompt
    followups_kept = rag.followups
    rag._publish(run)
    rag.followups = followups_kept
    if options.stream:
        return rag._stream(run)
    return rag._finish(run, rag._generate(run))


def _as_overrides(options: RAGOptions) -> dict[str, Any]:
    return {name: getattr(options, name) for name in RAGOptions.names()}
