"""Self-ask: a query transform that decomposes a question into follow-ups, answers each, then the original.

The answer model is asked for ``{"questions": [...]}`` (at most ``MAX_FOLLOWUPS``); each follow-up
is answered with retrieval; the original is answered from those answers plus the union of all the
documents retrieved. A decomposition that is not valid JSON of that shape (the offline extractive
model never writes one) degrades to a plain call by design: logged at WARNING, the ``decompose``
trace entry says ``"out": "fallback"``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence

from akasha.llm.base import GenerationOptions, Message
from akasha.pipeline import Answer, DataSource, Pipeline
from akasha.trace import Trace
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


def decompose(pipeline: Pipeline, question: str, trace: Trace) -> list[str] | None:
    """The follow-up questions for ``question`` (the ``decompose`` stage); None when the call must fall back."""
    model = pipeline.chat_model
    messages: list[Message] = [
        {"role": "system", "content": DECOMPOSE_SYSTEM.format(n=MAX_FOLLOWUPS)},
        {"role": "user", "content": question},
    ]
    with trace.stage("decompose", model.name, 1) as entry:
        reply = model.generate(messages, GenerationOptions(max_output_tokens=256, temperature=0.0))
        try:
            questions = parse_followups(str(reply))
        except ValueError as exc:
            logger.warning("self-ask: the model's follow-up questions were not valid JSON (%s); answering directly "
                           "instead", exc)
            entry["out"] = "fallback"
            entry["fallback"] = f"plain call ({type(exc).__name__}: {str(exc)[:200]})"
            return None
        entry["out"] = len(questions)
    return questions


def union(groups: Sequence[Sequence[Hit]]) -> list[Hit]:
    """Every hit once (by chunk id), first occurrence first."""
    first: dict[str, Hit] = {}
    for group in groups:
        for hit in group:
            first.setdefault(hit.id, hit)
    return list(first.values())


def prepare(pipeline: Pipeline, question: str, *, data_source: DataSource | None = None,
            history: Sequence[object] | None = None, answer: Answer | None = None) -> Answer:
    """Everything before the final generation of a self-ask call; fills ``answer`` when given."""
    answer = Answer(question) if answer is None else answer
    trace = answer.trace
    followups = decompose(pipeline, question, trace)
    if followups is None:
        # Degrade by design: a plain call, the decomposition attempt staying first in the trace.
        return pipeline.prepare(question, data_source=data_source, history=history, answer=answer)
    with pipeline.locked():  # one corpus for the question and every follow-up
        main = pipeline.first_stage(question, data_source=data_source, trace=trace, answer=answer)
        pending = []
        for followup in followups:
            sub = Trace()
            pending.append((followup, sub, pipeline.first_stage(followup, trace=sub)))
    groups: list[list[Hit]] = [pipeline.second_stage(question, main, trace=trace)]
    for followup, sub, hits in pending:
        hits = pipeline.second_stage(followup, hits, trace=sub)
        packed = pipeline.pack(followup, hits, None, trace=sub)
        reply = pipeline.complete(packed.messages, trace=sub, prompt_tokens=packed.prompt_tokens)
        for entry in sub:
            entry["followup"] = followup
        trace.extend(sub)
        answer.followups.append({"question": followup, "answer": reply, "docs": list(packed.hits)})
        groups.append(list(packed.hits))

    notes = "\n".join(f"- {f['question']} -> {f['answer'].strip()}" for f in answer.followups)
    heading = "Answers to follow-up questions (from the same documents):"
    final = question if not notes else f"{question}\n\n{heading}\n{notes}"
    answer.set_packed(pipeline.pack(final, union(groups), history, trace=trace))
    return answer


__all__ = ["DECOMPOSE_SYSTEM", "MAX_FOLLOWUPS", "decompose", "parse_followups", "prepare", "union"]
