"""The unprivileged users of the ``local_stdio`` slots (ARCHITECTURE §6): ``clipyard-slot-<i>``
for pool position ``i``, all with the primary group ``clipyard-agents``.

They are created at the supervisor's start when it runs as root (``useradd --system``, no home,
``nologin``); creation is idempotent and serialized host-wide by a file lock, since several
supervisors (tests) may start at once and ``useradd`` itself refuses concurrent changes.
``bwrap`` and ``setpriv`` are looked up once, in the system's own folders only (never through a
``PATH``), and run by those absolute paths. Without root, ``useradd``, ``setpriv`` or ``bwrap``,
untrusted agents cannot be contained here (there is no weaker mode): their ``AcquireSlot`` answers
``sandbox_unavailable`` with what to do, and the slot health says so.
"""

from __future__ import annotations

import fcntl
import grp
import os
import pwd
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

__all__ = [
    "AGENTS_GROUP",
    "SYSTEM_DIRS",
    "SandboxStatus",
    "SlotUser",
    "ensure_slot_users",
    "find_tool",
    "slot_user_name",
]

AGENTS_GROUP: Final = "clipyard-agents"
_LOCK_PATHS: Final = (Path("/run/lock"), Path("/tmp"))
_NOLOGIN: Final = "/usr/sbin/nologin"
SYSTEM_DIRS: Final = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
"""Where ``useradd``, ``setpriv`` and ``bwrap`` are looked for."""


@dataclass(frozen=True, kw_only=True)
class SlotUser:
    """A slot's user: its name, uid and the ``clipyard-agents`` gid."""

    name: str
    uid: int
    gid: int


@dataclass(frozen=True, kw_only=True)
class SandboxStatus:
    """What untrusted agents get on this node.

    ``sandbox``: ``bwrap`` (confined as slot users; ``bwrap`` and ``setpriv`` the absolute
    paths to run), or None (they cannot run here; ``detail`` says why and what to do).
    """

    sandbox: Literal["bwrap"] | None
    users: tuple[SlotUser, ...] = ()
    detail: str = ""
    bwrap: str = ""
    setpriv: str = ""

    @property
    def available(self) -> bool:
        """Whether untrusted agents can be contained here."""
        return self.sandbox is not None

    def user(self, index: int) -> SlotUser:
        """The user of pool position ``index``."""
        return self.users[index]


def slot_user_name(index: int) -> str:
    """``clipyard-slot-<index>``."""
    return f"clipyard-slot-{index}"


def find_tool(name: str, dirs: Sequence[str] = SYSTEM_DIRS) -> str | None:
    """The absolute path of the executable ``name`` in ``dirs`` (None: not there)."""
    found = shutil.which(name, path=os.pathsep.join(d for d in dirs if os.path.isabs(d)))
    return os.path.abspath(found) if found else None


def _lock_file() -> Path:
    for folder in _LOCK_PATHS:
        if folder.is_dir() and os.access(folder, os.W_OK):
            return folder / "clipyard-slot-users.lock"
    return Path("/tmp/clipyard-slot-users.lock")


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise OSError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")


def _group_id(groupadd: str) -> int:
    try:
        return grp.getgrnam(AGENTS_GROUP).gr_gid
    except KeyError:
        _run([groupadd, "--system", AGENTS_GROUP])
        return grp.getgrnam(AGENTS_GROUP).gr_gid


def _user(name: str, gid: int, useradd: str) -> SlotUser:
    try:
        found = pwd.getpwnam(name)
    except KeyError:
        _run([useradd, "--system", "--no-create-home", "--shell", _NOLOGIN,
              "--gid", AGENTS_GROUP, "--home-dir", "/nonexistent", name])  # fmt: skip
        found = pwd.getpwnam(name)
    return SlotUser(name=name, uid=found.pw_uid, gid=gid)


def _unavailable(detail: str) -> SandboxStatus:
    return SandboxStatus(sandbox=None, detail=detail)


def ensure_slot_users(count: int, *, dirs: Sequence[str] = SYSTEM_DIRS) -> SandboxStatus:
    """Create (if missing) the slot users and their group; blocking (run it in a thread).

    Args:
        count: The ``local_stdio`` pool size (``CLIPYARD_SLOTS``).
        dirs: Where the tools are looked for (:data:`SYSTEM_DIRS`).

    Returns:
        ``bwrap`` with the users and the tools' paths; or unavailable with the reason and the fix.
    """
    if os.geteuid() != 0:
        return _unavailable(
            f"The runtime-supervisor runs as uid {os.geteuid()}, not root, so it cannot run "
            "untrusted agents as the unprivileged slot users: run it as root, or mark the agent "
            "trusted."
        )
    useradd, groupadd = find_tool("useradd", dirs), find_tool("groupadd", dirs)
    setpriv, bwrap = find_tool("setpriv", dirs), find_tool("bwrap", dirs)
    if useradd is None or groupadd is None or setpriv is None:
        return _unavailable(
            "useradd, groupadd or setpriv is not installed, so no slot user can run untrusted "
            "agents: install the passwd and util-linux packages, or mark the agent trusted."
        )
    if bwrap is None:
        return _unavailable(
            "bwrap (bubblewrap) is not installed, so untrusted agents cannot be confined and do "
            "not run here: install bubblewrap (./dev does: apt-get install bubblewrap) and "
            "restart the runtime-supervisor, or mark the agent trusted."
        )
    try:
        with _lock_file().open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            gid = _group_id(groupadd)
            users = tuple(_user(slot_user_name(i), gid, useradd) for i in range(count))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return _unavailable(
            f"The slot users could not be created ({exc}): fix that and restart the "
            "runtime-supervisor, or mark the agent trusted."
        )
    return SandboxStatus(
        sandbox="bwrap",
        users=users,
        detail="untrusted agents run as slot users in bwrap, with resource limits",
        bwrap=bwrap,
        setpriv=setpriv,
    )
