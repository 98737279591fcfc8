"""Fixtures of the reference-case tests (§10 of the reference, as changed by DECISIONS 14): the
realizer's orchestrators on the host's real git and shell adapters, real repositories in temporary
directories (a bare ``origin`` and a clone of it), a hermetic git configuration, and hand-written
fakes only for the credential and pull-request ports (their real lookups need a token)."""

from __future__ import annotations

import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from workspace_realizer.access import Access
from workspace_realizer.adapters.commands import ShellCommandRunner
from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.adapters.ports import GitInvocation, PullRequestFacts
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.context import Realizer
from workspace_realizer.host import HostPorts


def run_git(cwd: Path, *args: str, check: bool = True) -> str:
    """Plain git for setting scenes up and checking results (not the adapter's runner)."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {cwd}: {done.stderr}")
    return done.stdout.strip()


@dataclass
class RecordingCredentials:
    """The credential port answering None (no credential), remembering every remote asked about."""

    asked: list[str] = field(default_factory=list)

    async def invocation_for(self, *, remote_url: str, company_id: str, run_id: str | None,
                             operation_id: str | None) -> GitInvocation | None:  # fmt: skip
        self.asked.append(remote_url)
        return None


@dataclass
class ScriptedPullRequests:
    """The pull-request port by hand: facts by canonical URL, ``unknown`` for the rest."""

    facts_by_url: dict[str, PullRequestFacts] = field(default_factory=dict)
    asked: list[list[str]] = field(default_factory=list)

    async def facts(
        self, *, company_id: str, repo_url: str, references: list[str]
    ) -> list[PullRequestFacts]:
        self.asked.append(list(references))
        return [
            self.facts_by_url.get(ref)
            or PullRequestFacts(url=ref, state="unknown", head_ref=None, head_sha=None)
            for ref in references
        ]


class Scene:
    """Real repositories and the records around them."""

    def __init__(self, tmp: Path, app: WorkspaceRealizerApplication, world: Any) -> None:
        self.tmp, self.app, self.world = tmp, app, world

    def git(self, cwd: Path, *args: str, check: bool = True) -> str:
        """Plain git (see :func:`run_git`)."""
        return run_git(cwd, *args, check=check)

    def commit(self, repo: Path, files: dict[str, str], message: str = "change") -> str:
        """Write ``files``, commit them all, return the new HEAD."""
        for name, text in files.items():
            target = repo / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        run_git(repo, "add", "-A")
        run_git(repo, "commit", "-q", "-m", message)
        return run_git(repo, "rev-parse", "HEAD")

    def repo(self, name: str = "repo", files: dict[str, str] | None = None) -> Path:
        """A clone of a bare ``<name>-origin.git`` on ``main`` (with ``origin/main``)."""
        seed = self.tmp / f"{name}-seed"
        seed.mkdir(parents=True)
        run_git(seed, "init", "-q", "-b", "main")
        self.commit(seed, files or {"README.md": f"# {name}\n"}, "initial")
        origin = self.tmp / f"{name}-origin.git"
        run_git(self.tmp, "clone", "-q", "--bare", str(seed), str(origin))
        repo = self.tmp / name
        run_git(self.tmp, "clone", "-q", str(origin), str(repo))
        return repo

    def push_upstream(self, repo: Path, files: dict[str, str], message: str = "upstream") -> str:
        """Advance ``origin/main`` from another clone (``repo`` does not see it until a fetch)."""
        other = self.tmp / f"other-{uuid.uuid4().hex[:8]}"
        run_git(self.tmp, "clone", "-q", run_git(repo, "remote", "get-url", "origin"), str(other))
        sha = self.commit(other, files, message)
        run_git(other, "push", "-q", "origin", "HEAD:main")
        return sha

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
    config = tmp_path / "gitconfig"
    config.write_text("[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "test@example.com")


@pytest.fixture
def scene(tmp_path: Path, app: WorkspaceRealizerApplication, world: Any) -> Scene:
    return Scene(tmp_path, app, world)


@pytest.fixture
def credentials() -> RecordingCredentials:
    return RecordingCredentials()


@pytest.fixture
def prs() -> ScriptedPullRequests:
    return ScriptedPullRequests()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def real(
    app: WorkspaceRealizerApplication,
    executor: Any,
    supervisor: Any,
    home: Path,
    credentials: RecordingCredentials,
    prs: ScriptedPullRequests,
) -> Realizer:
    """The realizer on the host's git and shell adapters (HostGit, ShellCommandRunner)."""
    ports = HostPorts(
        git=HostGit(home=home), commands=ShellCommandRunner(), credentials=credentials,
        pull_requests=prs,
    )  # fmt: skip
    return Realizer(app=app, store=executor.run, ports=ports, home=home,
                    stop_services=supervisor.stop)  # fmt: skip
