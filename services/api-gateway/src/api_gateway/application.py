"""The gateway's eventsourcing application: companies, API keys, sessions and their read models.

Use cases are a few lines (check, one aggregate command, save). Read models are rebuilt from the
notification log at start through :meth:`GatewayApplication.project` and kept current on each save;
they hold hashes only, never a clear key or session id.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar
from uuid import UUID

from api_gateway.deleted_agents import DeletedAgent
from api_gateway.domain import (
    ApiKey,
    Company,
    KeyKindNotAllowedError,
    NotFoundError,
    Session,
    UnauthenticatedError,
    csrf_token_of,
    hash_secret,
    new_key,
    new_session_secret,
)
from api_gateway.run_token_store import RunTokenStore
from api_gateway.run_tokens import RunToken
from eventstore.privacy import DEFAULT_PRIVATE_FIELDS

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking

__all__ = [
    "AgentNotFoundError",
    "ApiKeyNotFoundError",
    "CompanyNotFoundError",
    "CompanyRecord",
    "GatewayApplication",
    "KeyRecord",
    "SessionRecord",
    "SessionStarted",
]


class CompanyNotFoundError(NotFoundError):
    """No company with this id (or one the principal may not see)."""


class ApiKeyNotFoundError(NotFoundError):
    """No API key with this id (or one of another company)."""


class AgentNotFoundError(NotFoundError):
    """An agent key was asked for an agent that was deleted."""


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
class SessionStarted:
    """What signing in hands back once: the clear session id (cookie) and CSRF token."""

    session_id: str
    csrf_token: str
    company_id: str
    expires_at: datetime


class GatewayApplication(RunTokenStore):
    """Companies, API keys, sessions and run tokens; the only writer of the gateway's store."""

    companies: dict[str, CompanyRecord]
    keys_by_id: dict[str, KeyRecord]
    keys_by_hash: dict[str, str]
    deleted_agents: dict[str, str]
    """Agents the controller said were deleted -> their company (no key is created for them)."""
    sessions: dict[str, SessionRecord]
    """Live sessions by aggregate id (a UUID5 of the session id's hash); see SessionRecord."""

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

    # -- use cases ---------------------------------------------------------------------------

    def create_company(self, name: str, issue_prefix: str | None = None) -> CompanyRecord:
        """Create a company; the prefix defaults to up to four letters of the name."""
        company = Company.register(name=name, issue_prefix=issue_prefix)
        self.save(company)
        return self.companies[str(company.id)]

    def set_host_access(
        self, company_id: str, host_trusted: bool, allowed_roots: list[str]
    ) -> CompanyRecord:
        """Replace what of the host a company may use (the admin key's call).

        Raises:
            CompanyNotFoundError: No such company.
            InvalidInputError: An ``allowedRoots`` entry is no folder below ``/``.
        """
        self.company(company_id)
        company: Company = self.repository.get(UUID(company_id))
        company.change_host_access(host_trusted=host_trusted, allowed_roots=allowed_roots)
        self.save(company)
        return self.companies[company_id]

    def create_api_key(
        self, company_id: str, name: str, kind: str, agent_id: str | None = None
    ) -> tuple[KeyRecord, str]:
        """Issue a key for a company; return its record and the clear key (shown once).

        An agent key's agent is confirmed with the heartbeat controller by the caller first;
        an agent whose delete the controller inbox has heard since (on this same store thread)
        gets no key.

        Raises:
            CompanyNotFoundError: No such company.
            AgentNotFoundError: The agent was deleted (404 naming ``agentId``).
        """
        self.company(company_id)
        if kind == "agent" and agent_id is not None and agent_id in self.deleted_agents:
            raise AgentNotFoundError(
                f"There is no agent {agent_id} in this company: it was deleted. Create a new "
                "agent (POST /api/companies/{companyId}/agents) and a key for it.",
                agentId=agent_id,
            )
        key = new_key(kind)
        api_key = ApiKey.issue(
            company_id=company_id,
            name=name,
            kind=kind,
            agent_id=agent_id,
            key_hash=hash_secret(key),
        )
        self.save(api_key)
        return self.keys_by_id[str(api_key.id)], key

    def revoke_api_key(self, key_id: str) -> KeyRecord:
        """Revoke a key at once (revoking a revoked key changes nothing)."""
        api_key: ApiKey = self.repository.get(UUID(self.api_key(key_id).id))
        if api_key.revoke():
            self.save(api_key)
        return self.keys_by_id[key_id]

    def revoke_agent_keys(self, company_id: str, agent_id: str, tracking: Tracking) -> int:
        """The agent was deleted (the controller's ``agent.deleted.v1``): revoke its live keys
        and remember the agent as deleted (no later key for it), in one save with the inbox
        position; return how many keys were revoked."""
        live = [
            k
            for k in self.keys_by_id.values()
            if k.kind == "agent"
            and k.agent_id == agent_id
            and k.company_id == company_id
            and k.revoked_at is None
        ]
        keys: list[ApiKey] = [self.repository.get(UUID(k.id)) for k in live]
        for api_key in keys:
            api_key.revoke()
        marks: list[DeletedAgent] = []
        if agent_id not in self.deleted_agents:
            marks.append(DeletedAgent(company_id=company_id, agent_id=agent_id))
        self.save_with_tracking(*keys, *marks, tracking=tracking)
        return len(keys)

    def start_session(self, key: str, ttl: float) -> SessionStarted:
        """Exchange a live board key for a session (cookie id + CSRF token, both hashed here)."""
        record = self.authenticate_key(key)
        if record.kind != "board":
            raise KeyKindNotAllowedError("Sign in with a board key.", field="key")
        self.prune_sessions()
        session_id = new_session_secret()
        csrf = csrf_token_of(session_id)
        expires_at = datetime.now(UTC) + timedelta(seconds=ttl)
        self.save(
            Session(
                session_hash=hash_secret(session_id),
                csrf_hash=hash_secret(csrf),
                company_id=record.company_id,
                key_id=record.id,
                expires_at=expires_at,
            )
        )
        return SessionStarted(session_id, csrf, record.company_id, expires_at)

    def end_session(self, session_id: str) -> bool:
        """Sign out; False when there was no live session with that id."""
        session_uuid = Session.create_id(hash_secret(session_id))
        record = self._session_on_access(str(session_uuid))
        if record is None or record.expires_at <= datetime.now(UTC):
            return False
        session: Session = self.repository.get(session_uuid)
        if session.end():
            self.save(session)
        return True

    def rebuild_read_models(self, source: Any = None) -> int:
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

    def _session_on_access(self, session_key: str) -> SessionRecord | None:
        """The session with this aggregate id (None: unknown or ended).

        An expired one is dropped from the read model here, and returned this once so that the
        caller can say it expired.
        """
        record = self.sessions.get(session_key)
        if record is not None and record.expires_at <= datetime.now(UTC):
            del self.sessions[session_key]
        return record

    # -- queries -----------------------------------------------------------------------------

    def company(self, company_id: str) -> CompanyRecord:
        """The company with this id, or ``CompanyNotFoundError``."""
        if (record := self.companies.get(company_id)) is None:
            raise CompanyNotFoundError(f"There is no company {company_id}.", companyId=company_id)
        return record

    def list_companies(self, limit: int, offset: int) -> tuple[list[CompanyRecord], int]:
        """A page of companies, oldest first, and the total."""
        rows = sorted(self.companies.values(), key=lambda c: (c.created_at, c.id))
        return rows[offset : offset + limit], len(rows)

    def api_key(self, key_id: str) -> KeyRecord:
        """The key with this id, or ``ApiKeyNotFoundError``."""
        if (record := self.keys_by_id.get(key_id)) is None:
            raise ApiKeyNotFoundError(f"There is no API key {key_id}.", keyId=key_id)
        return record

    def list_api_keys(
        self, company_id: str, limit: int, offset: int
    ) -> tuple[list[KeyRecord], int]:
        """A page of a company's keys (revoked ones included), oldest first, and the total."""
        self.company(company_id)
        rows = sorted(
            (k for k in self.keys_by_id.values() if k.company_id == company_id),
            key=lambda k: (k.created_at, k.id),
        )
        return rows[offset : offset + limit], len(rows)

    def authenticate_key(self, key: str) -> KeyRecord:
        """The live key record of a clear key, or ``UnauthenticatedError`` saying why not."""
        key_id = self.keys_by_hash.get(hash_secret(key))
        if key_id is None:
            raise UnauthenticatedError(
                "This key is not known; check it, or ask an admin or a board member for a key."
            )
        record = self.keys_by_id[key_id]
        if record.revoked_at is not None:
            raise UnauthenticatedError(
                f"This key ({record.name}) was revoked; ask a board member for a new key.",
                keyId=record.id,
            )
        return record

    def authenticate_session(self, session_id: str) -> tuple[SessionRecord, KeyRecord]:
        """The live session and the live key behind a session cookie, or ``UnauthenticatedError``."""
        record = self._session_on_access(str(Session.create_id(hash_secret(session_id))))
        if record is None:
            raise UnauthenticatedError("This session is not known or has ended; sign in again.")
        if record.expires_at <= datetime.now(UTC):
            raise UnauthenticatedError("This session has expired; sign in again.")
        key = self.keys_by_id[record.key_id]
        if key.revoked_at is not None:
            raise UnauthenticatedError(
                "The key this session signed in with was revoked; sign in with a live board key."
            )
        return record, key

    @staticmethod
    def csrf_matches(record: SessionRecord, token: str | None) -> bool:
        """Whether ``token`` is the session's CSRF token (compared as hashes, in constant time)."""
        return token is not None and hmac.compare_digest(hash_secret(token), record.csrf_hash)

    def check_store(self) -> int:
        """Read the store's last notification id (the health check's proof the store answers)."""
        return self.last_notification_id()

    # -- read models -------------------------------------------------------------------------

    def init_read_models(self) -> None:
        """Empty read models (before every rebuild)."""
        self.companies = {}
        self.keys_by_id = {}
        self.keys_by_hash = {}
        self.deleted_agents = {}
        self.sessions = {}
        self.init_run_token_models()

    def project(self, domain_event: Any) -> None:
        """Apply one stored event to the read models (at start, and after each save)."""
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
            case DeletedAgent.Recorded():
                self.deleted_agents[domain_event.agent_id] = domain_event.company_id
            case Session.Started():
                self.sessions[aggregate_id] = SessionRecord(
                    id=aggregate_id,
                    company_id=domain_event.company_id,
                    key_id=domain_event.key_id,
                    csrf_hash=domain_event.csrf_hash,
                    expires_at=domain_event.expires_at,
                )
            case Session.Ended():
                self.sessions.pop(aggregate_id, None)
            case RunToken.Bound() | RunToken.Issued() | RunToken.Revoked():
                self.project_run_token(domain_event)

    def read_models(self) -> dict[str, Any]:
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
            **self.run_token_read_models(),
        }
