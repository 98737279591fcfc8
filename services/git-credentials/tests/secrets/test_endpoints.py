"""The secret endpoints' rules, driven through their handlers: who may act, what they answer."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from secrets_helpers import memory_app, new_key, ring, stored_events

from contracts import credential_subjects as subjects
from contracts.base import Actor, Principal
from contracts.credentials import (
    CreateSecret,
    DeleteSecret,
    ListSecretAccessEvents,
    ListSecrets,
    LookupPullRequests,
    ResolveGitInvocation,
    RotateSecret,
    Secret,
)
from contracts.workspace_views import Deleted, Page
from git_credentials.app import credential_endpoints
from git_credentials.application import GitCredentialsApplication
from git_credentials.domain import InvalidSecretError, SecretNotFoundError
from git_credentials.endpoints.common import Endpoints
from git_credentials.endpoints.secrets import SecretEndpoints
from git_credentials.settings import load_credentials_settings
from git_credentials.usecases.resolver import ResolutionRecord
from servicekit.access import Access, AccessDeniedError, NotVisibleError
from servicekit.routes import mount

CANARY = "ghp_CANARY_endpoints_3b2f"
BOARD = Principal(company_id="c-1", actor=Actor(type="board", id="key-1"))
OTHER_BOARD = Principal(company_id="c-2", actor=Actor(type="board", id="key-2"))
ADMIN = Principal(company_id=None, actor=Actor(type="admin", id="operator"))
AGENT = Principal(company_id="c-1", actor=Actor(type="agent", id="agent-1"), run_id="run-1")
RUN_TOKEN = Principal(
    company_id="c-1", actor=Actor(type="agent", id="agent-1"), run_id="run-1", run_bound=True
)
NO_COMPANY = Principal(company_id=None, actor=Actor(type="board", id="key-0"))


class _Service:
    def __init__(self) -> None:
        self.endpoints: dict[str, tuple[str, Callable[..., Any], Any]] = {}

    async def add_endpoint(self, name: str, subject: str, handler: Any, request_type: Any) -> None:
        self.endpoints[name] = (subject, handler, request_type)


class _Runtime:
    """What the endpoints use of the running service: the store thread and the micro service."""

    def __init__(self) -> None:
        self.service = _Service()
        self.bus = object()

    async def store(self, fn: Callable[..., Any], *args: Any) -> Any:
        return fn(*args)


@pytest.fixture
def app() -> GitCredentialsApplication:
    return memory_app(ring(new_key()))


@pytest.fixture
async def call(app: GitCredentialsApplication) -> Callable[..., Any]:
    runtime = _Runtime()
    endpoints = Endpoints(runtime, app, load_credentials_settings({}))  # type: ignore[arg-type]
    await mount(runtime.service, SecretEndpoints(endpoints))  # type: ignore[arg-type]
    served = runtime.service.endpoints
    assert {name: entry[0] for name, entry in served.items()} == {
        "secret_create": subjects.SECRET_CREATE,
        "secret_rotate": subjects.SECRET_ROTATE,
        "secret_delete": subjects.SECRET_DELETE,
        "secret_list": subjects.SECRET_LIST,
        "secret_access_events": subjects.SECRET_ACCESS_EVENTS,
    }
    by_type = {entry[2]: entry[1] for entry in served.values()}

    async def call(request: Any) -> Any:
        return await by_type[type(request)](request, None)

    return call


async def test_a_board_member_manages_the_companys_secrets(
    call: Callable[..., Any], app: GitCredentialsApplication
) -> None:
    # Create: a view with version 1 and no value.
    created = await call(
        CreateSecret(principal=BOARD, company_id="c-1", name="GH_TOKEN", value=CANARY)
    )
    assert isinstance(created, Secret)
    assert (created.company_id, created.name, created.version) == ("c-1", "GH_TOKEN", 1)
    assert CANARY.encode() not in msgspec.json.encode(created)
    # Rotate, list, delete.
    rotated = await call(RotateSecret(principal=BOARD, secret_id=created.id, value=CANARY + "2"))
    assert rotated.version == 2
    page = await call(ListSecrets(principal=BOARD, company_id="c-1"))
    assert page == Page(items=[rotated], total=1)
    assert await call(DeleteSecret(principal=BOARD, secret_id=created.id)) == Deleted(id=created.id)
    assert await call(ListSecrets(principal=BOARD, company_id="c-1")) == Page(items=[], total=0)
    # The stored events carry the board member as actor, and the reason.
    actors = {(e.actor["id"], e.reason) for e in stored_events(app)}
    assert actors == {
        ("key-1", "create secret"),
        ("key-1", "rotate secret"),
        ("key-1", "delete secret"),
    }


async def test_another_companys_secrets_are_not_found(call: Callable[..., Any]) -> None:
    created = await call(
        CreateSecret(principal=BOARD, company_id="c-1", name="GH_TOKEN", value=CANARY)
    )
    for request in (
        CreateSecret(principal=OTHER_BOARD, company_id="c-1", name="X", value="v"),
        RotateSecret(principal=OTHER_BOARD, secret_id=created.id, value="v"),
        DeleteSecret(principal=OTHER_BOARD, secret_id=created.id),
        ListSecrets(principal=OTHER_BOARD, company_id="c-1"),
        ListSecretAccessEvents(principal=OTHER_BOARD, company_id="c-1"),
    ):
        with pytest.raises((NotVisibleError, SecretNotFoundError)) as caught:
            await call(request)
        assert (caught.value.code, caught.value.status) == ("not_found", 404)
    # Its own list does not show it.
    assert await call(ListSecrets(principal=OTHER_BOARD, company_id="c-2")) == Page(
        items=[], total=0
    )


async def test_an_admin_without_company_reaches_every_company(call: Callable[..., Any]) -> None:
    created = await call(
        CreateSecret(principal=ADMIN, company_id="c-9", name="GH_TOKEN", value=CANARY)
    )
    assert (
        await call(RotateSecret(principal=ADMIN, secret_id=created.id, value="v2"))
    ).version == 2
    assert (await call(ListSecrets(principal=ADMIN, company_id="c-9"))).total == 1
    await call(DeleteSecret(principal=ADMIN, secret_id=created.id))


@pytest.mark.parametrize(
    "principal", [AGENT, RUN_TOKEN, NO_COMPANY], ids=["agent_key", "run_token", "no_company"]
)
async def test_agents_and_keys_of_no_company_are_forbidden_everything(
    call: Callable[..., Any], principal: Principal
) -> None:
    created = await call(
        CreateSecret(principal=BOARD, company_id="c-1", name="GH_TOKEN", value=CANARY)
    )
    for request in (
        CreateSecret(principal=principal, company_id="c-1", name="X", value="v"),
        RotateSecret(principal=principal, secret_id=created.id, value="v"),
        DeleteSecret(principal=principal, secret_id=created.id),
        ListSecrets(principal=principal, company_id="c-1"),
        ListSecretAccessEvents(principal=principal, company_id="c-1"),
    ):
        with pytest.raises(AccessDeniedError) as caught:
            await call(request)
        assert (caught.value.code, caught.value.status) == ("forbidden", 403)
    # Nothing changed: the secret is still at its first version.
    assert (await call(ListSecrets(principal=BOARD, company_id="c-1"))).items[0].version == 1


async def test_access_events_are_listed_newest_first_and_paged(
    call: Callable[..., Any], app: GitCredentialsApplication
) -> None:
    for host in ("one.example", "two.example", "three.example"):
        app.record_resolution(
            ResolutionRecord(
                company_id="c-1",
                provider="gitlab",
                remote_host=host,
                secret_name=None,
                source="server_env",
                run_id=None,
                operation_id="op-1",
            )
        )
    page = await call(ListSecretAccessEvents(principal=BOARD, company_id="c-1", limit=2))
    assert page.total == 3
    assert [e.remote_host for e in page.items] == ["three.example", "two.example"]
    first = page.items[0]
    assert (first.secret_name, first.source, first.provider, first.operation_id) == (
        None,
        "server_env",
        "gitlab",
        "op-1",
    )
    for limit, offset in ((0, 0), (201, 0), (10, -1)):
        with pytest.raises(InvalidSecretError):
            await call(
                ListSecretAccessEvents(
                    principal=BOARD, company_id="c-1", limit=limit, offset=offset
                )
            )


async def test_only_clipyard_itself_asks_for_git_credentials_of_its_own_company(
    app: GitCredentialsApplication,
) -> None:
    runtime = _Runtime()
    async with contextlib.AsyncExitStack() as stack:
        runtime.exit_stack = stack  # type: ignore[attr-defined]
        endpoints = Endpoints(runtime, app, load_credentials_settings({}))  # type: ignore[arg-type]
        await mount(runtime.service, credential_endpoints(endpoints))  # type: ignore[arg-type]
        served = {entry[2]: entry[1] for entry in runtime.service.endpoints.values()}
        remote = "https://github.com/acme/api.git"
        asks = (
            lambda who, company: ResolveGitInvocation(
                principal=who, company_id=company, remote_url=remote
            ),
            lambda who, company: LookupPullRequests(
                principal=who, company_id=company, repo_url=remote, references=[]
            ),
        )
        system = Principal(company_id="c-1", actor=Actor(type="system", id="workspace-realizer"))
        for ask in asks:
            for principal in (BOARD, ADMIN, AGENT, RUN_TOKEN):
                with pytest.raises(AccessDeniedError) as refused:
                    await served[type(ask(principal, "c-1"))](ask(principal, "c-1"), None)
                assert refused.value.details["actorKind"] == Access.of(principal).kind.value
            # Clipyard acting for one company asks nothing of another's: not found.
            with pytest.raises(NotVisibleError) as hidden:
                await served[type(ask(system, "c-2"))](ask(system, "c-2"), None)
            assert hidden.value.details == {"companyId": "c-2"}
