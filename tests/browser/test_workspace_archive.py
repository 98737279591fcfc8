"""Archiving a workspace from its page: a confirmation dialog, then the status shows archived and
the timeline grows with the archive's events; a reopen made through the API shows up live."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect

from tests.browser.apiutil import operator_board
from tests.browser.pageutil import expect_live, section, sign_in
from tests.e2e.runtimeutil import status_of

pytestmark = [pytest.mark.e2e, pytest.mark.browser]


async def test_archive_from_the_page_and_the_timeline_grows(
    stack: Any, tmp_path: Path, page: Page
) -> None:
    async with operator_board(stack, tmp_path) as operator:
        board = operator.board
        issue, ws = await board.realize("Finish and archive")
        done = await board.http.patch(f"/api/issues/{issue['id']}", json={"status": "done"})
        assert done.status_code == 200, status_of(done)
        await sign_in(page, operator.key)
        await page.goto(f"/workspaces/{ws['id']}")
        await expect_live(page)
        status = section(page, "Summary").locator('[data-field="status"]')
        await expect(status).to_have_text("active")
        timeline = section(page, "Timeline")
        entries = timeline.get_by_role("button", name="As it was after")
        events = (await board.http.get(f"/api/execution-workspaces/{ws['id']}/events")).json()
        await expect(entries).to_have_count(len(events))
        before = len(events)
        # "As it was after" the first event: the workspace's state then, in a live panel.
        panel = page.locator('[aria-live="polite"]').filter(has_text=ws["branchName"])
        await expect(panel).to_have_count(0)
        await entries.first.click()
        await expect(panel).to_be_visible()
        # Archive: a dialog asks first.
        await section(page, "Lifecycle").get_by_role("button", name="Archive workspace").click()
        dialog = page.get_by_role("dialog")
        await expect(dialog).to_be_visible()
        await dialog.get_by_role("button", name=re.compile("archive", re.I)).click()
        await expect(status).to_have_text("archived", timeout=30_000)
        await expect(
            section(page, "Lifecycle").get_by_role("button", name="Reopen workspace")
        ).to_be_visible()
        # The timeline grew on the page (without a reload) to every event the API lists.
        events = (await board.http.get(f"/api/execution-workspaces/{ws['id']}/events")).json()
        assert len(events) > before, [e["type"] for e in events]
        assert "workspace.archived.v1" in [e["type"] for e in events]
        await expect(entries).to_have_count(len(events), timeout=10_000)
        await expect(timeline).to_contain_text("workspace.archived.v1")
        # Reopened through the API while the page is open: the page follows by itself.
        archived = len(events)
        reopened = await board.http.patch(
            f"/api/execution-workspaces/{ws['id']}", json={"status": "active"}
        )
        assert reopened.status_code == 200, status_of(reopened)
        await expect(status).to_have_text("active", timeout=15_000)
        events = (await board.http.get(f"/api/execution-workspaces/{ws['id']}/events")).json()
        assert len(events) > archived
        await expect(entries).to_have_count(len(events), timeout=10_000)
