"""Fixtures of the realizer's use-case, orchestration and handler tests: the in-memory store and
hand-written fakes of the host ports (``adapters/ports.py``); for the tests on the host's real git,
a repository with a bare origin and the realizer on the real adapters (``repo``, ``real``); for
the tests on a running realizer, ``company_known`` (wait for the gateway's company to arrive).

The git fake keeps worktrees and branches in memory but creates and removes real directories,
so the archive saga's on-disk verification is real.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from eventsourcing.persistence import Tracking
from realizer_git_helpers import clone_with_bare_origin, use_hermetic_git

from contracts.base import Actor
from contracts.gateway import CompanyCreated
from contracts.workspace_diff import WorkspaceDiff
from eventstore import Cause, StoreExecutor, acting
from servicekit.access import Access, ActorKind
from workspace_realizer.adapters.host import HostPorts, default_ports
from workspace_realizer.adapters.ports import (
    BaseRef,
    CommandResult,
    DeliveryFacts,
    GitInspection,
    GitInvocation,
    HostOperationError,
    ManagedClone,
    PullRequestFacts,
    RescueRef,
    Step,
    StepSink,
    WorktreeOutcome,
)
from workspace_realizer.adapters.worktree_diff import NotAChangedFileError
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.orchestration.context import Realizer


def _now() -> datetime:
    return datetime.now(UTC)


async def _step(sink: StepSink, phase: Any, command: str, cwd: Path, code: int = 0,
                stdout: bytes = b"", stderr: bytes = b"", **metadata: Any) -> Step:  # fmt: skip
    step = Step(
        phase=phase, command=command, cwd=str(cwd), status="succeeded" if code == 0 else "failed",
        exit_code=code, stdout=stdout, stderr=stderr, started_at=_now(), finished_at=_now(),
        metadata=metadata,
    )  # fmt: skip
    await sink(step)
    return step


@dataclass
class Tree:
    """A fake worktree: its branch, head and what ``git status`` would say."""

    branch: str
    head: str
    dirty: int = 0
    untracked: int = 0
    ahead: int = 0
    behind: int = 0
    ancestry: bool | None = None
    squash: bool | None = False
    readable: bool = True


@dataclass
class FakeGit:
    """The git port by hand; ``fail[name]`` makes that operation raise."""

    base_sha: str = "base0"
    base_warnings: tuple[str, ...] = ()
    trees: dict[str, Tree] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    rescues: dict[str, tuple[RescueRef, Tree]] = field(default_factory=dict)
    fail: dict[str, Exception] = field(default_factory=dict)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    keep_dir_on_remove: bool = False
    refuse_branch_delete: bool = False
    pushed: dict[str, str] = field(default_factory=dict)
    """The project's remote: move refs pushed (ref -> sha)."""

    def _enter(self, name: str, **kwargs: Any) -> None:
        self.calls.append((name, kwargs))
        if name in self.fail:
            raise self.fail[name]

    def names(self) -> list[str]:
        """The operations called, in order."""
        return [name for name, _ in self.calls]

    async def managed_clone(self, *, repo_url: str, repo_ref: str | None, target: Path,
                            auth: GitInvocation | None, sink: StepSink) -> ManagedClone:  # fmt: skip
        self._enter("managed_clone", repo_url=repo_url, target=target, auth=auth)
        (target / ".git").mkdir(parents=True, exist_ok=True)
        await _step(sink, "managed_clone", f"git clone {repo_url} {target}", target.parent)
        return ManagedClone(path=target, head_branch=repo_ref or "main", head_sha="c0", cloned=True)

    async def resolve_base_ref(self, *, repo_root: Path, configured: str | None,
                               auth: GitInvocation | None, sink: StepSink) -> BaseRef:  # fmt: skip
        self._enter("resolve_base_ref", repo_root=repo_root, configured=configured, auth=auth)
        ref = configured if configured and "/" in configured else f"origin/{configured or 'main'}"
        await _step(sink, "worktree_prepare", f"git fetch origin {ref}", repo_root)
        return BaseRef(ref=ref, sha=self.base_sha, warnings=self.base_warnings)

    async def ensure_worktree(self, *, repo_root: Path, path: Path, branch: str, base: BaseRef,
                              sink: StepSink) -> WorktreeOutcome:  # fmt: skip
        self._enter("ensure_worktree", repo_root=repo_root, path=path, branch=branch)
        tree = self.trees.get(str(path))
        if tree is not None and path.is_dir():
            return WorktreeOutcome(path=path, branch=tree.branch, head_sha=tree.head, created=False)
        attached = branch in self.branches
        head = self.branches.setdefault(branch, base.sha or "base0")
        path.mkdir(parents=True, exist_ok=True)
        self.trees[str(path)] = Tree(branch=branch, head=head)
        await _step(sink, "worktree_prepare", f"git worktree add -b {branch} {path}", repo_root)
        return WorktreeOutcome(path=path, branch=branch, head_sha=head, created=True,
                               reused_existing_branch=attached)  # fmt: skip

    async def diff(self, *, workspace_id: str, path: Path, base_ref: str | None,
                   file: str | None) -> WorkspaceDiff:  # fmt: skip
        """No changes (the fake's trees hold no files); a file asked for is not a changed one."""
        self._enter("diff", path=path)
        tree = self.trees.get(str(path))
        if file is not None:
            raise NotAChangedFileError(f"{file!r} is not a changed or untracked file")
        return WorkspaceDiff(workspace_id=workspace_id, available=True, base_ref=base_ref,
                             head_sha=tree.head if tree else None)  # fmt: skip

    async def inspect(self, *, repo_root: Path, path: Path, branch: str | None,
                      base_ref: str | None) -> GitInspection:  # fmt: skip
        self._enter("inspect", path=path)
        tree = self.trees.get(str(path))
        nothing = DeliveryFacts(merged_by_ancestry=None, merged_by_squash=None, commits_ahead=None,
                                head_sha=None)  # fmt: skip
        if tree is None or not path.is_dir():
            head = self.branches.get(branch or "")
            return GitInspection(exists=False, readable=True, branch=branch, head_sha=head,
                                 dirty_count=0, untracked_count=0, ahead=None, behind=None,
                                 delivery=nothing)  # fmt: skip
        if not tree.readable:
            return GitInspection(exists=True, readable=False, branch=branch, head_sha=None,
                                 dirty_count=0, untracked_count=0, ahead=None, behind=None,
                                 delivery=nothing, error="fatal: bad object HEAD")  # fmt: skip
        ancestry = tree.ahead == 0 if tree.ancestry is None else tree.ancestry
        delivery = DeliveryFacts(merged_by_ancestry=ancestry, merged_by_squash=tree.squash,
                                 commits_ahead=tree.ahead, head_sha=tree.head)  # fmt: skip
        return GitInspection(exists=True, readable=True, branch=tree.branch, head_sha=tree.head,
                             dirty_count=tree.dirty, untracked_count=tree.untracked,
                             ahead=tree.ahead, behind=tree.behind, delivery=delivery)  # fmt: skip

    async def write_rescue_ref(self, *, repo_root: Path, path: Path, ref: str, message: str,
                               sink: StepSink) -> RescueRef | None:  # fmt: skip
        self._enter("write_rescue_ref", path=path, ref=ref)
        tree = self.trees[str(path)]
        rescue = RescueRef(
            ref=ref, sha=f"rescue{len(self.rescues)}", file_count=tree.dirty + tree.untracked
        )
        self.rescues[ref] = (rescue, replace(tree))
        await _step(sink, "workspace_rescue", f"git update-ref {ref} {rescue.sha}", path)
        return rescue

    async def drop_rescue_ref(self, *, repo_root: Path, ref: str, expected_sha: str,
                              sink: StepSink) -> bool:  # fmt: skip
        self._enter("drop_rescue_ref", ref=ref)
        rescued = self.rescues.get(ref)
        if rescued is not None and rescued[0].sha == expected_sha:
            del self.rescues[ref]
        return ref not in self.rescues

    async def remove_worktree(self, *, repo_root: Path, path: Path, sink: StepSink) -> bool:
        self._enter("remove_worktree", path=path)
        if not self.keep_dir_on_remove:
            shutil.rmtree(path, ignore_errors=True)
            self.trees.pop(str(path), None)
        await _step(sink, "worktree_cleanup", f"git worktree remove --force {path}", repo_root)
        return not path.exists()

    async def delete_branch(self, *, repo_root: Path, branch: str, expected_sha: str,
                            sink: StepSink) -> bool:  # fmt: skip
        self._enter("delete_branch", branch=branch, expected_sha=expected_sha)
        if self.refuse_branch_delete or self.branches.get(branch) != expected_sha:
            return False
        del self.branches[branch]
        await _step(sink, "worktree_cleanup", f"git update-ref -d refs/heads/{branch}", repo_root)
        return True

    async def restore_worktree(self, *, repo_root: Path, path: Path, branch: str, base: BaseRef,
                               rescue: RescueRef | None, sink: StepSink) -> WorktreeOutcome:  # fmt: skip
        self._enter("restore_worktree", path=path, branch=branch, rescue=rescue)
        saved = self.rescues[rescue.ref][1] if rescue else None
        head = self.branches.setdefault(branch, saved.head if saved else base.sha or "base0")
        path.mkdir(parents=True, exist_ok=True)
        self.trees[str(path)] = (
            replace(saved, branch=branch, head=head) if saved else Tree(branch, head)
        )
        await _step(sink, "workspace_restore", f"git worktree add {path} {branch}", repo_root)
        return WorktreeOutcome(path=path, branch=branch, head_sha=head, created=True)

    async def push_ref(self, *, repo_root: Path, remote_url: str, sha: str, ref: str,
                       auth: GitInvocation | None, sink: StepSink) -> None:  # fmt: skip
        self._enter("push_ref", remote_url=remote_url, sha=sha, ref=ref, auth=auth)
        self.pushed[ref] = sha

    async def fetch_ref(self, *, repo_root: Path, remote_url: str, ref: str, expected_sha: str,
                        auth: GitInvocation | None, sink: StepSink) -> None:  # fmt: skip
        self._enter("fetch_ref", repo_root=repo_root, ref=ref, expected_sha=expected_sha)
        assert self.pushed.get(ref) == expected_sha, f"{ref} was not pushed at {expected_sha}"

    async def drop_pushed_refs(self, *, repo_root: Path, remote_url: str, refs: list[str],
                               auth: GitInvocation | None, sink: StepSink) -> None:  # fmt: skip
        self._enter("drop_pushed_refs", refs=refs)
        for ref in refs:
            self.pushed.pop(ref, None)

    async def reconcile_branch(self, **kwargs: Any) -> Any:
        self._enter("reconcile_branch", **kwargs)
        raise HostOperationError("not scripted", code="branch_reconcile_refused")


