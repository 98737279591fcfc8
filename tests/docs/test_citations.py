"""Design citations in code and docs resolve to sections of ``docs/design/`` (tests/docs/citations.py)."""

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
