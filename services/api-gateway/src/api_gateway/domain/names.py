"""Names of companies and keys, and the issue prefix derived from a company's name. Pure."""

from __future__ import annotations

from typing import Final

from api_gateway.domain.errors import InvalidNameError

__all__ = ["MAX_NAME_LENGTH", "check_name", "derive_issue_prefix"]

MAX_NAME_LENGTH: Final = 200


def derive_issue_prefix(name: str) -> str:
    """Up to four letters of ``name``, upper case (``Acme Corp`` -> ``ACME``).

    Args:
        name: The company name.

    Returns:
        The prefix, empty when the name has no ASCII letter.
    """
    return "".join(ch for ch in name if ch.isascii() and ch.isalpha())[:4].upper()


def check_name(name: str, *, what: str) -> str:
    """Return ``name`` stripped, or raise ``InvalidNameError`` when it is empty or too long."""
    stripped = name.strip()
    if not stripped:
        raise InvalidNameError(f"The {what} name is empty; give a name.", field="name")
    if len(stripped) > MAX_NAME_LENGTH:
        raise InvalidNameError(
            f"The {what} name is {len(stripped)} characters long; use at most {MAX_NAME_LENGTH}.",
            field="name",
        )
    return stripped
