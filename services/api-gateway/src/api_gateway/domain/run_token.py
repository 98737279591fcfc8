"""Run tokens: the bearer credential of one heartbeat run's adapter (ARCHITECTURE §5).

One :class:`RunToken` aggregate per run (its id derives from the run id), so that minting is
idempotent per run and a run that ended refuses any later mint. Only the token's SHA-256 hash
is stored; every event is private (never published, never in an audit or replay report: the
application lists ``token_hash`` as a private field). Pure: no I/O.
"""

from __future__ import annotations

import secrets
import sys
from datetime import datetime
from typing import Final
from uuid import UUID, uuid4, uuid5

from eventsourcing.domain import event

from api_gateway.domain.errors import RunEndedError
from eventstore import ClipyardAggregate
from eventstore.topics import keep_old_topics

__all__ = [
    "RUN_TOKEN_PREFIX",
    "RunToken",
    "is_run_token",
    "new_run_token",
]

RUN_TOKEN_PREFIX: Final = "cyr_"
"""Run tokens start with this; API keys start with ``cy_<kind>_``."""
_RUN_NAMESPACE: Final = UUID("3c2f8a61-5d0e-5e4b-9a7c-1f6b2d8e4a90")


def new_run_token() -> str:
    """A fresh run token, ``cyr_<32 random bytes, URL-safe base64>`` (the clear value: shown once)."""
    return f"{RUN_TOKEN_PREFIX}{secrets.token_urlsafe(32)}"


def is_run_token(key: str) -> bool:
    """Whether a bearer credential has the shape of a run token (rather than an API key)."""
    return key.startswith(RUN_TOKEN_PREFIX)


class RunToken(ClipyardAggregate):
    """The token of one run: bound to its company, agent, run, issue and workspace.

    At most one token of a run works at a time: a new one replaces (revokes) the last. When the
    run ends the aggregate is revoked for good; a later mint answers 409 ``run_finished``.
    """

    class Bound(ClipyardAggregate.Created):
        """The gateway heard of the run (its first mint, or its end). Private."""

        company_id: str
        agent_id: str
        bound_run_id: str

    class Issued(ClipyardAggregate.Event):
        """A token was minted for the run (replacing any earlier one). Private: a hash only."""

        token_id: str
        token_hash: str
        issue_id: str | None
        workspace_id: str | None
        expires_at: datetime

    class Revoked(ClipyardAggregate.Event):
        """The run ended: its token stops working, and no other will be minted. Private."""

        ended_status: str | None

    @staticmethod
    def create_id(bound_run_id: str) -> UUID:
        """The aggregate id of a run's token: a UUID5 of the run id."""
        return uuid5(_RUN_NAMESPACE, bound_run_id)

    @classmethod
    def bind(cls, *, company_id: str, agent_id: str, bound_run_id: str) -> RunToken:
        """The token aggregate of a run the gateway has not heard of before."""
        return cls(company_id=company_id, agent_id=agent_id, bound_run_id=bound_run_id)

    @event(Bound)
    def __init__(self, *, company_id: str, agent_id: str, bound_run_id: str) -> None:
        self.company_id = company_id
        self.agent_id = agent_id
        self.bound_run_id = bound_run_id
        self.token_id: str | None = None
        self.ended = False

    def issue(
        self,
        *,
        token_hash: str,
        issue_id: str | None,
        workspace_id: str | None,
        expires_at: datetime,
    ) -> str:
        """Record a new token of the run (the last one stops working); return its id.

        Raises:
            RunEndedError: The run has ended.
        """
        if self.ended:
            raise RunEndedError(
                f"Run {self.bound_run_id} has ended; no run token is minted for it.",
                runId=self.bound_run_id,
            )
        token_id = str(uuid4())
        self._issued(
            token_id=token_id,
            token_hash=token_hash,
            issue_id=issue_id,
            workspace_id=workspace_id,
            expires_at=expires_at,
        )
        return token_id

    @event(Issued)
    def _issued(
        self,
        *,
        token_id: str,
        token_hash: str,
        issue_id: str | None,
        workspace_id: str | None,
        expires_at: datetime,
    ) -> None:
        self.token_id = token_id

    def revoke(self, ended_status: str | None) -> bool:
        """The run ended; return False (and record nothing) when that was known already."""
        if self.ended:
            return False
        self._revoked(ended_status=ended_status)
        return True

    @event(Revoked)
    def _revoked(self, *, ended_status: str | None) -> None:
        self.ended = True


keep_old_topics("api_gateway.run_tokens", sys.modules[__name__])
