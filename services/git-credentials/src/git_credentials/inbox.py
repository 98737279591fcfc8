"""The git-credentials' inbox: it has no upstream.

The git-credentials consumes no other service's events: its secrets come in through its own
endpoints (the gateway's requests) and its resolutions through the realizer's requests, so its
``ServiceSpec`` names no ``upstreams`` and this handler is not wired. It stands here so that the
service has the skeleton's shape (docs/design/service-shape.md): should an upstream be added, its
events are matched here, one ``case`` per event type, and anything else is left to the inbox,
which records its position.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking

    from git_credentials.application import GitCredentialsApplication

__all__ = ["handle"]


def handle(app: GitCredentialsApplication, event: Any, tracking: Tracking) -> None:
    """Ignore ``event``: the git-credentials reacts to no upstream event (no ``case`` but the
    catch-all)."""
    match event:
        case _:
            return
