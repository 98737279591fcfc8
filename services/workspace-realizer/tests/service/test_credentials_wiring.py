"""The realizer as ``run_service`` builds it (``build_spec`` without ports) asks git-credentials
over the real bus: a managed clone from a real HTTPS git server requiring Basic auth with the
answered credential, a rejected one described, no answer at all described as such;
``merged_via_pr`` from the pull-request facts it answers (reference §3.4). git-credentials itself
is played by a responder on its subjects. The git server is the testkit's ``https_git_server``;
the realizer's git processes trust its throwaway CA through ``GIT_SSL_CAINFO`` in the service's
environment (so a clone without any credential still gets past TLS to the server's 401)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import nats
import pytest
from realizer_git_helpers import clone_with_bare_origin, git, use_hermetic_git

import contracts.credential_subjects as credential_subjects
from contracts import workspace_subjects as subjects
from contracts.base import Actor, ErrorReply, Ok, Principal
from contracts.credentials import (
    GitCredential,
    GitInvocation,
    LookupPullRequests,
    PullRequestFact,
    PullRequestFacts,
    ResolveGitInvocation,
)
from contracts.execution_commands import GetExecutionWorkspace, RealizeWorkspace
from contracts.workspace_commands import (
    AddWorkProduct,
    CreateIssue,
    CreateProject,
    CreateProjectWorkspace,
    UpdateIssue,
)
from contracts.workspace_config import ExecutionWorkspacePolicy, WorkspaceStrategy
from natsbus import BusClient
from servicekit import ServiceSettings, start_service
from testkit.git_repos import token_helper_args
from testkit.https_git import HttpsGitServer
from testkit.nats_server import start_nats_server
from workspace_realizer.adapters.credentials_bus import BusPullRequests
from workspace_realizer.app import build_spec
from workspace_realizer.settings import RealizerSettings

pytestmark = pytest.mark.integration

COMPANY = "9d6c2c1e-0000-4000-8000-0000000c4ed5"
BOARD = Principal(company_id=COMPANY, actor=Actor(type="board", id="board-key"))
TOKEN = "glpat-" + "G00d" * 6
WRONG = "glpat-" + "Bad0" * 6
POLICY = ExecutionWorkspacePolicy(
    default_mode="isolated_workspace",
    workspace_strategy=WorkspaceStrategy(type="git_worktree", base_ref="main"),
)


@dataclass
class GitCredentials:
    """Plays git-credentials: ``invocation(request)`` and ``facts(request)`` answer; every
    request is kept."""

    invocation: Callable[[ResolveGitInvocation], GitInvocation]
    facts: Callable[[LookupPullRequests], PullRequestFacts]
    resolutions: list[ResolveGitInvocation] = field(default_factory=list)
    lookups: list[LookupPullRequests] = field(default_factory=list)

    async def on_invocation(self, msg: Any) -> None:
        request = msgspec.json.decode(msg.data, type=ResolveGitInvocation)
        self.resolutions.append(request)
        await msg.respond(msgspec.json.encode(Ok(result=self.invocation(request))))

    async def on_facts(self, msg: Any) -> None:
        request = msgspec.json.decode(msg.data, type=LookupPullRequests)
        self.lookups.append(request)
        await msg.respond(msgspec.json.encode(Ok(result=self.facts(request))))


def gitlab_secret(token: str) -> GitInvocation:
    return GitInvocation(
        provider="gitlab",
        credential=GitCredential(
            config_args=list(token_helper_args("oauth2")),
            env={"CLIPYARD_GIT_TOKEN": token, "GIT_TERMINAL_PROMPT": "0"},
            secret_name="GITLAB_TOKEN",
            source="company_secret",
            provider_label="GitLab",
        ),
    )


@dataclass
class Stack:
    bus: BusClient
    nc: Any
    runtime: Any
    credentials: GitCredentials
    subscriptions: dict[str, Any]

    async def ok(self, subject: str, message: Any, timeout: float = 30.0) -> Any:
        reply = await self.bus.request(subject, message, timeout=timeout)
        assert isinstance(reply, Ok), reply
        return reply.result


@pytest.fixture
def server(https_git_server: HttpsGitServer) -> HttpsGitServer:
    """The HTTPS git server accepting ``TOKEN``, serving ``app`` (a README saying private)."""
    https_git_server.set_token(TOKEN)
    https_git_server.create_repo("app", {"README.md": "private\n"})
    return https_git_server


@pytest.fixture
async def stack(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    https_git_server: HttpsGitServer,
    company_created: Any,
) -> AsyncIterator[Stack]:
    # Both before the real host ports read the environment: a hermetic git that trusts the test
    # git server's CA.
    use_hermetic_git(tmp_path, monkeypatch)
    monkeypatch.setenv("GIT_SSL_CAINFO", str(https_git_server.ca_path))
    nats_server = start_nats_server(store_dir=tmp_path / "nats")
    env = {
        "CLIPYARD_HOME": str(tmp_path / "home"),
        "CLIPYARD_NATS_URL": nats_server.url,
        "CLIPYARD_STORE": "memory",
    }
    settings = RealizerSettings(
        service=ServiceSettings.from_env("workspace-realizer", env), reaper_interval=3600
    )
    credentials = GitCredentials(
        invocation=lambda request: GitInvocation(provider=None, credential=None),
        facts=lambda request: PullRequestFacts(facts=[]),
    )
    nc = await nats.connect(nats_server.url)
    subscriptions = {
        "invocation": await nc.subscribe(
            credential_subjects.GIT_INVOCATION, cb=credentials.on_invocation
        ),
        "facts": await nc.subscribe(
            credential_subjects.PULL_REQUEST_FACTS, cb=credentials.on_facts
        ),
    }
    try:
        async with AsyncExitStack() as exit_stack:
            runtime = await start_service(
                build_spec(settings), settings.service, exit_stack, asyncio.Event()
            )
            await company_created(nc, runtime, COMPANY)
            yield Stack(BusClient(nc), nc, runtime, credentials, subscriptions)
        await nc.drain()
    finally:
        nats_server.stop()


def checkout_dirs(home: Path) -> list[str]:
    root = home / "checkouts"
    return sorted(str(p.relative_to(root)) for p in root.glob("*/*/*")) if root.exists() else []


async def test_managed_clones_authenticate_through_git_credentials(
    stack: Stack, server: HttpsGitServer, tmp_path: Path
) -> None:
    s = stack
    home = tmp_path / "home"
    answer = {"token": TOKEN}
    s.credentials.invocation = lambda request: gitlab_secret(answer["token"])
    project = await s.ok(
        subjects.PROJECT_CREATE, CreateProject(principal=BOARD, company_id=COMPANY, name="Api")
    )
    create = subjects.create_project_workspace("local")

    def workspace(name: str) -> CreateProjectWorkspace:
        return CreateProjectWorkspace(
            principal=BOARD, project_id=project["id"], name=name, repo_url=server.repo_url("app")
        )

    cloned = await s.ok(create, workspace("good"))

    checkout = cloned["managedCheckout"]
    assert checkout["state"] == "ready", checkout
    assert (Path(checkout["path"]) / "README.md").read_text() == "private\n"
    [asked] = s.credentials.resolutions
    assert (asked.company_id, asked.remote_url) == (COMPANY, server.repo_url("app"))
    assert asked.operation_id == checkout["operationId"]
    assert (asked.principal.actor.type, asked.principal.actor.id) == (
        "system",
        "workspace-realizer",
    )
    assert ("oauth2", True) in {(r.username, r.auth_ok) for r in server.request_log}

    answer["token"] = WRONG
    rejected = await s.ok(create, workspace("rejected"))

    failed = rejected["managedCheckout"]
    assert failed["state"] == "failed"
    assert "Authentication failed" in failed["error"]
    assert failed["error"].endswith(
        "The operation authenticated with the GITLAB_TOKEN company-secret GitLab credential, "
        "which was rejected or lacks access to this repository."
    )
    assert WRONG not in failed["error"]
    assert checkout_dirs(home) == [
        f"{project['id']}/{cloned['id']}/app"
    ]  # nothing of the failed clone

    # git-credentials stops answering: the clone goes on without a credential and says why.
    await s.subscriptions["invocation"].unsubscribe()
    unanswered = await s.ok(create, workspace("unanswered"))

    error = unanswered["managedCheckout"]["error"]
    assert "terminal prompts disabled" in error
    assert (
        "the git-credentials service did not answer (it is not running or cannot be reached)"
        in (error)
    )
    assert "company secret" not in error
    assert len(checkout_dirs(home)) == 1


async def test_merged_via_pr_comes_from_the_facts_git_credentials_answers(
    stack: Stack, tmp_path: Path
) -> None:
    s = stack
    repo = clone_with_bare_origin(tmp_path, "repo", {"README.md": "# app\n"})
    s.credentials.invocation = lambda request: GitInvocation(provider="github", credential=None)
    head: dict[str, str] = {}
    s.credentials.facts = lambda request: PullRequestFacts(
        facts=[
            PullRequestFact(url=ref, state="merged", head_ref=head["ref"], head_sha=head["sha"])
            for ref in request.references
        ]
    )
    project = await s.ok(
        subjects.PROJECT_CREATE,
        CreateProject(
            principal=BOARD, company_id=COMPANY, name="App", execution_workspace_policy=POLICY
        ),
    )
    await s.ok(
        subjects.create_project_workspace("local"),
        CreateProjectWorkspace(
            principal=BOARD, project_id=project["id"], name="app", cwd=str(repo),
            repo_url="https://github.com/Acme/App.git",
        ),
    )  # fmt: skip
    issue = await s.ok(
        subjects.ISSUE_CREATE,
        CreateIssue(principal=BOARD, company_id=COMPANY, title="Ship it", project_id=project["id"]),
    )
    realized = await s.ok(
        subjects.realize_workspace("local"), RealizeWorkspace(principal=BOARD, issue_id=issue["id"])
    )
    workspace = realized["workspace"]
    # The base-ref fetch asked git-credentials too (GitHub, no credential: ambient git).
    assert [r.remote_url for r in s.credentials.resolutions] == ["https://github.com/Acme/App.git"]
    await s.ok(
        subjects.ISSUE_ADD_WORK_PRODUCT,
        AddWorkProduct(
            principal=BOARD, issue_id=issue["id"], product_type="pull_request",
            url="https://github.com/acme/app/pull/7",
        ),
    )  # fmt: skip
    await s.ok(
        subjects.ISSUE_UPDATE, UpdateIssue(principal=BOARD, issue_id=issue["id"], status="done")
    )
    get = GetExecutionWorkspace(principal=BOARD, workspace_id=workspace["id"])
    worktree_head = git(Path(workspace["cwd"]), "rev-parse", "HEAD")

    head.update(ref=workspace["branchName"], sha=worktree_head)
    delivered = await s.ok(subjects.WORKSPACE_GET, get)
    head.update(sha="f" * 40)  # merged, but not this workspace's HEAD
    elsewhere = await s.ok(subjects.WORKSPACE_GET, get)

    assert delivered["deliveryState"] == "merged_via_pr"
    assert elsewhere["deliveryState"] == "merged_by_ancestry"  # no commits of its own
    lookup = s.credentials.lookups[0]
    assert lookup.references == ["https://github.com/acme/app/pull/7"]
    assert (lookup.company_id, lookup.repo_url) == (COMPANY, "https://github.com/Acme/App.git")
    assert lookup.principal.actor.id == "workspace-realizer"


async def test_an_error_reply_from_git_credentials_leaves_delivery_unknown_not_failed(
    stack: Stack, tmp_path: Path
) -> None:
    """Only the mapping of an ``error`` reply: the read still answers."""
    s = stack
    await s.subscriptions["facts"].unsubscribe()

    async def refuse(msg: Any) -> None:
        reply = ErrorReply(code="forbidden", message="not yours", status=403)
        await msg.respond(msgspec.json.encode(reply))

    await s.nc.subscribe(credential_subjects.PULL_REQUEST_FACTS, cb=refuse)
    await s.nc.flush()  # the server has the new subscription before the request goes out

    facts = await BusPullRequests(s.runtime.bus).facts(
        company_id=COMPANY,
        repo_url="https://github.com/acme/app.git",
        references=["https://github.com/acme/app/pull/1"],
    )
    assert [(f.url, f.state) for f in facts] == [("https://github.com/acme/app/pull/1", "unknown")]
