"""The error catalogue: every code an ``error`` reply or an HTTP error body carries, its HTTP status
and a line telling a client what to do about it.

Everything else derives from :data:`CATALOGUE`: :data:`DEFAULT_STATUS`, the status of every error
class (through :class:`CodedError`), the bus's error replies (``natsbus.error_reply``), and the
gateway's OpenAPI descriptions. ``contracts/tests/test_error_catalogue.py`` scans the sources and
fails on a code the catalogue lacks or a status it does not allow.

A run's ``errorCode`` (``contracts.agents.RunErrorCode``) and a failed operation's ``error.code``
are fields of a record, not error answers: they are not catalogued here.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Any, ClassVar, Final

import msgspec

__all__ = [
    "CATALOGUE",
    "DEFAULT_STATUS",
    "CodedError",
    "DetailedError",
    "ErrorCode",
    "ErrorEntry",
    "describe",
    "status_of",
]


class ErrorCode(StrEnum):
    """Every error code Clipyard answers with; each has one entry in :data:`CATALOGUE`."""

    INVALID_JSON = "invalid_json"
    VALIDATION_FAILED = "validation_failed"
    BAD_REQUEST = "bad_request"
    UNAUTHENTICATED = "unauthenticated"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    MESSAGE_TOO_LARGE = "message_too_large"
    UNPROCESSABLE = "unprocessable"
    INVALID_NAME = "invalid_name"
    INVALID_ISSUE_PREFIX = "invalid_issue_prefix"
    KEY_KIND_NOT_ALLOWED = "key_kind_not_allowed"
    WORKSPACE_PATH_REQUIRED = "workspace_path_required"
    WORKSPACE_WORKTREE_REQUIRES_PROJECT = "workspace_worktree_requires_project"
    WORKSPACE_VALIDATION_FAILED = "workspace_validation_failed"
    WORKSPACE_PROVISION_FAILED = "workspace_provision_failed"
    CONFIGURATION_INCOMPLETE = "configuration_incomplete"
    LOW_TRUST_VIOLATION = "low_trust_violation"
    MANAGED_CHECKOUT_FAILED = "managed_checkout_failed"
    BRANCH_RECONCILE_REFUSED = "branch_reconcile_refused"
    SANDBOX_UNAVAILABLE = "sandbox_unavailable"
    STATE_CONFLICT = "state_conflict"
    HAS_OPEN_DEPENDENTS = "has_open_dependents"
    IDENTIFIER_TAKEN = "identifier_taken"
    CLOSE_BLOCKED = "close_blocked"
    REOPEN_PENDING = "reopen_pending"
    NOT_REOPENABLE = "not_reopenable"
    LIFECYCLE_CONFLICT = "lifecycle_conflict"
    WORKSPACE_RUNTIME_LEASE_CONFLICT = "workspace_runtime_lease_conflict"
    WORKSPACE_RUNTIME_PORT_ALLOCATION_EXHAUSTED = "workspace_runtime_port_allocation_exhausted"
    PORT_CONFLICT = "port_conflict"
    RUNTIME_SERVICE_START_FAILED = "runtime_service_start_failed"
    RUNTIME_PROVISIONING_FAILED = "runtime_provisioning_failed"
    SLOT_UNAVAILABLE = "slot_unavailable"
    RUN_FINISHED = "run_finished"
    WRONG_NODE = "wrong_node"
    INTERNAL = "internal"
    SERVICE_UNAVAILABLE = "service_unavailable"
    NODE_UNREACHABLE = "node_unreachable"
    TIMEOUT = "timeout"


class ErrorEntry(msgspec.Struct, frozen=True):
    """One code of the catalogue."""

    code: ErrorCode
    status: int
    """The HTTP status the code is answered with."""
    description: str
    """One line a client can act on (the OpenAPI document shows it beside the code)."""
    other_statuses: tuple[int, ...] = ()
    """Statuses some answer sites use instead, on purpose (each is explained in the description)."""

    @property
    def statuses(self) -> frozenset[int]:
        """Every status this code may be answered with."""
        return frozenset((self.status, *self.other_statuses))


_C = ErrorCode

_ENTRIES: Final = (
    ErrorEntry(_C.INVALID_JSON, 400, "the body is not JSON; send a JSON object"),
    ErrorEntry(
        _C.VALIDATION_FAILED,
        400,
        "the request does not match the schema (details.fields names them)",
    ),
    ErrorEntry(
        _C.BAD_REQUEST,
        400,
        "the request is malformed in a way the schema does not cover (the message says how)",
    ),
    ErrorEntry(_C.UNAUTHENTICATED, 401, "no key, an unknown or revoked key, or an expired session"),
    ErrorEntry(
        _C.FORBIDDEN,
        403,
        "this key may not do this, or the X-CSRF-Token header is missing or wrong",
    ),
    ErrorEntry(_C.NOT_FOUND, 404, "no such resource in your company"),
    ErrorEntry(_C.METHOD_NOT_ALLOWED, 405, "the path does not take this method"),
    ErrorEntry(_C.PAYLOAD_TOO_LARGE, 413, "the body is over 256 KiB"),
    ErrorEntry(
        _C.MESSAGE_TOO_LARGE,
        413,
        "the answer would be over the bus's 512 KiB message limit; ask for less (a smaller page)",
    ),
    ErrorEntry(_C.UNPROCESSABLE, 422, "well-formed but not allowed (the message says why)"),
    ErrorEntry(_C.INVALID_NAME, 422, "a name is empty or longer than 200 characters"),
    ErrorEntry(_C.INVALID_ISSUE_PREFIX, 422, "the issue prefix is not 1-10 upper-case letters A-Z"),
    ErrorEntry(_C.KEY_KIND_NOT_ALLOWED, 422, "this key may not create a key of that kind"),
    ErrorEntry(_C.WORKSPACE_PATH_REQUIRED, 422, "a project workspace needs `cwd` or `repoUrl`"),
    ErrorEntry(
        _C.WORKSPACE_WORKTREE_REQUIRES_PROJECT,
        422,
        "an isolated or operator-branch workspace needs a project workspace to make its "
        "worktree from",
    ),
    ErrorEntry(
        _C.WORKSPACE_VALIDATION_FAILED, 422, "the workspace cannot be realized as configured"
    ),
    ErrorEntry(
        _C.WORKSPACE_PROVISION_FAILED,
        422,
        "the provision command failed (the message has its output); the next realize runs it again",
    ),
    ErrorEntry(
        _C.CONFIGURATION_INCOMPLETE,
        422,
        "the project or workspace config cannot give what was asked",
    ),
    ErrorEntry(_C.LOW_TRUST_VIOLATION, 422, "an untrusted agent needs an isolated workspace"),
    ErrorEntry(_C.MANAGED_CHECKOUT_FAILED, 422, "the managed clone of the repository failed"),
    ErrorEntry(
        _C.BRANCH_RECONCILE_REFUSED,
        422,
        "the branch cannot be reconciled now (the message says why)",
    ),
    ErrorEntry(
        _C.SANDBOX_UNAVAILABLE,
        422,
        "an untrusted agent cannot be contained on this node; trust the agent or fix the node",
    ),
    ErrorEntry(_C.STATE_CONFLICT, 409, "conflicts with the current state"),
    ErrorEntry(
        _C.HAS_OPEN_DEPENDENTS,
        409,
        "something open still depends on it (open workspaces, children)",
    ),
    ErrorEntry(_C.IDENTIFIER_TAKEN, 409, "another issue of the company has that identifier"),
    ErrorEntry(
        _C.CLOSE_BLOCKED,
        409,
        "archive refused: close readiness is blocked (details name the reasons)",
    ),
    ErrorEntry(
        _C.REOPEN_PENDING,
        409,
        "the workspace was just reopened and cannot be archived yet",
    ),
    ErrorEntry(_C.NOT_REOPENABLE, 409, "the workspace is open, or cannot be rebuilt"),
    ErrorEntry(
        _C.LIFECYCLE_CONFLICT,
        409,
        "the workspace was archived or reopened meanwhile; read it again",
    ),
    ErrorEntry(
        _C.WORKSPACE_RUNTIME_LEASE_CONFLICT,
        409,
        "another issue, run or agent holds the workspace's runtime-control lease "
        "(details name the owner)",
    ),
    ErrorEntry(
        _C.WORKSPACE_RUNTIME_PORT_ALLOCATION_EXHAUSTED,
        409,
        "no free port for the service; retry the start or configure a different port",
    ),
    ErrorEntry(_C.PORT_CONFLICT, 409, "the service's fixed port is held (details name the owner)"),
    ErrorEntry(
        _C.RUNTIME_SERVICE_START_FAILED,
        409,
        "the service did not become ready (the message has the reason and its last output)",
    ),
    ErrorEntry(
        _C.RUNTIME_PROVISIONING_FAILED,
        409,
        "the workspace's runtime-provision command failed (details name the operation)",
    ),
    ErrorEntry(_C.SLOT_UNAVAILABLE, 409, "every local adapter slot is in use; try again shortly"),
    ErrorEntry(_C.RUN_FINISHED, 409, "the run has finished already"),
    ErrorEntry(
        _C.WRONG_NODE,
        409,
        "the record lives on another worker node than the one asked (details.nodeId names it); "
        "send it there",
    ),
    ErrorEntry(
        _C.INTERNAL,
        500,
        "an unexpected failure, logged by the service that had it (502: a service answered "
        "something the asker cannot read); retry, or report it",
        other_statuses=(502,),
    ),
    ErrorEntry(
        _C.SERVICE_UNAVAILABLE,
        503,
        "the service that owns this is not running or not ready yet; retry shortly",
    ),
    ErrorEntry(
        _C.NODE_UNREACHABLE,
        503,
        "the worker node holding this does not answer (details.nodeId names it); nothing was "
        "done: retry when it is back, or drain it",
    ),
    ErrorEntry(
        _C.TIMEOUT,
        504,
        "a service did not answer in time; the request may still complete, so look before retrying",
    ),
)

CATALOGUE: Final[Mapping[ErrorCode, ErrorEntry]] = MappingProxyType(
    {entry.code: entry for entry in _ENTRIES}
)
"""Every error code -> its entry, in the order above (request, auth, rules, conflicts, failures)."""

if len(CATALOGUE) != len(_ENTRIES) or set(CATALOGUE) != set(ErrorCode):  # pragma: no cover
    raise RuntimeError("contracts.errors: every ErrorCode needs exactly one catalogue entry")

DEFAULT_STATUS: Final[Mapping[ErrorCode, int]] = MappingProxyType(
    {code: entry.status for code, entry in CATALOGUE.items()}
)
"""Every error code -> its HTTP status (the catalogue's ``status``)."""


def status_of(code: ErrorCode | str, default: int = 500) -> int:
    """The HTTP status of an error code.

    Args:
        code: A code, as an :class:`ErrorCode` or its string.
        default: What a code the catalogue does not know answers with.

    Returns:
        The catalogue's status for ``code``, else ``default``.
    """
    try:
        return CATALOGUE[ErrorCode(code)].status
    except ValueError:
        return default


def describe(code: ErrorCode | str) -> str:
    """The catalogue's one-line description of an error code.

    Raises:
        ValueError: ``code`` is not in the catalogue.
    """
    return CATALOGUE[ErrorCode(code)].description


class CodedError(Exception):
    """An exception that is answered as one catalogued code.

    A subclass names its ``code`` (an :class:`ErrorCode`); its ``status`` is then the catalogue's,
    set when the class is made. A class that writes a ``status`` of its own must use one the
    catalogue allows for the code; an unknown code or a disallowed status fails at import.
    ``natsbus.default_error_mapper`` and the gateway read ``code``, ``status`` and (where the
    class sets them) ``details``.
    """

    code: ClassVar[str] = ErrorCode.INTERNAL.value
    status: ClassVar[int] = 500

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        entry = CATALOGUE[ErrorCode(cls.code)]
        own = cls.__dict__.get("status")
        if own is not None and own not in entry.statuses:
            raise TypeError(
                f"{cls.__qualname__}: status {own} is not one the catalogue allows for "
                f"{entry.code.value!r} ({sorted(entry.statuses)})"
            )
        cls.code = entry.code.value
        cls.status = entry.status if own is None else own


class DetailedError(CodedError):
    """A coded error that names what was wrong: the keyword arguments it is raised with become
    the error reply's ``details`` (``NotFoundError("no such issue", issueId=...)``)."""

    details: dict[str, object]

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details = details
