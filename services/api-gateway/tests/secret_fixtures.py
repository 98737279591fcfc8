"""A stand-in for git-credentials on the fake bus: it answers the secret subjects as the service
does on the wire (views without values, ``state_conflict`` for a taken name, ``not_found`` for an
unknown secret or another company's), and keeps the values it was sent so tests can check them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import msgspec

from contracts import credential_subjects as subjects
from contracts.base import ErrorReply, Ok, Principal
from contracts.credentials import CreateSecret, DeleteSecret, ListSecrets, RotateSecret

START = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def ok(result: Any) -> Ok:
    """An ``ok`` reply as the bus delivers it (the result decoded to plain JSON values)."""
    return Ok(result=msgspec.json.decode(msgspec.json.encode(result)))


@dataclass
class StoredSecret:
    id: str
    company_id: str
    name: str
    values: list[str]
    created_at: datetime
    updated_at: datetime

    def view(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "companyId": self.company_id,
            "name": self.name,
            "version": len(self.values),
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
        }


@dataclass
class FakeCredentials:
    """The secret commands and queries of git-credentials, in memory."""

    secrets: dict[str, StoredSecret] = field(default_factory=dict)
    ticks: int = 0

    def install(self, bus: Any) -> FakeCredentials:
        bus.replies[subjects.SECRET_CREATE] = self.create
        bus.replies[subjects.SECRET_ROTATE] = self.rotate
        bus.replies[subjects.SECRET_DELETE] = self.delete
        bus.replies[subjects.SECRET_LIST] = self.list
        return self

    def _now(self) -> datetime:
        self.ticks += 1
        return START + timedelta(seconds=self.ticks)

    def _reachable(self, principal: Principal, secret_id: str) -> StoredSecret | None:
        secret = self.secrets.get(secret_id)
        if secret is None:
            return None
        if principal.actor.type != "admin" and principal.company_id != secret.company_id:
            return None
        return secret

    @staticmethod
    def _missing(secret_id: str) -> ErrorReply:
        return ErrorReply(code="not_found", message=f"There is no secret {secret_id}.", status=404)

    def create(self, command: CreateSecret) -> Ok | ErrorReply:
        assert isinstance(command, CreateSecret)
        taken = any(
            s.company_id == command.company_id and s.name == command.name
            for s in self.secrets.values()
        )
        if taken:
            message = f"The company already has a secret named {command.name}; rotate it."
            return ErrorReply(code="state_conflict", message=message, status=409)
        now = self._now()
        secret = StoredSecret(
            id=str(uuid4()),
            company_id=command.company_id,
            name=command.name,
            values=[command.value],
            created_at=now,
            updated_at=now,
        )
        self.secrets[secret.id] = secret
        return ok(secret.view())

    def rotate(self, command: RotateSecret) -> Ok | ErrorReply:
        assert isinstance(command, RotateSecret)
        secret = self._reachable(command.principal, command.secret_id)
        if secret is None:
            return self._missing(command.secret_id)
        secret.values.append(command.value)
        secret.updated_at = self._now()
        return ok(secret.view())

    def delete(self, command: DeleteSecret) -> Ok | ErrorReply:
        assert isinstance(command, DeleteSecret)
        if self._reachable(command.principal, command.secret_id) is None:
            return self._missing(command.secret_id)
        del self.secrets[command.secret_id]
        return ok({"id": command.secret_id})

    def list(self, query: ListSecrets) -> Ok:
        assert isinstance(query, ListSecrets)
        rows = sorted(
            (s for s in self.secrets.values() if s.company_id == query.company_id),
            key=lambda s: s.name,
        )
        page = rows[query.offset : query.offset + query.limit]
        return ok({"items": [s.view() for s in page], "total": len(rows)})


def access_event(**changes: Any) -> dict[str, Any]:
    """One ``SecretAccessEvent`` as the service sends it."""
    return {
        "id": str(uuid4()),
        "secretName": "GITHUB_TOKEN",
        "source": "company_secret",
        "provider": "github",
        "runId": "run-1",
        "operationId": None,
        "remoteHost": "github.com",
        "occurredAt": START,
        **changes,
    }
