"""Company secrets and their access events: ``/api/companies/{companyId}/secrets``,
``/api/secrets/{secretId}``, ``/api/companies/{companyId}/secret-access-events``.

Secrets belong to the git-credentials service: each handler turns its HTTP call into one request
to it. Secrets are an operator matter: the admin key and board keys pass, agent keys and run
tokens get 403. A value goes in (create, rotate) and never comes out: the views hold names,
versions and dates only, the commands hide the value from ``repr``, and nothing here logs a body
or puts one on a span (the SERVER span holds the method, the route and the path only).
"""

from __future__ import annotations

from collections.abc import Sequence

from litestar import Controller, Response, delete, get, post, put
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, JSONBody

from api_gateway.controllers.common import TOTAL_COUNT, Page, error_responses, provide_page
from api_gateway.controllers.realizer import fetch, fetch_page
from api_gateway.http.dependencies import Gateway
from api_gateway.http.security import access, check_company
from contracts import credential_subjects as subjects
from contracts.base import Principal
from contracts.credentials import (
    CreateSecret,
    CreateSecretBody,
    DeleteSecret,
    ListSecretAccessEvents,
    ListSecrets,
    RotateSecret,
    RotateSecretBody,
    Secret,
    SecretAccessEvent,
)
from contracts.workspace_views import Deleted
from servicekit.access import Action, Resource

__all__ = ["SecretController"]

_PAGE = {"page": Provide(provide_page, sync_to_thread=False)}
_UNAVAILABLE = ("service_unavailable", "timeout")


async def _company_in_reach(gateway: Gateway, principal: Principal, company_id: str) -> None:
    """404 unless the principal may see ``company_id`` and it exists (the admin sees them all)."""
    check_company(principal, company_id)
    gateway.lookup(gateway.application.company, company_id)


class SecretController(Controller):
    """Encrypted company secrets (the tokens git uses) and the audit of their use."""

    path = "/api"
    tags = ["secrets"]

    @post(
        "/companies/{company_id:str}/secrets",
        operation_id="createSecret",
        opt=access(Resource.SECRET, Action.WRITE),
        responses=error_responses(
            "forbidden", "not_found", "state_conflict", "payload_too_large", *_UNAVAILABLE
        ),
    )
    async def create_secret(
        self,
        company_id: FromPath[str],
        data: JSONBody[CreateSecretBody],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Secret:
        """Store a company secret (version 1), encrypted; the answer never holds the value.

        Git uses ``GITHUB_TOKEN``, ``GH_TOKEN``, ``CLIPYARD_GITHUB_TOKEN``,
        ``PAPERCLIP_GITHUB_TOKEN`` (GitHub) and ``GITLAB_TOKEN``, ``CLIPYARD_GITLAB_TOKEN``
        (GitLab), in that order. Errors: 400 ``validation_failed`` (names the field, never shows
        the value)/``invalid_json``; 401; 403 ``forbidden`` (an agent key or run token); 404
        ``not_found`` (another company); 409 ``state_conflict`` (the name is taken); 413.
        """
        await _company_in_reach(gateway, principal, company_id)
        command = CreateSecret(
            principal=principal, company_id=company_id, name=data.name, value=data.value
        )
        return await fetch(gateway, subjects.SECRET_CREATE, command, Secret)

    @get(
        "/companies/{company_id:str}/secrets",
        operation_id="listSecrets",
        opt=access(Resource.SECRET, Action.READ),
        dependencies=_PAGE,
        response_headers=TOTAL_COUNT,
        responses=error_responses("forbidden", "not_found", *_UNAVAILABLE),
    )
    async def list_secrets(
        self,
        company_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        page: NamedDependency[Page],
    ) -> Response[Sequence[Secret]]:
        """List a company's secrets by name: names, versions and dates, never a value; the total
        is in ``X-Total-Count``.

        Errors: 400 ``validation_failed`` (``limit`` outside 1..200); 401; 403; 404.
        """
        await _company_in_reach(gateway, principal, company_id)
        query = ListSecrets(
            principal=principal, company_id=company_id, limit=page.limit, offset=page.offset
        )
        return await fetch_page(gateway, subjects.SECRET_LIST, query, Secret)

    @put(
        "/secrets/{secret_id:str}",
        operation_id="rotateSecret",
        opt=access(Resource.SECRET, Action.WRITE),
        responses=error_responses("forbidden", "not_found", "payload_too_large", *_UNAVAILABLE),
    )
    async def rotate_secret(
        self,
        secret_id: FromPath[str],
        data: JSONBody[RotateSecretBody],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Secret:
        """Rotate a secret: store its new value as the next version (runs that start from now on
        use it). The answer never holds the value.

        Errors: 400 (names the field, never shows the value); 401; 403; 404 ``not_found`` (no
        such secret, or another company's); 413.
        """
        command = RotateSecret(principal=principal, secret_id=secret_id, value=data.value)
        return await fetch(gateway, subjects.SECRET_ROTATE, command, Secret)

    @delete(
        "/secrets/{secret_id:str}",
        operation_id="deleteSecret",
        opt=access(Resource.SECRET, Action.WRITE),
        responses=error_responses("forbidden", "not_found", *_UNAVAILABLE),
    )
    async def delete_secret(
        self,
        secret_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> None:
        """Delete a secret: the data keys of every version are destroyed, so no version of it can
        be recovered. Errors: 401; 403; 404 ``not_found`` (no such secret, or another company's).
        """
        command = DeleteSecret(principal=principal, secret_id=secret_id)
        await fetch(gateway, subjects.SECRET_DELETE, command, Deleted)

    @get(
        "/companies/{company_id:str}/secret-access-events",
        operation_id="listSecretAccessEvents",
        opt=access(Resource.SECRET, Action.READ),
        dependencies=_PAGE,
        response_headers=TOTAL_COUNT,
        responses=error_responses("forbidden", "not_found", *_UNAVAILABLE),
    )
    async def list_secret_access_events(
        self,
        company_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        page: NamedDependency[Page],
    ) -> Response[Sequence[SecretAccessEvent]]:
        """List the company's credential resolutions, newest first: which secret (``null`` with
        ``source: server_env``), which provider, for which run or operation, for which remote
        host; never a value. The total is in ``X-Total-Count``.

        Errors: 400 ``validation_failed`` (``limit`` outside 1..200); 401; 403; 404.
        """
        await _company_in_reach(gateway, principal, company_id)
        query = ListSecretAccessEvents(
            principal=principal, company_id=company_id, limit=page.limit, offset=page.offset
        )
        return await fetch_page(gateway, subjects.SECRET_ACCESS_EVENTS, query, SecretAccessEvent)
