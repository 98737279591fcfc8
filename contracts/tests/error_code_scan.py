"""Find every error code the Python sources answer with, so a test can hold them to the catalogue.

Run it as a script (``python contracts/tests/error_code_scan.py [ROOT]``) to list the uses the
catalogue (``contracts.errors.CATALOGUE``) lacks or disagrees with, as ``path:line: problem``; the
unit tier runs it through ``contracts/tests/test_error_catalogue.py``. It reads the sources with
:mod:`ast` and imports none of them (stdlib only, so it runs with the contracts package alone).

What counts as an error code (a string literal, a module-level constant naming one, or a member of
``ErrorCode``, whose name is its value in upper case):

- a class attribute ``code = ...`` (with its class's ``status = <int>`` when the class sets one);
- a keyword argument ``code=...`` of any call (with a ``status=<int>`` keyword of the same call),
  and a ``code=...`` keyword pattern (``case ErrorReply(code="service_unavailable")``);
- the code argument of the error builders named in :data:`CODE_ARGUMENTS` (``error_reply``,
  ``Problem``, ``PortError``, ``ErrorCode(...)``, and every code ``error_responses`` documents),
  with the status argument where they take one;
- ``ErrorCode.X`` anywhere;
- a string compared with an error's ``code`` (``reply.code == "not_found"``,
  ``exc.code not in ("timeout", "service_unavailable")``);
- a dict literal from HTTP statuses to codes (``{401: "unauthenticated", ...}``), or from codes
  to rows that start with a status (``{"not_found": (404, "no such resource")}``).

A run's outcome (``Outcome("failed", "adapter_failed", ...)``, ``RunView.errorCode``) and an
operation's failure (``{"code": "interrupted", ...}``) are fields of a record, never an error reply
or an HTTP error body, so their codes are not collected.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "CODE_ARGUMENTS",
    "DEFAULT_ROOTS",
    "CodeUse",
    "Finding",
    "check_uses",
    "main",
    "resolve_roots",
    "scan_error_codes",
]

DEFAULT_ROOTS: Final = ("contracts/src", "libs/*/src", "services/*/src")
"""The source trees scanned, relative to the repository (globs allowed)."""

CODE_ARGUMENTS: Final[Mapping[str, tuple[int | None, int | None]]] = {
    "ErrorCode": (0, None),
    "error_reply": (0, None),
    "Problem": (1, 0),
    "PortError": (0, 2),
    "error_responses": (None, None),
}
"""Callable name -> (index of its code argument, index of its status argument); a code index of
None means every positional argument is a code."""

_ENUM: Final = "ErrorCode"
_SKIPPED_DIRS: Final = frozenset({".venv", "__pycache__", "node_modules", "tests"})


@dataclass(frozen=True, order=True)
class CodeUse:
    """One place that answers with (or looks for) an error code."""

    path: Path
    line: int
    code: str
    how: str
    """What the place is: ``class NotFoundError: code``, ``ErrorReply(code=...)``,
    ``error_reply()``, ``compared with .code``, ``ErrorCode.X``, ..."""
    status: int | None = None
    """The HTTP status written beside the code at that place, if any."""


@dataclass(frozen=True, order=True)
class Finding:
    """A use of a code that the catalogue lacks, or whose status the catalogue does not allow."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def _python_files(roots: Iterable[Path]) -> Iterator[Path]:
    for root in roots:
        if root.is_file():
            yield root
            continue
        for path in sorted(root.rglob("*.py")):
            if not _SKIPPED_DIRS.intersection(path.relative_to(root).parts[:-1]):
                yield path


