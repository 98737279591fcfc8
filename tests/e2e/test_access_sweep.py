"""Every route of ``GET /api/openapi.json`` but the public ones (health, sign-in and -out), called
by those who must not reach it or the thing it names (ARCHITECTURE §5.1), against the running
stack. A route that takes an id is called on company A's things by:

* company B's board key, on company A's things;
* X's agent key, on Y's things (another agent of its company; ``X-Run-Id`` naming X's own run
  where the route takes it);
* X's run token, on Y's run's things;
* no key, and a revoked board key of A, on A's things.

A route without an id (the company list, a company's creation) is called by those refused by
kind: no key and the revoked key (401), and any key whose kind ``servicekit.access.POLICY`` does
not let use it (403: only the admin's key may list or create companies).

Not one answer may be a 2xx; each must be the refusal itself (404 for company B, whose key must not
learn that A's things exist; 403 or 404 for the agents; 401 without a valid key), so that a state check answering first (a 409 on a delete, say) cannot hide an access check
missing behind it. Writes send valid bodies (a hand table per ``operationId``, else one built
from the schema's required fields), shown valid afterwards by A's own board key getting past
validation with the same bodies.

An agent key or run token does reach some company-wide things (the company, its projects and
project workspaces redacted, and lists narrowed to its own): routes whose ids name only such
things, and that ``servicekit.access.POLICY`` lets the agent reach, are left to
``test_access_matrix.py``, which checks what they show. Routes added later are called
automatically; a path parameter this module cannot fill, or an operation missing from
``accessworld.ROUTES``, fails the test and says what to add.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from servicekit.access import ActorKind, Reach
from tests.e2e.accessworld import (
    PUBLIC_OPERATIONS,
    ROUTES,
    Things,
    World,
    expected_reach,
    open_world,
)

pytestmark = pytest.mark.e2e

CALL_TIMEOUT: Final = 15.0
"""Seconds one call may take (a refusal is immediate; one that does not come is reported)."""

ACTIONS: Final = ("start", "stop", "restart")
"""The runtime actions each ``{action}`` route is called with."""

_COUNTER = itertools.count(1)

AGENT_THINGS: Final = frozenset({"issue_id", "agent_id", "run_id", "operation_id", "service_id"})
"""Path parameters naming a thing an agent may own (``workspace_id`` outside ``/projects/`` is
an execution workspace: one too)."""

BODIES: Final[dict[str, Callable[[Things, World], dict[str, Any]]]] = {
    "createApiKey": lambda t, w: {"name": f"sweep {next(_COUNTER)}", "kind": "board"},
    "setCompanyHostAccess": lambda t, w: {"allowedRoots": [str(w.repo.parent)]},
    "createProject": lambda t, w: {"name": f"sweep {next(_COUNTER)}"},
    "updateProject": lambda t, w: {"name": "Robot"},
    "createProjectWorkspace": lambda t, w: {"name": "sweep", "cwd": str(w.repo)},
    "updateProjectWorkspace": lambda t, w: {"name": "main checkout"},
    "createIssue": lambda t, w: {"title": "sweep", "projectId": t.project},
    "updateIssue": lambda t, w: {"description": "sweep"},
    "createWorkProduct": lambda t, w: {"type": "preview_url", "url": "https://example.com/p"},
    "realizeIssueWorkspace": lambda t, w: {},
    "updateExecutionWorkspace": lambda t, w: {"name": "sweep"},
    "reconcileBranch": lambda t, w: {"mode": "forward"},
    "controlProjectRuntimeCommands": lambda t, w: {},
    "controlProjectRuntimeServices": lambda t, w: {},
    "controlRuntimeCommands": lambda t, w: {},
    "controlRuntimeServices": lambda t, w: {},
    "createSecret": lambda t, w: {"name": f"SWEEP_{next(_COUNTER)}", "value": "v"},
    "rotateSecret": lambda t, w: {"value": "rotated"},
    "createAgent": lambda t, w: {
        "name": f"sweep {next(_COUNTER)}",
        "adapterType": "process",
        "adapterConfig": {"command": ["true"]},
    },
    "updateAgent": lambda t, w: {"heartbeatIntervalSec": None},
    "wakeAgent": lambda t, w: {"reason": "sweep", "idempotencyKey": f"sweep-{t.agent}"},
    "wakeAgentAlias": lambda t, w: {"reason": "sweep", "idempotencyKey": f"sweep-{t.agent}"},
}
"""A valid body per write; an operation not here gets one built from its schema."""

QUERIES: Final[dict[str, dict[str, Any]]] = {
    "getWorkspaceHistory": {"version": 1},
    "getWorkspaceOperationOutput": {"stream": "stdout"},
    "getRuntimeServiceLog": {"tail": 5},
}
"""Query parameters a route needs beyond its required ones (``history`` needs one of two)."""


@dataclass(frozen=True)
class Operation:
    """One operation of the OpenAPI document."""

    operation_id: str
    method: str
    path: str
    spec: dict[str, Any]

    def params(self, where: str) -> list[dict[str, Any]]:
        """Its parameters ``in`` path, query or header."""
        return [p for p in self.spec.get("parameters", []) if p["in"] == where]

    @property
    def path_names(self) -> list[str]:
        return [p["name"] for p in self.params("path")]

    @property
    def takes_run_header(self) -> bool:
        return any(p["name"] == "X-Run-Id" for p in self.params("header"))

    @property
    def danger(self) -> int:
        """Reads first, then writes, then cancels, then deletes (so that a leak that deletes
        something cannot turn later calls into 404s before they are made)."""
        if self.method == "GET":
            return 0
        if self.method == "DELETE":
            return 3
        return 2 if self.operation_id == "cancelRun" else 1


@dataclass(frozen=True)
class Caller:
    """Who calls, with which client, and which statuses are the refusal expected of it."""

    name: str
    kind: ActorKind | None
    http: httpx.AsyncClient
    refusals: frozenset[int]
    run_id: str | None = None


@dataclass
class Answer:
    """One call made and what it answered."""

    operation: Operation
    caller: str
    url: str
    status: int
    excerpt: str = ""
    seconds: float = 0.0


def table(answers: list[Answer]) -> str:
    """``operationId, caller, status, seconds, url, excerpt``: one line per answer."""
    return "\n".join(
        f"{a.operation.operation_id:<30} {a.caller:<14} {a.status} {a.seconds:5.1f}s "
        f"{a.url} {a.excerpt}"
        for a in answers
    )


def operations(document: dict[str, Any]) -> list[Operation]:
    """Every operation of the document that needs a credential."""
    found = [
        Operation(spec["operationId"], method.upper(), path, spec)
        for path, item in document["paths"].items()
        for method, spec in item.items()
        if spec["operationId"] not in PUBLIC_OPERATIONS
    ]
    return sorted(found, key=lambda o: o.danger)


def fill(name: str, operation: Operation, things: Things) -> list[str]:
    """The values of path parameter ``name`` on ``things`` (several: each is called).

    Raises:
        AssertionError: A parameter this test does not know (a new route): map it here.
    """
    projects = operation.path.startswith("/api/projects/")
    table: dict[str, list[str]] = {
        "company_id": [things.company],
        "project_id": [things.project],
        "workspace_id": [things.project_workspace if projects else things.workspace],
        "issue_id": [things.issue],
        "agent_id": [things.agent],
        "run_id": [things.run],
        "operation_id": (
            [things.workspace_operation]
            if "/workspace-operations/" in operation.path
            else [things.operation, things.run_operation]
        ),
        "key_id": [things.api_key],
        "secret_id": [things.secret],
        "service_id": [things.service],
        "action": list(ACTIONS),
        "node": ["local"],  # the stack's worker node (the admin key's alone)
    }
    if name not in table:
        raise AssertionError(
            f"{operation.operation_id} ({operation.method} {operation.path}) takes path "
            f"parameter {name!r}, which tests/e2e/test_access_sweep.py fill() does not know: "
            "map it to a thing of the world"
        )
    return table[name]


def urls(operation: Operation, things: Things) -> Iterator[str]:
    """The operation's path with every combination of its parameters' values."""
    names = operation.path_names
    for values in itertools.product(*(fill(n, operation, things) for n in names)):
        path = operation.path
        for name, value in zip(names, values, strict=True):
            path = path.replace("{" + name + "}", value)
        yield path


def _resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = document["components"]["schemas"][name]
    for key in ("oneOf", "anyOf"):
        if key in schema:
            options = [s for s in schema[key] if _resolve(document, s).get("type") != "null"]
            return _resolve(document, options[0]) if options else {"type": "null"}
    return schema


def example(document: dict[str, Any], schema: dict[str, Any], name: str = "") -> Any:
    """A minimal value of ``schema``: required fields only, first enum value, a uuid for ids."""
    schema = _resolve(document, schema)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {key: example(document, props[key], key) for key in schema.get("required", [])}
    if kind == "array":
        return []
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 1))
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    if schema.get("format") == "uuid" or name.endswith("Id"):
        return str(uuid.uuid4())
    return "sweep"


def body_of(document: dict[str, Any], operation: Operation, things: Things, world: World) -> Any:
    """The body to send (None when the operation takes none)."""
    content = operation.spec.get("requestBody", {}).get("content", {})
    if "application/json" not in content:
        return None
    if operation.operation_id in BODIES:
        return BODIES[operation.operation_id](things, world)
    return example(document, content["application/json"]["schema"])


def query_of(document: dict[str, Any], operation: Operation) -> dict[str, Any]:
    """Required query parameters (from the schema) and those of :data:`QUERIES`."""
    query = {
        p["name"]: example(document, p.get("schema", {}), p["name"])
        for p in operation.params("query")
        if p.get("required")
    }
    return {**query, **QUERIES.get(operation.operation_id, {})}


def concerns(caller: Caller, operation: Operation) -> bool:
    """Whether ``caller`` must be refused on ``operation`` with Y's ids.

    The board key of B, no key and a revoked key: always. An agent key or run token: when an id
    names a thing an agent may own (Y's), or when POLICY refuses the kind, or when its reach is
    ``own`` over a project-level thing (no run of X holds A's project workspace); a route whose
    ids name only the company or its projects, and that the kind reaches, is not a refusal. On a
    route without an id, only those refused by kind (no key, a revoked key, a kind POLICY keeps
    out).
    """
    if caller.kind is None:
        return True
    if not operation.path_names:  # no id: refused by kind or not at all
        return expected_reach(caller.kind, operation.operation_id) is None
    if caller.kind not in (ActorKind.AGENT_KEY, ActorKind.RUN_TOKEN):
        return True
    names = set(operation.path_names) - {"action"}
    projects = operation.path.startswith("/api/projects/")
    if names & AGENT_THINGS or ("workspace_id" in names and not projects):
        return True
    reach = expected_reach(caller.kind, operation.operation_id)
    return reach is None or (reach is Reach.OWN and projects)


async def call(
    caller: Caller, operation: Operation, url: str, body: Any, query: dict[str, Any]
) -> Answer:
    """Make one call, streamed (an event stream that opens is not read)."""
    headers = {}
    if caller.run_id and operation.takes_run_header:
        headers["X-Run-Id"] = caller.run_id
    if operation.operation_id == "streamCompanyEvents":
        headers["Last-Event-ID"] = "0"
    started = time.monotonic()
    try:
        async with caller.http.stream(
            operation.method,
            url,
            json=body,
            params=query,
            headers=headers,
            timeout=httpx.Timeout(CALL_TIMEOUT),
        ) as answer:
            excerpt = ""
            if not 200 <= answer.status_code < 300:
                excerpt = (await answer.aread()).decode(errors="replace")[:160]
            status = answer.status_code
    except httpx.TimeoutException:
        status, excerpt = 0, f"no answer within {CALL_TIMEOUT:.0f} s"
    return Answer(operation, caller.name, url, status, excerpt, time.monotonic() - started)


def callers(world: World) -> list[Caller]:
    """The five callers of the sweep."""
    agent = world.actor("agent key X")
    token = world.actor("run token RX")
    refused = frozenset({403, 404})
    return [
        # Another company's thing does not exist for B: 404, never a 403 that would confirm it.
        Caller("B board key", ActorKind.BOARD_KEY, world.board_b, frozenset({404})),
        Caller("agent key X", agent.kind, agent.http, refused, run_id=world.x.run),
        Caller("run token RX", token.kind, token.http, refused),
        Caller("no key", None, world.anonymous, frozenset({401})),
        Caller("revoked key", None, world.revoked, frozenset({401})),
    ]


async def sweep(world: World, document: dict[str, Any], ops: list[Operation]) -> list[Answer]:
    """Call every operation with every caller that must be refused, on Y's things (the calls
    of one operation at once, the operations one after the other in :attr:`Operation.danger`
    order)."""
    answers: list[Answer] = []
    everyone = callers(world)
    for operation in ops:
        calls = [
            call(
                caller,
                operation,
                url,
                body_of(document, operation, world.y, world),
                query_of(document, operation),
            )
            for caller in everyone
            if concerns(caller, operation)
            for url in urls(operation, world.y)
        ]
        answers += await asyncio.gather(*calls)
    return answers


async def bodies_are_valid(
    world: World, document: dict[str, Any], ops: list[Operation]
) -> list[Answer]:
    """A's board key sends each write's body on the same things. The answers other than a 2xx,
    or a 409 or 422 of the domain (the state refuses: a reconcile of an active workspace), are
    returned: the body or query is wrong (400), so a refusal could have hidden behind its
    validation. Deletes and the cancel are not repeated."""
    board = world.actor("board key")
    owner = Caller("A board key", board.kind, board.http, frozenset())
    wrong: list[Answer] = []
    for operation in ops:
        if operation.method in ("GET", "DELETE") or operation.operation_id == "cancelRun":
            continue
        if expected_reach(board.kind, operation.operation_id) is None:
            continue  # the admin's alone (a company's host access): refused by kind, not body
        answers = await asyncio.gather(
            *(
                call(
                    owner,
                    operation,
                    url,
                    body_of(document, operation, world.y, world),
                    query_of(document, operation),
                )
                for url in urls(operation, world.y)
            )
        )
        wrong += [a for a in answers if not (200 <= a.status < 300 or a.status in (409, 422))]
    return wrong


def _kind_refused(answer: Answer) -> bool:
    """A 403 to B's board key on a route no board key may use (the admin's alone: a company's
    host access): the same for every id, so it confirms nothing of A's."""
    return (
        answer.caller == "B board key"
        and answer.status == 403
        and (expected_reach(ActorKind.BOARD_KEY, answer.operation.operation_id) is None)
    )


