"""What every endpoint class of the git-credentials shares: the running parts, running a use case
on the store's thread (as the principal, stamping its cause), the resolver's secret lookup and
audit, and who may manage secrets."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from contracts.base import Actor
from eventstore import Cause, acting
from git_credentials.domain import InvalidSecretError
from servicekit.access import Access, Action, Resource

if TYPE_CHECKING:
    from contracts.base import Principal
    from git_credentials.application import GitCredentialsApplication
    from git_credentials.settings import CredentialsSettings
    from git_credentials.usecases.resolver import ResolutionRecord
    from natsbus import BusClient
    from servicekit import ServiceRuntime

__all__ = ["MAX_PAGE", "Endpoints", "cause_of", "check_page", "manager"]

T = TypeVar("T")

MAX_PAGE = 200
"""The largest page a list answers (API.md: ``limit`` 1..200)."""


def cause_of(principal: Principal, reason: str) -> Cause:
    """The cause of a change asked for by ``principal``."""
    return Cause(
        actor=principal.actor,
        run_id=principal.run_id,
        reason=reason,
        company_id=principal.company_id,
    )


def manager(principal: Principal, action: Action = Action.WRITE) -> Access:
    """The access of ``principal`` once it may read or manage (``action``) secrets at all
    (ARCHITECTURE §5.1): the admin every company's, a board its company's; agent keys and run
    tokens none. Its ``company_id`` is the company whose secrets it reaches (None: every
    company's, the admin or Clipyard itself); ``check_company`` checks one.

    Raises:
        AccessDeniedError: An agent (agent key or run token), or a non-operator key of no
            company (403).
    """
    access = Access.of(principal)
    access.reach(Resource.SECRET, action)
    access.scope()
    return access


def check_page(limit: int, offset: int) -> None:
    """Raise ``InvalidSecretError`` (``validation_failed``) for a page out of range."""
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidSecretError(f"limit must be 1..{MAX_PAGE}, not {limit}.", field="limit")
    if offset < 0:
        raise InvalidSecretError(f"offset must be 0 or more, not {offset}.", field="offset")


class Endpoints:
    """Helpers bound to one running git-credentials (handed to every endpoint class).

    Attributes:
        runtime: The running service (``runtime.bus`` asks other services).
        app: The application: use cases such as ``secret_value`` and ``record_resolution``;
            call them on the store's thread (:meth:`store`, :meth:`write`).
        settings: The git-credentials' settings.
        bus: ``runtime.bus``.
    """

    def __init__(
        self,
        runtime: ServiceRuntime,
        app: GitCredentialsApplication,
        settings: CredentialsSettings,
    ) -> None:
        self.runtime = runtime
        self.app = app
        self.settings = settings
        self.bus: BusClient = runtime.bus

    async def store(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the store's thread."""
        result: T = await self.runtime.store(fn, *args)
        return result

    async def write(self, cause: Cause, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the store's thread, stamping ``cause`` on what it saves."""
        with acting(cause):
            result: T = await self.runtime.store(fn, *args)
        return result

    async def secret_value(self, company_id: str, name: str) -> str | None:
        """The latest value of the company's secret ``name`` (the resolver's ``SecretLookup``),
        read on the store's thread."""
        return await self.store(self.app.secret_value, company_id, name)

    async def audit(self, record: ResolutionRecord) -> None:
        """Save one resolution (the resolver's ``on_resolved``), caused by git-credentials acting
        for the resolution's run."""
        cause = Cause(
            actor=Actor(type="system", id="git-credentials"),
            run_id=record.run_id,
            reason=f"git credential resolved for {record.remote_host}",
            company_id=record.company_id,
        )
        await self.write(cause, self.app.record_resolution, record)
