"""Which commands a runtime control request acts on (reference §4.2 steps 1 and 5-8; case 64).

Pure checks, in the reference's order: the action, the named command or runtime service, the
service index, then whether the command's kind fits the action. Every refusal is a
:class:`ControlError` carrying the error code and HTTP status to answer with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypedDict, Unpack

from runtime_supervisor.domain.config.effective import (
    EffectiveConfig,
    WorkspaceCommand,
    command_by_id,
    commands_named,
    service_by_index,
)

__all__ = [
    "ACTIONS",
    "Action",
    "ControlError",
    "ControlErrorDetails",
    "RowLike",
    "Selection",
    "select_targets",
]

Action = Literal["start", "stop", "restart", "run"]
ACTIONS: dict[str, Action] = {"start": "start", "stop": "stop", "restart": "restart", "run": "run"}
_NOT_DEFINED = "Selected runtime service is not defined in this execution workspace runtime config"
_ACTIVE = frozenset({"provisioning", "starting", "running"})


class ControlErrorDetails(TypedDict, total=False):
    """What a refused control request names (the error reply's ``details``)."""

    action: str
    serviceIndex: int | None
    runtimeServiceId: str
    workspaceCommandId: str | None
    workspaceCommandKind: str
    workspaceCommandName: str
    workspaceCommandIds: list[str]
    """The ids of the commands a name given as ``workspaceCommandId`` matches, when several."""


class ControlError(Exception):
    """A refused control request: ``code`` and ``status`` for the error reply."""

    def __init__(
        self, code: str, status: int, message: str, details: ControlErrorDetails | None = None
    ) -> None:
        super().__init__(message)
        self.code, self.status, self.message = code, status, message
        self.details: ControlErrorDetails = details or {}


class RowLike(Protocol):
    """A runtime service row (``RuntimeServiceBrief`` fits)."""

    @property
    def id(self) -> str: ...
    @property
    def service_index(self) -> int | None: ...
    @property
    def service_name(self) -> str: ...
    @property
    def command(self) -> str | None: ...
    @property
    def cwd(self) -> str | None: ...
    @property
    def status(self) -> str: ...


@dataclass(frozen=True, kw_only=True)
class Selection:
    """The targets of a control request.

    ``commands`` are the services to act on (every enabled service when none is named; the
    disabled ones are in ``skipped``) or the one job to run. ``runtime_service_id`` is the row
    named in the request or the best match of the named service.
    """

    action: Action
    kind: Literal["service", "job"]
    commands: tuple[WorkspaceCommand, ...]
    command: WorkspaceCommand | None = None
    job: WorkspaceCommand | None = None
    service_index: int | None = None
    runtime_service_id: str | None = None
    skipped: tuple[WorkspaceCommand, ...] = ()


def select_targets(
    effective: EffectiveConfig,
    action: str,
    *,
    workspace_command_id: str | None,
    service_index: int | None,
    runtime_service_id: str | None,
    service_rows: Sequence[RowLike],
) -> Selection:
    """Check a control request and name what it acts on.

    Args:
        effective: The workspace's effective runtime config.
        action: ``start``, ``stop``, ``restart`` or ``run`` (any case).
        workspace_command_id: A configured command id, if named.
        service_index: A service index, if named (the named command's own index wins).
        runtime_service_id: A runtime service row id, if named.
        service_rows: The workspace's runtime service rows.

    Returns:
        The selection.

    Raises:
        ControlError: ``not_found`` (404) for an unknown action, command or row;
            ``unprocessable`` (422) for an index out of range, a kind that does not fit the
            action, a missing job for ``run``, a start without any runtime config, or a
            disabled command.
    """
    verb = ACTIONS.get(action.strip().lower())
    if verb is None:
        message = f"Workspace command action not found: {action}; use start, stop, restart or run"
        raise _not_found(message, action=action)
    command = _named_command(effective, workspace_command_id)
    row = _named_row(service_rows, runtime_service_id)
    if command is None and row is not None and row.service_index is not None:
        service_index = row.service_index
    if command is not None and command.kind == "service":
        service_index = command.service_index
        row = row or _best_row(command, service_rows)
    if service_index is not None and command is None:
        command = service_by_index(effective, service_index)
        if command is None and (row is None or verb != "stop"):
            raise _unprocessable(_NOT_DEFINED, serviceIndex=service_index)
    if command is None and row is not None and verb in ("start", "restart"):
        raise _unprocessable(_NOT_DEFINED, runtimeServiceId=row.id)
    if command is not None and command.kind == "job" and verb != "run":
        raise _of_command(f'Workspace job "{command.name}" can only be run', command)
    if command is not None and command.kind == "service" and verb == "run":
        raise _of_command(
            f'Workspace service "{command.name}" should be started or restarted, not run',
            command,
        )
    if verb == "run" and command is None:
        raise _unprocessable("Select a workspace job to run")
    if verb in ("start", "restart") and not effective.configured:
        raise _unprocessable(
            "This workspace has no runtime config; configure services before starting them"
        )
    if command is not None and command.disabled_reason and verb != "stop":
        raise _of_command(
            f'Workspace command "{command.name}" is disabled: {command.disabled_reason}', command
        )
    return _selection(effective, verb, command, service_index, row)


def _selection(
    effective: EffectiveConfig,
    verb: Action,
    command: WorkspaceCommand | None,
    service_index: int | None,
    row: RowLike | None,
) -> Selection:
    row_id = row.id if row is not None else None
    if command is not None and command.kind == "job":
        return Selection(action=verb, kind="job", commands=(command,), command=command, job=command)
    if command is not None or row is not None:
        chosen = (command,) if command is not None else ()
        return Selection(
            action=verb,
            kind="service",
            commands=chosen,
            command=command,
            service_index=service_index,
            runtime_service_id=row_id,
        )
    usable = verb == "stop"
    return Selection(
        action=verb,
        kind="service",
        commands=tuple(s for s in effective.services if usable or not s.disabled_reason),
        skipped=() if usable else tuple(s for s in effective.services if s.disabled_reason),
    )


def _named_command(effective: EffectiveConfig, command_id: str | None) -> WorkspaceCommand | None:
    if command_id is None:
        return None
    command = command_by_id(effective, command_id)
    if command is None:
        message = "Workspace command not found for this execution workspace"
        named = [c.id for c in commands_named(effective, command_id)]
        if named:
            message = f"{message}: {command_id!r} names {len(named)} commands; use one of their ids"
            raise _not_found(message, workspaceCommandId=command_id, workspaceCommandIds=named)
        raise _not_found(message, workspaceCommandId=command_id)
    return command


def _named_row(rows: Sequence[RowLike], row_id: str | None) -> RowLike | None:
    if row_id is None:
        return None
    row = next((r for r in rows if r.id == row_id), None)
    if row is None:
        message = "Runtime service not found for this execution workspace"
        raise _not_found(message, runtimeServiceId=row_id)
    return row


def _best_row(command: WorkspaceCommand, rows: Sequence[RowLike]) -> RowLike | None:
    """The row that best matches a service (index 100; else name 4, command 4, cwd suffix 2).

    Ties go to an active row (provisioning, starting, running), then to the earliest.
    """
    best: tuple[int, int, int] | None = None
    found: RowLike | None = None
    for position, row in enumerate(rows):
        score = _score(command, row)
        key = (score, row.status in _ACTIVE, -position)
        if score > 0 and (best is None or key > best):
            best, found = key, row
    return found


def _score(command: WorkspaceCommand, row: RowLike) -> int:
    if row.service_index is not None and row.service_index == command.service_index:
        return 100
    relative = command.cwd.strip().removeprefix("./").rstrip("/")
    cwd_suffix = relative not in ("", ".") and (row.cwd or "").rstrip("/").endswith(relative)
    return (
        4 * (row.service_name == command.name)
        + 4 * (row.command == command.command)
        + 2 * cwd_suffix
    )


def _of_command(message: str, command: WorkspaceCommand) -> ControlError:
    """A 422 about ``command``, naming it."""
    return _unprocessable(
        message,
        workspaceCommandId=command.id,
        workspaceCommandKind=command.kind,
        workspaceCommandName=command.name,
    )


def _unprocessable(message: str, **details: Unpack[ControlErrorDetails]) -> ControlError:
    return ControlError("unprocessable", 422, message, details)


def _not_found(message: str, **details: Unpack[ControlErrorDetails]) -> ControlError:
    return ControlError("not_found", 404, message, details)
