"""Read-only git probes shared by the adapters (never reported as steps, never locked here: the
callers hold the repository lock)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from workspace_realizer.adapters.gitcli import GitRunner

__all__ = [
    "StatusCounts",
    "WorktreeEntry",
    "branch_checked_out_in",
    "current_branch",
    "find_worktree",
    "list_worktrees",
    "ref_exists",
    "remote_has_url",
    "remotes",
    "rev_parse",
    "same_path",
    "status_counts",
    "toplevel",
]


@dataclass(frozen=True, kw_only=True)
class WorktreeEntry:
    """One record of ``git worktree list --porcelain``."""

    path: str
    head: str | None
    branch: str | None
    """The short branch name (``refs/heads/`` removed); None when detached."""
    bare: bool = False
    locked: bool = False
    prunable: bool = False


@dataclass(frozen=True, kw_only=True)
class StatusCounts:
    """Porcelain v1 status counts: ``??`` entries are untracked, every other entry is dirty."""

    dirty: int
    untracked: int
    dirty_samples: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        """No change and no untracked non-ignored file."""
        return self.dirty == 0 and self.untracked == 0


def same_path(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name the same place once symlinks are resolved."""
    return os.path.realpath(a) == os.path.realpath(b)


async def rev_parse(git: GitRunner, cwd: Path, rev: str) -> str | None:
    """The commit ``rev`` names, or None."""
    result = await git.run(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], cwd=cwd
    )
    return result.out or None if result.ok else None


async def ref_exists(git: GitRunner, cwd: Path, ref: str) -> bool:
    """Whether the full ref name exists."""
    result = await git.run(["show-ref", "--verify", "--quiet", ref], cwd=cwd)
    return result.ok


async def current_branch(git: GitRunner, cwd: Path) -> str | None:
    """The branch checked out in ``cwd`` (None when HEAD is detached)."""
    result = await git.run(["symbolic-ref", "--quiet", "--short", "HEAD"], cwd=cwd)
    return result.out or None if result.ok else None


async def toplevel(git: GitRunner, cwd: Path) -> str | None:
    """The top of the working tree holding ``cwd``, or None when it is not a git checkout."""
    result = await git.run(["rev-parse", "--show-toplevel"], cwd=cwd)
    return result.out or None if result.ok else None


async def remotes(git: GitRunner, cwd: Path) -> list[str]:
    """The configured remote names."""
    result = await git.run(["remote"], cwd=cwd)
    return result.out.split() if result.ok else []


async def remote_has_url(git: GitRunner, cwd: Path, remote: str) -> bool:
    """Whether ``remote`` has a URL (its value is never returned: it may hold userinfo)."""
    result = await git.run(["remote", "get-url", "--", remote], cwd=cwd)
    return result.ok and bool(result.out)


async def list_worktrees(git: GitRunner, repo_root: Path) -> list[WorktreeEntry]:
    """Every registered worktree (the main one first)."""
    result = await git.run(["worktree", "list", "--porcelain", "-z"], cwd=repo_root, check=True)
    entries: list[WorktreeEntry] = []
    fields: dict[str, str] = {}
    for token in [*result.stdout.split("\0"), ""]:
        if token:
            name, _, value = token.partition(" ")
            fields[name] = value
            continue
        if "worktree" in fields:
            branch = fields.get("branch")
            entries.append(
                WorktreeEntry(
                    path=fields["worktree"],
                    head=fields.get("HEAD"),
                    branch=branch.removeprefix("refs/heads/") if branch else None,
                    bare="bare" in fields,
                    locked="locked" in fields,
                    prunable="prunable" in fields,
                )
            )
        fields = {}
    return entries


def find_worktree(entries: list[WorktreeEntry], path: Path) -> WorktreeEntry | None:
    """The registration of ``path``, if any.

    Git lists the paths it registered resolved, so ``path`` is resolved once and compared as
    text; only a registration with the same last name is resolved in turn (one registered
    through a symlinked folder). Resolving every registration, two ``realpath`` calls per
    entry, cost 26 ms per realize with 1,000 open worktrees.
    """
    target = os.path.realpath(path)
    plain = str(path)
    for entry in entries:
        if entry.path in (target, plain):
            return entry
    name = os.path.basename(target)
    for entry in entries:
        if os.path.basename(entry.path) == name and os.path.realpath(entry.path) == target:
            return entry
    return None


def branch_checked_out_in(entries: list[WorktreeEntry], branch: str) -> WorktreeEntry | None:
    """The worktree that has ``branch`` checked out, if any."""
    for entry in entries:
        if entry.branch == branch:
            return entry
    return None


async def status_counts(git: GitRunner, cwd: Path) -> StatusCounts:
    """Count changes with ``git status --porcelain=v1 -z --untracked-files=all``.

    Raises:
        HostOperationError: The status could not be read.
    """
    result = await git.run(
        [
            "--no-optional-locks",
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--ignore-submodules=all",
        ],
        cwd=cwd,
        check=True,
    )
    dirty = untracked = 0
    samples: list[str] = []
    tokens = iter(result.stdout.split("\0"))
    for token in tokens:
        if len(token) < 4:
            continue
        code, name = token[:2], token[3:]
        if code == "??":
            untracked += 1
        elif code != "!!":
            dirty += 1
            if len(samples) < 5:
                samples.append(name)
        if "R" in code or "C" in code:
            next(tokens, None)  # the original path of a rename or copy
    return StatusCounts(dirty=dirty, untracked=untracked, dirty_samples=tuple(samples))
