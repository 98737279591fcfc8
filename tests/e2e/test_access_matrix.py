"""The access model as one table, through HTTP against the running stack (ARCHITECTURE §5.1).

Every actor kind (the admin key, a board key, a board session, X's agent key, X's run token)
makes one representative call per resource kind and action (read, write, control) on its own
thing, on Y's (another agent of its company) where its reach is ``own``, and on company B's. The
expected answer comes from ``servicekit.access.POLICY``:

* refused (no entry): 403 on its own company's thing;
* ``all``/``company``: allowed; ``own``: allowed on its own thing, 403 on Y's (404 for an
  operation: one not started by the actor is answered as unknown);
* ``redacted``: 200 and no ``env`` value and no host path (``cwd``, ``managedCheckout.path``,
  ``worktreeParentDir`` null or absent; neither A's repository nor its worktree folder named);
* B's thing: 404 (403 where the kind is refused anyway, before any lookup), never 2xx, but for
  the admin's ``all``;
* a list under ``own`` reach shows nothing of Y's; the event stream, refused to agent keys and
  run tokens, is read for a second when it opens, and the ids of Y's things seen are listed.

"Allowed" is a 2xx for a read. A write or control must not harm the world the later rows need,
so each is harmless (a description, a name set to what it was, a ``stop`` with nothing to stop,
a wake joining one idempotent run): for those, a 409 or 422 also means allowed, since the
owning service refuses the state only after the access check passed. Cancels come last, the
run token's own first (its token ends with its run; the others then get 409 ``run_finished``).

The world is built once (``tests/e2e/accessworld.py``) and every row is checked; the test fails
once, listing every row whose answer differs from the table.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from servicekit.access import Action, ActorKind, Reach, Resource, reach_of
from tests.e2e.accessworld import SECRET_ENV, Actor, Things, World, open_world, read_stream
from tests.e2e.runtimeutil import status_of

pytestmark = pytest.mark.e2e

_R, _W, _C = Action.READ, Action.WRITE, Action.CONTROL

OWN, OTHER, B = "own", "Y's", "B's"
"""The targets of a row: the actor's own thing, another agent's of its company, company B's."""

_COUNTER = itertools.count(1)


