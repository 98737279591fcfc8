"""Companies: create one, change its host access, read one or a page of them."""

from __future__ import annotations

from uuid import UUID

from api_gateway.domain import Company, CompanyNotFoundError
from api_gateway.readmodels import CompanyRecord, GatewayReadModels

__all__ = ["CompanyUseCases"]


class CompanyUseCases(GatewayReadModels):
    """The company commands and queries (mixed into the gateway's application)."""

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

    def company(self, company_id: str) -> CompanyRecord:
        """The company with this id, or ``CompanyNotFoundError``."""
        if (record := self.companies.get(company_id)) is None:
            raise CompanyNotFoundError(f"There is no company {company_id}.", companyId=company_id)
        return record

    def list_companies(self, limit: int, offset: int) -> tuple[list[CompanyRecord], int]:
        """A page of companies, oldest first, and the total."""
        rows = sorted(self.companies.values(), key=lambda c: (c.created_at, c.id))
        return rows[offset : offset + limit], len(rows)

    def check_store(self) -> int:
        """Read the store's last notification id (the health check's proof the store answers)."""
        return self.last_notification_id()
