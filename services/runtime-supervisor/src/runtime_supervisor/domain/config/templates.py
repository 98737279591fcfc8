"""``{{...}}`` templates of runtime commands: cwd, env values, readiness URLs (reference §6.1).

Known placeholders: ``workspace.cwd``, ``workspace.branchName``, ``workspace.worktreePath``,
``workspace.repoUrl``, ``workspace.repoRef``, ``issue.id``, ``issue.identifier``, ``issue.title``,
``agent.id``, ``agent.name`` and ``port``, plus any name the caller supplies a value for (for
example ``workspace.env.NAME``). A known placeholder without a value renders empty (a workspace
without an issue has no ``issue.identifier``); an unknown one is an error naming it.
"""

from __future__ import annotations

import os.path
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from contracts.errors import CodedError, ErrorCode

__all__ = [
    "KNOWN_PLACEHOLDERS",
    "CwdOutsideWorkspaceError",
    "TemplateError",
    "render",
    "resolve_cwd",
]

KNOWN_PLACEHOLDERS: Final = frozenset(
    {
        "workspace.cwd",
        "workspace.branchName",
        "workspace.worktreePath",
        "workspace.repoUrl",
        "workspace.repoRef",
        "issue.id",
        "issue.identifier",
        "issue.title",
        "agent.id",
        "agent.name",
        "port",
    }
)

_PLACEHOLDER: Final = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")


class TemplateError(CodedError, ValueError):
    """A template that cannot be rendered (422 ``unprocessable``)."""

    code = ErrorCode.UNPROCESSABLE


class CwdOutsideWorkspaceError(TemplateError):
    """A command's cwd that leads outside the workspace directory."""


def render(template: str, values: Mapping[str, str]) -> str:
    """Replace every ``{{name}}`` (spaces inside the braces allowed) by its value.

    Args:
        template: The text to render.
        values: Values by placeholder name (``"workspace.cwd"``, ``"port"``, ...).

    Returns:
        The rendered text; known placeholders without a value render as an empty string.

    Raises:
        TemplateError: A placeholder neither known nor given a value; the message names it.
    """
    unknown = [
        name
        for name in _PLACEHOLDER.findall(template)
        if name not in values and name not in KNOWN_PLACEHOLDERS
    ]
    if unknown:
        known = ", ".join(f"{{{{{n}}}}}" for n in sorted(KNOWN_PLACEHOLDERS | set(values)))
        raise TemplateError(
            f"Unknown template placeholder {{{{{unknown[0]}}}}} in {template!r}; known: {known}"
        )
    return _PLACEHOLDER.sub(lambda match: str(values.get(match.group(1), "")), template)


def resolve_cwd(
    workspace_cwd: str | Path, cwd_template: str | None, values: Mapping[str, str]
) -> Path:
    """The absolute directory a command runs in: its rendered cwd, relative to the workspace.

    The path is normalized lexically (``..`` folded, symlinks not followed: no I/O here).

    Args:
        workspace_cwd: The workspace's absolute directory.
        cwd_template: The command's ``cwd`` template (default ``.``); may be absolute.
        values: Template values (see :func:`render`).

    Returns:
        The directory, inside ``workspace_cwd`` or equal to it.

    Raises:
        TemplateError: The template names an unknown placeholder.
        CwdOutsideWorkspaceError: The directory lies outside the workspace.
    """
    root = Path(os.path.normpath(workspace_cwd))
    if not root.is_absolute():
        raise CwdOutsideWorkspaceError(
            f"The workspace directory {str(workspace_cwd)!r} is not absolute"
        )
    rendered = render(cwd_template or ".", values).strip() or "."
    resolved = Path(os.path.normpath(root / rendered))
    if resolved != root and root not in resolved.parents:
        raise CwdOutsideWorkspaceError(
            f"The command's cwd {cwd_template!r} resolves to {str(resolved)!r}, outside the "
            f"workspace directory {str(root)!r}; use a path inside the workspace"
        )
    return resolved
