"""Who may see and touch what: the one access model of ``servicekit.access`` (ARCHITECTURE §5.1),
re-exported for the realizer's modules.

The realizer owns projects, project workspaces, issues, execution workspaces and workspace
operations, so it checks the company (another company's thing: 404 ``not_found``) and the
``OWN`` rules of agent keys and run tokens (403 ``forbidden``): an agent key reaches the issues
assigned to its agent (or bound to its run) and their workspaces; a run token its run's issue,
that issue's workspaces and the workspace its run holds. Every endpoint also applies the
kind-level rule (:meth:`Access.reach`), and project reads of agents are redacted.
"""

from __future__ import annotations

from servicekit.access import (
    Access,
    AccessDeniedError,
    Action,
    ActorKind,
    NotVisibleError,
    Reach,
    Resource,
)

__all__ = [
    "Access",
    "AccessDeniedError",
    "Action",
    "ActorKind",
    "NotVisibleError",
    "Reach",
    "Resource",
]
