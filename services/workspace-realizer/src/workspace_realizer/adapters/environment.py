"""Sanitized environments for the processes Clipyard spawns for workspaces (ARCHITECTURE §6).

No server settings (``CLIPYARD_*``, ``PAPERCLIP_*``), no NATS or database URLs and credentials, no
forge tokens, no PostgreSQL variables, no OTLP headers and no npm auth settings reach a provision,
teardown or cleanup command, nor a server-side git process (whose credential, if any, is added back
explicitly by its :class:`~workspace_realizer.adapters.ports.GitInvocation`).

The rule itself is :mod:`servicekit.childenv` (the supervisor uses the same one).
"""

from __future__ import annotations

from collections.abc import Mapping

from servicekit.childenv import is_sensitive_name, sanitize_env

__all__ = ["is_sensitive_name", "sanitize_env", "workspace_env"]


def workspace_env(
    added: Mapping[str, str], *, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a workspace command: the sanitized base, then ``added`` on top.

    Args:
        added: Variables meant for the command (``CLIPYARD_WORKSPACE_*`` and the like); they are
            added after sanitizing, so they are kept even when their names look like settings.
        base: The base environment (default: this process's environment).

    Returns:
        The complete environment.
    """
    env = sanitize_env(base)
    env.update(added)
    return env
