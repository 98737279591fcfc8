"""The workspaces list updates live: a workspace realized through the API while the page is open
appears as a row without a reload (the page's EventSource on the company's event stream), also
one realized right after the page loaded, before its stream opened (the page refreshes when the
stream opens)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, Route, expect

from tests.browser.apiutil import operator_board
from tests.browser.pageutil import expect_live, screenshot, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.browser]


async def _choose(page: Page, label: str, value: str) -> None:
    """Set a filter field, whether the page made it a ``<select>`` or a text input."""
    field = page.get_by_label(label, exact=True)
    if await field.evaluate("el => el.tagName") == "SELECT":
        await field.select_option(value)
    else:
        await field.fill(value)


async def test_a_realized_workspace_appears_without_reload(
    stack: Any, tmp_path: Path, page: Page
) -> None:
    async with operator_board(stack, tmp_path) as operator:
        await sign_in(page, operator.key)
        table = page.get_by_role("table", name="Execution workspaces")
        await expect(table).to_be_visible()
        await expect(table.locator("tr[data-workspace-id]")).to_have_count(0)
        await expect_live(page)
        # A mark in the document: a reload or a navigation would lose it.
        await page.evaluate("window.__sameDocument = true")
        navigations: list[str] = []
        page.on("framenavigated", lambda frame: navigations.append(frame.url))
        issue, workspace = await operator.board.realize("Show it live")
        row = table.locator(f'tr[data-workspace-id="{workspace["id"]}"]')
        await expect(row).to_be_visible(timeout=10_000)
        await expect(row.get_by_role("link", name=workspace["name"])).to_be_visible()
        await expect(row).to_contain_text("active")
        await expect(row).to_contain_text(workspace["branchName"])
        await expect(row).to_contain_text(workspace["mode"])
        assert await page.evaluate("window.__sameDocument") is True
        assert navigations == [], navigations
        await screenshot(page, "workspaces")
        # Filtering by status: archived ones only, the query string says so, the row is gone.
        await _choose(page, "Status", "archived")
        await page.get_by_role("button", name="Apply filters").click()
        await page.wait_for_url("**/workspaces?*status=archived*")
        await expect(table.locator("tr[data-workspace-id]")).to_have_count(0)
        await page.goto("/workspaces")
        # The row's link opens the detail.
        await row.get_by_role("link", name=workspace["name"]).click()
        await page.wait_for_url(f"**/workspaces/{workspace['id']}")
        await expect(page.get_by_role("heading", level=1)).to_have_text(workspace["name"])
        assert issue["id"] == workspace["sourceIssueId"]
        # Realized right after the page loaded, before its event stream opened (held here until
        # the workspace exists): the page catches up when the stream opens, no reload.
        opened = asyncio.Event()

        async def hold(route: Route) -> None:
            await opened.wait()
            await route.fallback()

        await page.route("**/events/stream*", hold)
        await page.goto("/workspaces")
        await page.evaluate("window.__sameDocument = true")
        later_table = page.get_by_role("table", name="Execution workspaces")
        await expect(later_table.locator("tr[data-workspace-id]")).to_have_count(1)
        _, late = await operator.board.realize("Realized before the stream opened")
        opened.set()
        late_row = later_table.locator(f'tr[data-workspace-id="{late["id"]}"]')
        await expect(late_row).to_be_visible(timeout=10_000)
        assert await page.evaluate("window.__sameDocument") is True
        await page.unroute("**/events/stream*", hold)
