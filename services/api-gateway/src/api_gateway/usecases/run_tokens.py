"""Run tokens: mint a run's token, end it with the run, authenticate a clear token.

Only the token's hash is ever stored; the clear token is handed back once, by the mint.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from api_gateway.domain import (
    RunToken,
    RunTokenUnusableError,
    UnauthenticatedError,
    hash_secret,
    new_run_token,
)
from api_gateway.readmodels import GatewayReadModels, RunTokenRecord, aware

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking

__all__ = ["RunTokenUseCases"]


class RunTokenUseCases(GatewayReadModels):
    """The run-token commands and queries (mixed into the gateway's application)."""

    def mint_run_token(
        self,
        *,
        company_id: str,
        agent_id: str,
        run_id: str,
        issue_id: str | None,
        workspace_id: str | None,
        expires_at: datetime,
    ) -> tuple[RunTokenRecord, str]:
        """Mint the run's token (revoking its last one); return its record and the clear token.

        Raises:
            RunEndedError: The run has ended (409 ``run_finished``).
            RunTokenUnusableError: ``expiresAt`` is past, or the run is another agent's.
        """
        expires_at = aware(expires_at)
        if expires_at <= datetime.now(UTC):
            raise RunTokenUnusableError(
                f"expiresAt {expires_at.isoformat()} is in the past; a run token must expire "
                "at the run's timeout.",
                field="expiresAt",
            )
        aggregate = self._run_token(run_id)
        if aggregate is None:
            aggregate = RunToken.bind(company_id=company_id, agent_id=agent_id, bound_run_id=run_id)
        elif (aggregate.company_id, aggregate.agent_id) != (company_id, agent_id):
            raise RunTokenUnusableError(
                f"Run {run_id} belongs to another agent; mint its token for that agent.",
                runId=run_id,
            )
        token = new_run_token()
        token_hash = hash_secret(token)
        aggregate.issue(
            token_hash=token_hash,
            issue_id=issue_id,
            workspace_id=workspace_id,
            expires_at=expires_at,
        )
        self.save(aggregate)
        return self.run_tokens_by_hash[token_hash], token

    def end_run_tokens(
        self,
        *,
        company_id: str,
        agent_id: str,
        run_id: str,
        status: str | None,
        tracking: Tracking | None = None,
    ) -> bool:
        """The run ended: revoke its token, and refuse any later mint. False: known already."""
        aggregate = self._run_token(run_id)
        if aggregate is None:
            aggregate = RunToken.bind(company_id=company_id, agent_id=agent_id, bound_run_id=run_id)
        changed = aggregate.revoke(status)
        if tracking is not None:
            self.save_with_tracking(aggregate if changed else None, tracking=tracking)
        elif changed:
            self.save(aggregate)
        return changed

    def _run_token(self, run_id: str) -> RunToken | None:
        try:
            found: RunToken = self.repository.get(RunToken.create_id(run_id))
        except AggregateNotFoundError:
            return None
        return found

    def authenticate_run_token(self, token: str) -> RunTokenRecord:
        """The live record of a clear run token, or ``UnauthenticatedError`` saying why not."""
        record = self.run_tokens_by_hash.get(hash_secret(token))
        if record is None:
            raise UnauthenticatedError(
                "This run token is not known; a run token is given to an adapter process for "
                "one run (CLIPYARD_API_KEY) and works only while that run runs."
            )
        if record.revoked_because == "replaced":
            raise UnauthenticatedError(
                f"This run token was replaced by a newer token of run {record.run_id}; use the "
                "token the run was launched with.",
                runId=record.run_id,
            )
        if record.revoked_at is not None:
            raise UnauthenticatedError(
                f"This run token's run has ended (run {record.run_id}); a run token works only "
                "while its run runs: ask for a new wake of the agent.",
                runId=record.run_id,
            )
        if record.expires_at <= datetime.now(UTC):
            raise UnauthenticatedError(
                f"This run token expired at {record.expires_at.isoformat()} (its run's "
                f"timeout); run {record.run_id} may no longer act.",
                runId=record.run_id,
            )
        return record

    @staticmethod
    def run_token_id(run_id: str) -> UUID:
        """The aggregate id of a run's token (for tests and audits)."""
        return RunToken.create_id(run_id)
