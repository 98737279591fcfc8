"""Templates of runtime commands and the working directory they resolve to."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime_supervisor.domain.config.templates import (
    CwdOutsideWorkspaceError,
    TemplateError,
    render,
    resolve_cwd,
)

VALUES = {
    "workspace.cwd": "/w/ws1",
    "workspace.branchName": "PAP-1-fix",
    "workspace.worktreePath": "/w/ws1",
    "workspace.repoUrl": "https://example.org/r.git",
    "workspace.repoRef": "main",
    "issue.id": "i-1",
    "issue.identifier": "PAP-1",
    "issue.title": "Fix it",
    "agent.id": "a-1",
    "agent.name": "Coder",
    "port": "41001",
}


def test_every_known_placeholder_renders() -> None:
    template = " ".join(f"{{{{{name}}}}}" for name in VALUES)
    assert render(template, VALUES) == " ".join(VALUES.values())


def test_spaces_inside_braces_and_repeats() -> None:
    assert render("http://127.0.0.1:{{ port }}/{{port}}", {"port": "8080"}) == (
        "http://127.0.0.1:8080/8080"
    )


def test_a_known_placeholder_without_value_renders_empty() -> None:
    assert render("[{{issue.identifier}}]", {}) == "[]"


def test_an_unknown_placeholder_is_named() -> None:
    with pytest.raises(TemplateError, match=r"\{\{workspace\.bogus\}\}") as raised:
        render("x {{port}} {{workspace.bogus}}", VALUES)
    assert raised.value.status == 422


def test_a_caller_supplied_name_is_known() -> None:
    assert render("{{workspace.env.FOO}}", {"workspace.env.FOO": "bar"}) == "bar"


def test_text_without_placeholders_is_unchanged() -> None:
    assert render("echo {not a placeholder} $PORT", {}) == "echo {not a placeholder} $PORT"


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        (None, "/w/ws1"),
        (".", "/w/ws1"),
        ("", "/w/ws1"),
        ("apps/{{issue.identifier}}", "/w/ws1/apps/PAP-1"),
        ("./apps/../web/", "/w/ws1/web"),
        ("{{workspace.cwd}}/sub", "/w/ws1/sub"),
        ("/w/ws1/abs", "/w/ws1/abs"),
    ],
)
def test_cwd_inside_the_workspace(template: str | None, expected: str) -> None:
    assert resolve_cwd("/w/ws1/", template, VALUES) == Path(expected)


@pytest.mark.parametrize("template", ["..", "../ws10", "apps/../../x", "/etc", "/w/ws10"])
def test_cwd_outside_the_workspace_is_refused(template: str) -> None:
    with pytest.raises(CwdOutsideWorkspaceError, match="outside the workspace directory '/w/ws1'"):
        resolve_cwd(Path("/w/ws1"), template, VALUES)


def test_a_relative_workspace_directory_is_refused() -> None:
    with pytest.raises(CwdOutsideWorkspaceError, match="not absolute"):
        resolve_cwd("w/ws1", ".", VALUES)


def test_an_unknown_placeholder_in_cwd_is_refused() -> None:
    with pytest.raises(TemplateError, match=r"\{\{nope\}\}"):
        resolve_cwd("/w/ws1", "{{nope}}", VALUES)
