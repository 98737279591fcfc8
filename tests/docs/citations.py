"""Every design citation in the repository points at a section of ``docs/design/`` that exists.

Run it as a script (``python tests/docs/citations.py [ROOT]``) to list dangling citations as
``path:line: citation: problem``; the unit tier runs it through ``tests/docs/test_citations.py``.

What counts as a citation (the forms are described in ``docs/README.md``):

- ``ARCHITECTURE §N`` or ``§N.M`` (``docs/design/ARCHITECTURE.md``), ``reference §N.M``
  (``docs/design/reference/*.md``); further ``§`` numbers after one of them, up to the end of the
  sentence or bracket, belong to the same document (``reference §1.5, §3.4``). A section resolves
  when a heading carries its number (``## 6. Host safety``, ``### 6.2 Starting a local service``).
  A ``§`` that names no document is dangling, except inside a ``docs/design`` file, where it means
  that file's own sections.
- ``DECISIONS N`` (with lists such as ``DECISIONS 7, 11 and 12``): a heading ``## N. ...`` of
  ``docs/design/DECISIONS.md``.
- ``case N`` / ``cases N, M and K-L``: a line ``- **Case N.**`` of ``docs/design/reference/``.
- ``API.md "Title"``: a heading with that title in ``docs/design/API.md``.
- A path ``docs/....md`` must exist, and nothing may point at the design brief outside the
  repository (``shared/design``, ``shared/reference``).
- In the documents (``docs/**/*.md`` and every ``README.md``), a path ending in ``.py`` written as
  code (between backticks) must name a file of the tree: either from the repository root
  (``services/workspace-realizer/src/workspace_realizer/app.py``), or as the end of a file's path,
  from a package or a service down (``orchestration/realize.py``,
  ``workspace_realizer/orchestration/realize.py``, ``.../workspace_realizer/domain/policy.py``,
  ``tests/slots/test_two_stacks.py``). Patterns (``test_real_git*.py``, ``usecases/{a,b}.py``,
  ``<package>/app.py``) and absolute paths are not paths of the tree and are left alone.
"""

from __future__ import annotations

import os
import posixpath
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CodeFiles",
    "Finding",
    "Sections",
    "code_files",
    "dangling_citations",
    "load_sections",
    "main",
]

_SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".venv",
        "node_modules",
        "artifacts",
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        "dist",
        "build",
    }
)
_SKIPPED_FILES = frozenset({"uv.lock"})
_OWN_FOLDER = ("tests", "docs")
"""This checker and its tests, whose examples of citations are meant to dangle."""
_TEXT_SUFFIXES = frozenset(
    {
        ".py",
        ".md",
        ".txt",
        ".toml",
        ".yml",
        ".yaml",
        ".js",
        ".html",
        ".css",
        ".sh",
        ".json",
        ".cfg",
        ".ini",
        ".conf",
        ".sql",
        "",
    }
)

_HEADING = re.compile(r"^#{1,6}[ \t]+(?P<number>\d+(?:\.\d+)*)\.?[ \t]+(?P<title>.*\S)", re.M)
_TITLED_HEADING = re.compile(r"^#{1,6}[ \t]+(?P<title>.*\S)[ \t]*$", re.M)
_CASE_LINE = re.compile(r"^[ \t]*(?:[-*][ \t]+)?\*\*Case (?P<number>\d+)\.?\*\*", re.M)

_NUMBERS = r"\d+(?:(?:,[ \t]*(?:and[ \t]+)?|[ \t]+and[ \t]+|[ \t]*[-\u2013][ \t]*)\d+)*"
_TOKENS = re.compile(
    r"(?P<doc>\bARCHITECTURE\b(?:\.md)?|\breference\b)"
    r"|(?P<section>§[ \t]?(?P<number>\d+(?:\.\d+)*))"
    rf"|(?P<decisions>\bDECISIONS(?:\.md)?[ \t]+(?P<decision_numbers>{_NUMBERS}))"
    rf"|(?P<cases>\b[Cc]ases?[ \t]+(?P<case_numbers>{_NUMBERS}))"
    r"|(?P<api>\bAPI\.md\b[ \t]*\(?[ \t]*[\"“](?P<api_title>[^\"”]{1,120})[\"”])"
    r"|(?P<path>(?<![\w/.-])docs/[\w./-]+\.md\b)"
    r"|(?P<brief>\bshared/(?:design|reference)\b)"
    r"|(?P<stop>\.(?=\s)|[()]|\n[ \t#>*/\"']*\n)"
)
_CONTINUATION = re.compile(r"\n[ \t]*(?:#+|//|\*|>)?[ \t]*")

_FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```[^\n]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(?<!`)`((?:[^`\n]|\n(?![ \t]*\n))+)`(?!`)")
"""Inline code, which may wrap onto the next line but not across a paragraph."""
_CODE_PATH = re.compile(r"(?:\.\.\./)?[\w.-]+(?:/[\w.-]+)*\.py")
"""A ``.py`` path as the documents write it: plain path characters only, maybe after ``.../``."""
_LOCATION = re.compile(r"(?<=\.py)(?::\d+)+$|(?<=\.py)::\S*$")
"""A line number (``x.py:12``) or a test id (``x.py::test_y``) after a path."""


@dataclass(frozen=True, order=True)
class Finding:
    """A citation that does not resolve."""

    path: str
    line: int
    citation: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.citation}: {self.problem}"


@dataclass(frozen=True)
class Sections:
    """What ``docs/design/`` offers to cite."""

    architecture: frozenset[str]
    reference: frozenset[str]
    decisions: frozenset[str]
    cases: frozenset[int]
    api_titles: frozenset[str]
    own: dict[str, frozenset[str]]
    """Numbered headings of each ``docs/design`` file, by repository-relative path."""


def _numbers(text: str) -> frozenset[str]:
    return frozenset(match["number"] for match in _HEADING.finditer(text))


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def load_sections(root: Path) -> Sections:
    """Read the headings of the design documents under ``root/docs/design``."""
    design = root / "docs" / "design"
    reference_text = "\n".join(_read(p) for p in sorted((design / "reference").glob("*.md")))
    api_text = _read(design / "API.md")
    own = {
        path.relative_to(root).as_posix(): _numbers(_read(path))
        for path in sorted(design.rglob("*.md"))
    }
    return Sections(
        architecture=_numbers(_read(design / "ARCHITECTURE.md")),
        reference=_numbers(reference_text),
        decisions=_numbers(_read(design / "DECISIONS.md")),
        cases=frozenset(int(m["number"]) for m in _CASE_LINE.finditer(reference_text)),
        api_titles=frozenset(m["title"].lower() for m in _TITLED_HEADING.finditer(api_text)),
        own=own,
    )


@dataclass(frozen=True)
class CodeFiles:
    """The ``.py`` files of the tree, for resolving the paths the documents name."""

    paths: frozenset[str]
    """Every file, relative to the repository root."""
    endings: frozenset[str]
    """Every ending of those paths that starts at a folder boundary (``realize.py``,
    ``orchestration/realize.py``, ...)."""

    def resolves(self, path: str, document: str) -> bool:
        """Whether ``path``, as ``document`` (root-relative) writes it, names a file: from the
        root, as the end of a file's path, or (``./``, ``../``) from the document's folder."""
        if path.startswith(("./", "../")):
            return (
                posixpath.normpath(posixpath.join(posixpath.dirname(document), path)) in self.paths
            )
        path = path.removeprefix(".../")
        return path in self.paths or path in self.endings


def code_files(root: Path) -> CodeFiles:
    """Index the ``.py`` files under ``root`` (skipping virtualenvs, caches and build output)."""
    paths: set[str] = set()
    endings: set[str] = set()
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name not in _SKIPPED_DIRS]
        base = Path(folder).relative_to(root).parts
        for name in names:
            if not name.endswith(".py"):
                continue
            parts = (*base, name)
            paths.add("/".join(parts))
            endings.update("/".join(parts[i:]) for i in range(len(parts)))
    return CodeFiles(paths=frozenset(paths), endings=frozenset(endings))


def _is_document(relative: str) -> bool:
    return relative.endswith(".md") and (
        relative.startswith("docs/") or relative.rsplit("/", 1)[-1] == "README.md"
    )


