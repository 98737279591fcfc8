"""Subjects of the git-credentials service, built with :mod:`contracts.subjects`.

``GIT_INVOCATION`` answers with a token inside the git invocation: in ``deploy/nats`` only the
workspace-realizer may request it (and, like every reply, the answer goes to the requester's
private inbox). ``PULL_REQUEST_FACTS`` resolves a token too (to call the provider's API) and
answers only the facts; it is the realizer's as well.
"""

from __future__ import annotations

from typing import Final

from contracts.subjects import command, query

__all__ = [
    "GIT_INVOCATION",
    "PULL_REQUEST_FACTS",
    "SECRET_ACCESS_EVENTS",
    "SECRET_CREATE",
    "SECRET_DELETE",
    "SECRET_LIST",
    "SECRET_ROTATE",
]

SECRET_CREATE: Final = command("secret", "create")
SECRET_ROTATE: Final = command("secret", "rotate")
SECRET_DELETE: Final = command("secret", "delete")
SECRET_LIST: Final = query("secret", "list")
SECRET_ACCESS_EVENTS: Final = query("credential", "access_events")
GIT_INVOCATION: Final = command("credential", "git_invocation")
PULL_REQUEST_FACTS: Final = command("credential", "pull_request_facts")
