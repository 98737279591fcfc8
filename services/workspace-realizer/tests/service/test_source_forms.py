"""What git is given comes in a form git reads as data (docs/design/API.md, "Errors" under its
conventions): a project workspace's ``repoUrl`` is ``https://``, ``ssh://``, scp-like
``user@host:path``, ``file://`` or a path, never ``ext::`` (a transport that runs a command) or
an option (``--upload-pack=…``); its ``repoRef`` and a project's ``baseRef`` are refs, never
options. Each refusal names the field and nothing is stored."""

from __future__ import annotations

from typing import Any

import pytest

from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.domain.errors import InvalidInputError

BAD_URLS = (
    "ext::sh -c touch% /tmp/pwned",
    "--upload-pack=touch /tmp/pwned",
    "-oProxyCommand=evil host:repo",
    "fd::3",
    "https://example.com/a b.git",
    "git://example.com/a.git",
    "example.com::path",
)
GOOD_URLS = (
    "https://example.com/acme/web.git",
    "ssh://git@example.com/acme/web.git",
    "git@example.com:acme/web.git",
    "example.com:acme/web.git",
)


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_repo_url_git_would_not_read_as_a_repository_is_refused(
    app: WorkspaceRealizerApplication, world: Any, url: str
) -> None:
    board = world.company()
    project = world.project(board)
    before = len(app.project_workspaces)
    with pytest.raises(InvalidInputError) as caught:
        world.checkout(board, project, cwd=None, repo_url=url)
    assert caught.value.details["field"] == "repoUrl"
    assert "https://" in str(caught.value), "it says which forms work"
    assert len(app.project_workspaces) == before


@pytest.mark.parametrize("url", GOOD_URLS)
def test_the_forms_of_a_remote_repository_are_accepted(
    app: WorkspaceRealizerApplication, world: Any, url: str
) -> None:
    board = world.company()
    world.checkout(board, world.project(board), cwd=None, repo_url=url)


@pytest.mark.parametrize("ref", ["--orphan", "-b", "main branch", "a..b", "x" * 256])
def test_a_ref_that_is_an_option_or_no_ref_is_refused(
    app: WorkspaceRealizerApplication, world: Any, ref: str
) -> None:
    board = world.company()
    project = world.project(board)
    with pytest.raises(InvalidInputError) as caught:
        world.checkout(board, project, cwd=None, repo_url=GOOD_URLS[0], repo_ref=ref)
    assert caught.value.details["field"] == "repoRef"
    policy = {"workspaceStrategy": {"type": "git_worktree", "baseRef": ref}}
    with pytest.raises(InvalidInputError) as caught:
        app.update_project(board, project, None, policy)
    assert caught.value.details["field"] == "executionWorkspacePolicy.workspaceStrategy.baseRef"
