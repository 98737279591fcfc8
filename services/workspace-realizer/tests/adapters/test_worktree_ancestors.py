"""The realizer never makes a worktree below a folder a company's contained processes own
(another workspace's worktree): a link planted there would lead root's ``mkdir`` and ``git
worktree add`` anywhere on the host (docs/design/isolation.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workspace_realizer.adapters.ports import HostOperationError
from workspace_realizer.adapters.worktrees import check_no_company_ancestor


def test_a_worktree_below_a_companys_folder_or_its_link_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "worktrees" / "a"
    theirs.mkdir(parents=True)
    os.chown(theirs, 1_200_001, 1_200_001)
    with pytest.raises(HostOperationError) as refused:
        check_no_company_ancestor(theirs / "sub" / "ACME-2")
    assert "a company's processes own" in str(refused.value)
    (theirs / "link").symlink_to("/etc")
    os.lchown(theirs / "link", 1_200_001, 1_200_001)
    with pytest.raises(HostOperationError):
        check_no_company_ancestor(theirs / "link" / "ACME-3")
    # Beside it, in folders of root's, is fine.
    check_no_company_ancestor(tmp_path / "worktrees" / "b" / "ACME-4")
