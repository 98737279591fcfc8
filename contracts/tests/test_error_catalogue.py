"""The error catalogue is the one table of error codes: every code the sources answer with is in
it, with a status it allows, and the tables derived from it agree with it.

The sources are read with :mod:`ast` (``error_code_scan.py`` beside this file), not imported, so
this runs with the contracts package alone. The gateway's OpenAPI document is checked against the
catalogue in ``services/api-gateway/tests/test_openapi.py``.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from contracts.errors import (
    CATALOGUE,
    DEFAULT_STATUS,
    CodedError,
    ErrorCode,
    describe,
    status_of,
)

_spec = importlib.util.spec_from_file_location(
    "error_code_scan", Path(__file__).parent / "error_code_scan.py"
)
assert _spec
assert _spec.loader
scan: Any = importlib.util.module_from_spec(_spec)
sys.modules.setdefault(_spec.name, scan)  # its dataclasses look their module up
_spec.loader.exec_module(scan)

REPO = Path(__file__).resolve().parents[2]
STATUSES = {code.value: entry.statuses for code, entry in CATALOGUE.items()}

RESERVED: dict[str, str] = {
    "configuration_incomplete": "kept from the reference system (docs/design/reference); "
    "documented on the issue routes, raised by nothing yet",
}
"""Catalogued codes no source answers with yet, and why they stay."""

_NOT_ANSWERING = frozenset({"error_responses()", "compared with .code", "case ...(code=...)"})
"""Uses that document or look for a code without answering with it."""


def _findings_text(findings: list[Any]) -> str:
    """One ``path:line: problem`` per finding, the path relative to the repository if inside."""
    lines = []
    for finding in findings:
        path = finding.path.relative_to(REPO) if finding.path.is_relative_to(REPO) else finding.path
        lines.append(f"{path}:{finding.line}: {finding.message}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def uses() -> list[Any]:
    """Every use of an error code in the repository's sources (scanned once, ~0.7 s)."""
    found: list[Any] = scan.scan_error_codes(scan.resolve_roots(REPO))
    return found


def test_every_error_code_in_the_sources_is_catalogued_with_a_status_it_allows(
    uses: list[Any],
) -> None:
    assert len(uses) > 200, "the scanner found too few uses: are the roots right?"
    findings = scan.check_uses(uses, STATUSES)
    assert not findings, "codes the catalogue lacks or disagrees with:\n" + _findings_text(findings)


def test_every_catalogued_code_is_answered_somewhere(uses: list[Any]) -> None:
    catalogue_file = REPO / "contracts/src/contracts/errors.py"
    answered = {u.code for u in uses if u.path != catalogue_file and u.how not in _NOT_ANSWERING}
    unused = set(STATUSES) - answered - set(RESERVED)
    assert not unused, (
        f"catalogued but answered by nothing (drop them or list in RESERVED): {unused}"
    )
    assert not set(RESERVED) & answered, "a reserved code is answered now: take it off RESERVED"


def test_the_scanner_reports_a_planted_unknown_code_with_its_file_and_line(tmp_path: Path) -> None:
    planted = tmp_path / "svc" / "src" / "planted.py"
    planted.parent.mkdir(parents=True)
    planted.write_text(
        textwrap.dedent(
            """\
            from contracts.errors import ErrorCode

            GONE = "went_away"


            class WidgetError(Exception):
                code = "widget_jammed"
                status = 409


            class LostError(Exception):
                code = "not_found"
                status = 410


            def refuse():
                reply = ErrorReply(code="no_such_code", message="m", status=400)
                error_reply(GONE, "gone")
                raise PortError(ErrorCode.NOT_A_MEMBER, "m")


            def look(reply):
                return reply.code == "never_sent"
            """
        )
    )
    (tmp_path / "svc" / "tests").mkdir()
    (tmp_path / "svc" / "tests" / "test_x.py").write_text('x = E(code="in_a_test")\n')

    findings = scan.check_uses(scan.scan_error_codes([tmp_path / "svc"]), STATUSES)

    assert [(f.path, f.line) for f in findings] == [
        (planted, 7),
        (planted, 12),
        (planted, 17),
        (planted, 18),  # GONE, a module constant, as error_reply's code
        (planted, 19),
        (planted, 23),
    ]
    text = _findings_text(findings)
    assert f"{planted}:7: error code 'widget_jammed' (class WidgetError: code)" in text
    assert (
        f"{planted}:12: error code 'not_found' (class LostError: code) is answered with 410" in text
    )
    assert f"{planted}:17: error code 'no_such_code' (ErrorReply(code=...))" in text
    assert f"{planted}:19: error code 'not_a_member' (PortError())" in text
    assert f"{planted}:23: error code 'never_sent' (compared with .code)" in text
    assert f"{planted}:18: error code 'went_away' (error_reply())" in text
    assert "in_a_test" not in text, "tests folders are not scanned"


def test_the_scanner_as_a_script_fails_on_a_planted_file(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "services" / "x" / "src").mkdir(parents=True)
    bad = tmp_path / "services" / "x" / "src" / "bad.py"
    bad.write_text('raise HostOperationError("m", code="made_up")\n')
    assert scan.main([str(tmp_path)]) == 1
    assert capsys.readouterr().out.startswith(f"{bad}:1: error code 'made_up'")


def test_the_catalogue_holds_every_code_once_with_a_status_and_a_line() -> None:
    assert list(CATALOGUE) == list(ErrorCode), "the catalogue lists the codes in enum order"
    for code, entry in CATALOGUE.items():
        assert entry.code is code
        assert code.name == code.value.upper(), "ErrorCode.X is the code in upper case"
        assert 400 <= entry.status <= 599
        assert all(400 <= s <= 599 and s != entry.status for s in entry.other_statuses)
        assert entry.description.strip() == entry.description
        assert "\n" not in entry.description
        assert 10 < len(entry.description) <= 160
        assert describe(code.value) == entry.description
        assert status_of(code.value) == DEFAULT_STATUS[code] == entry.status
    assert status_of("no_such_code") == 500
    with pytest.raises(ValueError):
        describe("no_such_code")


def test_a_coded_error_takes_its_status_from_the_catalogue() -> None:
    class Jammed(CodedError):
        code = ErrorCode.SLOT_UNAVAILABLE

    class Unreadable(CodedError):
        code = ErrorCode.INTERNAL
        status = 502  # the catalogue's other status for ``internal``

    assert (Jammed.code, Jammed.status, type(Jammed.code)) == ("slot_unavailable", 409, str)
    assert (Unreadable.code, Unreadable.status) == ("internal", 502)
    with pytest.raises(TypeError, match="status 410 is not one the catalogue allows"):

        class Gone(CodedError):
            code = ErrorCode.NOT_FOUND
            status = 410

    with pytest.raises(ValueError):

        class Unknown(CodedError):
            code = "no_such_code"


def test_the_readme_table_is_the_catalogue() -> None:
    readme = (REPO / "contracts" / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Error codes", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if re.match(r"\| `[a-z_]+` \|", line)]
    expected = [
        f"| `{code.value}` | {', '.join(map(str, (e.status, *e.other_statuses)))} "
        f"| {e.description} |"
        for code, e in CATALOGUE.items()
    ]
    assert rows == expected, "contracts/README.md's table should read:\n" + "\n".join(expected)
