"""Runtime config (services and jobs) validated and given command ids (reference §6.1, API.md).

Accepts ``{services: [...], jobs: [...]}`` or ``{commands: [{kind, ...}]}`` (which wins when
non-empty) and returns the normalized command list the supervisor keeps a copy of. Every refusal
is an :class:`InvalidInputError` whose message and ``field`` name the offending field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, cast

from workspace_realizer.domain.documents import RuntimeCommand, StopPolicyDocument
from workspace_realizer.domain.errors import InvalidInputError

__all__ = ["command_slug", "normalize_runtime_config"]

_TOP_KEYS: Final = frozenset({"services", "jobs", "commands"})
_SERVICE_KEYS: Final = frozenset(
    {
        "id",
        "name",
        "label",
        "title",
        "kind",
        "command",
        "cwd",
        "env",
        "port",
        "readiness",
        "lifecycle",
        "reuseScope",
        "stopPolicy",
        "disabledReason",
        "expose",
        "desiredState",
    }
)
_JOB_KEYS: Final = frozenset(
    {
        "id",
        "name",
        "label",
        "title",
        "kind",
        "command",
        "cwd",
        "env",
        "timeoutSec",
        "disabledReason",
    }
)
_REUSE_SCOPES: Final = frozenset({"project_workspace", "execution_workspace", "agent", "run"})


def _fail(field: str, problem: str) -> InvalidInputError:
    return InvalidInputError(f"runtimeConfig.{field} {problem}", field=f"runtimeConfig.{field}")


def command_slug(text: str) -> str:
    """A command id slug: lower case, runs outside ``[a-z0-9_:-]`` become ``-``."""
    slug = re.sub(r"[^a-z0-9_:-]+", "-", text.strip().lower())
    return re.sub(r"-{2,}", "-", slug).strip("-_")


def normalize_runtime_config(
    raw: Mapping[str, Any] | None, *, field: str = "runtimeConfig"
) -> list[RuntimeCommand]:
    """Validate a runtime config and list its commands with ids and service indexes.

    Args:
        raw: The config as sent (camelCase keys), or None.
        field: Where the request carries it: ``runtimeConfig`` (a project workspace) or
            ``config.workspaceRuntime`` (an execution workspace's override); errors name it.

    Returns:
        ``[{id, kind, name, command, cwd, env, serviceIndex, source: {key, index}, ...}]``.

    Raises:
        InvalidInputError: The message names the field (``runtimeConfig.services[0].command``).
    """
    try:
        return _normalize(raw)
    except InvalidInputError as error:
        if field == "runtimeConfig":
            raise
        named = str(error.details.get("field", "runtimeConfig"))
        message = str(error)
        renamed = field + named.removeprefix("runtimeConfig")
        raise InvalidInputError(
            message.replace(named, renamed, 1), **{**error.details, "field": renamed}
        ) from None


def _normalize(raw: Mapping[str, Any] | None) -> list[RuntimeCommand]:
    if raw is None:
        return []
    raw = _compact(raw)
    if not isinstance(raw, Mapping):
        raise InvalidInputError("runtimeConfig must be an object.", field="runtimeConfig")
    for key in raw:
        if key not in _TOP_KEYS:
            raise _fail(str(key), "is not a runtime config field (services, jobs or commands)")
    entries: list[tuple[str, int, str, Mapping[str, Any]]] = []
    if raw.get("commands"):
        for index, entry in enumerate(_list(raw, "commands")):
            where = f"commands[{index}]"
            kind = _mapping(entry, where).get("kind")
            if kind not in ("service", "job"):
                raise _fail(f"{where}.kind", "must be service or job")
            entries.append(("commands", index, kind, entry))
    else:
        for key, kind in (("services", "service"), ("jobs", "job")):
            entries += [
                (key, i, kind, _mapping(e, f"{key}[{i}]")) for i, e in enumerate(_list(raw, key))
            ]
    commands: list[RuntimeCommand] = []
    seen: set[str] = set()
    service_index = 0
    for key, index, kind, entry in entries:
        command = _command(entry, f"{key}[{index}]", kind, index)
        command["id"] = _unique_id(entry, kind, key, index, seen, command["name"])
        command["source"] = {"key": key, "index": index}
        command["serviceIndex"] = service_index if kind == "service" else None
        service_index += kind == "service"
        commands.append(command)
    return commands


def _compact(value: Any) -> Any:
    """``value`` without ``None`` entries in its objects (an absent field and ``null`` agree)."""
    if isinstance(value, Mapping):
        return {k: _compact(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


def _list(raw: Mapping[str, Any], key: str) -> list[Any]:
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(key, "must be a list")
    return value


def _mapping(entry: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(entry, Mapping):
        raise _fail(where, "must be an object")
    return entry


def _unique_id(
    entry: Mapping[str, Any], kind: str, key: str, index: int, seen: set[str], name: str
) -> str:
    explicit = entry.get("id")
    if explicit is not None and (not isinstance(explicit, str) or not command_slug(explicit)):
        raise _fail(f"{key}[{index}].id", "must be a non-empty string")
    base = command_slug(explicit) if explicit else f"{kind}:{command_slug(name) or index + 1}"
    found = base if base not in seen else f"{base}-{key}-{index + 1}"
    seen.add(found)
    return found


def _command(entry: Mapping[str, Any], where: str, kind: str, index: int) -> RuntimeCommand:
    allowed = _SERVICE_KEYS if kind == "service" else _JOB_KEYS
    for key in entry:
        if key not in allowed:
            raise _fail(f"{where}.{key}", f"is not a {kind} field")
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise _fail(f"{where}.command", "is required: the shell command to run")
    name = entry.get("name") or entry.get("label") or entry.get("title")
    if name is not None and not isinstance(name, str):
        raise _fail(f"{where}.name", "must be a string")
    default_name = f"{'Service' if kind == 'service' else 'Job'} {index + 1}"
    result: RuntimeCommand = {
        "kind": kind,
        "name": (name or "").strip() or default_name,
        "command": command,
        "cwd": _optional_str(entry, where, "cwd") or ".",
        "env": _env(entry, where),
        "disabledReason": _optional_str(entry, where, "disabledReason"),
    }
    if kind == "job":
        result["timeoutSec"] = _positive(entry, where, "timeoutSec")
        return result
    lifecycle = entry.get("lifecycle", "shared")
    if lifecycle not in ("shared", "ephemeral"):
        raise _fail(f"{where}.lifecycle", "must be shared or ephemeral")
    scope = entry.get("reuseScope") or ("project_workspace" if lifecycle == "shared" else "run")
    if scope not in _REUSE_SCOPES:
        raise _fail(f"{where}.reuseScope", f"must be one of {', '.join(sorted(_REUSE_SCOPES))}")
    result["lifecycle"] = lifecycle
    result["reuseScope"] = scope
    result["port"] = _port(entry.get("port"), f"{where}.port")
    result["readiness"] = _readiness(entry.get("readiness"), f"{where}.readiness")
    result["stopPolicy"] = _stop_policy(entry.get("stopPolicy"), f"{where}.stopPolicy", lifecycle)
    result["expose"] = entry.get("expose")
    desired = entry.get("desiredState")
    if desired is not None:
        if desired not in ("running", "stopped", "manual"):
            raise _fail(f"{where}.desiredState", "must be running, stopped or manual")
        result["desiredState"] = desired
    return result


def _optional_str(entry: Mapping[str, Any], where: str, key: str) -> str | None:
    value = entry.get(key)
    if value is not None and not isinstance(value, str):
        raise _fail(f"{where}.{key}", "must be a string")
    return value


def _env(entry: Mapping[str, Any], where: str) -> dict[str, str]:
    env = entry.get("env") or {}
    if not isinstance(env, Mapping):
        raise _fail(f"{where}.env", "must be an object of strings")
    for key, value in env.items():
        if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(key)):
            raise _fail(f"{where}.env.{key}", "must be a string under a variable name")
    return dict(env)


def _positive(entry: Mapping[str, Any], where: str, key: str) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise _fail(f"{where}.{key}", "must be a positive number")
    return value


def _port(port: Any, where: str) -> Any:
    if port is None:
        return None
    if isinstance(port, int) and not isinstance(port, bool):
        if not 1 <= port <= 65535:
            raise _fail(where, "must be between 1 and 65535")
        return port
    if isinstance(port, Mapping) and port.get("type") == "auto" and set(port) <= {"type", "envKey"}:
        return dict(port)
    if isinstance(port, Mapping) and "value" in port and set(port) <= {"value", "envKey", "type"}:
        _port(port["value"], f"{where}.value")
        if port.get("envKey") is not None and not isinstance(port["envKey"], str):
            raise _fail(f"{where}.envKey", "must be a string")
        return dict(port)
    raise _fail(where, 'must be a number, {"type": "auto"} or {"value": N, "envKey"?}')


def _readiness(readiness: Any, where: str) -> Any:
    if readiness is None:
        return None
    if not isinstance(readiness, Mapping):
        raise _fail(where, "must be an object")
    kind = readiness.get("type")
    required = {"http": "urlTemplate", "log": "pattern", "tcp": None}
    if kind not in required:
        raise _fail(f"{where}.type", "must be http, tcp or log")
    needed = required[kind]
    if needed and not (isinstance(readiness.get(needed), str) and readiness[needed].strip()):
        raise _fail(f"{where}.{needed}", f"is required for {kind} readiness")
    for key in ("timeoutSec", "intervalMs"):
        _positive(readiness, where, key)
    return dict(readiness)


def _stop_policy(policy: Any, where: str, lifecycle: str) -> StopPolicyDocument:
    if policy is None:
        return {"type": "manual" if lifecycle == "shared" else "on_run_finish"}
    if not isinstance(policy, Mapping) or policy.get("type") not in (
        "manual",
        "idle_timeout",
        "on_run_finish",
    ):
        raise _fail(f"{where}.type", "must be manual, idle_timeout or on_run_finish")
    idle = policy.get("idleSeconds")
    if idle is not None and (isinstance(idle, bool) or not isinstance(idle, int) or idle < 1):
        raise _fail(f"{where}.idleSeconds", "must be a whole number of seconds, at least 1")
    return cast("StopPolicyDocument", dict(policy))
