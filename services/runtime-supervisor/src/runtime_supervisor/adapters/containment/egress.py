"""What a workspace's processes may reach outside its network namespace (docs/design/isolation.md).

Inside a namespace every TCP connection that does not stay on ``127.0.0.1`` and every DNS query
is turned to the namespace's gate (:mod:`~runtime_supervisor.adapters.containment.gate`), which decides
with a :class:`Policy` read from three small files the supervisor writes:

- ``$CLIPYARD_HOME/netns/<namespace>/policy.json``: whose namespace it is (company, target,
  project);
- ``$CLIPYARD_HOME/egress/projects/<project>.json``: the project's ``egressAllowlist``;
- ``$CLIPYARD_HOME/netns/<namespace>/run.json``: the run that holds the workspace now and its
  agent's own entries.

The gate counts what it saw per period (a run's hold of the workspace, or the time between runs)
in ``tally.json`` beside them; the supervisor turns each distinct (host, port, verdict) of a
period into events (:mod:`~runtime_supervisor.egress_watch`).

A host's own addresses (loopback, link-local, the networks of its interfaces, each address with
its subnet) are never reached, whatever a rule says, unless the operator opens a network of them
(``CLIPYARD_EGRESS_HOST_NETWORKS``): a board key must not open the way to NATS or PostgreSQL.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NotRequired, TypedDict, TypeVar, cast

__all__ = [
    "ALWAYS_LOCAL",
    "Network",
    "Policy",
    "PolicyFile",
    "ProjectRulesFile",
    "Rule",
    "RuleEntry",
    "RunFile",
    "TallyFile",
    "TallyPeriod",
    "TallySeen",
    "network_list",
    "policy_path",
    "project_rules_path",
    "read_json",
    "rules_of",
    "run_path",
    "tally_path",
    "write_json",
]


class RuleEntry(TypedDict):
    """One allowlist entry as the files hold it (``port`` absent or None: every port)."""

    host: str
    port: NotRequired[int | None]


class PolicyFile(TypedDict, total=False):
    """``policy.json``: whose namespace it is (written at each launch into it)."""

    companyId: str
    target: str | None
    executionWorkspaceId: str | None
    projectWorkspaceId: str | None
    projectId: str | None


class RunFile(TypedDict, total=False):
    """``run.json``: the run holding the namespace's workspace, and its agent's entries."""

    runId: str
    rules: list[RuleEntry]


class ProjectRulesFile(TypedDict, total=False):
    """``egress/projects/<id>.json``: a project's allowlist, as the copy of the project says."""

    rules: list[RuleEntry]


class TallySeen(TypedDict):
    """One destination a period of ``tally.json`` counted (``*``/0: the overflow)."""

    host: str
    port: int
    verdict: str
    """``allowed`` or ``denied``."""
    count: int
    firstAt: str
    lastAt: str


class TallyPeriod(TypedDict):
    """One period of ``tally.json``: a run's (``runId``) or an idle one (``idle:<when>``)."""

    period: str
    runId: str | None
    seen: list[TallySeen]


class TallyFile(TypedDict, total=False):
    """``tally.json``: what the gate saw, per period (``current``: the one counting now)."""

    current: str
    periods: list[TallyPeriod]


EgressFile = TypeVar("EgressFile", PolicyFile, RunFile, ProjectRulesFile, TallyFile)

ALWAYS_LOCAL: Final = ("0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "240.0.0.0/4")
"""Networks that are the host's own (or nobody's) on every host."""

Network = ipaddress.IPv4Network


def network_list(raw: Iterable[str]) -> tuple[Network, ...]:
    """The IPv4 networks of ``raw`` (bad entries are left out)."""
    found: list[Network] = []
    for item in raw:
        with contextlib.suppress(ValueError):
            found.append(ipaddress.IPv4Network(item.strip(), strict=False))
    return tuple(found)


@dataclass(frozen=True)
class Rule:
    """One allowlist entry: a name (``*.`` for its subdomains), an address or a network; one
    port or all."""

    host: str
    port: int | None = None

    @property
    def network(self) -> Network | None:
        """The network an address rule names (None for a name)."""
        try:
            return ipaddress.IPv4Network(self.host, strict=False)
        except ValueError:
            return None

    def names(self, name: str) -> bool:
        """Whether the rule names the DNS name ``name``."""
        host, name = self.host.lower().rstrip("."), name.lower().rstrip(".")
        if host.startswith("*."):
            return name.endswith(host[1:]) and len(name) > len(host) - 1
        return host == name

    def allows(self, address: str, port: int, names: Sequence[str]) -> bool:
        """Whether the rule lets a connection to ``address:port`` through, ``names`` being the
        DNS names the gate answered with that address."""
        if self.port is not None and self.port != port:
            return False
        network = self.network
        if network is not None:
            return ipaddress.IPv4Address(address) in network
        return any(self.names(name) for name in names)


def rules_of(raw: Any) -> tuple[Rule, ...]:
    """Rules from plain data (``[{host, port}]``); malformed entries are left out."""
    found: list[Rule] = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, Mapping) and isinstance(item.get("host"), str):
            port = item.get("port")
            found.append(Rule(item["host"], port if isinstance(port, int) else None))
    return tuple(found)


@dataclass(frozen=True)
class Policy:
    """What one namespace may reach now."""

    rules: tuple[Rule, ...] = ()
    run_id: str | None = None
    local: tuple[Network, ...] = ()
    """The host's own networks (never reached)."""
    opened: tuple[Network, ...] = field(default=())
    """Networks of the host the operator allows rules to name."""

    def resolves(self, name: str) -> bool:
        """Whether a DNS query for ``name`` is answered."""
        return any(rule.names(name) for rule in self.rules)

    def host_local(self, address: str) -> bool:
        """Whether ``address`` is the host's own and not opened by the operator."""
        ip = ipaddress.IPv4Address(address)
        return any(ip in n for n in self.local) and not any(ip in n for n in self.opened)

    def allows(self, address: str, port: int, names: Sequence[str] = ()) -> bool:
        """Whether a connection to ``address:port`` may go out."""
        if self.host_local(address):
            return False
        return any(rule.allows(address, port, names) for rule in self.rules)


def policy_path(folder: Path) -> Path:
    """Whose namespace it is (written at each launch into it)."""
    return folder / "policy.json"


def run_path(folder: Path) -> Path:
    """The run holding the namespace's workspace, and its agent's entries."""
    return folder / "run.json"


def tally_path(folder: Path) -> Path:
    """What the gate saw, per period."""
    return folder / "tally.json"


def project_rules_path(home: Path, project_id: str) -> Path:
    """A project's allowlist, as the supervisor's copy of the project says."""
    return home / "egress" / "projects" / f"{project_id}.json"


def read_json(path: Path, shape: type[EgressFile]) -> EgressFile | None:
    """The object in ``path``, a file of format ``shape`` (None: missing, unreadable or not an
    object). What it holds is not checked against ``shape``: the file may be older or damaged,
    so each reader checks the values it uses (and leaves out what it cannot read)."""
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict):
            return cast("EgressFile", data)
    return None


def write_json(path: Path, data: PolicyFile | RunFile | ProjectRulesFile | TallyFile) -> None:
    """Replace ``path`` with ``data`` at once (a reader sees the old or the new file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.part")
    part.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
    os.replace(part, path)
