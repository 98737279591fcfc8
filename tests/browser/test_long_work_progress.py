"""Long work shows while it runs: the workspaces page lists a realize in progress at the step it
is at; a provision command that prints a line a second has its lines on the workspace page before
it ends, with the time it has been running; when it ends, its row says so."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect

from tests.browser.apiutil import operator_board
from tests.browser.pageutil import expect_live, section, sign_in
from tests.e2e.hostfacts import wait_until
from tests.e2e.runtimeutil import ISOLATED, status_of

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

SLOW_PROVISION = 'for i in 1 2 3 4 5 6 7 8 9 10; do echo "provision step $i"; sleep 1; done'
"""A provision command printing a line a second for ten seconds."""


async def test_a_provision_command_shows_its_lines_on_the_page_while_it_runs(
    stack: Any, tmp_path: Path, page: Page
) -> None:
    strategy = {**ISOLATED["workspaceStrategy"], "provisionCommand": SLOW_PROVISION}
    async with operator_board(
        stack, tmp_path, policy={**ISOLATED, "workspaceStrategy": strategy}
    ) as operator:
        board = operator.board
        issue = await board.http.post(
            f"/api/companies/{operator.company_id}/issues",
            json={
                "title": "Slow provision",
                "projectId": board.project["id"],
                "status": "in_progress",
            },
        )
        assert issue.status_code == 201, status_of(issue)
        await sign_in(page, operator.key)
        await expect_live(page)
        realizing = asyncio.create_task(
            board.http.post(f"/api/issues/{issue.json()['id']}/execution-workspace", json={})
        )
        # The workspaces page shows the realize in progress, at the step it is at.
        panel = page.get_by_role("region", name="Work in progress")
        work = panel.locator("[data-progress-operation]")
        await expect(work.locator('[data-field="progress-kind"]')).to_have_text("realize")
        await expect(work.locator('[data-field="progress-step"]')).to_contain_text(
            "workspace provision: started", timeout=15_000
        )
        await expect(work).to_contain_text("running for")

        async def workspace_id() -> str | None:
            listed = await board.http.get(
                f"/api/companies/{operator.company_id}/execution-workspaces"
            )
            rows = listed.json() if listed.status_code == 200 else []
            return str(rows[0]["id"]) if rows else None

        ws_id = await wait_until(workspace_id, 30, "the workspace being realized is listed", 0.2)
        assert ws_id is not None
        await page.goto(f"/workspaces/{ws_id}")
        operations = section(page, "Operations")
        live = operations.locator("[data-follow-operation]")
        await expect(live.locator('[data-follow-stream="stdout"]')).to_contain_text(
            "provision step 2", timeout=15_000
        )
        # Seen on the page while the command still runs (the realize request has not returned).
        assert not realizing.done(), "the provision ended before its output was seen"
        await expect(
            operations.locator('[data-field="operation-status"]').filter(has_text="running")
        ).to_contain_text("running for")
        await expect(live.locator('[data-follow-stream="stdout"]')).to_contain_text(
            "provision step 4", timeout=10_000
        )
        assert not realizing.done()
        answer = await realizing
        assert answer.status_code == 201, status_of(answer)
        # Ended: the row says so (a live event re-renders the section) and the live view is gone.
        provision = operations.locator("tr", has_text="workspace_provision")
        await expect(provision.locator('[data-field="operation-status"]')).to_have_text(
            "succeeded", timeout=15_000
        )
        await expect(live).to_have_count(0)
