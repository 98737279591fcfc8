"""The ``bwrap`` + ``setpriv`` command line of every contained launch (docs/design/isolation.md).

The sandbox shows the system read-only (``/usr``, ``/etc`` with a generated ``passwd`` and
``group``, and ``/bin``, ``/sbin``, ``/lib*`` as on the host), the folders the launch works in
read-write, the toolchain folders an operator listed (``CLIPYARD_SANDBOX_PATHS``) read-only, a
private ``/tmp`` (also ``HOME`` and ``TMPDIR``), ``/proc`` of its own pid namespace and a minimal
``/dev``; it has pid, ipc and uts namespaces of its own and dies with its parent. Inside,
``setpriv`` becomes the company's identity with no supplementary groups, no capabilities and
``no_new_privs``. ``bwrap`` and ``setpriv`` run as root: they are exec'd by the absolute paths
found at start, and the dynamic loader's variables are left out of the environment
(:func:`launcher_env`), so nothing the company set reaches a root process. Nothing of the
environment is ever on an argv.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from runtime_supervisor.adapters.containment.identities import Identity

__all__ = ["SANDBOX_TMP", "Tools", "contained_env", "launcher_env", "sandbox_argv", "setpriv_argv"]

SANDBOX_TMP: Final = "/tmp"
_SYSTEM_LINKS: Final = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_LOADER_PREFIXES: Final = ("LD_", "MALLOC_")
_LOADER_NAMES: Final = frozenset(
    {
        "GCONV_PATH",
        "GETCONF_DIR",
        "GLIBC_TUNABLES",
        "HOSTALIASES",
        "LOCALDOMAIN",
        "LOCPATH",
        "NIS_PATH",
        "NLSPATH",
        "RESOLV_HOST_CONF",
        "RES_OPTIONS",
        "TZDIR",
    }
)


@dataclass(frozen=True, kw_only=True)
class Tools:
    """The absolute paths of the root helpers."""

    bwrap: str
    setpriv: str
    nsenter: str = "/usr/bin/nsenter"


def launcher_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` without the variables that change how a root process loads or behaves
    (``LD_*``, ``MALLOC_*``, ``GCONV_PATH``, ``GLIBC_TUNABLES``, ``LOCPATH``, ...)."""
    return {
        name: value
        for name, value in env.items()
        if not name.startswith(_LOADER_PREFIXES) and name not in _LOADER_NAMES
    }


def contained_env(env: dict[str, str], identity: Identity) -> dict[str, str]:
    """What a contained command gets: ``env`` fit for the root launcher, with ``HOME`` and
    ``TMPDIR`` the private ``/tmp`` and the identity's name as ``USER``."""
    found = launcher_env(env)
    found.update(HOME=SANDBOX_TMP, TMPDIR=SANDBOX_TMP, USER=identity.name, LOGNAME=identity.name)
    return found


def _system_binds(identity: Identity) -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _SYSTEM_LINKS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    return [
        *args,
        "--ro-bind",
        "/etc",
        "/etc",
        "--ro-bind",
        str(identity.passwd),
        "/etc/passwd",
        "--ro-bind",
        str(identity.group),
        "/etc/group",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
    ]


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def parent_dirs(binds: Sequence[str]) -> list[str]:
    """``--perms 0755 --dir`` for every folder above the bound paths that the sandbox has to
    create (bwrap would make them 0700, which the identity cannot cross)."""
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


def setpriv_argv(setpriv: str, uid: int, gid: int) -> list[str]:
    """``setpriv`` to ``uid:gid``: no supplementary groups, no capabilities, no_new_privs."""
    return [
        setpriv,
        f"--reuid={uid}",
        f"--regid={gid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]


def sandbox_argv(
    command: Sequence[str],
    *,
    cwd: Path,
    identity: Identity,
    tools: Tools,
    writable: Sequence[Path] = (),
    readable: Sequence[Path] = (),
    binds: Sequence[str] = (),
    netns: Path | None = None,
) -> list[str]:
    """``[nsenter --net=<netns> --] bwrap … -- setpriv … command``.

    Args:
        command: The contained argv.
        cwd: Where it starts (inside one of the bound folders).
        identity: Who it runs as.
        tools: bwrap and setpriv.
        writable: Folders bound read-write.
        readable: Folders bound read-only (toolchains).
        binds: Further bwrap bind arguments (a git layout's).
        netns: The network namespace it runs in (None: the host's network).
    """
    own: list[str] = []
    for path in readable:
        own += ["--ro-bind", str(path), str(path)]
    for path in writable:
        own += ["--bind", str(path), str(path)]
    own += list(binds)
    args = [
        tools.bwrap,
        *_system_binds(identity),
        "--tmpfs",
        SANDBOX_TMP,
        *parent_dirs(own),
        *own,
        "--chdir",
        str(cwd),
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--",
    ]
    enter = [tools.nsenter, f"--net={netns}", "--"] if netns is not None else []
    return [*enter, *args, *setpriv_argv(tools.setpriv, identity.uid, identity.gid), *command]