@dataclass
class FakeCommands:
    """The command runner by hand: ``exit_codes[command]`` (default 0)."""

    exit_codes: dict[str, int] = field(default_factory=dict)
    runs: list[dict[str, Any]] = field(default_factory=list)

    async def run(self, *, phase: Any, command: str, cwd: Path, env: Any, timeout: float,
                  sink: StepSink, company_id: str = "", project_id: str = "",
                  workspace_id: str = "") -> CommandResult:  # fmt: skip
        self.runs.append({"phase": phase, "command": command, "cwd": cwd, "env": dict(env),
                          "companyId": company_id, "projectId": project_id,
                          "workspaceId": workspace_id})  # fmt: skip
        code = self.exit_codes.get(command, 0)
        step = await _step(sink, phase, command, cwd, code, stdout=f"ran {command}\n".encode(),
                           stderr=b"boom\n" if code else b"")  # fmt: skip
        return CommandResult(exit_code=code, step=step)


@dataclass
class FakeCredentials:
    """Answers ``answer`` (default: no credential); remembers who asked, and with what."""

    answer: GitInvocation | None = None
    asked: list[str] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    async def invocation_for(self, *, remote_url: str, company_id: str, run_id: str | None,
                             operation_id: str | None) -> GitInvocation | None:  # fmt: skip
        self.asked.append(remote_url)
        self.requests.append({"remote_url": remote_url, "company_id": company_id,
                              "run_id": run_id, "operation_id": operation_id})  # fmt: skip
        return self.answer


