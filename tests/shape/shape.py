"""The one shape of every service (docs/design/service-shape.md), checked from the source tree.

Run it as a script (``python tests/shape/shape.py [ROOT]``) to list every finding as
``where: problem``; the unit tier runs it through ``tests/shape/test_service_shape.py``.

What is checked, per service package ``services/<name>/src/<package>/``:

- the skeleton's files and packages are there, and nothing else stands at the top (a
  service may add what :data:`EXTRA` grants it, such as the gateway's HTTP ``controllers/``);
- bus endpoints are classes with a route table: no module of the service calls
  ``add_endpoint`` (``servicekit.routes.mount`` does), no function of ``endpoints/`` defines a
  handler inside itself, and every endpoints module but ``common.py`` defines a class with
  ``routes``;
- ``inbox.py`` dispatches with ``match``;

and, over every source tree (services, libs, contracts), the size limits: no module over
:data:`MAX_MODULE_LINES` lines, no function over :data:`MAX_FUNCTION_LINES`, at most
:data:`MAX_DICT_ANY` ``dict[str, Any]`` in all, and no ``# fmt: skip`` / ``# fmt: off`` without
a ``# hand-laid: <why>`` comment on the line above.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "EXTRA",
    "FILES",
    "MAX_DICT_ANY",
    "MAX_FUNCTION_LINES",
    "MAX_MODULE_LINES",
    "OPTIONAL",
    "PACKAGES",
    "Finding",
    "limit_findings",
    "service_findings",
    "service_packages",
]

FILES = (
    "__init__.py",
    "__main__.py",
    "app.py",
    "settings.py",
    "application.py",
    "inbox.py",
    "publishing.py",
    "readmodels.py",
)
"""Files every service has at its top."""

PACKAGES = ("domain", "usecases", "endpoints", "adapters")
"""Packages every service has at its top."""

OPTIONAL = ("orchestration",)
"""Packages a service has where it runs long work."""

EXTRA = {"api_gateway": ("controllers", "http", "ui")}
"""What one service adds next to the skeleton: the gateway's HTTP side."""

MAX_MODULE_LINES = 350
MAX_FUNCTION_LINES = 80
MAX_DICT_ANY = 50
SOURCE_GLOBS = ("services/*/src", "libs/*/src", "contracts/src")
_IGNORED = {"__pycache__", "static", "templates"}


@dataclass(frozen=True, slots=True)
class Finding:
    """One departure from the shape: where, and what is wrong."""

    where: str
    problem: str

    def __str__(self) -> str:
        return f"{self.where}: {self.problem}"


def service_packages(root: Path) -> list[Path]:
    """Every service's package directory, ``services/<name>/src/<package>``."""
    return sorted(
        p for p in root.glob("services/*/src/*") if p.is_dir() and (p / "__init__.py").exists()
    )


def _relative(path: Path, root: Path) -> str:
    return str(path.relative_to(root))


def service_findings(package: Path, root: Path) -> list[Finding]:
    """What the service at ``package`` lacks or holds beyond the skeleton."""
    where = _relative(package, root)
    found: list[Finding] = []
    for name in FILES:
        if not (package / name).is_file():
            found.append(Finding(where, f"lacks {name}"))
    for name in PACKAGES:
        if not (package / name / "__init__.py").is_file():
            found.append(Finding(where, f"lacks the package {name}/"))
    allowed = set(FILES) | set(PACKAGES) | set(OPTIONAL) | set(EXTRA.get(package.name, ()))
    for entry in sorted(package.iterdir()):
        if entry.name not in allowed and entry.name not in _IGNORED:
            found.append(Finding(where, f"{entry.name} is not in the skeleton"))
    found.extend(_endpoint_findings(package, root))
    inbox = package / "inbox.py"
    if inbox.is_file() and not any(
        isinstance(node, ast.Match) for node in ast.walk(ast.parse(inbox.read_text()))
    ):
        found.append(Finding(_relative(inbox, root), "dispatches without a match statement"))
    return found


def _endpoint_findings(package: Path, root: Path) -> Iterator[Finding]:
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text())
        where = _relative(path, root)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_endpoint"
            ):
                yield Finding(f"{where}:{node.lineno}", "adds an endpoint by hand (use mount)")
        inside = path.relative_to(package).parts
        if inside[0] != "endpoints" or path.name in ("__init__.py", "common.py"):
            continue
        if not any(
            isinstance(node, ast.ClassDef)
            and any(isinstance(f, ast.FunctionDef) and f.name == "routes" for f in node.body)
            for node in tree.body
        ):
            yield Finding(where, "defines no endpoint class with a route table")
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if inner is not node and isinstance(inner, ast.AsyncFunctionDef):
                        yield Finding(
                            f"{where}:{inner.lineno}",
                            f"handler {inner.name} is a closure inside {node.name}",
                        )


def _sources(root: Path) -> list[Path]:
    files: list[Path] = []
    for pattern in SOURCE_GLOBS:
        for source in root.glob(pattern):
            files.extend(p for p in source.rglob("*.py") if "__pycache__" not in p.parts)
    return sorted(files)


def limit_findings(root: Path) -> list[Finding]:
    """Modules, functions, ``dict[str, Any]`` and ``# fmt: skip`` over the limits, tree-wide."""
    found: list[Finding] = []
    dict_any = 0
    for path in _sources(root):
        text = path.read_text()
        where = _relative(path, root)
        lines = text.splitlines()
        if len(lines) > MAX_MODULE_LINES:
            found.append(Finding(where, f"{len(lines)} lines (at most {MAX_MODULE_LINES})"))
        dict_any += text.count("dict[str, Any]")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(
                        Finding(
                            f"{where}:{node.lineno}",
                            f"{node.name} is {length} lines (at most {MAX_FUNCTION_LINES})",
                        )
                    )
        for number, line in enumerate(lines, start=1):
            if "# fmt: skip" in line or "# fmt: off" in line:
                above = lines[number - 2].strip() if number > 1 else ""
                if not above.startswith("# hand-laid:"):
                    found.append(
                        Finding(f"{where}:{number}", "fmt: skip without a '# hand-laid:' reason")
                    )
    if dict_any > MAX_DICT_ANY:
        found.append(
            Finding("source", f"{dict_any} dict[str, Any] (at most {MAX_DICT_ANY}): type them")
        )
    return found


def main(argv: list[str]) -> int:
    """Print every finding; exit 1 when there is any."""
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2]
    findings = [f for p in service_packages(root) for f in service_findings(p, root)]
    findings += limit_findings(root)
    for finding in findings:
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