def _code_paths(relative: str, text: str, files: CodeFiles) -> Iterator[Finding]:
    """The ``.py`` paths written as code in a document that name no file of the tree."""
    # Fenced blocks hold examples and trees, not citations; blank them, keeping the lines.
    text = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for span in _CODE_SPAN.finditer(text):
        offset = span.start(1)
        for word in re.finditer(r"\S+", span[1]):
            candidate = _LOCATION.sub("", word[0].strip("()[],;:'\""))
            if not _CODE_PATH.fullmatch(candidate) or files.resolves(candidate, relative):
                continue
            line = text.count("\n", 0, offset + word.start()) + 1
            yield Finding(relative, line, candidate, "no such file in the tree")


def _expand(numbers: str) -> Iterator[int]:
    for part in re.split(r",[ \t]*(?:and[ \t]+)?|[ \t]+and[ \t]+", numbers):
        low, _, high = re.sub(r"\s", "", part).replace("\u2013", "-").partition("-")
        yield from range(int(low), int(high) + 1) if high else (int(low),)


def _text_files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part in _SKIPPED_DIRS for part in relative.parts[:-1]):
            continue
        if relative.parts[:2] == _OWN_FOLDER:
            continue
        if path.is_file() and path.suffix in _TEXT_SUFFIXES and path.name not in _SKIPPED_FILES:
            yield path


def _scan(relative: str, text: str, sections: Sections, root: Path) -> Iterator[Finding]:
    own = sections.own.get(relative)
    documents = {"architecture": sections.architecture, "reference": sections.reference}
    current: str | None = None
    line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def line_of(offset: int) -> int:
        low, high = 0, len(line_starts)
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if line_starts[middle] <= offset else (low, middle)
        return low + 1

    for match in _TOKENS.finditer(text):
        kind = match.lastgroup
        line = line_of(match.start())
        if kind == "doc":
            current = "architecture" if match["doc"].startswith("ARCHITECTURE") else "reference"
        elif kind == "stop":
            current = None
        elif kind == "section":
            number = match["number"]
            if current is not None:
                if number not in documents[current]:
                    label = "ARCHITECTURE" if current == "architecture" else "reference"
                    yield Finding(
                        relative,
                        line,
                        f"{label} §{number}",
                        f"no section {number} in docs/design/"
                        f"{'ARCHITECTURE.md' if current == 'architecture' else 'reference/'}",
                    )
            elif own is not None:
                if number not in own:
                    yield Finding(
                        relative, line, f"§{number}", f"no section {number} in this document"
                    )
            else:
                yield Finding(
                    relative,
                    line,
                    f"§{number}",
                    "names no document: write ARCHITECTURE §N or reference §N.M",
                )
        elif kind == "decisions":
            for number in _expand(match["decision_numbers"]):
                if str(number) not in sections.decisions:
                    yield Finding(
                        relative,
                        line,
                        f"DECISIONS {number}",
                        f"no decision {number} in docs/design/DECISIONS.md",
                    )
        elif kind == "cases":
            for number in _expand(match["case_numbers"]):
                if number not in sections.cases:
                    yield Finding(
                        relative,
                        line,
                        f"case {number}",
                        f"no case {number} in docs/design/reference/",
                    )
        elif kind == "api":
            title = _CONTINUATION.sub(" ", match["api_title"]).strip()
            if title.lower() not in sections.api_titles:
                yield Finding(
                    relative, line, f'API.md "{title}"', "no such heading in docs/design/API.md"
                )
        elif kind == "path":
            if not (root / match["path"]).is_file():
                yield Finding(relative, line, match["path"], "no such file")
        elif kind == "brief":
            yield Finding(
                relative,
                line,
                match["brief"],
                "points outside the repository: cite docs/design/ instead",
            )


def dangling_citations(root: Path, files: Iterable[Path] | None = None) -> list[Finding]:
    """Every citation under ``root`` (or in ``files``) that does not resolve, sorted."""
    sections = load_sections(root)
    code: CodeFiles | None = None
    findings: list[Finding] = []
    for path in files if files is not None else _text_files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        relative = path.relative_to(root).as_posix()
        findings.extend(_scan(relative, text, sections, root))
        if _is_document(relative):
            code = code if code is not None else code_files(root)
            findings.extend(_code_paths(relative, text, code))
    return sorted(findings)


def main(argv: list[str] | None = None) -> int:
    """Print the dangling citations under the given root (default: this repository)."""
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]).resolve() if args else Path(__file__).resolve().parents[2]
    findings = dangling_citations(root)
    for finding in findings:
        print(finding)
    print(f"{len(findings)} dangling citation(s) under {root}", file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    raise SystemExit(main())
