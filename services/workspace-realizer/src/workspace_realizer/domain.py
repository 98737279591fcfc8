"""Domain of the workspace-realizer: aggregates, past-tense events and errors (pure, no I/O).

The skeleton owns no aggregates yet; the issues that give this service its work add them here.
"""

from __future__ import annotations

__all__ = ["WorkspaceRealizerError"]


class WorkspaceRealizerError(Exception):
    """Base of every error the workspace-realizer raises."""

    code = "state_conflict"
    status = 409
