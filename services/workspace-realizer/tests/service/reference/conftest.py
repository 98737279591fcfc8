"""Fixtures of the reference-case tests (reference §10, as changed by DECISIONS 14): the
realizer's orchestrators on the host's real git and shell adapters, real repositories in temporary
directories (a bare ``origin`` and a clone of it), a hermetic git configuration, and hand-written
fakes only for the credential and pull-request ports (their real lookups need a token: the
service conftest's ``FakeCredentials`` and ``FakePullRequests``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from realizer_git_helpers import (
    clone_with_bare_origin,
    commit,
    git,
    push_to_origin,
    use_hermetic_git,
)

from servicekit.access import Access
from workspace_realizer.adapters.commands import ShellCommandRunner
from workspace_realizer.adapters.host import HostPorts
from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.orchestration.context import Realizer


class Scene:
    """Real repositories and the records around them."""

    def __init__(self, tmp: Path, app: WorkspaceRealizerApplication, world: Any) -> None:
        self.tmp, self.app, self.world = tmp, app, world

    def git(self, cwd: Path, *args: str, check: bool = True) -> str:
        """Plain git (see ``realizer_git_helpers.git``)."""
        return git(cwd, *args, check=check)

    def commit(self, repo: Path, files: dict[str, str], message: str = "change") -> str:
        """Write ``files``, commit them all, return the new HEAD."""
        return commit(repo, files, message)

    def repo(self, name: str = "repo", files: dict[str, str] | None = None) -> Path:
        """A clone of a bare ``<name>-origin.git`` on ``main`` (with ``origin/main``)."""
        return clone_with_bare_origin(self.tmp, name, files)

    def push_upstream(self, repo: Path, files: dict[str, str], message: str = "upstream") -> str:
        """Advance ``origin/main`` from another clone (``repo`` does not see it until a fetch)."""
        return push_to_origin(repo, files, message)

    def project(self, board: Access, policy: dict[str, Any], repo: Path, **fields: Any) -> str:
        """A project with ``policy`` and one project workspace on the local checkout ``repo``."""
        project = self.world.project(board, policy)
        values = {"name": "web", "cwd": str(repo)} | fields
        self.app.create_project_workspace(board, project, values, None)
        return str(project)

    def checkout_of(self, project_id: str) -> str:
        """The id of the project's (only) project workspace."""
        (found,) = [
            str(pw.id) for pw in self.app.project_workspaces.values() if pw.project_id == project_id
        ]
        return found


@pytest.fixture(autouse=True)
def hermetic_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Identity for test commits; the machine's global and system git config are not read."""
    use_hermetic_git(tmp_path, monkeypatch)


@pytest.fixture
def scene(tmp_path: Path, app: WorkspaceRealizerApplication, world: Any) -> Scene:
    return Scene(tmp_path, app, world)


@pytest.fixture
def prs(pull_requests: Any) -> Any:
    """The pull-request fake (the service conftest's ``pull_requests``), facts by canonical URL."""
    return pull_requests


@pytest.fixture
def real(
    app: WorkspaceRealizerApplication,
    executor: Any,
    supervisor: Any,
    home: Path,
    credentials: Any,
    prs: Any,
) -> Realizer:
    """The realizer on the host's git and shell adapters (HostGit, ShellCommandRunner)."""
    ports = HostPorts(
        git=HostGit(home=home), commands=ShellCommandRunner(), credentials=credentials,
        pull_requests=prs,
    )  # fmt: skip
    return Realizer(app=app, store=executor.run, ports=ports, home=home,
                    stop_services=supervisor.stop)  # fmt: skip
