"""The gateway's read models: companies, API keys, live sessions, run tokens and the agents the
controller said were deleted, projected from the gateway's own events.

Rebuilt from the notification log at start through :meth:`GatewayReadModels.project` and kept
current on each save; they hold hashes only, never a clear key, session id or run token.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, ClassVar

from api_gateway.domain import ApiKey, Company, DeletedAgent, RunToken, Session
from eventstore import ServiceApplication
from eventstore.privacy import DEFAULT_PRIVATE_FIELDS

if TYPE_CHECKING:
    from uuid import UUID

    from eventsourcing.domain import DomainEventProtocol
    from eventsourcing.persistence import ApplicationRecorder

__all__ = [
    "CompanyRecord",
    "GatewayReadModels",
    "KeyRecord",
    "RunBinding",
    "RunTokenRecord",
    "SessionRecord",
    "aware",
]


@dataclass(frozen=True)
class CompanyRecord:
    """A company in the read model."""

    id: str
    name: str
    issue_prefix: str
    created_at: datetime
    updated_at: datetime
    host_trusted: bool = False
    allowed_roots: tuple[str, ...] = ()


@dataclass(frozen=True)
class KeyRecord:
    """An API key in the read model: its hash, never the key."""

    id: str
    company_id: str
    name: str
    kind: str
    agent_id: str | None
    key_hash: str
    created_at: datetime
    updated_at: datetime
    revoked_at: datetime | None = None


@dataclass(frozen=True)
class SessionRecord:
    """A live operator-page session in the read model: hashes of its id and CSRF token.

    Only live sessions are kept: an ended one is removed when it ends, an expired one when it is
    next used (or at the next sign-in, or the next rebuild). Their events stay in the store.
    """

    id: str
    company_id: str
    key_id: str
    csrf_hash: str
    expires_at: datetime


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


def aware(moment: datetime) -> datetime:
    """``moment`` with UTC as its zone when it has none."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class GatewayReadModels(ServiceApplication):
    """The projection of every gateway aggregate onto its rows and indexes."""

    companies: dict[str, CompanyRecord]
    keys_by_id: dict[str, KeyRecord]
    keys_by_hash: dict[str, str]
    deleted_agents: dict[str, str]
    """Agents the controller said were deleted -> their company (no key is created for them)."""
    sessions: dict[str, SessionRecord]
    """Live sessions by aggregate id (a UUID5 of the session id's hash); see SessionRecord."""
    run_tokens_by_hash: dict[str, RunTokenRecord]
    """Every run token minted, revoked ones kept so that a refused token can be told why."""
    run_token_runs: dict[str, RunBinding]
    """By aggregate id (``RunToken.create_id(runId)``)."""

    private_fields: ClassVar[tuple[str, ...]] = (
        *DEFAULT_PRIVATE_FIELDS,
        "key_hash",
        "session_hash",
        "csrf_hash",
        "token_hash",
    )
    """Never shown by audit or replay (ARCHITECTURE §2): the hashes of keys, sessions, CSRF tokens
    and run tokens."""
    private_key_models: ClassVar[tuple[str, ...]] = ("keys_by_hash",)
    """Read models keyed by a secret's hash: replay reports never show their keys."""

    def init_read_models(self) -> None:
        """Empty read models (before every rebuild)."""
        self.companies = {}
        self.keys_by_id = {}
        self.keys_by_hash = {}
        self.deleted_agents = {}
        self.sessions = {}
        self.run_tokens_by_hash = {}
        self.run_token_runs = {}

    def rebuild_read_models(self, source: ApplicationRecorder | None = None) -> int:
        """Rebuild the read models (see the base class), then drop the expired sessions."""
        count = super().rebuild_read_models(source)
        self.prune_sessions()
        return count

    def prune_sessions(self) -> int:
        """Drop expired sessions from the read model (their events stay); return how many."""
        now = datetime.now(UTC)
        expired = [k for k, record in self.sessions.items() if record.expires_at <= now]
        for session_key in expired:
            del self.sessions[session_key]
        return len(expired)

    def project(self, domain_event: DomainEventProtocol[UUID]) -> None:
        """Apply one stored event to the read models (at start, and after each save)."""
        match domain_event:
            case Company.Created() | Company.HostAccessChanged():
                self._project_company(domain_event)
            case ApiKey.Created() | ApiKey.Revoked():
                self._project_key(domain_event)
            case DeletedAgent.Recorded():
                self.deleted_agents[domain_event.agent_id] = domain_event.company_id
            case Session.Started():
                self.sessions[str(domain_event.originator_id)] = SessionRecord(
                    id=str(domain_event.originator_id),
                    company_id=domain_event.company_id,
                    key_id=domain_event.key_id,
                    csrf_hash=domain_event.csrf_hash,
                    expires_at=domain_event.expires_at,
                )
            case Session.Ended():
                self.sessions.pop(str(domain_event.originator_id), None)
            case RunToken.Bound() | RunToken.Issued() | RunToken.Revoked():
                self._project_run_token(domain_event)

    def _project_company(self, domain_event: Company.Created | Company.HostAccessChanged) -> None:
        at = domain_event.timestamp
        aggregate_id = str(domain_event.originator_id)
        match domain_event:
            case Company.Created():
                self.companies[aggregate_id] = CompanyRecord(
                    aggregate_id, domain_event.name, domain_event.issue_prefix, at, at
                )
            case Company.HostAccessChanged():
                self.companies[aggregate_id] = replace(
                    self.companies[aggregate_id],
                    host_trusted=domain_event.host_trusted,
                    allowed_roots=tuple(domain_event.allowed_roots),
                    updated_at=at,
                )

    def _project_key(self, domain_event: ApiKey.Created | ApiKey.Revoked) -> None:
        at = domain_event.timestamp
        aggregate_id = str(domain_event.originator_id)
        match domain_event:
            case ApiKey.Created():
                self.keys_by_id[aggregate_id] = KeyRecord(
                    id=aggregate_id,
                    company_id=domain_event.company_id,
                    name=domain_event.name,
                    kind=domain_event.kind,
                    agent_id=domain_event.agent_id,
                    key_hash=domain_event.key_hash,
                    created_at=at,
                    updated_at=at,
                )
                self.keys_by_hash[domain_event.key_hash] = aggregate_id
            case ApiKey.Revoked():
                key = self.keys_by_id[aggregate_id]
                self.keys_by_id[aggregate_id] = replace(key, revoked_at=at, updated_at=at)

    def _project_run_token(
        self, domain_event: RunToken.Bound | RunToken.Issued | RunToken.Revoked
    ) -> None:
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
                self._revoke_run_token(binding.token_hash, at, "replaced")
                self.run_tokens_by_hash[domain_event.token_hash] = RunTokenRecord(
                    id=domain_event.token_id,
                    run_id=binding.run_id,
                    company_id=binding.company_id,
                    agent_id=binding.agent_id,
                    issue_id=domain_event.issue_id,
                    workspace_id=domain_event.workspace_id,
                    expires_at=aware(domain_event.expires_at),
                    created_at=at,
                )
                self.run_token_runs[key] = replace(binding, token_hash=domain_event.token_hash)
            case RunToken.Revoked():
                binding = self.run_token_runs[key]
                self._revoke_run_token(binding.token_hash, at, "run_ended")
                self.run_token_runs[key] = replace(binding, token_hash=None, ended=True)

    def _revoke_run_token(self, token_hash: str | None, at: datetime, because: str) -> None:
        if token_hash is None or (record := self.run_tokens_by_hash.get(token_hash)) is None:
            return
        self.run_tokens_by_hash[token_hash] = replace(
            record, revoked_at=at, revoked_because=because
        )

    def read_models(self) -> dict[str, object]:
        """The read models, for replay verification."""
        return {
            "companies": dict(self.companies),
            "keys_by_id": dict(self.keys_by_id),
            "keys_by_hash": dict(self.keys_by_hash),
            "deleted_agents": dict(self.deleted_agents),
            # Live sessions only: which expired ones are still held depends on when each was used.
            "sessions": {
                k: v for k, v in self.sessions.items() if v.expires_at > datetime.now(UTC)
            },
            "run_tokens_by_hash": dict(self.run_tokens_by_hash),
            "run_token_runs": dict(self.run_token_runs),
        }
