"""Checking an agent's ``adapterConfig`` against its ``adapterType`` (API.md "Agents, wakes, runs").

A bad config is refused with 400 ``validation_failed``: ``details.field`` names the field
(``adapterConfig.command``) and the message says what was wrong and what to send instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import msgspec

from contracts.agents import AdapterType, HttpAdapterConfig, ProcessAdapterConfig
from heartbeat_controller.domain.errors import ValidationError

if TYPE_CHECKING:
    from heartbeat_controller.domain.records import JsonObject

__all__ = [
    "LOADER_ENV_NAMES",
    "LOADER_ENV_PREFIXES",
    "RESERVED_ENV_PREFIXES",
    "config_as_dict",
    "parse_adapter_config",
    "shape_hint",
    "validate_adapter_config",
]

RESERVED_ENV_PREFIXES: Final = ("CLIPYARD_", "PAPERCLIP_")
"""Variables Clipyard sets for each run (the run token among them): never from the config."""
LOADER_ENV_PREFIXES: Final = ("LD_", "MALLOC_")
"""The dynamic loader's variables (``LD_PRELOAD``, ``LD_LIBRARY_PATH``, ``LD_AUDIT``, ...) and
glibc's allocator knobs: they change what code runs in the adapter, so never from the config."""
LOADER_ENV_NAMES: Final = frozenset(
    {
        "GCONV_PATH",
        "GETCONF_DIR",
        "GLIBC_TUNABLES",
        "HOSTALIASES",
        "LOCPATH",
        "NIS_PATH",
        "NLSPATH",
        "RESOLV_HOST_CONF",
    }
)
"""Other glibc variables that load files or code chosen by whoever sets them (glibc's own list
of variables it ignores for setuid programs, the ``LD_*``/``MALLOC_*`` ones above aside)."""

_SHAPES: Final[dict[str, str]] = {
    "process": (
        'Send adapterConfig as {"command": ["program", "arg", ...], "env"?: {"NAME": "value"}, '
        '"timeoutSec"?: 1-604800, "limits"?: {"cpuSeconds"?, "fileSizeMb"?, "openFiles"?, '
        '"memoryMb"?}}.'
    ),
    "http": (
        'Send adapterConfig as {"url": "https://host/path", "timeoutSec"?: 1-604800, '
        '"headers"?: {"Name": "value"}}.'
    ),
}
_TYPES: Final[dict[str, type[ProcessAdapterConfig] | type[HttpAdapterConfig]]] = {
    "process": ProcessAdapterConfig,
    "http": HttpAdapterConfig,
}
_PATH = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_NAMED = re.compile(r"field `(?P<name>[^`]+)`")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def shape_hint(adapter_type: str) -> str:
    """What an ``adapterConfig`` of ``adapter_type`` looks like, as a sentence."""
    return _SHAPES.get(adapter_type, "adapterType is process or http.")


def _fail(adapter_type: str, field: str, problem: str) -> ValidationError:
    where = f"adapterConfig.{field}" if field else "adapterConfig"
    return ValidationError(
        f"{where}: {problem}. {_SHAPES[adapter_type]}", field=where, adapterType=adapter_type
    )


def _field_of(message: str) -> tuple[str, str]:
    """The dotted field path and the problem of a ``msgspec.ValidationError`` message."""
    path = ""
    found = _PATH.search(message)
    if found is not None:
        path = found.group("path").replace("[...]", "").lstrip(".")
        message = message[: found.start()]
    named = _NAMED.search(message)
    if named is not None and ("missing" in message or "unknown" in message):
        path = f"{path}.{named.group('name')}" if path else named.group("name")
    problem = message.replace("`", "").rstrip(".")
    return path, problem[:1].lower() + problem[1:]


def validate_adapter_config(
    adapter_type: AdapterType, raw: Mapping[str, Any] | Any
) -> ProcessAdapterConfig | HttpAdapterConfig:
    """The typed config of ``raw`` (camelCase keys, as sent) for ``adapter_type``.

    Args:
        adapter_type: ``process`` or ``http``.
        raw: The ``adapterConfig`` object of the request.

    Returns:
        The checked config.

    Raises:
        ValidationError: 400 ``validation_failed``; ``details.field`` is ``adapterConfig.<field>``.
    """
    if adapter_type not in _TYPES:
        raise ValidationError(
            f"adapterType {adapter_type!r} is not one of process, http.", field="adapterType"
        )
    if not isinstance(raw, Mapping):
        raise _fail(adapter_type, "", f"expected an object, got {type(raw).__name__}")
    try:
        config = msgspec.convert(dict(raw), _TYPES[adapter_type])
    except msgspec.ValidationError as exc:
        field, problem = _field_of(str(exc))
        raise _fail(adapter_type, field, problem) from None
    if isinstance(config, ProcessAdapterConfig):
        _check_process(config)
    else:
        _check_http(config)
    return config


def _check_process(config: ProcessAdapterConfig) -> None:
    for index, arg in enumerate(config.command):
        if "\x00" in arg or (index == 0 and not arg.strip()):
            raise _fail("process", f"command[{index}]", "must be a non-empty string without NUL")
    for name, value in config.env.items():
        if not _ENV_NAME.fullmatch(name):
            raise _fail("process", f"env.{name}", "is not a valid environment variable name")
        if name.upper().startswith(RESERVED_ENV_PREFIXES):
            raise _fail(
                "process",
                f"env.{name}",
                "CLIPYARD_* and PAPERCLIP_* variables are set by Clipyard for each run; remove it",
            )
        upper = name.upper()
        if upper.startswith(LOADER_ENV_PREFIXES) or upper in LOADER_ENV_NAMES:
            raise _fail(
                "process",
                f"env.{name}",
                "LD_*, MALLOC_*, GCONV_PATH, GLIBC_TUNABLES and the other dynamic-loader and "
                "glibc variables change what code the adapter runs and may not be set; remove "
                "it (put libraries and settings in the adapter's own command instead)",
            )
        if "\x00" in value:
            raise _fail("process", f"env.{name}", "must not contain NUL")


def _check_http(config: HttpAdapterConfig) -> None:
    parts = urlsplit(config.url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _fail("http", "url", f"{config.url!r} is not an http(s) URL with a host")
    for name, value in config.headers.items():
        if not name or any(c in name for c in " :\r\n") or any(c in value for c in "\r\n"):
            raise _fail("http", f"headers.{name}", "is not a valid header")


def config_as_dict(config: ProcessAdapterConfig | HttpAdapterConfig) -> JsonObject:
    """A checked config as stored and shown (camelCase keys, every field)."""
    plain: JsonObject = msgspec.to_builtins(config)
    return plain


def parse_adapter_config(
    adapter_type: AdapterType, stored: Mapping[str, Any]
) -> ProcessAdapterConfig | HttpAdapterConfig:
    """The typed config of a stored one (already checked when it was saved)."""
    return msgspec.convert(dict(stored), _TYPES[adapter_type])
