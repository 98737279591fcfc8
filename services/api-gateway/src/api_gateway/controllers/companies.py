"""``/api/companies``: create and list (admin), read one (admin or the company's own key), and
set what of the host a company may use (admin)."""

from __future__ import annotations

from collections.abc import Sequence

from litestar import Controller, Response, get, post, put
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, JSONBody

from api_gateway.controllers.common import (
    TOTAL_COUNT,
    Page,
    error_responses,
    listing,
    provide_page,
)
from api_gateway.http.dependencies import Gateway
from api_gateway.http.security import access, admin_only, check_company
from api_gateway.readmodels import CompanyRecord
from contracts.base import Principal
from contracts.http import Company, CreateCompany, SetCompanyHostAccess
from servicekit.access import Action, Resource

__all__ = ["CompanyController", "to_company"]


def to_company(record: CompanyRecord) -> Company:
    """The API's view of a company."""
    return Company(
        id=record.id,
        name=record.name,
        issue_prefix=record.issue_prefix,
        created_at=record.created_at,
        updated_at=record.updated_at,
        host_trusted=record.host_trusted,
        allowed_roots=list(record.allowed_roots),
    )


class CompanyController(Controller):
    """Companies: the tenants everything else belongs to."""

    path = "/api/companies"
    tags = ["companies"]

    @post(
        "/",
        operation_id="createCompany",
        opt=access(Resource.COMPANY, Action.WRITE),
        responses=error_responses("forbidden", "invalid_name", "invalid_issue_prefix"),
    )
    async def create_company(
        self,
        data: JSONBody[CreateCompany],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Company:
        """Create a company (admin key). ``issuePrefix`` defaults to up to four letters of the name.

        Errors: 400 ``validation_failed``/``invalid_json``; 401 ``unauthenticated``; 403
        ``forbidden`` (not the admin key); 422 ``invalid_name``, ``invalid_issue_prefix``.
        """
        app = gateway.application
        record = await gateway.act(principal, app.create_company, data.name, data.issue_prefix)
        return to_company(record)

    @get(
        "/",
        operation_id="listCompanies",
        opt=access(Resource.COMPANY, Action.READ),
        guards=[admin_only],
        dependencies={"page": Provide(provide_page, sync_to_thread=False)},
        response_headers=TOTAL_COUNT,
        responses=error_responses("forbidden"),
    )
    async def list_companies(
        self, gateway: NamedDependency[Gateway], page: NamedDependency[Page]
    ) -> Response[Sequence[Company]]:
        """List companies, oldest first (admin key), with the total in ``X-Total-Count``.

        Errors: 400 ``validation_failed`` (``limit`` outside 1..200, ``offset`` below 0); 401
        ``unauthenticated``; 403 ``forbidden`` (not the admin key).
        """
        app = gateway.application
        rows, total = await gateway.query(app.list_companies, page.limit, page.offset)
        return listing([to_company(row) for row in rows], total)

    @get(
        "/{company_id:str}",
        operation_id="getCompany",
        opt=access(Resource.COMPANY, Action.READ),
        responses=error_responses("not_found"),
    )
    async def get_company(
        self,
        company_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Company:
        """Read one company (the admin key, or a key of that company).

        Errors: 401 ``unauthenticated``; 404 ``not_found`` (no such company, or another company's).
        """
        check_company(principal, company_id)
        return to_company(gateway.lookup(gateway.application.company, company_id))

    @put(
        "/{company_id:str}/host-access",
        operation_id="setCompanyHostAccess",
        opt=access(Resource.COMPANY, Action.WRITE),
        guards=[admin_only],
        responses=error_responses("forbidden", "not_found", "unprocessable"),
    )
    async def set_host_access(
        self,
        company_id: FromPath[str],
        data: JSONBody[SetCompanyHostAccess],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Company:
        """Set what of this host the company may use (admin key; docs/design/isolation.md).

        ``allowedRoots``: folders under which its project workspaces may name a ``cwd``, a local
        ``repoUrl`` or an absolute ``worktreeParentDir`` (a board key is refused any other host
        path). ``hostTrusted``: any folder of the host (single-tenant self-hosting). The whole
        setting is replaced; ``{}`` takes every grant back.

        Errors: 400 ``validation_failed``; 401 ``unauthenticated``; 403 ``forbidden`` (not the
        admin key); 404 ``not_found``; 422 ``unprocessable`` (a root that is no folder below /).
        """
        app = gateway.application
        record = await gateway.act(
            principal, app.set_host_access, company_id, data.host_trusted, list(data.allowed_roots)
        )
        return to_company(record)
