"""Delivery facts of a branch against its base (reference §3.4; DECISIONS 2).

* ``merged_by_ancestry``: ``git merge-base --is-ancestor <head> <base>`` (a branch with no commits
  of its own is trivially merged; ``commits_ahead`` 0 says so).
* ``merged_by_squash``: the branch has commits of its own, is not an ancestor, and either
  ``git merge-tree --write-tree <base> <head>`` yields the base's own tree (merging would change
  nothing), or the combined diff from the merge base has the patch id of a commit in the base.
"""

from __future__ import annotations

from pathlib import Path

from workspace_realizer.adapters.gitcli import GitRunner
from workspace_realizer.adapters.ports import DeliveryFacts
from workspace_realizer.adapters.probes import rev_parse

__all__ = ["PATCH_ID_SCAN_LIMIT", "delivery_facts", "unknown_delivery"]

PATCH_ID_SCAN_LIMIT = 500
"""Commits of the base (after the merge base) whose patch ids are compared."""

_DIFF_FLAGS = ["--no-color", "--no-ext-diff", "--no-textconv", "--binary", "--full-index"]


def unknown_delivery(head_sha: str | None = None) -> DeliveryFacts:
    """Facts that could not be established."""
    return DeliveryFacts(
        merged_by_ancestry=None, merged_by_squash=None, commits_ahead=None, head_sha=head_sha
    )


async def _patch_ids(git: GitRunner, cwd: Path, patch_text: str) -> set[str]:
    if not patch_text.strip():
        return set()
    result = await git.run(
        ["patch-id", "--stable"], cwd=cwd, stdin=patch_text.encode("utf-8", "surrogateescape")
    )
    if not result.ok:
        return set()
    return {line.split()[0] for line in result.stdout.splitlines() if line.strip()}


async def _squash_by_patch_id(
    git: GitRunner, cwd: Path, merge_base: str, head: str, base: str
) -> bool | None:
    combined = await git.run(["diff", *_DIFF_FLAGS, merge_base, head], cwd=cwd)
    if not combined.ok:
        return None
    wanted = await _patch_ids(git, cwd, combined.stdout)
    if not wanted:
        return False
    log = await git.run(
        [
            "log",
            "-p",
            "--no-merges",
            "--pretty=medium",
            f"--max-count={PATCH_ID_SCAN_LIMIT}",
            *_DIFF_FLAGS,
            f"{merge_base}..{base}",
        ],
        cwd=cwd,
    )
    if not log.ok:
        return None
    return bool(wanted & await _patch_ids(git, cwd, log.stdout))


async def delivery_facts(
    git: GitRunner, cwd: Path, head_rev: str, base_ref: str | None
) -> DeliveryFacts:
    """Compute the delivery facts of ``head_rev`` against ``base_ref`` (None facts when unknown).

    Args:
        git: The runner.
        cwd: Where to run git (the worktree, or the repository when the worktree is gone).
        head_rev: ``HEAD`` or the branch.
        base_ref: The workspace's base ref.

    Returns:
        The facts; any that could not be read are None.
    """
    head = await rev_parse(git, cwd, head_rev)
    if head is None or not base_ref:
        return unknown_delivery(head)
    base = await rev_parse(git, cwd, base_ref)
    if base is None:
        return unknown_delivery(head)
    count = await git.run(["rev-list", "--count", f"{base}..{head}"], cwd=cwd)
    commits_ahead = int(count.out) if count.ok and count.out.isdigit() else None
    ancestry = await git.run(["merge-base", "--is-ancestor", head, base], cwd=cwd)
    merged_by_ancestry: bool | None = None
    if ancestry.returncode in (0, 1):
        merged_by_ancestry = ancestry.returncode == 0
    if merged_by_ancestry is not False:
        return DeliveryFacts(
            merged_by_ancestry=merged_by_ancestry,
            merged_by_squash=False if merged_by_ancestry else None,
            commits_ahead=commits_ahead,
            head_sha=head,
        )
    squash: bool | None = None
    merged = await git.run(["merge-tree", "--write-tree", "--no-messages", base, head], cwd=cwd)
    base_tree = await git.run(["rev-parse", "--verify", "--quiet", f"{base}^{{tree}}"], cwd=cwd)
    if merged.returncode == 0 and base_tree.ok and merged.out.splitlines()[:1] == [base_tree.out]:
        squash = True
    else:
        merge_base = await git.run(["merge-base", base, head], cwd=cwd)
        if merge_base.ok and merge_base.out:
            squash = await _squash_by_patch_id(git, cwd, merge_base.out, head, base)
        elif merge_base.returncode == 1:
            squash = False  # unrelated histories
    return DeliveryFacts(
        merged_by_ancestry=False,
        merged_by_squash=squash,
        commits_ahead=commits_ahead,
        head_sha=head,
    )
