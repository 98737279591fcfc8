"""API keys: ``/api/companies/{companyId}/api-keys`` (create, list) and ``/api/api-keys/{keyId}``."""

from __future__ import annotations

from collections.abc import Sequence

from litestar import Controller, Response, delete, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, JSONBody

from api_gateway.controllers.agents import confirm_agent
from api_gateway.controllers.common import (
    TOTAL_COUNT,
    Page,
    error_responses,
    listing,
    provide_page,
)
from api_gateway.domain import ApiKeyNotFoundError, ForbiddenError
from api_gateway.http.dependencies import Gateway
from api_gateway.http.security import access, check_company
from api_gateway.readmodels import KeyRecord
from contracts.base import Principal
from contracts.http import ApiKey, ApiKeyIssued, CreateApiKey
from servicekit.access import Access, Action, Resource

__all__ = ["ApiKeyController", "to_api_key"]


def to_api_key(record: KeyRecord) -> ApiKey:
    """The API's view of a key: never the key, never its hash."""
    return ApiKey(
        id=record.id,
        company_id=record.company_id,
        name=record.name,
        kind=record.kind,  # type: ignore[arg-type]
        agent_id=record.agent_id,
        created_at=record.created_at,
        updated_at=record.updated_at,
        revoked_at=record.revoked_at,
    )


class ApiKeyController(Controller):
    """Board and agent keys of a company (hashed at rest; the clear key is shown once)."""

    path = "/api"
    tags = ["api-keys"]

    @post(
        "/companies/{company_id:str}/api-keys",
        operation_id="createApiKey",
        opt=access(Resource.API_KEY, Action.WRITE),
        responses=error_responses(
            "forbidden",
            "not_found",
            "invalid_name",
            "key_kind_not_allowed",
            "service_unavailable",
            "timeout",
        ),
    )
    async def create_api_key(
        self,
        company_id: FromPath[str],
        data: JSONBody[CreateApiKey],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> ApiKeyIssued:
        """Create a key; the answer holds the clear key, shown this once.

        The admin key creates board keys; a board key creates board keys and agent keys
        (``{kind: "agent", agentId}``): the heartbeat controller is asked first that the agent
        exists in the company. Errors: 400 ``validation_failed``/``invalid_json``; 401
        ``unauthenticated``; 403 ``forbidden`` (an agent key or run token; an agent key asked of
        the admin key); 404 ``not_found``
        (the company, or an ``agentId`` the controller does not know in this company, or one
        whose delete the gateway has heard: ``details.agentId`` names it); 422 ``invalid_name``, ``key_kind_not_allowed`` (``agentId``
        missing for an agent key or given for a board key);
        503/504 the controller did not answer.
        """
        check_company(principal, company_id)
        if principal.actor.type == "admin" and data.kind != "board":
            raise ForbiddenError(
                "The admin key creates board keys only; create agent keys with a board key.",
                field="kind",
            )
        if data.kind == "agent" and data.agent_id:
            await confirm_agent(gateway, principal, data.agent_id)
        app = gateway.application
        record, key = await gateway.act(
            principal, app.create_api_key, company_id, data.name, data.kind, data.agent_id
        )
        return ApiKeyIssued(
            id=record.id,
            name=record.name,
            kind=data.kind,
            agent_id=record.agent_id,
            key=key,
            created_at=record.created_at,
        )

    @get(
        "/companies/{company_id:str}/api-keys",
        operation_id="listApiKeys",
        opt=access(Resource.API_KEY, Action.READ),
        dependencies={"page": Provide(provide_page, sync_to_thread=False)},
        response_headers=TOTAL_COUNT,
        responses=error_responses("forbidden", "not_found"),
    )
    async def list_api_keys(
        self,
        company_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        page: NamedDependency[Page],
    ) -> Response[Sequence[ApiKey]]:
        """List a company's keys (revoked ones too, with ``revokedAt``), without key material.

        Errors: 400 ``validation_failed`` (``limit``/``offset``); 401 ``unauthenticated``; 403
        ``forbidden`` (an agent key); 404 ``not_found``.
        """
        check_company(principal, company_id)
        app = gateway.application
        rows, total = await gateway.query(app.list_api_keys, company_id, page.limit, page.offset)
        return listing([to_api_key(row) for row in rows], total)

    @delete(
        "/api-keys/{key_id:str}",
        operation_id="deleteApiKey",
        opt=access(Resource.API_KEY, Action.WRITE),
        responses=error_responses("forbidden", "not_found"),
    )
    async def delete_api_key(
        self,
        key_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> None:
        """Revoke a key: it stops working at once. Revoking a revoked key changes nothing.

        Errors: 401 ``unauthenticated``; 403 ``forbidden`` (an agent key); 404 ``not_found`` (no
        such key, or another company's).
        """
        record = await gateway.query(gateway.application.api_key, key_id)
        if not Access.of(principal).sees_company(record.company_id):
            raise ApiKeyNotFoundError(f"There is no API key {key_id}.", keyId=key_id)
        await gateway.act(principal, gateway.application.revoke_api_key, key_id)
