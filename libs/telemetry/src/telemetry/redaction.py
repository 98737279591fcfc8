"""Redaction of secrets in log records and span exports.

Two rules, applied everywhere a value leaves the process as text:

* a field whose *name* looks secret (contains ``key``, ``token``, ``password``, ``secret``,
  ``authorization``, ``credential``, ``cookie`` or ``dsn``) has its value replaced by ``"***"``;
* in any free text, URL userinfo and query strings are replaced
  (``https://user:pw@host/x?token=y`` becomes ``https://***@host/x?***``), ``Bearer``/``Basic``
  credentials are hidden, and ``name=value`` pairs with a secret-looking name keep only the name.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "REDACTED",
    "is_secret_name",
    "redact_attributes",
    "redact_fields",
    "redact_value",
    "scrub_url_secrets",
]

REDACTED = "***"

_SECRET_NAME = re.compile(
    r"key|token|passw(or)?d|pwd|secret|authori[sz]ation|credential|cookie|dsn",
    re.IGNORECASE,
)

# scheme://[userinfo@]authority-and-path[?query][#fragment]; quotes and angle brackets end a URL.
_URL = re.compile(
    r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)"
    r"(?P<userinfo>[^\s/?#@'\"<>]+(?::[^\s@'\"<>]*)?@)?"
    r"(?P<rest>[^\s?#'\"<>]*)"
    r"(?P<query>\?[^\s#'\"<>]*)?"
    r"(?P<fragment>#[^\s'\"<>]*)?"
)

_AUTH_SCHEME = re.compile(r"\b(?P<scheme>Bearer|Basic)\s+[A-Za-z0-9._~+/=\-]+", re.IGNORECASE)

# name=value or name: value, where the name looks secret (the value may be quoted).
_SECRET_PAIR = re.compile(
    r"(?P<name>\b[\w.\-]*(?:key|token|passw(?:or)?d|pwd|secret|credential|dsn)[\w.\-]*[\"']?)"
    r"(?P<sep>\s*[=:]\s*)"
    r"(?P<value>\"[^\"]*\"|'[^']*'|[^\s,;&'\"]+)",
    re.IGNORECASE,
)


# What one of the three patterns above needs somewhere in a text, lowercased: a text without any
# of it has nothing to scrub (most span attributes: routes, paths, ids). Plain substring searches
# of the lowercased text tell twenty times sooner than one case-blind regex alternation.
_SECRET_HINTS = (
    "://",
    "bearer",
    "basic",
    "key",
    "token",
    "passw",
    "pwd",
    "secret",
    "credential",
    "dsn",
)


def _may_hold_secrets(text: str) -> bool:
    if not text.isascii():  # case-blind matching folds more than lower() (U+017F is "s")
        return True
    lowered = text.lower()
    return any(hint in lowered for hint in _SECRET_HINTS)


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Tell whether a field name looks like it holds a secret.

    Args:
        name: A field, attribute or header name.

    Returns:
        True when the name contains one of the secret-looking words (names repeat: attribute
        and field names are few, so answers are remembered).
    """
    return _SECRET_NAME.search(name) is not None


def _scrub_url(match: re.Match[str]) -> str:
    scheme = match.group("scheme")
    userinfo = match.group("userinfo")
    rest = match.group("rest")
    query = match.group("query")
    fragment = match.group("fragment")
    return "".join(
        (
            scheme,
            f"{REDACTED}@" if userinfo else "",
            rest,
            f"?{REDACTED}" if query else "",
            f"#{REDACTED}" if fragment and len(fragment) > 1 else (fragment or ""),
        )
    )


def _scrub_pair(match: re.Match[str]) -> str:
    value = match.group("value")
    quote = value[0] if value[0] in "\"'" else ""
    if value.strip("\"'") == REDACTED:
        return match.group(0)
    return f"{match.group('name')}{match.group('sep')}{quote}{REDACTED}{quote}"


def scrub_url_secrets(text: str) -> str:
    """Hide credentials found in free text.

    URL userinfo, query strings and fragments are replaced
    (``https://user:pw@host/x?token=y`` becomes ``https://***@host/x?***``), as are
    ``Bearer``/``Basic`` credentials and the values of ``name=value`` pairs whose name looks
    secret (``password=hunter2`` becomes ``password=***``).

    Args:
        text: Any text (a log message, an exception text, a command line).

    Returns:
        The text with the secrets replaced by ``***``.
    """
    if not text or not _may_hold_secrets(text):
        return text
    text = _URL.sub(_scrub_url, text)
    text = _AUTH_SCHEME.sub(lambda m: f"{m.group('scheme')} {REDACTED}", text)
    return _SECRET_PAIR.sub(_scrub_pair, text)


def redact_value(name: str, value: Any) -> Any:
    """Redact one named value.

    Args:
        name: The field name; a secret-looking name hides the whole value.
        value: The value; strings are scrubbed, mappings and sequences are walked.

    Returns:
        A redacted copy (the input is not modified).
    """
    if is_secret_name(name) and value is not None and value != "":
        return REDACTED
    if isinstance(value, str):
        return scrub_url_secrets(value)
    if isinstance(value, Mapping):
        return redact_fields(value)
    if isinstance(value, list | tuple):
        return [redact_value("", item) for item in value]
    return value


def redact_fields(fields: Mapping[Any, Any]) -> dict[str, object]:
    """Redact every value of a mapping by its key.

    Args:
        fields: Field names to values.

    Returns:
        A new dict with string keys and redacted values.
    """
    return {str(key): redact_value(str(key), value) for key, value in fields.items()}


def redact_attributes(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    """Redact span (or span event, link) attributes, keeping them valid OpenTelemetry values.

    A secret-looking name hides the whole value (as ``"***"``); strings, and the strings of a
    sequence, are scrubbed; other values pass unchanged. Sequences stay tuples.

    Args:
        attributes: Attribute names to values (None: none).

    Returns:
        A new dict.
    """
    if not attributes:
        return {}
    redacted: dict[str, Any] = {}
    for name, value in attributes.items():
        if is_secret_name(name) and value is not None and value != "":
            redacted[name] = REDACTED
        elif isinstance(value, str):
            redacted[name] = scrub_url_secrets(value)
        elif isinstance(value, list | tuple):
            redacted[name] = tuple(
                scrub_url_secrets(item) if isinstance(item, str) else item for item in value
            )
        else:
            redacted[name] = value
    return redacted
