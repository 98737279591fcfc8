"""The issue page's workspace selector (Paperclip's ``project-workspaces-tab.ts``): the modes, the
project default pre-selected and labelled with the project's mode, the reusable workspaces grouped
by project workspace. Moving through the options (the keyboard's arrow keys fire ``change`` on
every press) sends nothing; "Save workspace mode" saves the issue's ``executionWorkspaceSettings``
with exactly one PATCH, and the focus stays where it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, Request, expect

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
        patches: list[Request] = []
        page.on("request", lambda r: patches.append(r) if r.method == "PATCH" else None)
        # With the keyboard: two presses of the down arrow reach "Isolated workspace" (each fires
        # `change`), and nothing is sent until the save action.
        await select.focus()
        await page.keyboard.press("ArrowDown")
        await page.keyboard.press("ArrowDown")
        chosen = await select.evaluate("el => el.options[el.selectedIndex].textContent.trim()")
        assert chosen == "Isolated workspace", chosen
        await page.wait_for_timeout(500)
        assert patches == [], [r.url for r in patches]
        save = page.get_by_role("button", name="Save workspace mode")
        await page.keyboard.press("Tab")
        await expect(save).to_be_focused()
        await page.keyboard.press("Enter")
        await expect(page.get_by_role("status").filter(has_text="Saved")).to_be_visible()
        assert [r.url for r in patches] == [f"{stack.api}/api/issues/{issue['id']}"]
        assert patches[0].post_data_json == {
            "executionWorkspaceSettings": {"mode": "isolated_workspace"}
        }
        # The focus stays on the save button (the section was re-rendered around it).
        await expect(save).to_be_focused()
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
        # Reusing the other issue's workspace saves the id with it (one PATCH, on "Save").
        patches.clear()
        await page.get_by_label("Workspace mode").select_option(f"reuse:{reusable['id']}")
        await page.wait_for_timeout(300)
        assert patches == [], [r.url for r in patches]
        await page.get_by_role("button", name="Save workspace mode").click()
        await expect(page.get_by_role("status").filter(has_text="Saved")).to_be_visible()
        assert len(patches) == 1, [r.url for r in patches]
        read = await board.http.get(f"/api/issues/{issue['id']}")
        settings = read.json()["executionWorkspaceSettings"]
        assert settings["mode"] == "reuse_existing", settings
        assert settings["executionWorkspaceId"] == reusable["id"], settings
