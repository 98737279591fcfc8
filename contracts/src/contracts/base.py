"""Message bases shared by every contract: events, commands, queries and replies.

Every message is a frozen, keyword-only msgspec Struct, camelCase on the wire, tagged with an
explicit, versioned string (``"company.created.v1"``) so that renaming a Python class never changes
the wire. Evolve additively: new fields get defaults, types never change, a breaking change is a new
class with a ``.v2`` tag decoded beside v1.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

__all__ = [
    "Accepted",
    "Actor",
    "ActorType",
    "Command",
    "ErrorReply",
    "Event",
    "Message",
    "Ok",
    "Principal",
    "Query",
    "Reply",
    "Struct",
]

ActorType = Literal["admin", "board", "agent", "system"]


class Struct(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A plain (untagged) value on the wire: frozen, keyword-only, camelCase."""


class Actor(Struct, frozen=True, kw_only=True):
    """Who acted: an admin, a board member, an agent, or Clipyard itself."""

    type: ActorType
    id: str


class Principal(Struct, frozen=True, kw_only=True):
    """The acting principal carried by every request body (ARCHITECTURE §2)."""

    company_id: str | None
    actor: Actor
    run_id: str | None = None
    issue_id: str | None = None
    run_bound: bool = False
    """True for a run token: the agent's rights, limited to ``issueId`` (the run's issue) and
    the workspace its run holds."""
    via_session: bool = False
    """True for a board member signed in with the session cookie (rather than a board key)."""


class Message(msgspec.Struct, frozen=True, kw_only=True, rename="camel", tag_field="type"):
    """Base of every tagged message; subclasses set an explicit ``tag="<name>.vN"``."""


class Event(Message, frozen=True, kw_only=True):
    """A published fact, past tense. Carries the envelope of ARCHITECTURE §2.

    ``type`` (the tag) names the event and its major version; the subject is derived from it by
    :func:`contracts.subjects.event_subject`.
    """

    event_id: str
    aggregate: str
    aggregate_id: str
    aggregate_version: int
    company_id: str | None
    occurred_at: datetime
    actor: Actor
    run_id: str | None = None
    reason: str | None = None


class Command(Message, frozen=True, kw_only=True):
    """An imperative request to change state; answered with a :data:`Reply`."""

    principal: Principal


class Query(Message, frozen=True, kw_only=True):
    """A request for facts (``Get*`` / ``List*``); answered with a :data:`Reply`."""

    principal: Principal


class Reply(msgspec.Struct, frozen=True, kw_only=True, rename="camel", tag_field="kind"):
    """Base of the reply union, tagged ``kind``."""


class Ok(Reply, tag="ok", frozen=True, kw_only=True):
    """The work is done; ``result`` is the answer's body."""

    result: Any = None


class ErrorReply(Reply, tag="error", frozen=True, kw_only=True):
    """The work was refused or failed. ``status`` is the HTTP status the gateway answers with."""

    code: str
    message: str
    status: int
    details: dict[str, Any] = msgspec.field(default_factory=dict)


class Accepted(Reply, tag="accepted", frozen=True, kw_only=True):
    """Long work goes on past the request's deadline; poll the operation."""

    operation_id: str
