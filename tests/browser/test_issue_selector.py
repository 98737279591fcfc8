"""The issue page's workspace selector (Paperclip's ``project-workspaces-tab.ts``): the modes, the
project default pre-selected and labelled with the project's mode, the reusable workspaces grouped
by project workspace; choosing one saves the issue's ``executionWorkspaceSettings``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect

from tests.browser.apiutil import operator_board
from tests.browser.pageutil import screenshot, sign_in
from tests.e2e.runtimeutil import status_of

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

SHARED_BY_DEFAULT: dict[str, Any] = {
    "enabled": True,
    "defaultMode": "shared_workspace",
    "allowIssueOverride": True,
    "workspaceStrategy": {"type": "git_worktree", "baseRef": "main"},
}
"""Issues share the project's checkout unless they choose otherwise."""


async def test_the_selector_shows_the_modes_and_saves_isolated(
    stack: Any, tmp_path: Path, page: Page
) -> None:
    async with operator_board(stack, tmp_path, policy=SHARED_BY_DEFAULT) as operator:
        board = operator.board
        # An isolated workspace of another issue, open: reusable.
        other = await board.http.post(
            f"/api/companies/{operator.company_id}/issues",
            json={
                "title": "Earlier work",
                "projectId": board.project["id"],
                "status": "in_progress",
                "executionWorkspaceSettings": {"mode": "isolated_workspace"},
            },
        )
        assert other.status_code == 201, status_of(other)
        realized = await board.http.post(
            f"/api/issues/{other.json()['id']}/execution-workspace", json={}
        )
        assert realized.status_code == 201, status_of(realized)
        reusable = realized.json()["workspace"]
        assert reusable["mode"] == "isolated_workspace", reusable
        created = await board.http.post(
            f"/api/companies/{operator.company_id}/issues",
            json={"title": "Pick a workspace", "projectId": board.project["id"]},
        )
        assert created.status_code == 201, status_of(created)
        issue = created.json()
        await sign_in(page, operator.key)
        await page.goto(f"/issues/{issue['id']}")
        await expect(page.get_by_role("heading", level=1)).to_have_text(
            f"{issue['identifier']} {issue['title']}"
        )
        select = page.get_by_label("Workspace mode")
        options = await select.locator("option").evaluate_all(
            "els => els.map(o => ({label: o.textContent.trim(), value: o.value,"
            " selected: o.selected, group: o.parentElement.tagName === 'OPTGROUP'"
            " ? o.parentElement.label : null}))"
        )
        labels = [o["label"] for o in options]
        default = options[0]
        assert default["label"].startswith("Project default ("), labels
        assert "shared" in default["label"].lower(), default
        assert default["selected"] is True, options
        for label in ("Shared workspace", "Isolated workspace", "Operator branch"):
            assert label in labels, labels
        reuse = [o for o in options if o["group"]]
        assert reuse == [
            {
                "label": f"{reusable['name']} ({reusable['branchName']})",
                "value": f"reuse:{reusable['id']}",
                "selected": False,
                "group": f"Reuse existing — {board.project_workspace['name']}",
            }
        ], options
        await screenshot(page, "issue")
        # Choosing "Isolated workspace" saves it.
        await select.select_option(label="Isolated workspace")
        await expect(page.get_by_role("status").filter(has_text="Saved")).to_be_visible()
        read = await board.http.get(f"/api/issues/{issue['id']}")
        assert read.status_code == 200, status_of(read)
        assert read.json()["executionWorkspaceSettings"]["mode"] == "isolated_workspace", (
            read.json()
        )
        # The page shown afresh keeps the choice.
        await page.reload()
        selected = await page.get_by_label("Workspace mode").evaluate(
            "el => el.options[el.selectedIndex].textContent.trim()"
        )
        assert selected == "Isolated workspace"
        # Reusing the other issue's workspace saves the id with it.
        await page.get_by_label("Workspace mode").select_option(f"reuse:{reusable['id']}")
        await expect(page.get_by_role("status").filter(has_text="Saved")).to_be_visible()
        read = await board.http.get(f"/api/issues/{issue['id']}")
        settings = read.json()["executionWorkspaceSettings"]
        assert settings["mode"] == "reuse_existing", settings
        assert settings["executionWorkspaceId"] == reusable["id"], settings
