"""Fit the system prompt, history, question and retrieved chunks into ``max_input_tokens``.

Chunks are taken in ranked order; one that does not fit the room left is skipped and the next
tried. Only when no chunk fits at all is the best one truncated to the room left (at least
``MIN_TRUNCATED_TOKENS``), so the model never answers from nothing when some evidence could have
fitted; when not even that fits, or the prompt alone is over budget, :class:`~akasha.errors.BudgetError`
names the numbers. Tokens are the answer model's counter's (:func:`akasha.tokens.counter_for`) plus
``MESSAGE_OVERHEAD`` per message for the role framing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from akasha.errors import BudgetError
from akasha.llm.base import Message
from akasha.prompts import escape_body, format_document, user_message
from akasha.tokens import TokenCounter, count_many
from akasha.types import Hit

#: Tokens a chat format spends per message on role markers (OpenAI documents 3-4).
MESSAGE_OVERHEAD = 4
#: A truncated chunk shorter than this is not worth sending.
MIN_TRUNCATED_TOKENS = 32
#: Tokens kept free inside a known context window for what a chat template adds beyond
#: ``MESSAGE_OVERHEAD`` per message (ChatML spends 5 per message and 3 to open the reply).
TEMPLATE_RESERVE = 16


@dataclass
class PackResult:
    """The messages to send and what went into them."""

    messages: list[Message]
    hits: list[Hit]
    prompt_tokens: int
    doc_tokens: int
    skipped: list[str] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)


def messages_tokens(messages: Sequence[Message], counter: TokenCounter) -> int:
    """Input tokens of a chat request: content tokens plus per-message framing."""
    return sum(counter.count(m.get("content", "")) + MESSAGE_OVERHEAD for m in messages)


def _normalise_history(history: Sequence[object] | None) -> list[Message]:
    """History as OpenAI-shaped messages; plain strings alternate user/assistant."""
    out: list[Message] = []
    for i, item in enumerate(history or ()):
        if isinstance(item, dict):
            out.append({"role": str(item.get("role", "user")), "content": str(item.get("content", ""))})
        else:
            out.append({"role": "user" if i % 2 == 0 else "assistant", "content": str(item)})
    return out


def pack(*, system: str, question: str, hits: Sequence[Hit], max_input_tokens: int, counter: TokenCounter,
         history: Sequence[object] | None = None, budget_name: str | None = None) -> PackResult:
    """Build the chat messages for ``question`` with as many ``hits`` as fit ``max_input_tokens``; ``budget_name``
    names the budget in error messages when it is not that option itself (a model context less the reply)."""
    limit = f"max_input_tokens is {max_input_tokens}" if budget_name is None else (
        f"{budget_name} is {max_input_tokens}")
    head: list[Message] = [{"role": "system", "content": system}] if system else []
    head += _normalise_history(history)
    fixed = messages_tokens(head, counter) + MESSAGE_OVERHEAD

    def user_tokens(blocks: list[str]) -> int:
        return counter.count(user_message(question, blocks))

    base = fixed + user_tokens([])
    if base > max_input_tokens:
        raise BudgetError(
            f"the prompt alone (system prompt, history and question) needs {base} tokens but "
            f"{limit}; shorten the question or history, or raise max_input_tokens"
            + ("" if budget_name is None else " (and the model's context, or lower max_output_tokens)")
        )

    blocks: list[str] = []
    chosen: list[Hit] = []
    truncated: list[str] = []
    # A block costs its frame (no text) plus its text's count, which count_many keeps per tokenizer and
    # text (a chunk is counted once in the process, not once per question), plus the "\n\n" separator.
    # BPE merges across block boundaries can make the total differ by a token or two: verified below.
    text_tokens = count_many(counter, [escape_body(hit.chunk.text) for hit in hits])
    wrapper = fixed + user_tokens([""])
    running = wrapper
    for hit, n_text in zip(hits, text_tokens, strict=True):
        frame = format_document(len(blocks) + 1, hit, text="")
        cost = counter.count(frame) + n_text + (1 if blocks else 0)
        if running + cost <= max_input_tokens:
            blocks.append(format_document(len(blocks) + 1, hit))
            chosen.append(hit)
            running += cost
    while blocks and fixed + user_tokens(blocks) > max_input_tokens:
        blocks.pop()
        chosen.pop()
    kept = {id(h) for h in chosen}
    skipped = [h.id for h in hits if id(h) not in kept]

    if not chosen and hits:
        # Nothing fits whole: send the best chunk cut down to the room left.
        best = hits[0]
        empty_block = format_document(1, best, text="")
        room = max_input_tokens - fixed - user_tokens([empty_block])
        if room >= MIN_TRUNCATED_TOKENS:
            text = counter.truncate(best.chunk.text, room)
            while text and fixed + user_tokens([format_document(1, best, text=text)]) > max_input_tokens:
                text = counter.truncate(text, max(counter.count(text) - 4, 0))
            if text:
                blocks = [format_document(1, best, text=text)]
                chosen = [best]
                truncated = [best.id]
                skipped = [s for s in skipped if s != best.id]
        if not chosen:
            whole = fixed + user_tokens([format_document(1, best)])
            raise BudgetError(
                f"{limit} but the prompt alone takes {base} tokens, leaving no room "
                f"for any of the {len(hits)} retrieved chunks (the best needs {whole - base} tokens, "
                f"{MIN_TRUNCATED_TOKENS} when cut down); raise max_input_tokens to at least "
                f"{max_input_tokens - room + MIN_TRUNCATED_TOKENS}, or lower chunk_size"
            )

    user = user_message(question, blocks)
    messages = head + [{"role": "user", "content": user}]
    prompt_tokens = messages_tokens(messages, counter)
    doc_tokens = prompt_tokens - base if blocks else 0
    return PackResult(messages, chosen, prompt_tokens, doc_tokens, skipped, truncated)


__all__ = ["MESSAGE_OVERHEAD", "TEMPLATE_RESERVE", "PackResult", "messages_tokens", "pack"]
