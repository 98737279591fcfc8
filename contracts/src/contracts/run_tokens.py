"""The run-token command (owner: api-gateway; only the heartbeat-controller may send it).

At ``slot_acquisition`` the controller asks the gateway to mint a token bound to company, agent,
run and issue, expiring at the run's timeout. The clear token is in this reply only: the
controller hands it to the supervisor inside ``LaunchAdapter`` and keeps it nowhere. The gateway
stores its hash and revokes it when its inbox hears ``run.finished.v1``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from contracts.base import Command, Struct

__all__ = ["MintRunToken", "RunTokenIssued"]


class MintRunToken(Command, tag="run_token.mint.v1", frozen=True, kw_only=True):
    """Mint the run's token → ``RunTokenIssued`` (idempotent per run: a second mint for a live
    run revokes the first token and answers a new one)."""

    run_id: str
    agent_id: str
    issue_id: str | None = None
    workspace_id: str | None = None
    expires_at: datetime


class RunTokenIssued(Struct, frozen=True, kw_only=True):
    """A run token (shown here once; its ``repr`` hides it)."""

    token_id: str
    token: str
    expires_at: datetime

    def __repr__(self) -> str:
        return (
            f"RunTokenIssued(token_id={self.token_id!r}, token=***, expires_at={self.expires_at!r})"
        )

    def __rich_repr__(self, /) -> list[tuple[str, Any]]:
        """What ``rich`` prints: no token."""
        return [("token_id", self.token_id), ("token", "***"), ("expires_at", self.expires_at)]
