"""Who owns what of a repository while an untrusted adapter runs in it (ARCHITECTURE §6).

Before the launch (the layout verified by :func:`~runtime_supervisor.adapters.slots.layout.trusted_layout`):

- the worktree and its own git dir ``<common>/worktrees/<name>`` are chowned to the company's identity (git
  refuses a git dir owned by someone else), except the pointers (``<worktree>/.git``,
  ``<git_dir>/gitdir``, ``commondir``, ``config.worktree`` — created empty when missing), which
  stay the service user's, mode 0644, and are bound read-only in the sandbox;
- of the common git dir only what a commit on the workspace's branch writes is shared with the
  company identity's group: the 256 loose-object fan-out dirs ``objects/00``..``objects/ff`` and
  the directory holding ``refs/heads/<branch>``, group-writable with the sticky bit (nobody
  deletes or renames a file of someone else's); the branch's ref and reflog are the company's identity's.
  Refs packed in ``packed-refs`` that live in that directory get a loose copy (the service
  user's), so an agent cannot shadow them with a loose ref of its own. ``objects/pack``,
  ``objects/info``, ``packed-refs``, ``hooks/``, ``config`` and the top of the common git dir
  stay the service user's, not writable by the group: an agent cannot delete or pack branches,
  delete packs or plant alternates (its ``git gc`` fails).

After the run (its resource unit emptied) the git dir and the branch's ref and reflog go back to
the service user; the worktree stays the company identity's until it is archived. Trees are walked with ``os.fwalk`` on directory descriptors, never following a symbolic
link. Blocking: run these in a thread.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Final

from runtime_supervisor.adapters.containment.identities import FIRST_ID
from runtime_supervisor.adapters.slots.layout import GitLayout, LayoutError

__all__ = [
    "check_ancestors",
    "chown_tree",
    "hand_back",
    "hand_over",
    "hand_over_scratch",
    "own_pointer",
]

SHARED_DIR_MODE: Final = 0o3775
"""``rwxrwsr-t``: group-writable, setgid, sticky."""
_PRIVATE_DIR_MODE: Final = 0o755
_POINTER_MODE: Final = 0o644
_FANOUT: Final = tuple(f"{i:02x}" for i in range(256))
_CLOSED: Final = ("objects", "objects/pack", "objects/info", "refs", "logs")


def check_ancestors(folder: Path) -> None:
    """Refuse a folder below one a company's processes own, or below a link: root's chown and
    bwrap's binds would follow what a contained process put there anywhere on the host.

    Raises:
        LayoutError: Naming the folder.
    """
    for parent in Path(os.path.abspath(folder)).parents:
        try:
            info = os.lstat(parent)
        except FileNotFoundError:
            continue
        if info.st_uid >= FIRST_ID or stat.S_ISLNK(info.st_mode):
            raise LayoutError(
                f"{folder} lies inside {parent}, which a company's processes own or which is a "
                "link: a contained folder lies in folders of root's only."
            )


def chown_tree(root: Path, uid: int, gid: int, *, skip: tuple[str, ...] = ()) -> None:
    """``chown -R uid:gid root`` on directory descriptors; no symbolic link is followed (a link
    is chowned itself), ``root`` itself must be no link, and the entries of ``root`` named in
    ``skip`` (a checkout's ``.git``) are left as they are."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        os.fchown(fd, uid, gid)
        for path, dirs, files, dir_fd in os.fwalk(".", dir_fd=fd, follow_symlinks=False):
            if path == "." and skip:
                dirs[:] = [d for d in dirs if d not in skip]
                files = [f for f in files if f not in skip]
            for name in (*dirs, *files):
                with contextlib.suppress(FileNotFoundError):
                    os.chown(name, uid, gid, dir_fd=dir_fd, follow_symlinks=False)
    finally:
        os.close(fd)


def _own_file(path: Path, uid: int, gid: int, *, create: bool = False) -> None:
    """Make ``path`` a regular file of ``uid:gid``, mode 0644 (created empty when ``create``;
    anything else at that place is replaced when ``create``, refused otherwise)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        if not create:
            raise
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, _POINTER_MODE)
    except OSError:  # a symbolic link (ELOOP) or worse
        if not create:
            raise LayoutError(f"{path} is not a regular file.") from None
        os.unlink(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, _POINTER_MODE)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise LayoutError(f"{path} is not a regular file.")
        os.fchown(fd, uid, gid)
        os.fchmod(fd, _POINTER_MODE)
    finally:
        os.close(fd)


def _dir(path: Path, uid: int, gid: int, mode: int, *, keep: bool = False) -> None:
    """Make ``path`` a directory (no link) of ``uid:gid`` with ``mode`` (with ``keep``: only
    when it is created now; an existing one stays as it is, e.g. shared for another branch)."""
    try:
        os.mkdir(path, _PRIVATE_DIR_MODE)
    except FileExistsError:
        if keep:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                raise LayoutError(f"{path} is not a directory.") from None
            return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        os.fchown(fd, uid, gid)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _packed(common: Path) -> dict[str, str]:
    """``packed-refs`` as ref name → object id (peeled lines and comments skipped)."""
    try:
        text = (common / "packed-refs").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return {}
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line and line[0] not in "#^":
            oid, _, name = line.partition(" ")
            found[name.strip()] = oid
    return found


def _unpack_siblings(layout: GitLayout, folder: Path, me: int, my_gid: int) -> None:
    """A loose copy (the service user's) of each packed ref of ``folder`` that has none, so an
    agent cannot create a loose ref shadowing it."""
    prefix = "refs/" + "/".join(layout.ref_parts[:-1]) + "/"
    own = "refs/heads/" + layout.branch
    for name, oid in _packed(layout.common_dir).items():
        rest = name.removeprefix(prefix)
        if name == own or rest == name or "/" in rest:
            continue
        with contextlib.suppress(FileExistsError):
            fd = os.open(
                folder / rest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, _POINTER_MODE
            )
            try:
                os.write(fd, f"{oid}\n".encode())
                os.fchown(fd, me, my_gid)
            finally:
                os.close(fd)


def _unshare_legacy(common: Path, me: int, my_gid: int, gid: int) -> None:
    """Undo what an earlier version shared (``refs`` and ``logs`` group-writable throughout),
    once: its mark is ``refs/`` belonging to the agents' group."""
    try:
        if os.lstat(common / "refs").st_gid != gid or gid == my_gid:
            return
    except FileNotFoundError:
        return
    for name in ("refs", "logs"):
        top = common / name
        if not top.is_dir() or top.is_symlink():
            continue
        chown_tree(top, me, my_gid)
        for folder, dirs, files, dir_fd in os.fwalk(top, follow_symlinks=False):
            del folder
            for entry in (*dirs, *files):
                with contextlib.suppress(OSError):
                    info = os.stat(entry, dir_fd=dir_fd, follow_symlinks=False)
                    if not stat.S_ISLNK(info.st_mode):
                        mode = stat.S_IMODE(info.st_mode) & ~(stat.S_IWGRP | stat.S_ISGID)
                        os.chmod(entry, mode, dir_fd=dir_fd)


def _share_branch(layout: GitLayout, uid: int, gid: int) -> None:
    me, my_gid = os.getuid(), os.getgid()
    common = layout.common_dir
    *parents, leaf = layout.ref_parts
    ref_dir, log_dir = common / "refs", common / "logs" / "refs"
    _dir(log_dir, me, my_gid, _PRIVATE_DIR_MODE, keep=True)
    for part in parents[:-1]:
        ref_dir, log_dir = ref_dir / part, log_dir / part
        _dir(ref_dir, me, my_gid, _PRIVATE_DIR_MODE, keep=True)
        _dir(log_dir, me, my_gid, _PRIVATE_DIR_MODE, keep=True)
    ref_dir, log_dir = ref_dir / parents[-1], log_dir / parents[-1]
    _dir(ref_dir, me, gid, SHARED_DIR_MODE)
    _dir(log_dir, me, my_gid, _PRIVATE_DIR_MODE, keep=True)
    _unpack_siblings(layout, ref_dir, me, my_gid)
    ref = ref_dir / leaf
    packed = _packed(common).get("refs/heads/" + layout.branch)
    if packed is not None and not os.path.lexists(ref):
        ref.write_text(f"{packed}\n", encoding="ascii")
    if os.path.lexists(ref):
        _own_file(ref, uid, gid)
    _own_file(log_dir / leaf, uid, gid, create=True)


def hand_over(layout: GitLayout, uid: int, gid: int) -> None:
    """Hand the worktree and its git dir to the company's identity ``uid`` and share with ``gid`` what a
    commit on the workspace's branch writes (see the module's docstring).

    Raises:
        LayoutError: A pointer is not a regular file.
        OSError: The disk refused.
    """
    me, my_gid = os.getuid(), os.getgid()
    common = layout.common_dir
    _dir(common / "hooks", me, my_gid, _PRIVATE_DIR_MODE)
    for name in _CLOSED:
        _dir(common / name, me, my_gid, _PRIVATE_DIR_MODE)
    with contextlib.suppress(FileNotFoundError):
        _own_file(common / "packed-refs", me, my_gid)
    _unshare_legacy(common, me, my_gid, gid)
    chown_tree(layout.worktree, uid, gid)
    chown_tree(layout.git_dir, uid, gid)
    for pointer in layout.pointers:
        _own_file(pointer, me, my_gid, create=pointer.name == "config.worktree")
    for name in _FANOUT:
        _dir(common / "objects" / name, me, gid, SHARED_DIR_MODE)
    _share_branch(layout, uid, gid)


def own_pointer(path: Path) -> None:
    """Make the file ``path`` (a worktree's ``.git``) the service user's again, mode 0644."""
    with contextlib.suppress(FileNotFoundError, LayoutError):
        _own_file(path, os.getuid(), os.getgid())


def hand_over_scratch(folder: Path, uid: int, gid: int) -> None:
    """Hand a per-run scratch folder (no git checkout) to the company's identity."""
    chown_tree(folder, uid, gid)


def hand_back(worktree: Path, layout: GitLayout | None, uid: int, gid: int) -> None:
    """After a run: the worktree stays (or becomes) the identity's ``uid:gid`` (its services
    keep writing there), its git dir and the branch's ref and reflog go back to the service
    user. Call it only when no process of the run is left."""
    me, my_gid = os.getuid(), os.getgid()
    if os.path.lexists(worktree):
        chown_tree(worktree, uid, gid)
    if layout is None:
        return
    for pointer in layout.pointers:
        with contextlib.suppress(FileNotFoundError):
            _own_file(pointer, me, my_gid)
    if os.path.lexists(layout.git_dir):
        chown_tree(layout.git_dir, me, my_gid)
    rest = os.path.join(*layout.ref_parts)
    for path in (layout.common_dir / "refs" / rest, layout.common_dir / "logs" / "refs" / rest):
        with contextlib.suppress(FileNotFoundError):
            os.chown(path, me, my_gid, follow_symlinks=False)
