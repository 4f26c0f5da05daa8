"""Griffe extension: render akasha's reST-flavoured docstrings as Markdown in the API reference.

akasha's docstrings follow the Python convention of reST roles (``:class:`~akasha.types.Hit```),
doctest examples (``>>> ...``) and literal blocks introduced by ``::``. mkdocstrings
renders Markdown, where those would show up verbatim, so this extension rewrites them
when the docstrings are loaded (the source files are not touched):

* ``:role:`~pkg.mod.Name``` -> ```Name```, ``:role:`pkg.mod.Name``` -> ```pkg.mod.Name```;
* a doctest (from ``>>>`` to the next blank line) -> a fenced ``pycon`` block;
* a paragraph ending in ``::`` -> ``:`` (the indented block after it is already code).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const|ref|term):`(~?)([^`]+)`")


def _role(match: re.Match[str]) -> str:
    short, target = match.groups()
    if short:
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def convert(text: str) -> str:
    """The Markdown form of one docstring (see the module docstring)."""
    text = _ROLE.sub(_role, text)
    out: list[str] = []
    in_doctest = False
    in_fence = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            in_fence = not in_fence
        # A doctest runs from its first ">>>" to the next blank line (its output included).
        is_doctest = not in_fence and (stripped.startswith(">>>") or (in_doctest and stripped != ""))
        if is_doctest and not in_doctest:
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}```pycon")
            in_doctest = True
        elif in_doctest and not is_doctest:
            out.append(f"{indent}```")
            in_doctest = False
        if not in_doctest and not in_fence and stripped.endswith("::") and not stripped.startswith(":"):
            line = line[:-1]  # "as follows::" -> "as follows:"
        out.append(line)
    if in_doctest:
        out.append(f"{indent}```")
    return "\n".join(out)


class RstToMarkdown(griffe.Extension):
    """Rewrite every docstring once it is attached to its object."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:  # noqa: ARG002
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value)