async def test_no_route_answers_2xx_to_those_who_must_not_reach_it(
    stack: Any, tmp_path: Path, reaper: None
) -> None:
    async with open_world(stack, tmp_path) as world:
        answer = await world.anonymous.get("/api/openapi.json")
        assert answer.status_code == 200, answer.text
        document = answer.json()
        named = {
            spec["operationId"] for item in document["paths"].values() for spec in item.values()
        }
        missing = sorted(named - set(ROUTES) - PUBLIC_OPERATIONS)
        assert not missing, f"add these operations to accessworld.ROUTES: {missing}"
        ops = operations(document)
        assert any(not o.path_names for o in ops), "no route without an id was found"
        answers = await sweep(world, document, ops)
        invalid = await bodies_are_valid(world, document, ops)
        refusals = {c.name: c.refusals for c in callers(world)}
    uncalled = sorted({o.operation_id for o in ops} - {a.operation.operation_id for a in answers})
    leaks = [a for a in answers if 200 <= a.status < 300]
    other = [a for a in answers if a not in leaks and a.status not in refusals[a.caller]
             and not _kind_refused(a)]  # fmt: skip
    problems = [*leaks, *other, *invalid]
    assert not uncalled, f"operations the sweep never called: {uncalled}"
    assert not problems, (
        f"{len(answers)} calls on {len(ops)} operations; {len(leaks)} answered 2xx:\n"
        f"{table(leaks)}\n"
        f"{len(other)} answered neither 2xx nor the refusal expected (403/404; 401 without a "
        f"valid key):\n{table(other)}\n"
        f"{len(invalid)} writes of A's own board key with the same bodies did not get past "
        f"validation (so a refusal could have hidden behind it):\n{table(invalid)}"
    )
