"""The command line and limits an adapter runs with (ARCHITECTURE §6).

Trusted agents: the command as is, as the service user (own process group, limits when given).
Untrusted agents: ``bwrap`` showing only the system read-only (``/usr``, ``/etc``, and ``/bin``,
``/sbin``, ``/lib*`` as on the host), the worktree read-write, the repository's common git dir
read-write except ``hooks/`` and ``config`` (and the worktree's ``config.worktree``) read-only,
a private ``/tmp`` (also ``HOME`` and ``TMPDIR``); pid, ipc and uts namespaces of its own, the
network shared (the adapter calls the API on 127.0.0.1), dying with the supervisor; then
``setpriv`` to the slot user with no capabilities and ``no_new_privs``. Without ``bwrap``:
``setpriv`` only. Resource limits (``RLIMIT_CPU``, ``RLIMIT_FSIZE``, ``RLIMIT_NOFILE``, and
``RLIMIT_AS`` only with ``memoryMb``) are set in the child before it execs.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from contracts.agents import AdapterLimits
    from runtime_supervisor.slots.ownership import GitLayout
    from runtime_supervisor.slots.users import SlotUser

__all__ = ["Confinement", "LaunchPlan", "limits_of", "plan_launch", "preexec"]

SANDBOX_TMP: Final = "/tmp"
_SYSTEM_LINKS: Final = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_MIB: Final = 1024 * 1024
_BWRAP: Final = "bwrap"
_SETPRIV: Final = "setpriv"


@dataclass(frozen=True, kw_only=True)
class Confinement:
    """How an untrusted adapter is contained: the slot user, and the git layout to expose
    (None for a scratch folder)."""

    user: SlotUser
    bwrap: bool
    layout: GitLayout | None = None


@dataclass(frozen=True, kw_only=True)
class LaunchPlan:
    """What to exec: ``argv`` in ``cwd`` with ``env``, ``limits`` set in the child and ``umask``."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    limits: list[tuple[int, int]] = field(default_factory=list)
    umask: int = 0o022


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


def preexec(limits: Sequence[tuple[int, int]]) -> Callable[[], None] | None:
    """The function the child runs before exec: set each limit (soft and hard)."""
    if not limits:
        return None
    pairs = tuple(limits)

    def apply() -> None:
        for which, value in pairs:
            resource.setrlimit(which, (value, value))

    return apply


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _SYSTEM_LINKS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    return [*args, "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev"]


def _git_binds(layout: GitLayout) -> list[str]:
    common = str(layout.common_dir)
    args = ["--bind", common, common]
    for name in ("hooks", "config"):
        path = layout.common_dir / name
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
    if layout.linked:
        if not str(layout.git_dir).startswith(common.rstrip("/") + "/"):
            args += ["--bind", str(layout.git_dir), str(layout.git_dir)]
        per_worktree = layout.git_dir / "config.worktree"
        if per_worktree.exists():
            args += ["--ro-bind", str(per_worktree), str(per_worktree)]
    return args


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _parent_dirs(binds: Sequence[str]) -> list[str]:
    """``--perms 0755 --dir`` for every folder above the bound paths that the sandbox has to
    create (bwrap would make them 0700, which the slot user cannot cross)."""
    dests = [binds[i + 2] for i, arg in enumerate(binds) if arg in ("--bind", "--ro-bind")]
    fixed = ("/", SANDBOX_TMP, "/usr", "/etc", "/proc", "/dev")
    needed: list[str] = []
    for dest in dests:
        for parent in reversed(Path(dest).parents):
            folder = str(parent)
            if folder in fixed or folder in needed or any(_within(folder, d) for d in dests):
                continue
            needed.append(folder)
    args: list[str] = []
    for folder in sorted(needed, key=lambda f: f.count("/")):
        args += ["--perms", "0755", "--dir", folder]
    return args


def bwrap_argv(command: Sequence[str], cwd: Path, confinement: Confinement) -> list[str]:
    """``bwrap ... -- setpriv ... command`` (see the module's docstring)."""
    where = str(cwd)
    binds = ["--bind", where, where]
    if confinement.layout is not None:
        binds += _git_binds(confinement.layout)
    args = [_BWRAP, *_system_binds(), "--tmpfs", SANDBOX_TMP, *_parent_dirs(binds), *binds]
    args += ["--chdir", where, "--unshare-pid", "--unshare-ipc", "--unshare-uts",
             "--unshare-cgroup-try", "--die-with-parent", "--"]  # fmt: skip
    return [*args, *setpriv_argv(confinement.user), *command]


def setpriv_argv(user: SlotUser) -> list[str]:
    """``setpriv`` to the slot user: no supplementary groups, no capabilities, no_new_privs."""
    return [_SETPRIV, f"--reuid={user.uid}", f"--regid={user.gid}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]  # fmt: skip


def plan_launch(
    command: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    limits: AdapterLimits,
    confinement: Confinement | None,
    private_tmp: Path | None = None,
) -> LaunchPlan:
    """The launch of an adapter.

    Args:
        command: The agent's argv.
        cwd: The worktree (or the run's scratch folder).
        env: The sanitized environment plus the request's variables.
        limits: The agent's resource limits.
        confinement: None for a trusted agent.
        private_tmp: ``HOME``/``TMPDIR`` of a ``user_only`` adapter (bwrap has its own /tmp).
    """
    rlimits = limits_of(limits)
    if confinement is None:
        return LaunchPlan(argv=list(command), cwd=cwd, env=env, limits=rlimits)
    contained_env = dict(env)
    if confinement.bwrap:
        contained_env.update(HOME=SANDBOX_TMP, TMPDIR=SANDBOX_TMP)
        argv = bwrap_argv(command, cwd, confinement)
    else:
        home = str(private_tmp) if private_tmp is not None else SANDBOX_TMP
        contained_env.update(HOME=home, TMPDIR=home)
        argv = [*setpriv_argv(confinement.user), *command]
    contained_env.update(USER=confinement.user.name, LOGNAME=confinement.user.name)
    return LaunchPlan(argv=argv, cwd=cwd, env=contained_env, limits=rlimits, umask=0o002)
