"""Which configurations a copy has had: the fingerprints of every execution workspace ``config``
and project workspace ``runtime_config`` its upstream events carried, in order.

A caller that has just read a configuration from the realizer (``RealizerFacts``) is served once
the copy has had that configuration, now or before: a copy that has moved on past it is not
behind. (A configuration changed back to an earlier one is taken as had already.)
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from contracts.workspace_config import ExecutionWorkspaceConfig, RuntimeConfig

__all__ = ["CONFIG_FIELDS", "config_fingerprint"]

CONFIG_FIELDS: Final[dict[str, tuple[str, type[msgspec.Struct]]]] = {
    "workspace": ("config", ExecutionWorkspaceConfig),
    "project_workspace": ("runtime_config", RuntimeConfig),
}
"""Copy kind -> the field holding its configuration, and the configuration's type."""


def config_fingerprint(value: Any, kind: type[msgspec.Struct]) -> bytes:
    """A configuration's canonical form: none and an empty one (every field at its default) are
    the same; keys sorted, so plain data and the struct it converts to compare equal.

    Args:
        value: The configuration, as a struct of ``kind`` or as plain data (or None).
        kind: Its type.

    Returns:
        The canonical JSON (``null`` for none or empty).
    """
    config = value if value is None or isinstance(value, kind) else msgspec.convert(value, kind)
    if config is not None and config == kind():
        config = None
    return msgspec.json.encode(msgspec.to_builtins(config), order="sorted")
