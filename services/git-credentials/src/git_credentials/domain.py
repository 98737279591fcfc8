"""Domain of the git-credentials: aggregates, past-tense events and errors (pure, no I/O).

The skeleton owns no aggregates yet; the issues that give this service its work add them here.
"""

from __future__ import annotations

__all__ = ["GitCredentialsError"]


class GitCredentialsError(Exception):
    """Base of every error the git-credentials raises."""

    code = "state_conflict"
    status = 409
