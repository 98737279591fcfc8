"""Pre-warmed worktrees (docs/design/workspace-realizer.md, "The worktree pool").

A new workspace's ``git worktree add`` writes every file of the base; with 10,000 files that is
most of a realize. The pool does that write ahead of time: per project workspace (its repository,
the folder its worktrees go to, its base ref) it keeps ``size`` detached worktrees at the base's
current commit in ``<parent>/.clipyard-pool/``, on the same filesystem as the workspaces, so that
handing one out (:mod:`workspace_realizer.adapters.pooled`) is a ``git worktree move`` (a rename)
and a new branch, not a checkout.

What it promises:
- An entry is handed out only at the commit the caller resolved for a cold worktree: the pool's
  commit is compared with the base just resolved, never trusted.
- Entries are never workspaces: no record names them, and git refuses a branch or folder name
  starting with a dot, so no workspace folder can be ``.clipyard-pool``.
- It refills in the background after each hand-out, and follows the base: when a realize or the
  refresh (every ``refresh`` seconds, local refs only) finds the base at another commit, the old
  entries are removed and new ones made.
- It makes nothing while the filesystem has less than ``min_free_bytes`` free.
- :meth:`WorktreePool.close` removes every entry; :meth:`WorktreePool.clean_leftovers` removes
  what a process that died left behind (each repository that held entries is noted under
  ``<home>/run/worktree-pool/`` until its entries are gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from servicekit.background import BackgroundTasks
from workspace_realizer.adapters import fs
from workspace_realizer.adapters.gitcli import GitRunner
from workspace_realizer.adapters.ports import HostOperationError
from workspace_realizer.adapters.probes import list_worktrees, rev_parse
from workspace_realizer.adapters.safety import check_no_company_ancestor

__all__ = ["POOL_DIR", "PoolEntry", "PoolKey", "WorktreePool"]

log = logging.getLogger(__name__)

POOL_DIR: Final = ".clipyard-pool"
"""The folder of a parent's pooled worktrees (a name git refuses as a branch, so as a workspace)."""


@dataclass(frozen=True)
class PoolKey:
    """One project workspace's pool: its repository, its worktrees' folder, its base ref."""

    repo_root: Path
    parent: Path
    base_ref: str


@dataclass(frozen=True)
class PoolEntry:
    """A detached worktree at ``sha``."""

    path: Path
    sha: str


@dataclass
class _Pool:
    sha: str
    """The commit its entries should be at (the base's latest)."""
    entries: list[PoolEntry] = field(default_factory=list)
    filling: asyncio.Task[None] | None = None


