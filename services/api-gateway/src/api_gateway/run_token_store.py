"""The gateway application's run tokens: minting, ending with the run, authenticating.

A base of :class:`api_gateway.application.GatewayApplication` (one concept per module). Its read
models hold hashes only: ``run_tokens_by_hash`` (every token minted, revoked ones kept so that a
refused token can be told why) and ``run_token_runs`` (per run: whether it ended, and the hash of
its live token).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from api_gateway.domain import GatewayError, UnauthenticatedError, hash_secret
from api_gateway.run_tokens import RunToken, new_run_token
from contracts.errors import ErrorCode
from eventstore import ServiceApplication

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking

__all__ = ["RunBinding", "RunTokenRecord", "RunTokenStore", "RunTokenUnusableError"]


class RunTokenUnusableError(GatewayError):
    """A mint the gateway cannot serve as asked (an expiry in the past, another agent's run)."""

    code = ErrorCode.UNPROCESSABLE


@dataclass(frozen=True)
class RunTokenRecord:
    """A run token in the read model: what it is bound to, never the token."""

    id: str
    run_id: str
    company_id: str
    agent_id: str
    issue_id: str | None
    workspace_id: str | None
    expires_at: datetime
    created_at: datetime
    revoked_at: datetime | None = None
    revoked_because: str | None = None
    """``run_ended`` or ``replaced`` (a newer token of the same run)."""


@dataclass(frozen=True)
class RunBinding:
    """What the gateway knows of a run: its company and agent, its live token's hash, its end."""

    run_id: str
    company_id: str
    agent_id: str
    token_hash: str | None = None
    ended: bool = False


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class RunTokenStore(ServiceApplication):
    """Run-token use cases and read models (mixed into the gateway's application)."""

    run_tokens_by_hash: dict[str, RunTokenRecord]
    run_token_runs: dict[str, RunBinding]
    """By aggregate id (``RunToken.create_id(runId)``)."""

    # -- use cases ---------------------------------------------------------------------------

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
        expires_at = _aware(expires_at)
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

    # -- queries -----------------------------------------------------------------------------

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

    # -- read models -------------------------------------------------------------------------

    def init_run_token_models(self) -> None:
        """Empty run-token read models."""
        self.run_tokens_by_hash = {}
        self.run_token_runs = {}

    def project_run_token(self, domain_event: Any) -> None:
        """Apply one stored ``RunToken`` event to the read models."""
        at = domain_event.timestamp
        key = str(domain_event.originator_id)
        match domain_event:
            case RunToken.Bound():
                self.run_token_runs[key] = RunBinding(
                    run_id=domain_event.bound_run_id,
                    company_id=domain_event.company_id,
                    agent_id=domain_event.agent_id,
                )
            case RunToken.Issued():
                binding = self.run_token_runs[key]
                self._revoke_record(binding.token_hash, at, "replaced")
                self.run_tokens_by_hash[domain_event.token_hash] = RunTokenRecord(
                    id=domain_event.token_id,
                    run_id=binding.run_id,
                    company_id=binding.company_id,
                    agent_id=binding.agent_id,
                    issue_id=domain_event.issue_id,
                    workspace_id=domain_event.workspace_id,
                    expires_at=_aware(domain_event.expires_at),
                    created_at=at,
                )
                self.run_token_runs[key] = replace(binding, token_hash=domain_event.token_hash)
            case RunToken.Revoked():
                binding = self.run_token_runs[key]
                self._revoke_record(binding.token_hash, at, "run_ended")
                self.run_token_runs[key] = replace(binding, token_hash=None, ended=True)

    def _revoke_record(self, token_hash: str | None, at: datetime, because: str) -> None:
        if token_hash is None or (record := self.run_tokens_by_hash.get(token_hash)) is None:
            return
        self.run_tokens_by_hash[token_hash] = replace(
            record, revoked_at=at, revoked_because=because
        )

    def run_token_read_models(self) -> dict[str, Any]:
        """The run-token read models, for replay verification."""
        return {
            "run_tokens_by_hash": dict(self.run_tokens_by_hash),
            "run_token_runs": dict(self.run_token_runs),
        }

    @staticmethod
    def run_token_id(run_id: str) -> UUID:
        """The aggregate id of a run's token (for tests and audits)."""
        return RunToken.create_id(run_id)
