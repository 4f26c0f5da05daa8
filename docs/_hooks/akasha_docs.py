"""MkDocs hook: pages that are generated from the code, and checks that fail the build.

Three parts of the site must never drift from the code, so they are not written by hand:

* ``options.md``: the table of every ``akasha.RAG`` option with its default comes from
  the constructor's signature, and every option must have its own ``### `name` `` section
  (the section's "Default" line is inserted from the signature too).
* ``cli.md``: the help of ``akasha`` and each subcommand comes from the argparse parser.
* ``troubleshooting.md``: every error class in ``akasha/errors.py`` must have a
  ``### ClassName`` section, and each section gets the list of places in ``akasha/`` that
  raise it, read from the source with :mod:`ast`.

The functions are plain so the tests (tests/test_docs_*.py) call them without a build.
A missing section raises :class:`mkdocs.exceptions.PluginError`, which fails ``mkdocs build``.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import inspect
import os
import re
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "akasha"

OPTIONS_MARK = "<!-- akasha:options-table -->"
CLI_MARK = "<!-- akasha:cli -->"
RAISES_MARK = "<!-- akasha:other-exceptions -->"


class DocsCheckError(Exception):
    """The docs disagree with the code (an option, error class or CLI flag is missing)."""


# --------------------------------------------------------------------------- options


def rag_options() -> list[inspect.Parameter]:
    """Every keyword option of ``akasha.RAG(...)``, in signature order."""
    from akasha.rag import RAG

    params = inspect.signature(RAG.__init__).parameters.values()
    return [
        p
        for p in params
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def format_default(value: Any) -> str:
    if value is inspect.Parameter.empty:
        return "required"
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return repr(value)


def option_comments(path: Path = PACKAGE / "options.py") -> dict[str, str]:
    """The ``#:`` comment above each field of ``RAGOptions`` (what the option means)."""
    comments: dict[str, str] = {}
    pending: list[str] = []
    field = re.compile(r"^\s+([a-z_][a-z0-9_]*)\s*:")
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        match = field.match(line)
        if match and pending:
            comments[match.group(1)] = " ".join(pending)
        pending = []
    return comments


def _escape_outside_code(text: str) -> str:
    """``x`` (reST) -> `x`, and ``<``/``>`` outside code spans as entities (not HTML tags)."""
    text = text.replace("``", "`")
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # even parts are outside code spans
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def options_table() -> str:
    meanings = option_comments()
    rows = ["| Option | Default | Meaning |", "| --- | --- | --- |"]
    for p in rag_options():
        meaning = _escape_outside_code(meanings.get(p.name, "")).replace("|", "\\|")
        rows.append(f"| [`{p.name}`](#{p.name}) | `{format_default(p.default)}` | {meaning} |")
    return "\n".join(rows)


_OPTION_HEADING = re.compile(r"^### `([A-Za-z_][A-Za-z0-9_]*)`\s*$", re.M)


def documented_options(markdown: str) -> list[str]:
    return _OPTION_HEADING.findall(markdown)


def check_options_page(markdown: str) -> None:
    """Raise DocsCheckError unless each RAG option has exactly one section and no stale ones."""
    names = [p.name for p in rag_options()]
    documented = documented_options(markdown)
    missing = [n for n in names if n not in documented]
    stale = [n for n in documented if n not in names]
    dupes = sorted({n for n in documented if documented.count(n) > 1})
    problems = []
    from akasha.options import RAGOptions

    if set(names) != set(RAGOptions.names()):
        problems.append(
            "akasha.RAG.__init__ and akasha.options.RAGOptions disagree: "
            f"{sorted(set(names) ^ set(RAGOptions.names()))}"
        )
    if missing:
        problems.append(f"options of akasha.RAG with no '### `name`' section: {', '.join(missing)}")
    if stale:
        problems.append(f"sections for options akasha.RAG does not have: {', '.join(stale)}")
    if dupes:
        problems.append(f"options documented twice: {', '.join(dupes)}")
    if problems:
        raise DocsCheckError("docs/options.md: " + "; ".join(problems))


def render_options_page(markdown: str) -> str:
    check_options_page(markdown)
    defaults = {p.name: format_default(p.default) for p in rag_options()}

    def add_default(match: re.Match[str]) -> str:
        name = match.group(1)
        return (
            f"### `{name}`\n\n"
            f"**Default:** `{defaults[name]}`{{ .akasha-default }}\n"
        )

    markdown = _OPTION_HEADING.sub(add_default, markdown)
    return markdown.replace(OPTIONS_MARK, options_table())


# --------------------------------------------------------------------------- errors


def error_classes() -> list[type[BaseException]]:
    """Every exception class defined in akasha/errors.py, in source order."""
    import akasha.errors as errors

    found = []
    for name, obj in vars(errors).items():
        if (
            inspect.isclass(obj)
            and issubclass(obj, BaseException)
            and obj.__module__ == errors.__name__
            and obj.__name__ == name
        ):
            found.append(obj)
    return found


