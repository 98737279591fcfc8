"""Bus endpoints of company secrets and their access events (API.md "Secrets").

Secrets are an operator matter: agents are refused (``forbidden``); a board principal reaches its
own company's secrets only (another company's answers ``not_found``: existence is not revealed);
an admin without a company reaches every company. A value goes in (create, rotate) and never
comes out: every reply is a view of names, versions and dates.
"""

from __future__ import annotations

from collections.abc import Callable
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
from git_credentials.endpoints.common import Endpoints, cause_of, check_page, manager
from servicekit.access import Action

if TYPE_CHECKING:
    from git_credentials.readmodels import AccessRecord, SecretRecord
    from natsbus import RequestContext

__all__ = ["access_event_view", "register_secrets", "secret_view"]


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


async def register_secrets(
    e: Endpoints, *, on_deleted: Callable[[str], object] | None = None
) -> None:
    """Add the secret endpoints (create, rotate, delete, list) and the access-event list.

    ``on_deleted(company_id)`` is called after a secret of that company was deleted (the
    resolver forgets the company's memoized tokens, so a deleted token is never handed out).
    """
    app = e.app

    async def create(c: CreateSecret, ctx: RequestContext) -> Secret:
        manager(c.principal).check_company(c.company_id, "company", c.company_id)
        cause = cause_of(c.principal, "create secret")
        record = await e.write(cause, app.create_secret, c.company_id, c.name, c.value)
        return secret_view(record)

    async def rotate(c: RotateSecret, ctx: RequestContext) -> Secret:
        scope = manager(c.principal).company_id
        cause = cause_of(c.principal, "rotate secret")
        record = await e.write(cause, lambda: app.rotate_secret(c.secret_id, c.value, scope=scope))
        return secret_view(record)

    async def delete(c: DeleteSecret, ctx: RequestContext) -> Deleted:
        scope = manager(c.principal).company_id
        cause = cause_of(c.principal, "delete secret")
        record = await e.store(app.secret_in, scope, c.secret_id)
        await e.write(cause, lambda: app.delete_secret(c.secret_id, scope=scope))
        if on_deleted is not None:
            on_deleted(record.company_id)
        return Deleted(id=c.secret_id)

    async def list_secrets(q: ListSecrets, ctx: RequestContext) -> Page[Secret]:
        manager(q.principal, Action.READ).check_company(q.company_id, "company", q.company_id)
        check_page(q.limit, q.offset)
        rows, total = await e.store(app.list_secrets, q.company_id, q.limit, q.offset)
        return Page(items=[secret_view(r) for r in rows], total=total)

    async def access_events(
        q: ListSecretAccessEvents, ctx: RequestContext
    ) -> Page[SecretAccessEvent]:
        manager(q.principal, Action.READ).check_company(q.company_id, "company", q.company_id)
        check_page(q.limit, q.offset)
        rows, total = await e.store(app.access_events, q.company_id, q.limit, q.offset)
        return Page(items=[access_event_view(r) for r in rows], total=total)

    await e.add("secret_create", subjects.SECRET_CREATE, create, CreateSecret)
    await e.add("secret_rotate", subjects.SECRET_ROTATE, rotate, RotateSecret)
    await e.add("secret_delete", subjects.SECRET_DELETE, delete, DeleteSecret)
    await e.add("secret_list", subjects.SECRET_LIST, list_secrets, ListSecrets)
    await e.add(
        "secret_access_events",
        subjects.SECRET_ACCESS_EVENTS,
        access_events,
        ListSecretAccessEvents,
    )