@dataclass
class FakePullRequests:
    """Pull-request facts by URL (unknown for the rest)."""

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


@dataclass
class FakeSupervisor:
    """The supervisor's stop request by hand."""

    stopped: int = 0
    error: Exception | None = None
    calls: list[tuple[str, str, int]] = field(default_factory=list)

    async def stop(self, company_id: str, workspace_id: str, generation: int) -> int:
        self.calls.append((company_id, workspace_id, generation))
        if self.error is not None:
            raise self.error
        return self.stopped


class World:
    """Seeds companies, projects, project workspaces and issues straight into the application."""

    def __init__(self, app: WorkspaceRealizerApplication, tmp: Path) -> None:
        self.app, self.tmp, self._position = app, tmp, 0

    def company(self, company_id: str = "c-acme", prefix: str = "ACME") -> Access:
        self._position += 1
        self.app.register_company(
            company_id, prefix.title(), prefix, Tracking("gateway", self._position)
        )
        return Access(kind=ActorKind.BOARD_KEY, company_id=company_id, actor_id="board-key")

    def project(self, access: Access, policy: dict[str, Any] | None = None) -> str:
        return str(self.app.create_project(access, str(access.company_id), "Web", policy).id)

    def checkout(self, access: Access, project_id: str, **fields: Any) -> str:
        cwd = self.tmp / "repo"
        cwd.mkdir(exist_ok=True)
        values = {"name": "main", "cwd": str(cwd)} | fields
        return str(
            self.app.create_project_workspace(
                access, project_id, values, fields.pop("runtime_config", None)
            ).id
        )

    def issue(self, access: Access, project_id: str, **fields: Any) -> str:
        values = {
            "project_id": project_id,
            "title": "Add worktree support",
            "status": "todo",
        } | fields
        return str(self.app.create_issue(access, str(access.company_id), values).id)