def error_class_names(package: Path = PACKAGE) -> list[str]:
    """Every error class a user can meet: akasha/errors.py, plus their subclasses elsewhere.

    Subclasses defined in other modules (say a loader's own error class) are
    found by reading the source, so a new error
    class anywhere in the package needs a troubleshooting section too.
    """
    names = [c.__name__ for c in error_classes()]
    known = set(names)
    bases: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found = {b.id if isinstance(b, ast.Name) else b.attr for b in node.bases
                         if isinstance(b, (ast.Name, ast.Attribute))}
                bases.setdefault(node.name, set()).update(found)
    changed = True
    while changed:
        changed = False
        for name, parents in bases.items():
            if name not in known and parents & known:
                known.add(name)
                names.append(name)
                changed = True
    return names


class RaiseSite(NamedTuple):
    exception: str
    path: str  # relative to the repository root
    line: int
    function: str
    arguments: str
    args: tuple[str, ...] = ()  # each positional argument's source text


def _qualname_stack(tree: ast.AST) -> dict[ast.AST, str]:
    names: dict[ast.AST, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qual = f"{prefix}.{child.name}" if prefix else child.name
                names[child] = qual
                visit(child, qual)
            else:
                names[child] = prefix
                visit(child, prefix)

    visit(tree, "")
    return names


def _call_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def raise_sites(package: Path = PACKAGE, error_names: set[str] | None = None) -> list[RaiseSite]:
    """Every ``raise Name(...)`` in the package, read from the source (no import).

    Error objects built in one place and raised in another (``error = IndexWriteError(...)``
    in a helper that returns it) are found too: any call of a class in ``error_names``
    (default: :func:`error_class_names`) counts as a site of that class.
    """
    if error_names is None:
        error_names = set(error_class_names(package)) if package == PACKAGE else set()
    sites: list[RaiseSite] = []
    for path in sorted(package.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(source)
        except SyntaxError:  # a file being written right now; the tests will catch it
            continue
        scopes = _qualname_stack(tree)
        raised: set[int] = set()
        calls: list[tuple[ast.AST, ast.Call]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                raised.add(id(node.exc))
                calls.append((node, node.exc))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and id(node) not in raised and _call_name(node) in error_names:
                calls.append((node, node))
        for node, call in sorted(calls, key=lambda pair: pair[0].lineno):
            name = _call_name(call)
            if name is None:
                continue
            args = ", ".join(ast.unparse(a) for a in [*call.args, *call.keywords])
            args = " ".join(args.split())
            if len(args) > 240:
                args = args[:237] + "..."
            sites.append(
                RaiseSite(
                    exception=name,
                    path=str(path.relative_to(package.parent)),
                    line=node.lineno,
                    function=scopes.get(node, "") or "(module)",
                    arguments=args,
                    args=tuple(ast.unparse(a) for a in call.args),
                )
            )
    return sites


def _sites_table(sites: list[RaiseSite]) -> str:
    rows = ["| Where | Function | Message (as written in the code) |", "| --- | --- | --- |"]
    for s in sites:
        message = s.arguments.replace("|", "\\|") or "(no arguments)"
        rows.append(f"| `{s.path}:{s.line}` | `{s.function}` | `{message}` |")
    return "\n".join(rows)


_ERROR_HEADING = re.compile(r"^### `?([A-Za-z_][A-Za-z0-9_]*)`?\s*$", re.M)


def check_troubleshooting_page(markdown: str) -> None:
    """Raise DocsCheckError unless every error class (see error_class_names) has a ``### Name`` section."""
    documented = set(_ERROR_HEADING.findall(markdown))
    missing = [name for name in error_class_names() if name not in documented]
    if missing:
        raise DocsCheckError(
            "docs/troubleshooting.md has no '### Name' section for these error classes "
            f"(akasha/errors.py and their subclasses): {', '.join(missing)}"
        )


def render_troubleshooting_page(markdown: str) -> str:
    check_troubleshooting_page(markdown)
    sites = raise_sites()
    by_name: dict[str, list[RaiseSite]] = {}
    for s in sites:
        by_name.setdefault(s.exception, []).append(s)
    # subclasses raised under an alias (RAGError is AkashaError)
    by_name.setdefault("AkashaError", []).extend(by_name.get("RAGError", []))
    error_names = set(error_class_names())

    def add_sites(match: re.Match[str]) -> str:
        name = match.group(1)
        heading = match.group(0)
        if name not in error_names:
            return heading
        found = by_name.get(name, [])
        if not found:
            note = "akasha does not raise this class directly; it is a base class to catch."
            return f"{heading}\n\n*{note}*\n"
        return (
            f"{heading}\n\n"
            f'??? note "Where akasha raises `{name}` ({len(found)})"\n\n'
            + _indent(_sites_table(found))
            + "\n"
        )

    markdown = _ERROR_HEADING.sub(add_sites, markdown)
    others = sorted(
        {s.exception for s in sites}
        - error_names
        - {"RAGError"}
    )
    builtin_names = [n for n in others if isinstance(getattr(builtins, n, None), type)]
    parts = []
    for name in builtin_names:
        found = by_name[name]
        parts.append(
            f'??? note "`{name}` ({len(found)})"\n\n' + _indent(_sites_table(found)) + "\n"
        )
    rest = [n for n in others if n not in builtin_names]
    if rest:
        parts.append(
            "Re-raised or module-local exceptions: "
            + ", ".join(f"`{n}`" for n in rest)
            + "."
        )
    return markdown.replace(RAISES_MARK, "\n".join(parts) or "*None.*")


def _indent(text: str, by: str = "    ") -> str:
    return "\n".join(by + line if line else line for line in text.splitlines())


# --------------------------------------------------------------------------- CLI


def cli_parser() -> argparse.ArgumentParser:
    """The ``akasha`` command's argparse parser, as akasha/cli.py builds it."""
    try:
        from akasha import cli
    except ImportError as exc:
        raise DocsCheckError(f"akasha.cli cannot be imported ({exc}): the CLI page cannot be generated") from exc

    for name in ("build_parser", "make_parser", "create_parser", "get_parser"):
        factory = getattr(cli, name, None)
        if callable(factory):
            return factory()
    raise DocsCheckError("akasha/cli.py has no build_parser(): the CLI page cannot be generated")


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Subcommand name -> its parser (aliases skipped), in definition order."""
    for action in parser._actions:  # argparse keeps no public accessor for these
        if isinstance(action, argparse._SubParsersAction):
            seen: dict[int, str] = {}
            result: dict[str, argparse.ArgumentParser] = {}
            for name, sub in action.choices.items():
                if id(sub) in seen:
                    continue
                seen[id(sub)] = name
                result[name] = sub
            return result
    return {}


def option_flags(parser: argparse.ArgumentParser) -> list[list[str]]:
    """Each optional/positional argument's spellings (``["-k", "--top-k"]``, ``["path"]``)."""
    flags = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        flags.append(list(action.option_strings) or [action.metavar or action.dest])
    return flags


def help_text(parser: argparse.ArgumentParser) -> str:
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "78"  # argparse wraps by terminal width; fix it for stable pages
    try:
        return parser.format_help()
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous


def _arguments_table(parser: argparse.ArgumentParser) -> str:
    rows = ["| Argument | Default | Meaning |", "| --- | --- | --- |"]
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        spelled = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.metavar or action.dest}`"
        if action.option_strings and action.nargs != 0:
            spelled += f" `{action.metavar or action.dest.upper()}`"
        default = action.default
        if isinstance(action, argparse._VersionAction) or default in (None, argparse.SUPPRESS):
            shown = ""
        elif action.nargs == 0:
            shown = "off" if default is False else "on" if default is True else f"`{default!r}`"
        else:
            shown = f"`{default!r}`" if not isinstance(default, str) else f"`{default}`"
        meaning = (action.help or "").replace("%(default)s", str(default)).replace("%%", "%")
        meaning = meaning.replace("%(prog)s", parser.prog)
        if action.choices and not isinstance(action.choices, dict):
            meaning += " Choices: " + ", ".join(f"`{c}`" for c in action.choices) + "."
        rows.append(f"| {spelled} | {shown} | {meaning.replace('|', chr(92) + '|')} |")
    return "\n".join(rows)


def cli_reference() -> str:
    parser = cli_parser()
    parts = [
        "## `akasha`",
        "",
        "```text",
        help_text(parser).rstrip(),
        "```",
        "",
        _arguments_table(parser),
        "",
    ]
    for name, sub in subcommands(parser).items():
        parts += [
            f"## `akasha {name}`",
            "",
            "```text",
            help_text(sub).rstrip(),
            "```",
            "",
            _arguments_table(sub),
            "",
        ]
    return "\n".join(parts)


# --------------------------------------------------------------------------- mkdocs events


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:  # noqa: ARG001
    from mkdocs.exceptions import PluginError

    src = page.file.src_uri
    try:
        if src == "options.md":
            return render_options_page(markdown)
        if src == "troubleshooting.md":
            return render_troubleshooting_page(markdown)
        if src == "cli.md":
            if CLI_MARK not in markdown:
                raise DocsCheckError(f"docs/cli.md must contain {CLI_MARK} where the reference goes")
            return markdown.replace(CLI_MARK, cli_reference())
    except DocsCheckError as exc:
        raise PluginError(str(exc)) from exc
    return markdown

