"""The access policy: per actor kind, resource and action, how far an actor reaches.

ARCHITECTURE §5.1 describes it; :mod:`servicekit.access` applies it to a request's principal
(:class:`servicekit.access.Access`). :data:`POLICY` maps (actor kind, resource, action) to a
:class:`Reach`; a missing entry is refused (403 ``forbidden``, the message naming who may).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = [
    "POLICY",
    "WHO",
    "Action",
    "ActorKind",
    "Reach",
    "Resource",
    "allowed_kinds",
    "noun",
    "reach_of",
]


class ActorKind(StrEnum):
    """How a request authenticated."""

    ADMIN = "admin"
    BOARD_KEY = "board_key"
    BOARD_SESSION = "board_session"
    AGENT_KEY = "agent_key"
    RUN_TOKEN = "run_token"
    SYSTEM = "system"


class Resource(StrEnum):
    """What a route or bus endpoint acts on."""

    COMPANY = "company"
    API_KEY = "api_key"
    SECRET = "secret"
    PROJECT = "project"
    PROJECT_WORKSPACE = "project_workspace"
    ISSUE = "issue"
    EXECUTION_WORKSPACE = "execution_workspace"
    RUNTIME_SERVICE = "runtime_service"
    AGENT = "agent"
    RUN = "run"
    OPERATION = "operation"
    EVENT_STREAM = "event_stream"
    ADAPTER_SLOTS = "adapter_slots"
    NODE = "node"


class Action(StrEnum):
    """Read (GET), write (create, change, delete) or control (realize, start and stop, wake,
    cancel)."""

    READ = "read"
    WRITE = "write"
    CONTROL = "control"


class Reach(StrEnum):
    """How far an actor reaches for one resource and action."""

    ALL = "all"
    COMPANY = "company"
    OWN = "own"
    REDACTED = "redacted"


_R, _W, _C = Action.READ, Action.WRITE, Action.CONTROL


def _rows(
    kind: ActorKind, table: dict[Resource, dict[Action, Reach]]
) -> dict[tuple[ActorKind, Resource, Action], Reach]:
    return {(kind, r, a): reach for r, actions in table.items() for a, reach in actions.items()}


_BOARD: Final = {
    Resource.COMPANY: {_R: Reach.COMPANY},
    Resource.API_KEY: {_R: Reach.COMPANY, _W: Reach.COMPANY},
    Resource.SECRET: {_R: Reach.COMPANY, _W: Reach.COMPANY},
    Resource.PROJECT: {_R: Reach.COMPANY, _W: Reach.COMPANY},
    Resource.PROJECT_WORKSPACE: {_R: Reach.COMPANY, _W: Reach.COMPANY},
    Resource.ISSUE: {_R: Reach.COMPANY, _W: Reach.COMPANY, _C: Reach.COMPANY},
    Resource.EXECUTION_WORKSPACE: {_R: Reach.COMPANY, _W: Reach.COMPANY},
    Resource.RUNTIME_SERVICE: {_R: Reach.COMPANY, _C: Reach.COMPANY},
    Resource.AGENT: {_R: Reach.COMPANY, _W: Reach.COMPANY, _C: Reach.COMPANY},
    Resource.RUN: {_R: Reach.COMPANY, _C: Reach.COMPANY},
    Resource.OPERATION: {_R: Reach.COMPANY},
    Resource.EVENT_STREAM: {_R: Reach.COMPANY},
    Resource.ADAPTER_SLOTS: {_R: Reach.COMPANY},
}

_AGENT: Final = {
    Resource.COMPANY: {_R: Reach.COMPANY},
    Resource.PROJECT: {_R: Reach.REDACTED},
    Resource.PROJECT_WORKSPACE: {_R: Reach.REDACTED},
    Resource.ISSUE: {_R: Reach.OWN, _W: Reach.OWN, _C: Reach.OWN},
    Resource.EXECUTION_WORKSPACE: {_R: Reach.OWN},
    Resource.RUNTIME_SERVICE: {_R: Reach.OWN, _C: Reach.OWN},
    Resource.AGENT: {_R: Reach.OWN, _C: Reach.OWN},
    Resource.RUN: {_R: Reach.OWN, _C: Reach.OWN},
    Resource.OPERATION: {_R: Reach.OWN},
}

POLICY: Final[dict[tuple[ActorKind, Resource, Action], Reach]] = {
    **_rows(
        ActorKind.ADMIN,
        {
            Resource.COMPANY: {_R: Reach.ALL, _W: Reach.ALL},
            Resource.API_KEY: {_R: Reach.ALL, _W: Reach.ALL},
            Resource.SECRET: {_R: Reach.ALL, _W: Reach.ALL},
            # Only to grant (or take back) an agent's host trust: the controller refuses the
            # admin key any other change of an agent.
            Resource.AGENT: {_R: Reach.ALL, _W: Reach.ALL},
            Resource.OPERATION: {_R: Reach.ALL},
            Resource.EVENT_STREAM: {_R: Reach.ALL},
            # Listing worker nodes, and draining one (its workspaces move to the others).
            Resource.NODE: {_R: Reach.ALL, _C: Reach.ALL},
        },
    ),
    **_rows(ActorKind.BOARD_KEY, _BOARD),
    **_rows(ActorKind.BOARD_SESSION, _BOARD),
    **_rows(ActorKind.AGENT_KEY, _AGENT),
    **_rows(ActorKind.RUN_TOKEN, _AGENT),
    **{(ActorKind.SYSTEM, r, a): Reach.ALL for r in Resource for a in Action},
}
"""(actor kind, resource, action) -> reach; a missing entry is refused (403)."""

WHO: Final = {
    ActorKind.ADMIN: "the admin key",
    ActorKind.BOARD_KEY: "a board key",
    ActorKind.BOARD_SESSION: "a board session",
    ActorKind.AGENT_KEY: "an agent key",
    ActorKind.RUN_TOKEN: "a run token",
    ActorKind.SYSTEM: "Clipyard itself",
}
"""How a refusal names each actor kind."""


def reach_of(kind: ActorKind, resource: Resource, action: Action) -> Reach | None:
    """How far ``kind`` reaches for ``action`` on ``resource``; None: refused."""
    return POLICY.get((kind, resource, action))


def allowed_kinds(resource: Resource, action: Action) -> str:
    """Who may ``action`` ``resource``, in words (``a board key or an agent key``)."""
    kinds = [
        WHO[k] for k in ActorKind if k is not ActorKind.SYSTEM and reach_of(k, resource, action)
    ]
    if not kinds:
        return "no key"
    return kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " or " + kinds[-1]


_PLURAL: Final = {
    Resource.COMPANY: "companies",
    Resource.EVENT_STREAM: "the company event stream",
    Resource.ADAPTER_SLOTS: "the adapter slots",
}


def noun(resource: Resource) -> str:
    """The resource in the plural, as a refusal names it (``project workspaces``)."""
    return _PLURAL.get(resource) or resource.value.replace("_", " ") + "s"
