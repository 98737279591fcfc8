"""The command line, environment and limits an adapter runs with (ARCHITECTURE §6).

Trusted agents: the command as is, as the service user (own process group, limits when given).
Untrusted agents: ``bwrap`` showing only the system read-only (``/usr``, ``/etc``, and ``/bin``,
``/sbin``, ``/lib*`` as on the host), the worktree read-write, the repository's common git dir
(its permissions decide what is writable, see :mod:`~runtime_supervisor.slots.ownership`) with
``hooks/`` and ``config`` read-only, the worktree's pointers (``<worktree>/.git``,
``<git_dir>/gitdir``, ``commondir``, ``config.worktree``) read-only — a mount point can be neither
rewritten, unlinked nor renamed over —, a private ``/tmp`` (also ``HOME`` and ``TMPDIR``); pid,
ipc and uts namespaces of its own, the network shared (the adapter calls the API on 127.0.0.1),
dying with the supervisor; then ``setpriv`` to the slot user with no capabilities and
``no_new_privs``. ``bwrap`` and ``setpriv`` run as root: they are exec'd by the absolute paths
found at start, and the dynamic loader's variables (``LD_*``, ``GCONV_PATH``, ``GLIBC_TUNABLES``,
``MALLOC_*``, ... — glibc's list of unsafe variables) are left out of the environment of an
untrusted launch, so none of the agent's settings reaches a root process (its command gets the
rest of its environment, ``PATH`` as it set it). No value of the environment is ever on an argv.
Git inside gets ``safe.directory=<worktree>`` through ``GIT_CONFIG_COUNT`` (the ``.git`` file is
root's). Resource limits (``RLIMIT_CPU``, ``RLIMIT_FSIZE`` — 1 GiB for an untrusted agent that
sets none —, ``RLIMIT_NOFILE``, and ``RLIMIT_AS`` only with ``memoryMb``) are set in the child
before it execs.
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
    from runtime_supervisor.slots.layout import GitLayout
    from runtime_supervisor.slots.users import SlotUser

__all__ = [
    "DEFAULT_FILE_SIZE",
    "Confinement",
    "LaunchPlan",
    "launcher_env",
    "limits_of",
    "plan_launch",
    "preexec",
]

SANDBOX_TMP: Final = "/tmp"
DEFAULT_FILE_SIZE: Final = 1024 * 1024 * 1024
"""``RLIMIT_FSIZE`` of an untrusted adapter whose agent sets no ``fileSizeMb``."""
_SYSTEM_LINKS: Final = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_MIB: Final = 1024 * 1024
_LOADER_PREFIXES: Final = ("LD_", "MALLOC_")
_LOADER_NAMES: Final = frozenset({
    "GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH",
    "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TZDIR",
})  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Confinement:
    """How an untrusted adapter is contained: the slot user, the absolute paths of ``bwrap``
    and ``setpriv``, and the git layout to expose (None for a scratch folder)."""

    user: SlotUser
    bwrap: str
    setpriv: str
    layout: GitLayout | None = None


def launcher_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` without the variables that change how a root process loads or behaves
    (``LD_*``, ``MALLOC_*``, ``GCONV_PATH``, ``GLIBC_TUNABLES``, ``LOCPATH``, ...)."""
    return {
        name: value
        for name, value in env.items()
        if not name.startswith(_LOADER_PREFIXES) and name not in _LOADER_NAMES
    }


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
    """The common git dir (its git dir ``worktrees/<name>`` is inside), ``hooks/``, ``config``
    and the pointers read-only (``hooks/`` and ``config.worktree`` exist: ``hand_over`` made
    them)."""
    common = str(layout.common_dir)
    args = ["--bind", common, common]
    for path in (layout.common_dir / "hooks", layout.common_dir / "config", *layout.pointers):
        args += ["--ro-bind", str(path), str(path)]
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
    args = [confinement.bwrap, *_system_binds(), "--tmpfs", SANDBOX_TMP, *_parent_dirs(binds),
            *binds]  # fmt: skip
    args += ["--chdir", where, "--unshare-pid", "--unshare-ipc", "--unshare-uts",
             "--unshare-cgroup-try", "--die-with-parent", "--"]  # fmt: skip
    return [*args, *setpriv_argv(confinement.setpriv, confinement.user), *command]


def setpriv_argv(setpriv: str, user: SlotUser) -> list[str]:
    """``setpriv`` to the slot user: no supplementary groups, no capabilities, no_new_privs."""
    return [setpriv, f"--reuid={user.uid}", f"--regid={user.gid}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]  # fmt: skip


def plan_launch(
    command: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    limits: AdapterLimits,
    confinement: Confinement | None,
) -> LaunchPlan:
    """The launch of an adapter.

    Args:
        command: The agent's argv.
        cwd: The worktree (or the run's scratch folder).
        env: The sanitized environment plus the request's variables.
        limits: The agent's resource limits.
        confinement: None for a trusted agent.
    """
    rlimits = limits_of(limits)
    if confinement is None:
        return LaunchPlan(argv=list(command), cwd=cwd, env=env, limits=rlimits)
    if limits.file_size_mb is None:
        rlimits.append((resource.RLIMIT_FSIZE, DEFAULT_FILE_SIZE))
    contained_env = launcher_env(env)
    contained_env.update(HOME=SANDBOX_TMP, TMPDIR=SANDBOX_TMP, USER=confinement.user.name,
                         LOGNAME=confinement.user.name)  # fmt: skip
    if confinement.layout is not None:
        contained_env = _with_safe_directory(contained_env, confinement.layout.worktree)
    argv = bwrap_argv(command, cwd, confinement)
    return LaunchPlan(argv=argv, cwd=cwd, env=contained_env, limits=rlimits)
