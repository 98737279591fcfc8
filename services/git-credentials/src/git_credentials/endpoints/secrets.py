"""Bus endpoints of company secrets and their access events (API.md "Secrets").

Secrets are an operator matter: agents are refused (``forbidden``); a board principal reaches its
own company's secrets only (another company's answers ``not_found``: existence is not revealed);
an admin without a company reaches every company. A value goes in (create, rotate) and never
comes out: every reply is a view of names, versions and dates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from contracts import credential_subjects as subjects
from contracts.credentials import (
    CreateSecret,
    DeleteSecret,
    ListSecretAccessEvents,
    ListSecrets,
    RotateSecret,
    Secret,
    SecretAccessEvent,
)
from contracts.workspace_views import Deleted, Page
from git_credentials.endpoints.common import cause_of, check_page, manager
from servicekit.access import Action
from servicekit.routes import BusEndpoints, Route

if TYPE_CHECKING:
    from git_credentials.endpoints.common import Endpoints
    from git_credentials.readmodels import AccessRecord, SecretRecord
    from natsbus import RequestContext

__all__ = ["SecretEndpoints", "access_event_view", "secret_view"]


def secret_view(record: SecretRecord) -> Secret:
    """The public view of a secret: never a value."""
    return Secret(
        id=record.id,
        company_id=record.company_id,
        name=record.name,
        version=record.version,
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def access_event_view(record: AccessRecord) -> SecretAccessEvent:
    """The public view of one credential resolution."""
    return SecretAccessEvent(
        id=record.id,
        secret_name=record.secret_name,
        source=record.source,
        provider=record.provider,
        run_id=record.run_id,
        operation_id=record.operation_id,
        remote_host=record.remote_host,
        occurred_at=record.occurred_at,
    )


class SecretEndpoints(BusEndpoints):
    """The secret endpoints (create, rotate, delete, list) and the access-event list.

    Args:
        e: The running parts.
        on_deleted: Called with the company's id after a secret of that company was deleted
            (the resolver forgets the company's memoized tokens, so a deleted token is never
            handed out).
    """

    def __init__(self, e: Endpoints, *, on_deleted: Callable[[str], object] | None = None) -> None:
        self._e = e
        self._app = e.app
        self._on_deleted = on_deleted

    async def create(self, c: CreateSecret, ctx: RequestContext) -> Secret:
        """Create a secret of the principal's company (version 1)."""
        manager(c.principal).check_company(c.company_id, "company", c.company_id)
        cause = cause_of(c.principal, "create secret")
        record = await self._e.write(cause, self._app.create_secret, c.company_id, c.name, c.value)
        return secret_view(record)

    async def rotate(self, c: RotateSecret, ctx: RequestContext) -> Secret:
        """Store the secret's next version."""
        scope = manager(c.principal).company_id
        cause = cause_of(c.principal, "rotate secret")
        record = await self._e.write(
            cause, partial(self._app.rotate_secret, c.secret_id, c.value, scope=scope)
        )
        return secret_view(record)

    async def delete(self, c: DeleteSecret, ctx: RequestContext) -> Deleted:
        """Delete the secret and destroy its data keys."""
        scope = manager(c.principal).company_id
        cause = cause_of(c.principal, "delete secret")
        record = await self._e.store(self._app.secret_in, scope, c.secret_id)
        await self._e.write(cause, partial(self._app.delete_secret, c.secret_id, scope=scope))
        if self._on_deleted is not None:
            self._on_deleted(record.company_id)
        return Deleted(id=c.secret_id)

    async def list_secrets(self, q: ListSecrets, ctx: RequestContext) -> Page[Secret]:
        """A page of the company's live secrets by name."""
        manager(q.principal, Action.READ).check_company(q.company_id, "company", q.company_id)
        check_page(q.limit, q.offset)
        rows, total = await self._e.store(self._app.list_secrets, q.company_id, q.limit, q.offset)
        return Page(items=[secret_view(r) for r in rows], total=total)

    async def access_events(
        self, q: ListSecretAccessEvents, ctx: RequestContext
    ) -> Page[SecretAccessEvent]:
        """A page of the company's access events, newest first."""
        manager(q.principal, Action.READ).check_company(q.company_id, "company", q.company_id)
        check_page(q.limit, q.offset)
        rows, total = await self._e.store(self._app.access_events, q.company_id, q.limit, q.offset)
        return Page(items=[access_event_view(r) for r in rows], total=total)

    def routes(self) -> Sequence[Route]:
        """The secret and access-event endpoints."""
        return (
            Route("secret_create", subjects.SECRET_CREATE, self.create, CreateSecret),
            Route("secret_rotate", subjects.SECRET_ROTATE, self.rotate, RotateSecret),
            Route("secret_delete", subjects.SECRET_DELETE, self.delete, DeleteSecret),
            Route("secret_list", subjects.SECRET_LIST, self.list_secrets, ListSecrets),
            Route(
                "secret_access_events",
                subjects.SECRET_ACCESS_EVENTS,
                self.access_events,
                ListSecretAccessEvents,
            ),
        )