def _binding(statement: ast.stmt) -> tuple[str, ast.expr] | None:
    """``(name, value)`` of a statement binding one plain name (``x = v`` or ``x: T = v``)."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target, value = statement.targets[0], statement.value
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        target, value = statement.target, statement.value
    else:
        return None
    return (target.id, value) if isinstance(target, ast.Name) else None


def _constants(tree: ast.Module) -> dict[str, tuple[str, ...]]:
    """Module-level names bound to a string, or to a tuple/list/set/frozenset of strings."""
    found: dict[str, tuple[str, ...]] = {}
    for node in tree.body:
        binding = _binding(node)
        if binding is not None:
            name, value = binding
            strings = _literal_strings(value)
            if strings is not None:
                found[name] = strings
    return found


def _literal_strings(node: ast.expr) -> tuple[str, ...] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("frozenset", "set", "tuple")
        and len(node.args) == 1
        and not node.keywords
    ):
        return _literal_strings(node.args[0])
    if isinstance(node, ast.Tuple | ast.List | ast.Set) and node.elts:
        strings = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        if len(strings) == len(node.elts) and all(isinstance(s, str) for s in strings):
            return tuple(str(s) for s in strings)
    return None


def _int(node: ast.expr | None) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _status_row(node: ast.expr) -> int | None:
    """The status of a ``(status, ...)`` tuple, as a table of codes holds it."""
    if isinstance(node, ast.Tuple) and node.elts:
        status = _int(node.elts[0])
        if status is not None and 400 <= status <= 599:
            return status
    return None


def _name_of(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


class _Visitor(ast.NodeVisitor):
    def __init__(self, path: Path, constants: Mapping[str, tuple[str, ...]]) -> None:
        self.path = path
        self.constants = constants
        self.uses: list[CodeUse] = []
        self._seen_members: set[int] = set()
        """``ErrorCode.X`` nodes already recorded as the code of a richer use."""

    def _codes(self, node: ast.expr) -> list[tuple[int, str]]:
        """The codes an expression stands for, with their lines (nothing when it is not one)."""
        match node:
            case ast.Constant(value=str(text)):
                return [(node.lineno, text)]
            case ast.Attribute(value=ast.Name(id=enum), attr=member) if enum == _ENUM:
                self._seen_members.add(id(node))
                return [(node.lineno, member.lower())]
            case ast.Attribute(value=ast.Attribute() as inner, attr="value"):
                return self._codes(inner)
            case ast.Name(id=name) if name in self.constants:
                return [(node.lineno, text) for text in self.constants[name]]
            case ast.Starred(value=inner):
                return self._codes(inner)
            case ast.IfExp(body=body, orelse=orelse):
                return self._codes(body) + self._codes(orelse)
            case ast.Tuple(elts=elts) | ast.List(elts=elts) | ast.Set(elts=elts):
                return [found for elt in elts for found in self._codes(elt)]
        return []

    def _add(self, node: ast.expr, how: str, status: int | None = None) -> None:
        for line, code in self._codes(node):
            self.uses.append(CodeUse(self.path, line, code, how, status))

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        code: ast.expr | None = None
        status: int | None = None
        for statement in node.body:
            binding = _binding(statement)
            if binding is not None and binding[0] == "code":
                code = binding[1]
            elif binding is not None and binding[0] == "status":
                status = _int(binding[1])
        if code is not None:
            self._add(code, f"class {node.name}: code", status)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        status = _int(keywords.get("status"))
        name = _name_of(node.func)
        if "code" in keywords:
            self._add(keywords["code"], f"{name}(code=...)", status)
        if name is not None and name in CODE_ARGUMENTS:
            code_at, status_at = CODE_ARGUMENTS[name]
            if status_at is not None and status_at < len(node.args):
                status = _int(node.args[status_at]) if status is None else status
            if code_at is None:
                for arg in node.args:
                    self._add(arg, f"{name}()")
            elif code_at < len(node.args):
                self._add(node.args[code_at], f"{name}()", status)
        self.generic_visit(node)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        for attr, pattern in zip(node.kwd_attrs, node.kwd_patterns, strict=True):
            if attr == "code" and isinstance(pattern, ast.MatchValue):
                self._add(pattern.value, "case ...(code=...)")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        sides = [node.left, *node.comparators]
        if any(isinstance(side, ast.Attribute) and side.attr == "code" for side in sides):
            for side in sides:
                if not isinstance(side, ast.Attribute) or side.attr != "code":
                    self._add(side, "compared with .code")
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        statuses = [_int(key) if key is not None else None for key in node.keys]
        if statuses and all(key is not None and 400 <= key <= 599 for key in statuses):
            for status, value in zip(statuses, node.values, strict=True):
                self._add(value, "status -> code dict", status)
        rows = [_status_row(value) for value in node.values]
        if rows and all(row is not None for row in rows):
            for key, row in zip(node.keys, rows, strict=True):
                if key is not None:
                    self._add(key, "code -> (status, ...) dict", row)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if (
            isinstance(node.value, ast.Name)
            and node.value.id == _ENUM
            and id(node) not in self._seen_members
            and not node.attr.startswith("_")
        ):
            self.uses.append(CodeUse(self.path, node.lineno, node.attr.lower(), "ErrorCode.X"))
        self.generic_visit(node)


def scan_error_codes(roots: Iterable[Path]) -> list[CodeUse]:
    """Every place under ``roots`` that answers with (or looks for) an error code.

    Args:
        roots: Folders (searched for ``*.py``, skipping ``tests`` folders) or single files.

    Returns:
        The uses, in path and line order.
    """
    uses: list[CodeUse] = []
    for path in _python_files(roots):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        visitor = _Visitor(path, _constants(tree))
        visitor.visit(tree)
        uses.extend(visitor.uses)
    return sorted(set(uses))


def check_uses(uses: Iterable[CodeUse], statuses: Mapping[str, Collection[int]]) -> list[Finding]:
    """The uses of a code the catalogue lacks, and the statuses it does not allow for a code.

    Args:
        uses: What :func:`scan_error_codes` found.
        statuses: Every catalogued code -> the statuses it may be answered with.

    Returns:
        One finding per wrong use, in path and line order.
    """
    findings: list[Finding] = []
    for use in uses:
        allowed = statuses.get(use.code)
        if allowed is None:
            problem = f"error code {use.code!r} ({use.how}) is not in contracts.errors.CATALOGUE"
            findings.append(Finding(use.path, use.line, problem))
        elif use.status is not None and use.status not in allowed:
            problem = (
                f"error code {use.code!r} ({use.how}) is answered with {use.status}; "
                f"the catalogue says {'/'.join(map(str, sorted(allowed)))}"
            )
            findings.append(Finding(use.path, use.line, problem))
    return sorted(findings)


def resolve_roots(repo: Path, patterns: Iterable[str] = DEFAULT_ROOTS) -> list[Path]:
    """The folders ``patterns`` name under ``repo`` (globs expanded, sorted)."""
    return [path for pattern in patterns for path in sorted(repo.glob(pattern)) if path.is_dir()]


def main(argv: list[str] | None = None) -> int:
    """Print every finding under the repository (the first argument, else this file's repo)."""
    from contracts.errors import CATALOGUE

    args = sys.argv[1:] if argv is None else argv
    repo = Path(args[0]) if args else Path(__file__).resolve().parents[2]
    statuses = {str(code): entry.statuses for code, entry in CATALOGUE.items()}
    findings = check_uses(scan_error_codes(resolve_roots(repo)), statuses)
    for finding in findings:
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    raise SystemExit(main())
