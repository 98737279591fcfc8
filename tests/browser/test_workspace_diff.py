"""A workspace's "Changes" on its page: two commits and an untracked file made in its worktree
show up with their names, a changed file's diff opens from its link, and a file changed while the
page is open shows after "Refresh"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect

from tests.browser.apiutil import operator_board
from tests.browser.pageutil import doc_screenshot, screenshot, section, sign_in
from tests.e2e.gitutil import git

pytestmark = [pytest.mark.e2e, pytest.mark.browser]


def _commit(worktree: Path, name: str, text: str, message: str) -> None:
    (worktree / name).write_text(text)
    git(worktree, "add", name)
    git(worktree, "commit", "-q", "-m", message)


async def test_two_commits_and_an_untracked_file_show_in_the_workspace_diff(
    stack: Any, tmp_path: Path, page: Page
) -> None:
    async with operator_board(stack, tmp_path) as operator:
        _, ws = await operator.board.realize("Show the diff")
        worktree = Path(ws["cwd"])
        _commit(worktree, "login.py", "def login():\n    return True\n", "Add login")
        _commit(worktree, "README.md", "# Robot\n\nLogin works.\n", "Document login")
        (worktree / "scratch.txt").write_text("todo\n")
        await sign_in(page, operator.key)
        await page.goto(f"/workspaces/{ws['id']}")
        changes = section(page, "Changes")
        commits = changes.locator('[data-field="diff-commits"] li')
        await expect(commits).to_have_count(2)
        await expect(commits.nth(0)).to_contain_text("Document login")
        await expect(commits.nth(1)).to_contain_text("Add login")
        files = changes.get_by_role("table", name="Changed files")
        await expect(files.get_by_role("rowheader")).to_have_text(["README.md", "login.py"])
        await expect(changes.locator('[data-field="diff-untracked"]')).to_have_text("scratch.txt")
        # A file's diff, from its link.
        await files.get_by_role("link", name="login.py").click()
        patch = section(page, "Changes").locator('[data-field="diff-patch"]')
        await expect(patch).to_contain_text("+def login():")
        await expect(patch.locator(".diff-add").first).to_be_visible()
        await screenshot(page, "workspace-diff")
        await doc_screenshot(page, "workspace-page")
        # Changed while the page is open: "Refresh" shows it.
        (worktree / "login.py").write_text("def login():\n    return False\n")
        await section(page, "Changes").get_by_role("link", name="Refresh").click()
        await expect(section(page, "Changes").locator('[data-field="diff-patch"]')).to_contain_text(
            "+    return False"
        )
