"""The contained run of a company's one-shot command on behalf of another service (owner:
runtime-supervisor; asked by the workspace-realizer for provision, teardown and cleanup
commands). docs/design/isolation.md explains what the command sees.

Only Clipyard itself (a ``system`` principal) may ask: the realizer names the company whose
identity the command runs as, the folder bound read-write (``root``; ``cwd`` lies inside it) and
whether Clipyard made that folder (``owned``: it is then handed to the identity).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec

from contracts.base import Command, Struct
from contracts.subjects import command

__all__ = ["ContainedCommandResult", "RunContainedCommand", "contained_run"]


def contained_run(node: str) -> str:
    """``ws.cmd.contained.run.<node>``: run a command contained on that node."""
    return command("contained", "run", node)


class RunContainedCommand(Command, tag="contained.run.v1", frozen=True, kw_only=True):
    """Run ``command`` with ``/bin/sh -c`` as ``companyId``'s identity, in ``cwd`` inside
    ``root``, with ``env`` (already sanitized by the caller), for at most ``timeoutSec``."""

    company_id: str
    command: str
    cwd: str
    root: str
    env: dict[str, str] = msgspec.field(default_factory=dict)
    timeout_sec: Annotated[float, msgspec.Meta(gt=0, le=24 * 3600)] = 600.0
    owned: bool = False
    label: Annotated[str, msgspec.Meta(pattern="^[a-z][a-z_]{0,31}$")] = "command"
    """What the command is (``provision``, ``teardown``, ...), for the unit's name and logs."""
    workspace_id: str | None = None
    """The execution workspace it runs for (its egress is recorded on that workspace)."""
    project_id: str | None = None
    """The project whose egress allowlist holds for it (none: nothing outside is reachable)."""
    output_ref: (
        Annotated[
            str,
            msgspec.Meta(pattern="^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"),
        ]
        | None
    ) = None
    """The workspace operation the command is (a UUID): its output is appended, as it comes, to
    ``$CLIPYARD_HOME/operations/<outputRef>/{stdout,stderr}`` of the node, URL secrets hidden, so
    it can be read while the command runs (the answer still carries the capped tails)."""


class ContainedCommandResult(Struct, frozen=True, kw_only=True):
    """How it ended: ``exitCode`` or ``signal`` (both None if it never started: ``error``), the
    last 256 KiB of each stream, and the limit it hit (``limit``)."""

    exit_code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    truncated: bool
    timed_out: bool
    started_at: datetime
    finished_at: datetime
    limit: str | None = None
    error: str | None = None