ISOLATED = {"enabled": True, "defaultMode": "isolated_workspace", "allowIssueOverride": True,
            "workspaceStrategy": {"type": "git_worktree", "provisionCommand": "make setup",
                                  "teardownCommand": "make down"}}  # fmt: skip


@pytest.fixture
def app() -> Iterator[WorkspaceRealizerApplication]:
    application = WorkspaceRealizerApplication(service="realizer")
    with acting(Cause(actor=Actor(type="board", id="board-key"), reason="test")):
        yield application
    application.close()


@pytest.fixture
def executor() -> Iterator[StoreExecutor]:
    store = StoreExecutor("test-realizer-store")
    yield store
    store.close()


CompanyKnown = Callable[[Any, str], Awaitable[None]]


@pytest.fixture
def company_known() -> CompanyKnown:
    """``await company_known(runtime, company_id)``: wait until the running realizer (the runtime
    ``start_service`` gave) holds its copy of the company.

    The gateway's ``company.created`` reaches the realizer through its inbox, asynchronously; an
    issue created before the copy is applied is refused (404 "not known ... (yet)") once the
    endpoint's own short wait runs out, which a loaded machine can outlast.
    """

    async def wait(runtime: Any, company_id: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while await runtime.store(runtime.app.company_copy, company_id) is None:
            assert time.monotonic() < deadline, f"the realizer never received {company_id}"
            await asyncio.sleep(0.05)

    return wait


CompanyCreatedOn = Callable[..., Awaitable[None]]


@pytest.fixture
def company_created(company_known: CompanyKnown) -> CompanyCreatedOn:
    """``await company_created(nc, runtime, company_id, seq=1)``: publish the gateway's
    ``company.created`` of company ``company_id`` (prefix ``ACME``, ``Nats-Msg-Id`` gateway:<seq>)
    on the event stream, and wait until the running realizer holds its copy."""

    async def publish(nc: Any, runtime: Any, company_id: str, seq: int = 1) -> None:
        created = CompanyCreated(
            event_id=f"6a0f0c52-0000-4000-8000-{seq:012d}", aggregate="company",
            aggregate_id=company_id, aggregate_version=1, company_id=company_id,
            occurred_at=datetime.now(UTC), actor=Actor(type="admin", id="admin"), name="Acme",
            issue_prefix="ACME",
        )  # fmt: skip
        await nc.jetstream().publish(
            "ws.evt.company.created",
            msgspec.json.encode(created),
            headers={"Nats-Msg-Id": f"gateway:{seq}"},
        )
        await company_known(runtime, company_id)

    return publish


@pytest.fixture
def world(app: WorkspaceRealizerApplication, tmp_path: Path) -> World:
    return World(app, tmp_path)


@pytest.fixture
def git() -> FakeGit:
    return FakeGit()


@pytest.fixture
def commands() -> FakeCommands:
    return FakeCommands()


@pytest.fixture
def credentials() -> FakeCredentials:
    return FakeCredentials()


@pytest.fixture
def pull_requests() -> FakePullRequests:
    return FakePullRequests()


@pytest.fixture
def supervisor() -> FakeSupervisor:
    return FakeSupervisor()


@pytest.fixture
def realizer(app: WorkspaceRealizerApplication, executor: StoreExecutor, git: FakeGit,
             commands: FakeCommands, credentials: FakeCredentials, pull_requests: FakePullRequests,
             supervisor: FakeSupervisor, tmp_path: Path) -> Realizer:  # fmt: skip
    ports = HostPorts(
        git=git, commands=commands, credentials=credentials, pull_requests=pull_requests
    )
    return Realizer(app=app, store=executor.run, ports=ports, home=tmp_path / "home",
                    stop_services=supervisor.stop)  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clone of a bare origin on ``main`` (a README saying ``# web``); git made hermetic."""
    use_hermetic_git(tmp_path, monkeypatch)
    return clone_with_bare_origin(tmp_path, "repo", {"README.md": "# web\n"})


@pytest.fixture
def real(
    app: WorkspaceRealizerApplication, executor: StoreExecutor, supervisor: FakeSupervisor,
    home: Path,
) -> Realizer:  # fmt: skip
    """The realizer on the host's real git and shell adapters (``default_ports``)."""
    return Realizer(app=app, store=executor.run, ports=default_ports(home), home=home,
                    stop_services=supervisor.stop)  # fmt: skip
