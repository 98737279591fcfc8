"""What never leaves a service: the private fields of its stored events and read models.

ARCHITECTURE §2: stored events that hold secret material (ciphertext, key hashes, sessions) never
leave their service. The audit trail (``ws.qry.<service>.audit``) and the replay report
(``ws.qry.<service>.replay_verify``) are the two places where stored data is shown to operators;
both go through this module.

An application says what is private with a class attribute ``private_fields``: glob patterns
(``fnmatch``, case-insensitive) over field names, :data:`DEFAULT_PRIVATE_FIELDS` when it declares
none. It may also shape its audit rows with a method ``audit_view(domain_event) -> StoredEvent``;
private fields are dropped from what that returns all the same. Read-model dictionaries whose keys
are secrets (a name ending ``_by_hash``, the names in ``private_key_models``, or keys that look like
digests) never show their keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any, Final

__all__ = [
    "DEFAULT_PRIVATE_FIELDS",
    "REDACTED",
    "PrivacyPolicy",
    "looks_like_digest",
    "privacy_of",
]

DEFAULT_PRIVATE_FIELDS: Final[tuple[str, ...]] = (
    "*_hash",
    "hash",
    "ciphertext",
    "*_ciphertext",
    "secret",
    "*_secret*",
    "*private_key*",
    "key",
    "token",
    "*_token",
    "password",
    "*_password",
)
"""Field names whose values are secret material wherever they appear."""

REDACTED: Final = "<redacted>"
"""Shown instead of a private value or key."""

_DIGEST = re.compile(r"[0-9a-fA-F]{64,}")


def looks_like_digest(value: object) -> bool:
    """Whether ``value`` is a string shaped like a SHA-256 (or longer) hex digest.

    Args:
        value: A dictionary key or value.

    Returns:
        True for 64 or more hex digits.
    """
    return isinstance(value, str) and _DIGEST.fullmatch(value) is not None


class PrivacyPolicy:
    """Which fields and read-model keys of one application are private."""

    def __init__(
        self,
        patterns: Iterable[str] = DEFAULT_PRIVATE_FIELDS,
        private_key_models: Iterable[str] = (),
    ) -> None:
        """Build a policy.

        Args:
            patterns: Glob patterns over field names (case-insensitive).
            private_key_models: Read models whose dictionary keys are secrets.
        """
        self.patterns = tuple(pattern.lower() for pattern in patterns)
        self.private_key_models = frozenset(private_key_models)

    def is_private(self, name: object) -> bool:
        """Whether a field called ``name`` holds secret material.

        Args:
            name: A field name (other values are never private names).

        Returns:
            True when a pattern matches.
        """
        if not isinstance(name, str):
            return False
        lowered = name.lower()
        return any(fnmatchcase(lowered, pattern) for pattern in self.patterns)

    def has_private_keys(self, model: str) -> bool:
        """Whether the dictionary keys of read model ``model`` are secrets.

        Args:
            model: A read model's name.

        Returns:
            True for ``*_by_hash`` and the declared ones.
        """
        return model in self.private_key_models or model.endswith("_by_hash")

    def drop_private(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """``data`` (plain) without private fields, at any depth.

        Args:
            data: An event's fields as plain data.

        Returns:
            A copy without the private fields; keys shaped like digests are replaced.
        """
        return self._clean(dict(data), drop=True)  # type: ignore[no-any-return]

    def redact(self, value: Any) -> Any:
        """``value`` (plain) with private fields and digest-shaped keys shown as ``<redacted>``.

        Args:
            value: Plain data (dicts, lists, scalars).

        Returns:
            The redacted copy.
        """
        return self._clean(value, drop=False)

    def _clean(self, value: Any, *, drop: bool) -> Any:
        if isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            hidden = 0
            for key, item in value.items():
                if self.is_private(key):
                    if not drop:
                        out[key] = REDACTED
                    continue
                if looks_like_digest(key):
                    hidden += 1
                    key = f"{REDACTED} {hidden}"
                out[key] = self._clean(item, drop=drop)
            return out
        if isinstance(value, list | tuple):
            return [self._clean(item, drop=drop) for item in value]
        return value


def privacy_of(app: object) -> PrivacyPolicy:
    """The privacy policy an application declares (``private_fields``, ``private_key_models``).

    Args:
        app: A service application (any object: the attributes are optional).

    Returns:
        Its policy; the defaults when it declares nothing.
    """
    patterns = getattr(app, "private_fields", None)
    models = getattr(app, "private_key_models", None)
    return PrivacyPolicy(
        DEFAULT_PRIVATE_FIELDS if patterns is None else tuple(patterns),
        () if models is None else tuple(models),
    )