class WorktreePool:
    """The pools of one realizer's host part.

    Args:
        git: The git runner.
        home: ``$CLIPYARD_HOME`` (the note of which repositories hold entries).
        size: Entries per project workspace; 0 turns the pool off.
        refresh: Seconds between checks that each pool's base has not moved.
        min_free_bytes: Free space under which no entry is made.
    """

    def __init__(
        self, git: GitRunner, *, home: Path, size: int, refresh: float, min_free_bytes: int
    ) -> None:
        self.git = git
        self.size = size
        self.refresh = refresh
        self.min_free_bytes = min_free_bytes
        self._notes = home / "run" / "worktree-pool"
        self._pools: dict[PoolKey, _Pool] = {}
        self._refresher: asyncio.Task[None] | None = None
        self._background = BackgroundTasks()
        """Fills, the refresh and removals: kept until they end, a failure logged."""
        self._closed = False

    @property
    def enabled(self) -> bool:
        """Whether the pool makes entries at all."""
        return self.size > 0 and not self._closed

    def keys(self) -> list[PoolKey]:
        """The project workspaces the pool keeps worktrees for."""
        return list(self._pools)

    def entries(self, key: PoolKey) -> list[PoolEntry]:
        """The ready entries of one pool."""
        pool = self._pools.get(key)
        return list(pool.entries) if pool else []

    def take(self, key: PoolKey, sha: str) -> PoolEntry | None:
        """A ready entry at ``sha``, now the caller's; None when there is none at that commit."""
        pool = self._pools.get(key)
        if pool is None:
            return None
        for index, entry in enumerate(pool.entries):
            if entry.sha == sha:
                return pool.entries.pop(index)
        return None

    def want(self, key: PoolKey, sha: str) -> None:
        """Keep ``size`` entries of ``key`` at ``sha`` (the base's latest), filling in the
        background; entries at another commit are removed."""
        if not self.enabled:
            return
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = _Pool(sha)
        pool.sha = sha
        if pool.filling is None or pool.filling.done():
            pool.filling = self._background.spawn(self._fill(key, pool), "worktree-pool:fill")
        if self._refresher is None and self.refresh > 0:
            self._refresher = self._background.spawn(self._refresh(), "worktree-pool:refresh")

    def discard(self, key: PoolKey, entry: PoolEntry) -> None:
        """Remove, in the background, an entry that was taken and could not be handed out (the
        caller holds the repository's lock, which the removal takes)."""
        self._background.spawn(self._remove(key.repo_root, entry.path), "worktree-pool:discard")

    async def _fill(self, key: PoolKey, pool: _Pool) -> None:
        """Remove stale entries, then add detached ones until ``size`` are at ``pool.sha``."""
        while not self._closed:
            stale = [entry for entry in pool.entries if entry.sha != pool.sha]
            for entry in stale:
                pool.entries.remove(entry)
                await self._remove(key.repo_root, entry.path)
            if len(pool.entries) >= self.size:
                return
            if not self._room(key.parent):
                log.warning(
                    "worktree pool of %s not filled: less than %d MB free",
                    key.parent,
                    self.min_free_bytes // 2**20,
                )
                return
            added = await self._add(key, pool.sha)
            if added is None:
                return
            pool.entries.append(added)

    def _room(self, parent: Path) -> bool:
        try:
            return shutil.disk_usage(parent).free >= self.min_free_bytes
        except OSError:
            return False

    async def _add(self, key: PoolKey, sha: str) -> PoolEntry | None:
        """One detached worktree at ``sha`` (None, and nothing left, when git fails or the
        folder lies below one a company's processes own)."""
        path = key.parent / POOL_DIR / uuid.uuid4().hex[:16]
        try:
            check_no_company_ancestor(path)
            self._note(key.repo_root, path.parent)
            path.parent.mkdir(parents=True, exist_ok=True)
            added = await self.git.run(
                ["worktree", "add", "--detach", "--", str(path), sha], cwd=key.repo_root
            )
        except (HostOperationError, OSError) as error:
            log.warning("worktree pool of %s not filled: %s", key.parent, error)
            return None
        if added.ok:
            return PoolEntry(path, sha)
        log.warning("worktree pool of %s: git worktree add failed: %s", key.parent, added.message())
        await self._remove(key.repo_root, path)
        return None

    async def _remove(self, repo_root: Path, path: Path) -> None:
        """``git worktree remove -f -f`` under the repository's lock (twice forced: an add cut
        short leaves its registration locked); whatever is left, deleted and pruned. Without
        the repository any more, the folder is deleted."""
        if fs.is_dir(repo_root):
            async with await self.git.repo_lock(repo_root):
                with contextlib.suppress(HostOperationError):
                    remove = ["worktree", "remove", "--force", "--force", "--", str(path)]
                    await self.git.run(remove, cwd=repo_root)
                    if fs.lexists(path):
                        await asyncio.to_thread(shutil.rmtree, path, True)
                        await self.git.run(["worktree", "prune"], cwd=repo_root)
        if fs.lexists(path):
            await asyncio.to_thread(shutil.rmtree, path, True)
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # the pool folder, once empty

    async def _refresh(self) -> None:
        """Every ``refresh`` seconds, follow each pool's base to its commit (local refs)."""
        while not self._closed:
            await asyncio.sleep(self.refresh)
            for key, pool in list(self._pools.items()):
                try:
                    sha = await rev_parse(self.git, key.repo_root, key.base_ref)
                except HostOperationError:  # the repository is gone (a drain): so is its pool
                    self._pools.pop(key, None)
                    for entry in pool.entries:
                        await self._remove(key.repo_root, entry.path)
                    continue
                if sha is not None and sha != pool.sha:
                    self.want(key, sha)

    def _note(self, repo_root: Path, folder: Path) -> None:
        """Note that ``repo_root`` holds entries in ``folder`` (read by
        :meth:`clean_leftovers`): its first line is the repository, each other a pool folder."""
        self._notes.mkdir(parents=True, exist_ok=True)
        note = self._notes / hashlib.sha256(str(repo_root).encode()).hexdigest()[:24]
        lines = note.read_text(encoding="utf-8").splitlines() if note.exists() else []
        if str(folder) not in lines[1:]:
            note.write_text("\n".join([str(repo_root), *lines[1:], str(folder)]), "utf-8")

    async def clean_leftovers(self) -> int:
        """Remove the entries of every repository noted (a process that died left them).

        Returns:
            How many entries were removed.
        """
        removed = 0
        notes = sorted(self._notes.glob("*")) if self._notes.is_dir() else []
        for note in notes:
            repo, *folders = note.read_text(encoding="utf-8").splitlines()
            repo_root = Path(repo)
            entries = await _pool_registrations(self.git, repo_root) if fs.is_dir(repo_root) else []
            for folder in map(Path, folders):  # what git no longer knows (its repository gone)
                listed = sorted(folder.iterdir()) if fs.is_dir(folder) else []
                entries += [entry for entry in listed if entry not in entries]
            for entry in entries:
                await self._remove(repo_root, entry)
                removed += 1
            note.unlink(missing_ok=True)
        return removed

    async def close(self) -> None:
        """Stop filling and remove every entry (the service is stopping)."""
        self._closed = True
        tasks = [p.filling for p in self._pools.values() if p.filling] + [self._refresher]
        for task in tasks:
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self._background.idle()  # the discards still running
        for key, pool in self._pools.items():
            for entry in pool.entries:
                await self._remove(key.repo_root, entry.path)
            pool.entries.clear()
        await self.clean_leftovers()  # one cancelled mid-add


async def _pool_registrations(git: GitRunner, repo_root: Path) -> list[Path]:
    """The registered worktrees of ``repo_root`` that live in a pool folder."""
    try:
        entries = await list_worktrees(git, repo_root)
    except HostOperationError:  # not a repository any more: nothing of ours to remove
        return []
    return [Path(e.path) for e in entries if Path(e.path).parent.name == POOL_DIR]
