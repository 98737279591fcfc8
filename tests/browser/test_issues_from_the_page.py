"""An issue handled from the page alone: created in a project with an assignee, shown with the
agent's name, moved to done; then its workspace archived from the workspace's page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect

from tests.browser.apiutil import create_process_agent, operator_board
from tests.browser.pageutil import screenshot, section, sign_in
from tests.e2e.hostfacts import wait_until
from tests.e2e.runtimeutil import status_of

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

QUICK = {"command": ["/usr/bin/python3", "-c", 'print(\'{"usage": {}, "result": "ok"}\')']}
"""An agent that answers at once (an assignment wakes it)."""


async def test_an_issue_created_assigned_and_done_from_the_page_then_its_workspace_archived(
    stack: Any, tmp_path: Path, page: Page
) -> None:
    async with operator_board(stack, tmp_path) as operator:
        board = operator.board
        agent = await create_process_agent(operator, "Quick answerer", QUICK)
        await sign_in(page, operator.key)
        await page.goto("/issues")
        form = page.locator("form[data-new-issue]")
        await form.get_by_label("Title").fill("Ship the login")
        await form.get_by_label("Project").select_option(label="Robot")
        await form.get_by_label("Assignee").select_option(label="Quick answerer")
        await form.get_by_label("Status").select_option("in_progress")
        await form.get_by_role("button", name="Create issue").click()
        await expect(page).to_have_url(re.compile(r"/issues/[0-9a-f-]{36}$"))
        issue_id = page.url.rsplit("/", 1)[1]
        facts = page.locator('[data-fragment="facts"]')
        await expect(facts.locator('[data-field="issue-assignee"]')).to_have_text("Quick answerer")
        await expect(facts.locator('[data-field="issue-status"]')).to_have_text("in_progress")
        issue = (await board.http.get(f"/api/issues/{issue_id}")).json()
        assert (issue["title"], issue["assigneeAgentId"]) == ("Ship the login", agent["id"])
        # Its workspace (the assignment's run may have made it already: then it is reused).
        realized = await board.http.post(f"/api/issues/{issue_id}/execution-workspace", json={})
        assert realized.status_code in (200, 201), status_of(realized)
        ws = realized.json()["workspace"]

        async def runs_done() -> bool | None:
            runs = (await board.http.get(
                f"/api/companies/{operator.company_id}/runs", params={"issueId": issue_id}
            )).json()  # fmt: skip
            return all(r["status"] not in ("queued", "running") for r in runs) or None

        await wait_until(runs_done, 60, "the assignment's run to end")
        # Done, from the page.
        change = page.locator("form[data-issue-change]")
        await change.get_by_label("Status").select_option("done")
        await change.get_by_role("button", name="Save changes").click()
        await expect(change.get_by_role("status")).to_have_text("Saved")
        await expect(facts.locator('[data-field="issue-status"]')).to_have_text("done")
        assert (await board.http.get(f"/api/issues/{issue_id}")).json()["status"] == "done"
        await screenshot(page, "issue")
        # Its workspace archived from its page.
        await page.goto(f"/workspaces/{ws['id']}")
        lifecycle = section(page, "Lifecycle")
        await lifecycle.get_by_role("button", name="Archive workspace").click()
        dialog = page.get_by_role("dialog")
        await dialog.get_by_role("button", name=re.compile("^archive$", re.I)).click()
        status = section(page, "Summary").locator('[data-field="status"]')
        await expect(status).to_have_text("archived", timeout=30_000)
