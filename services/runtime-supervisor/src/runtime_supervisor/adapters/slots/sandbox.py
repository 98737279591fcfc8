"""The command line, environment and limits an adapter runs with (ARCHITECTURE §6,
docs/design/isolation.md).

Trusted agents: the command as is, as the service user (own process group, limits when given).
Untrusted agents: the node's sandbox (:mod:`runtime_supervisor.adapters.containment.sandbox`) as the
company's identity, showing the worktree read-write and the repository's common git dir (its
permissions decide what is writable, see :mod:`~runtime_supervisor.adapters.slots.ownership`) with
``hooks/`` and ``config`` read-only, and the worktree's pointers (``<worktree>/.git``,
``<git_dir>/gitdir``, ``commondir``, ``config.worktree``) read-only — a mount point can be
neither rewritten, unlinked nor renamed over. Git inside gets ``safe.directory=<worktree>``
through ``GIT_CONFIG_COUNT``. Resource limits (``RLIMIT_CPU``, ``RLIMIT_FSIZE`` — 1 GiB for an
untrusted agent that sets none —, ``RLIMIT_NOFILE``, and ``RLIMIT_AS`` only with ``memoryMb``)
are set in the child before it execs, after it joined the run's resource unit.
"""

from __future__ import annotations

import resource
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from runtime_supervisor.adapters.containment.sandbox import contained_env, sandbox_argv

if TYPE_CHECKING:
    from contracts.agents import AdapterLimits
    from runtime_supervisor.adapters.containment.cgroups import Unit
    from runtime_supervisor.adapters.containment.identities import Identity
    from runtime_supervisor.adapters.containment.sandbox import Tools
    from runtime_supervisor.adapters.slots.layout import GitLayout

__all__ = [
    "DEFAULT_FILE_SIZE",
    "Confinement",
    "LaunchPlan",
    "bwrap_argv",
    "limits_of",
    "plan_launch",
]

DEFAULT_FILE_SIZE: Final = 1024 * 1024 * 1024
"""``RLIMIT_FSIZE`` of an untrusted adapter whose agent sets no ``fileSizeMb``."""
_MIB: Final = 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class Confinement:
    """How an untrusted adapter is contained: the company's identity, the root helpers, the
    toolchains shown read-only, and the git layout to expose (None for a scratch folder)."""

    identity: Identity
    tools: Tools
    toolchains: tuple[Path, ...] = ()
    layout: GitLayout | None = None
    netns: Path | None = None
    """The network namespace it runs in (its workspace's, or its run's)."""


def _with_safe_directory(env: dict[str, str], worktree: Path) -> dict[str, str]:
    """``env`` plus ``safe.directory=<worktree>`` as one more ``GIT_CONFIG_COUNT`` entry."""
    raw = env.get("GIT_CONFIG_COUNT", "0")
    count = int(raw) if raw.isdigit() else 0
    return {
        **env,
        f"GIT_CONFIG_KEY_{count}": "safe.directory",
        f"GIT_CONFIG_VALUE_{count}": str(worktree),
        "GIT_CONFIG_COUNT": str(count + 1),
    }


@dataclass(frozen=True, kw_only=True)
class LaunchPlan:
    """What to exec: ``argv`` in ``cwd`` with ``env``, ``limits`` set in the child (once it
    joined ``unit``, a contained run's resource unit) and ``umask``."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    limits: list[tuple[int, int]] = field(default_factory=list)
    umask: int = 0o022
    unit: Unit | None = None


def limits_of(limits: AdapterLimits) -> list[tuple[int, int]]:
    """The ``(resource, value)`` pairs of an agent's limits (soft = hard)."""
    found: list[tuple[int, int]] = []
    if limits.cpu_seconds is not None:
        found.append((resource.RLIMIT_CPU, limits.cpu_seconds))
    if limits.file_size_mb is not None:
        found.append((resource.RLIMIT_FSIZE, limits.file_size_mb * _MIB))
    if limits.open_files is not None:
        found.append((resource.RLIMIT_NOFILE, limits.open_files))
    if limits.memory_mb is not None:
        found.append((resource.RLIMIT_AS, limits.memory_mb * _MIB))
    return found


def _git_binds(layout: GitLayout) -> list[str]:
    """The common git dir (its git dir ``worktrees/<name>`` is inside), ``hooks/``, ``config``
    and the pointers read-only (``hooks/`` and ``config.worktree`` exist: ``hand_over`` made
    them)."""
    common = str(layout.common_dir)
    args = ["--bind", common, common]
    for path in (layout.common_dir / "hooks", layout.common_dir / "config", *layout.pointers):
        args += ["--ro-bind", str(path), str(path)]
    return args


def bwrap_argv(command: Sequence[str], cwd: Path, confinement: Confinement) -> list[str]:
    """``bwrap ... -- setpriv ... command`` (see the module's docstring)."""
    binds = _git_binds(confinement.layout) if confinement.layout is not None else []
    return sandbox_argv(
        command,
        cwd=cwd,
        identity=confinement.identity,
        tools=confinement.tools,
        writable=[cwd],
        readable=confinement.toolchains,
        binds=binds,
        netns=confinement.netns,
    )


def plan_launch(
    command: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    limits: AdapterLimits,
    confinement: Confinement | None,
    unit: Unit | None = None,
) -> LaunchPlan:
    """The launch of an adapter.

    Args:
        command: The agent's argv.
        cwd: The worktree (or the run's scratch folder).
        env: The sanitized environment plus the request's variables.
        limits: The agent's resource limits.
        confinement: None for a trusted agent.
        unit: The run's resource unit (a contained run's).
    """
    rlimits = limits_of(limits)
    if confinement is None:
        return LaunchPlan(argv=list(command), cwd=cwd, env=env, limits=rlimits)
    if limits.file_size_mb is None:
        rlimits.append((resource.RLIMIT_FSIZE, DEFAULT_FILE_SIZE))
    found = contained_env(env, confinement.identity)
    if confinement.layout is not None:
        found = _with_safe_directory(found, confinement.layout.worktree)
    argv = bwrap_argv(command, cwd, confinement)
    return LaunchPlan(argv=argv, cwd=cwd, env=found, limits=rlimits, unit=unit)
