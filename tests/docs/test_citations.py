"""Design citations in code and docs resolve to sections of ``docs/design/``, and the code paths the
documents name are files of the tree (tests/docs/citations.py)."""

from __future__ import annotations

from pathlib import Path

from tests.docs.citations import Finding, dangling_citations

ROOT = Path(__file__).resolve().parents[2]
S = "\u00a7"  # spelled out, so that this file's own examples are not citations of the tree


def _design(root: Path) -> None:
    design = root / "docs" / "design"
    (design / "reference").mkdir(parents=True)
    (design / "ARCHITECTURE.md").write_text("# A\n\n## 2. Messaging\n\n### 4.3 A run\n")
    (design / "DECISIONS.md").write_text("# D\n\n## 7. Adopt\n\n## 8. Ports\n")
    (design / "API.md").write_text("# API\n\n## Agents, wakes, runs\n")
    (design / "reference" / "runtime.md").write_text(
        f"# R\n\n### 6.2 Start\n\nSee {S}6.2.\n\n- **Case 57.** An early exit fails.\n"
    )


def test_the_tree_has_no_dangling_citation() -> None:
    findings = dangling_citations(ROOT)
    assert findings == [], "dangling citations:\n" + "\n".join(map(str, findings))


def test_resolving_citations_of_every_form_pass(tmp_path: Path) -> None:
    _design(tmp_path)
    good = tmp_path / "good.py"
    good.write_text(
        f'"""Runs (ARCHITECTURE {S}2, {S}4.3; reference {S}6.2 step 3, case 57; DECISIONS 7 and 8;\n'
        f'API.md "Agents,\n    wakes, runs"; docs/design/API.md)."""\n'
    )
    assert dangling_citations(tmp_path, [good]) == []


def test_a_planted_dangling_citation_is_reported_with_its_file_and_line(tmp_path: Path) -> None:
    _design(tmp_path)
    planted = tmp_path / "pkg" / "module.py"
    planted.parent.mkdir()
    planted.write_text(
        '"""A module."""\n\n'
        f"# Ports are reserved first (DECISIONS 8; reference {S}6.2, {S}6.99).\n"
        f"# Adopted on restart (DECISIONS 7, 21), as {S}4.3 says; cases 57-58.\n"
        '# See API.md "Secrets" and docs/design/gone.md and ../shared/design/API.md.\n'
    )
    findings = dangling_citations(tmp_path)
    assert findings == sorted(
        [
            Finding(
                "pkg/module.py",
                3,
                f"reference {S}6.99",
                "no section 6.99 in docs/design/reference/",
            ),
            Finding(
                "pkg/module.py", 4, "DECISIONS 21", "no decision 21 in docs/design/DECISIONS.md"
            ),
            Finding(
                "pkg/module.py",
                4,
                f"{S}4.3",
                "names no document: write ARCHITECTURE §N or reference §N.M",
            ),
            Finding("pkg/module.py", 4, "case 58", "no case 58 in docs/design/reference/"),
            Finding("pkg/module.py", 5, "docs/design/gone.md", "no such file"),
            Finding(
                "pkg/module.py",
                5,
                "shared/design",
                "points outside the repository: cite docs/design/ instead",
            ),
            Finding(
                "pkg/module.py", 5, 'API.md "Secrets"', "no such heading in docs/design/API.md"
            ),
        ]
    )


def test_a_bare_section_in_a_design_document_means_its_own_section(tmp_path: Path) -> None:
    _design(tmp_path)
    own = tmp_path / "docs" / "design" / "ARCHITECTURE.md"
    own.write_text(own.read_text() + f"\nAs {S}2 says, and {S}3 does not exist.\n")
    assert dangling_citations(tmp_path, [own]) == [
        Finding("docs/design/ARCHITECTURE.md", 7, f"{S}3", "no section 3 in this document")
    ]


def _tree(root: Path) -> None:
    """A service and a lib with a few modules, for the documents' code paths to name."""
    package = root / "services" / "svc" / "src" / "svc"
    (package / "orchestration").mkdir(parents=True)
    (package / "orchestration" / "realize.py").write_text("")
    (package / "app.py").write_text("")
    tests = root / "services" / "svc" / "tests" / "slots"
    tests.mkdir(parents=True)
    (tests / "test_two_stacks.py").write_text("")


def test_code_paths_in_documents_that_name_a_file_pass(tmp_path: Path) -> None:
    _design(tmp_path)
    _tree(tmp_path)
    document = tmp_path / "docs" / "design" / "svc.md"
    document.write_text(
        "# Svc\n\n"
        "Where: `services/svc/src/svc/orchestration/realize.py`, `orchestration/realize.py`,\n"
        "`svc/orchestration/realize.py`, `.../svc/orchestration/realize.py`, `app.py` (`realize.py`:\n"
        "the flow), `tests/slots/test_two_stacks.py::test_a`, `python services/svc/src/svc/app.py`,\n"
        "`../../services/svc/src/svc/app.py`, `orchestration/realize.py:12`. Patterns are no paths:\n"
        "`usecases/{base,runs}.py`, `test_real_git*.py`, `<package>/app.py`, `/usr/lib/x.py`.\n"
    )
    assert dangling_citations(tmp_path, [document]) == []


def test_a_code_path_naming_no_file_is_reported_with_its_file_and_line(tmp_path: Path) -> None:
    _design(tmp_path)
    _tree(tmp_path)
    readme = tmp_path / "services" / "svc" / "README.md"
    readme.write_text(
        "# svc\n\n"
        "Layout: `realize.py` and `handlers.py` (bus endpoints),\n"
        "`svc/realize.py`, `services/svc/src/svc/realize.py`, `.../svc/policy.py`, and a command\n"
        "`python services/svc/src/svc/gone.py`; `orchestration/realize.py` wraps onto the `next\n"
        "line gone.py`.\n\n"
        "```\n"
        "svc/\n"
        "  `fenced.py`   an example, not a citation\n"
        "```\n"
    )
    source = tmp_path / "services" / "svc" / "src" / "svc" / "module.py"
    source.write_text('"""Only documents are checked: `not_a_document.py`."""\n')
    findings = dangling_citations(tmp_path)
    assert findings == sorted(
        [
            Finding("services/svc/README.md", 3, "handlers.py", "no such file in the tree"),
            Finding("services/svc/README.md", 4, "svc/realize.py", "no such file in the tree"),
            Finding(
                "services/svc/README.md",
                4,
                "services/svc/src/svc/realize.py",
                "no such file in the tree",
            ),
            Finding("services/svc/README.md", 4, ".../svc/policy.py", "no such file in the tree"),
            Finding(
                "services/svc/README.md",
                5,
                "services/svc/src/svc/gone.py",
                "no such file in the tree",
            ),
            Finding("services/svc/README.md", 6, "gone.py", "no such file in the tree"),
        ]
    )
