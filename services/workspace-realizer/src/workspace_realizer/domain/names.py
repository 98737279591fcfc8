"""Name checks shared by the realizer's aggregates."""

from __future__ import annotations

from typing import Final

from workspace_realizer.domain.errors import InvalidInputError

__all__ = ["MAX_NAME_LENGTH", "check_name"]

MAX_NAME_LENGTH: Final = 200


def check_name(name: str, *, what: str, field: str = "name") -> str:
    """``name`` stripped, or ``InvalidInputError`` when it is empty or too long."""
    stripped = name.strip()
    if not stripped:
        raise InvalidInputError(f"The {what} {field} is empty; give one.", field=field)
    if len(stripped) > MAX_NAME_LENGTH:
        raise InvalidInputError(
            f"The {what} {field} is {len(stripped)} characters long; use at most "
            f"{MAX_NAME_LENGTH}.",
            field=field,
        )
    return stripped