@dataclass(frozen=True)
class Probe:
    """The representative call of one resource kind and action.

    ``path`` is a template on the fields of :class:`Things` (``{acting_operation}``: the
    operation the actor started, see :func:`_acting_operation`); ``body`` makes the JSON body
    for an actor. ``company_level``: the thing is the company's (no Y's version); ``lists``: the
    kind of id a list under ``own`` reach must not show of Y's; ``run_header``: an agent key
    names its run in ``X-Run-Id``; ``stream``: the event stream.
    """

    name: str
    resource: Resource
    action: Action
    method: str
    path: str
    body: Callable[[Actor], Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    company_level: bool = False
    lists: str | None = None
    run_header: bool = False
    stream: bool = False

    def url(self, things: Things, actor: Actor) -> str:
        """The path on ``things``, as ``actor`` calls it."""
        fields = {**asdict(things), "acting_operation": _acting_operation(things, actor)}
        return self.path.format(**fields)

    def targets(self, reach: Reach | None) -> tuple[str, ...]:
        """The targets of this probe for an actor of ``reach``."""
        if "{" not in self.path:
            return (OWN,)
        if self.company_level or reach is not Reach.OWN:
            return (OWN, B)
        return (OWN, OTHER, B)


def _acting_operation(things: Things, actor: Actor) -> str:
    """The operation an actor started on its side: a run token's run's, else the key's."""
    return things.run_operation if actor.kind is ActorKind.RUN_TOKEN else things.operation


def _named(prefix: str) -> Callable[[Actor], dict[str, Any]]:
    return lambda actor: {"name": f"{prefix}_{next(_COUNTER)}"}


COMPANY, API_KEY, SECRET = Resource.COMPANY, Resource.API_KEY, Resource.SECRET
PROJECT, PROJECT_WS, ISSUE = Resource.PROJECT, Resource.PROJECT_WORKSPACE, Resource.ISSUE
EXEC_WS, RUNTIME, AGENT = Resource.EXECUTION_WORKSPACE, Resource.RUNTIME_SERVICE, Resource.AGENT
RUN, OPERATION = Resource.RUN, Resource.OPERATION
_EWS = "/api/execution-workspaces/{workspace}"
_PWS = "/api/projects/{project}/workspaces/{project_workspace}"

PROBES: Final[tuple[Probe, ...]] = (
    # Reads.
    Probe("getCompany", COMPANY, _R, "GET", "/api/companies/{company}", company_level=True),
    Probe(
        "listApiKeys", API_KEY, _R, "GET", "/api/companies/{company}/api-keys", company_level=True
    ),
    Probe("listSecrets", SECRET, _R, "GET", "/api/companies/{company}/secrets", company_level=True),
    Probe("getProject", PROJECT, _R, "GET", "/api/projects/{project}", company_level=True),
    Probe(
        "listProjects", PROJECT, _R, "GET", "/api/companies/{company}/projects", company_level=True
    ),
    Probe("getProjectWorkspace", PROJECT_WS, _R, "GET", _PWS, company_level=True),
    Probe(
        "listProjectWorkspaces",
        PROJECT_WS,
        _R,
        "GET",
        "/api/projects/{project}/workspaces",
        company_level=True,
    ),
    Probe("getIssue", ISSUE, _R, "GET", "/api/issues/{issue}"),
    Probe("getHeartbeatContext", ISSUE, _R, "GET", "/api/issues/{issue}/heartbeat-context"),
    Probe(
        "listIssues",
        ISSUE,
        _R,
        "GET",
        "/api/companies/{company}/issues",
        company_level=True,
        lists="issue",
    ),
    Probe("getExecutionWorkspace", EXEC_WS, _R, "GET", _EWS),
    Probe(
        "getWorkspaceOperation",
        EXEC_WS,
        _R,
        "GET",
        "/api/workspace-operations/{workspace_operation}",
    ),
    Probe(
        "listExecutionWorkspaces",
        EXEC_WS,
        _R,
        "GET",
        "/api/companies/{company}/execution-workspaces",
        company_level=True,
        lists="workspace",
    ),
    Probe(
        "getRuntimeServiceLog",
        RUNTIME,
        _R,
        "GET",
        _EWS + "/runtime-services/{service}/logs",
        params={"tail": 5},
    ),
    Probe("getAgent", AGENT, _R, "GET", "/api/agents/{agent}"),
    Probe(
        "listAgents",
        AGENT,
        _R,
        "GET",
        "/api/companies/{company}/agents",
        company_level=True,
        lists="agent",
    ),
    Probe("getRun", RUN, _R, "GET", "/api/runs/{run}"),
    Probe("getRunLog", RUN, _R, "GET", "/api/runs/{run}/log"),
    Probe(
        "listRuns", RUN, _R, "GET", "/api/companies/{company}/runs", company_level=True, lists="run"
    ),
    Probe("getOperation", OPERATION, _R, "GET", "/api/operations/{acting_operation}"),
    Probe(
        "streamCompanyEvents",
        Resource.EVENT_STREAM,
        _R,
        "GET",
        "/api/companies/{company}/events/stream",
        company_level=True,
        stream=True,
    ),
    Probe(
        "getRuntimeHealth",
        Resource.ADAPTER_SLOTS,
        _R,
        "GET",
        "/api/companies/{company}/tools/runtime-health",
        company_level=True,
    ),
    Probe("listNodes", Resource.NODE, _R, "GET", "/api/nodes"),
    # Writes.
    Probe("createCompany", COMPANY, _W, "POST", "/api/companies", _named("Scratch")),
    Probe(
        "createApiKey",
        API_KEY,
        _W,
        "POST",
        "/api/companies/{company}/api-keys",
        lambda a: {**_named("m")(a), "kind": "board"},
        company_level=True,
    ),
    Probe(
        "createSecret",
        SECRET,
        _W,
        "POST",
        "/api/companies/{company}/secrets",
        lambda a: {**_named("MATRIX")(a), "value": "v"},
        company_level=True,
    ),
    Probe(
        "updateProject",
        PROJECT,
        _W,
        "PATCH",
        "/api/projects/{project}",
        lambda a: {"name": "Robot"},
        company_level=True,
    ),
    Probe(
        "updateProjectWorkspace",
        PROJECT_WS,
        _W,
        "PATCH",
        _PWS,
        lambda a: {"name": "main checkout"},
        company_level=True,
    ),
    Probe(
        "updateIssue",
        ISSUE,
        _W,
        "PATCH",
        "/api/issues/{issue}",
        lambda a: {"description": f"touched by {a.name}"},
    ),
    Probe("updateExecutionWorkspace", EXEC_WS, _W, "PATCH", _EWS, lambda a: {"name": "matrix"}),
    Probe(
        "updateAgent",
        AGENT,
        _W,
        "PATCH",
        "/api/agents/{agent}",
        # The admin key writes only an agent's trust (it may lower it: nothing runs unconfined).
        lambda a: (
            {"trustLevel": "untrusted"}
            if a.kind is ActorKind.ADMIN
            else {"heartbeatIntervalSec": None}
        ),
    ),
    # Controls (the cancel last).
    Probe(
        "realizeIssueWorkspace",
        ISSUE,
        _C,
        "POST",
        "/api/issues/{issue}/execution-workspace",
        lambda a: {},
    ),
    Probe(
        "controlRuntimeServices",
        RUNTIME,
        _C,
        "POST",
        _EWS + "/runtime-services/restart",
        lambda a: {"workspaceCommandId": "service:web"},
        run_header=True,
    ),
    Probe(
        "wakeAgent",
        AGENT,
        _C,
        "POST",
        "/api/agents/{agent}/wakeup",
        lambda a: {"reason": "access matrix", "idempotencyKey": "access-matrix"},
        run_header=True,
    ),
    Probe("cancelRun", RUN, _C, "POST", "/api/runs/{run}/cancel"),
)
"""One or more representative calls per resource kind and action that has a route (no route
controls an execution workspace as such: its runtime is ``runtime_service``)."""

OWN_ORDER: Final = (
    ActorKind.RUN_TOKEN,
    ActorKind.AGENT_KEY,
    ActorKind.BOARD_KEY,
    ActorKind.BOARD_SESSION,
    ActorKind.ADMIN,
)
"""The order of the actors' calls on their own thing, per probe: the run token first, so that
its cancel (its run's end) comes before the others'."""


@dataclass(frozen=True)
class Row:
    """One row of the table: who, what, on whose thing, what is expected."""

    actor: Actor
    probe: Probe
    target: str
    reach: Reach | None

    @property
    def label(self) -> str:
        reach = self.reach.value if self.reach else "refused"
        return (
            f"{self.actor.name:<14} {self.probe.resource.value}/{self.probe.action.value:<7} "
            f"{self.probe.name:<26} on {self.target:<4} (reach {reach})"
        )

    def expected(self) -> str:
        """What the table says, in words."""
        if self.target == B:
            if self.actor.kind is ActorKind.ADMIN and self.reach is Reach.ALL:
                return "allowed"
            # Refused by kind: 403 before any lookup; else B's thing does not exist for A: 404.
            return "403" if self.reach is None else "404"
        if self.target == OTHER and self.probe.resource is Resource.OPERATION:
            return "404"  # another's operation is answered as unknown (API.md "Conventions")
        if self.target == OTHER or self.reach is None:
            return "403"
        return "redacted" if self.reach is Reach.REDACTED else "allowed"


def rows(world: World) -> Iterator[Row]:
    """Every row, in the order they are called: probe by probe; in each, the calls on Y's and
    B's things first, then those on the actors' own (in :data:`OWN_ORDER`)."""
    by_kind = {a.kind: a for a in world.actors}
    for probe in PROBES:
        reach = {kind: reach_of(kind, probe.resource, probe.action) for kind in by_kind}
        for actor in world.actors:
            for target in probe.targets(reach[actor.kind]):
                if target != OWN:
                    yield Row(actor, probe, target, reach[actor.kind])
        for kind in OWN_ORDER:
            yield Row(by_kind[kind], probe, OWN, reach[kind])


def _things(world: World, target: str) -> Things:
    return {OWN: world.x, OTHER: world.y, B: world.b}[target]


async def _send(row: Row, things: Things) -> httpx.Response:
    probe, actor = row.probe, row.actor
    headers = {}
    if probe.run_header and actor.kind is ActorKind.AGENT_KEY and actor.run_id:
        headers["X-Run-Id"] = actor.run_id
    body = probe.body(actor) if probe.body else None
    url = probe.url(things, actor)
    return await actor.http.request(
        probe.method, url, json=body, params=probe.params, headers=headers
    )


def _redaction_problems(world: World, answer: httpx.Response) -> list[str]:
    """What a redacted read shows that it must not: the env value, host paths."""
    problems = []
    if SECRET_ENV in answer.text:
        problems.append("an env value")
    problems += [f"host path {p}" for p in world.host_paths if p in answer.text]

    def walk(node: Any, where: str) -> Iterator[str]:
        if isinstance(node, dict):
            for key, value in node.items():
                here = f"{where}.{key}"
                if key in ("cwd", "worktreeParentDir") and value is not None:
                    yield f"{here}={value!r}"
                elif key == "managedCheckout" and isinstance(value, dict) and value.get("path"):
                    yield f"{here}.path={value['path']!r}"
                elif key == "env" and value:
                    yield f"{here} has {sorted(value) if isinstance(value, dict) else value!r}"
                else:
                    yield from walk(value, here)
        elif isinstance(node, list):
            for n, item in enumerate(node):
                yield from walk(item, f"{where}[{n}]")

    problems += list(walk(answer.json(), "body"))
    return problems


def _allowed(row: Row, status: int) -> bool:
    if row.probe.action is Action.READ:
        return 200 <= status < 300
    return 200 <= status < 300 or status in (409, 422)


async def check(world: World, row: Row) -> str | None:
    """Call the row; None when the answer is the table's, else what differs."""
    things = _things(world, row.target)
    expected = row.expected()
    if row.probe.stream:
        status, events = await read_stream(
            row.actor.http, things.company, seconds=1.0 if row.actor.kind in _AGENTS else 0.3
        )
        seen = json.dumps(events)
        leaked = [f"{k} {v}" for k, v in world.y.ids().items() if v in seen]
        if status == 200 and row.actor.kind in _AGENTS:
            return f"200 (expected 403); the stream showed {len(events)} events, of Y's: {leaked}"
        return None if _fits(row, expected, status) else f"{status} (expected {expected})"
    answer = await _send(row, things)
    status = answer.status_code
    if not _fits(row, expected, status):
        return f"{status_of(answer)[:300]} (expected {expected})"
    if expected == "redacted":
        problems = _redaction_problems(world, answer)
        if problems:
            return f"{status}, redacted but shows {problems}"
    if row.reach is Reach.OWN and row.target == OWN and row.probe.lists:
        theirs = world.y.ids()[row.probe.lists]
        if theirs in answer.text:
            return f"{status}, the list shows Y's {row.probe.lists} {theirs}"
    return None


_AGENTS: Final = (ActorKind.AGENT_KEY, ActorKind.RUN_TOKEN)


def _fits(row: Row, expected: str, status: int) -> bool:
    if expected in ("allowed", "redacted"):
        return _allowed(row, status) and (expected == "allowed" or status == 200)
    if expected in ("403", "404"):
        return status == int(expected)
    return status in (403, 404)


async def _board_sees_everything(world: World) -> None:
    """The redaction check means something: the board reads the env value and the path."""
    board = world.actor("board key").http
    x = world.x
    answer = await board.get(f"/api/projects/{x.project}/workspaces/{x.project_workspace}")
    assert answer.status_code == 200, status_of(answer)
    assert SECRET_ENV in answer.text, answer.text
    assert str(world.repo) in answer.text, answer.text


async def test_every_actor_kind_on_every_resource_kind_and_action(
    stack: Any, tmp_path: Path, reaper: None
) -> None:
    async with open_world(stack, tmp_path) as world:
        await _board_sees_everything(world)
        table = list(rows(world))
        mismatches = []
        for row in table:
            problem = await check(world, row)
            if problem is not None:
                mismatches.append(f"{row.label}: {problem}")
        assert not mismatches, (
            f"{len(mismatches)} of {len(table)} rows differ from servicekit.access.POLICY:\n"
            + "\n".join(mismatches)
        )
