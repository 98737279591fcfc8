"""One vocabulary of events: the type and the label every event is shown with.

A stored event shown to a person or a client (audit trails, a workspace's events, its timeline,
``clipyard audit``) is named by its public type when it is published (``workspace.realized.v1``,
:data:`PUBLIC_EVENT_TYPES`), else by a type of the same shape derived from its aggregate and its
name (``workspace.provisioned.v1``, :data:`RECORDED_EVENT_TYPES`): lower snake case, the
aggregate first, a version last. Stored class names (``Provisioned``) are never shown. Each type
has a label for people (:func:`event_label`: ``Workspace provisioned``).
"""

from __future__ import annotations

import re
from typing import Final

from contracts.events import ALL_EVENT_TYPES

__all__ = [
    "KNOWN_EVENT_TYPES",
    "PUBLIC_EVENT_TYPES",
    "RECORDED_EVENT_TYPES",
    "aggregate_of",
    "event_label",
    "snake_case",
    "unversioned",
]

PUBLIC_EVENT_TYPES: Final[frozenset[str]] = frozenset(
    tag for t in ALL_EVENT_TYPES if isinstance(tag := t.__struct_config__.tag, str)
)
"""Every published type (``company.created.v1`` ...): what the event stream carries."""

RECORDED_EVENT_TYPES: Final[frozenset[str]] = frozenset(
    {
        # api-gateway
        "deleted_agent.recorded.v1",
        "run_token.bound.v1",
        "run_token.issued.v1",
        "run_token.revoked.v1",
        "session.ended.v1",
        "session.started.v1",
        # workspace-realizer
        "agent_copy.copied.v1",
        "agent_copy.deleted.v1",
        "company_copy.host_access_noted.v1",
        "company_copy.identifier_claimed.v1",
        "company_copy.issue_number_allocated.v1",
        "company_copy.registered.v1",
        "workspace.provision_failed.v1",
        "workspace.provisioned.v1",
        "workspace.run_leased.v1",
        "workspace.run_released.v1",
        "workspace_operation.finished.v1",
        "workspace_operation.recorded.v1",
        # runtime-supervisor
        "runtime_service.spawned.v1",
        "runtime_service.touched.v1",
        "upstream_copy.copied.v1",
        "upstream_copy.updated.v1",
        "worker_node.drain_ended.v1",
        "worker_node.drain_started.v1",
        "worker_node.registered.v1",
        "worker_node.started.v1",
        "workspace_operation.began.v1",
        "workspace_runtime.control_lease_claimed.v1",
        "workspace_runtime.control_lease_reclaimed.v1",
        "workspace_runtime.control_lease_released.v1",
        "workspace_runtime.control_lease_renewed.v1",
        "workspace_runtime.registered.v1",
        # heartbeat-controller
        "issue_copy.copied.v1",
        "issue_copy.noted.v1",
        "run.adapter_launched.v1",
        "run.result_collected.v1",
        "run.slot_granted.v1",
        "run.wake_joined.v1",
        "run.workspace_awaited.v1",
        "wakeup.cancelled.v1",
        "wakeup.claimed.v1",
        "wakeup.completed.v1",
        "wakeup.failed.v1",
        # every service: its inbox's and its outbox relay's records
        "inbox.opened.v1",
        "outbox.opened.v1",
        "outbox.publication_skipped.v1",
    }
)
"""The types of stored events that are never published (they show in audit trails and a
workspace's events only): derived from the aggregate and the event (``eventstore.event_names``)."""

KNOWN_EVENT_TYPES: Final[frozenset[str]] = PUBLIC_EVENT_TYPES | RECORDED_EVENT_TYPES
"""Every type an audit trail or a workspace's events may show."""

_WORDS: Final[dict[str, str]] = {"api": "API", "id": "ID", "dns": "DNS", "http": "HTTP"}
"""Words written in capitals in labels."""
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_VERSION: Final = re.compile(r"v[0-9]+")


def snake_case(name: str) -> str:
    """``WorkspaceOperation`` → ``workspace_operation``; ``HTTPCheck`` → ``http_check``."""
    return _CAMEL.sub("_", name).lower()


def aggregate_of(type_tag: str) -> str:
    """``workspace.realized.v1`` → ``workspace``."""
    return type_tag.split(".", 1)[0]


def unversioned(type_tag: str) -> str:
    """``workspace.realized.v1`` → ``workspace.realized`` (a type without version as is)."""
    head, _, last = type_tag.rpartition(".")
    return head if head and _VERSION.fullmatch(last) else type_tag


def _words(token: str) -> list[str]:
    return [_WORDS.get(word, word) for word in token.split("_") if word]


def event_label(type_tag: str) -> str:
    """What a person reads for an event type: ``workspace.provisioned.v1`` → ``Workspace
    provisioned``, ``api_key.created.v1`` → ``API key created``; a version after the first is
    named (``Run finished (v2)``)."""
    parts = type_tag.split(".")
    version = parts.pop() if len(parts) > 1 and _VERSION.fullmatch(parts[-1]) else None
    words = [word for part in parts for word in _words(part)]
    if not words:
        return type_tag
    first = words[0] if words[0].isupper() else words[0].capitalize()
    text = " ".join([first, *words[1:]])
    return f"{text} ({version})" if version not in (None, "v1") else text
