"""Archiving a workspace from its page: a confirmation dialog; refused while an issue is open
(the API's message and reasons stay in "Lifecycle" while live events re-render the page, and the
focus comes back to the button); then the status shows archived, the focus is on "Reopen
workspace", the timeline grows with the archive's events (done by the board key, shown by its
name) and "As it was after" shows the state before the archive, scrolled into view and focused;
a reopen made through the API shows up live."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Locator, Page, expect

from tests.browser.apiutil import operator_board
from tests.browser.pageutil import expect_live, section, sign_in
from tests.e2e.runtimeutil import status_of

pytestmark = [pytest.mark.e2e, pytest.mark.browser]


def _fact(panel: Locator, term: str) -> Locator:
    """The ``<dd>`` after the ``<dt>`` ``term`` in ``panel``'s facts."""
    return panel.locator(f"xpath=.//dt[normalize-space()='{term}']/following-sibling::dd[1]")


async def _confirm_archive(page: Page) -> None:
    """ "Archive workspace", then "Archive" in the dialog that asks first."""
    await section(page, "Lifecycle").get_by_role("button", name="Archive workspace").click()
    dialog = page.get_by_role("dialog")
    await expect(dialog).to_be_visible()
    await dialog.get_by_role("button", name=re.compile("^archive$", re.I)).click()


async def test_archive_from_the_page_and_the_timeline_grows(
    stack: Any, tmp_path: Path, page: Page
) -> None:
    async with operator_board(stack, tmp_path) as operator:
        board = operator.board
        issue, ws = await board.realize("Finish and archive")
        path = f"/api/execution-workspaces/{ws['id']}"
        # What the API says while the issue is open (a refused archive changes nothing).
        blocked = await board.http.patch(path, json={"status": "archived"})
        assert blocked.status_code == 409, status_of(blocked)
        assert blocked.json()["code"] == "close_blocked", blocked.json()
        await sign_in(page, operator.key)
        await page.goto(f"/workspaces/{ws['id']}")
        await expect_live(page)
        status = section(page, "Summary").locator('[data-field="status"]')
        await expect(status).to_have_text("active")
        timeline = section(page, "Timeline")
        entries = timeline.get_by_role("button", name="As it was after")
        events = (await board.http.get(f"{path}/events")).json()
        await expect(entries).to_have_count(len(events))
        # Archiving from the page is refused: the API's message and its reasons in "Lifecycle",
        # the focus back on the button.
        lifecycle = section(page, "Lifecycle")
        await _confirm_archive(page)
        alert = lifecycle.get_by_role("alert").filter(has_text=blocked.json()["error"])
        await expect(alert).to_be_visible()
        await expect(lifecycle.locator("[data-blocking-reasons]")).to_contain_text(
            issue["identifier"]
        )
        archive = lifecycle.get_by_role("button", name="Archive workspace")
        await expect(archive).to_be_focused()
        # A live event re-renders the sections: the message stays until the next action.
        changed = await board.http.patch(path, json={"config": {"cleanupCommand": "true"}})
        assert changed.status_code == 200, status_of(changed)
        events = (await board.http.get(f"{path}/events")).json()
        await expect(entries).to_have_count(len(events), timeout=10_000)
        await page.wait_for_timeout(500)
        await expect(alert).to_be_visible()
        await expect(lifecycle.locator("[data-blocking-reasons]")).to_contain_text(
            issue["identifier"]
        )
        # The issue is done: archiving goes through.
        done = await board.http.patch(f"/api/issues/{issue['id']}", json={"status": "done"})
        assert done.status_code == 200, status_of(done)
        events = (await board.http.get(f"{path}/events")).json()
        await expect(entries).to_have_count(len(events), timeout=10_000)
        before = len(events)
        await _confirm_archive(page)
        await expect(status).to_have_text("archived", timeout=30_000)
        await expect(
            lifecycle.get_by_role("alert").filter(has_text=re.compile(r"\S"))
        ).to_have_count(0)
        reopen = lifecycle.get_by_role("button", name="Reopen workspace")
        await expect(reopen).to_be_visible()
        await expect(reopen).to_be_focused()
        # The timeline grew on the page (without a reload) to every event the API lists.
        events = (await board.http.get(f"{path}/events")).json()
        types = [e["type"] for e in events]
        assert len(events) > before, types
        assert "workspace.archived.v1" in types
        await expect(entries).to_have_count(len(events), timeout=10_000)
        await expect(timeline).to_contain_text("workspace.archived.v1")
        # Who archived it: the board key the operator signed in with, by its name.
        archived_event = events[types.index("workspace.archived.v1")]
        assert archived_event["actor"]["type"] == "board", archived_event
        who = timeline.locator(f'li[data-event-id="{archived_event["eventId"]}"]')
        await expect(who.locator('[data-field="event-actor"]')).to_have_text("b (board key)")
        # "As it was after" the first event: its result, far below on the page, is scrolled to
        # and focused.
        panel = page.locator("[data-history-panel]")
        await entries.first.click()
        result = panel.get_by_role("heading", name=re.compile("^After event"))
        await expect(result).to_be_focused()
        await expect(result).to_be_in_viewport()
        await expect(entries.first).not_to_be_in_viewport()
        # ... after the last event before the archive: active, unlike now.
        await entries.nth(before - 1).click()
        await expect(_fact(panel, "Status")).to_have_text("active")
        await expect(_fact(panel, "Branch")).to_have_text(ws["branchName"])
        await expect(status).to_have_text("archived")
        # ... and after the archive event itself: archived.
        await entries.nth(types.index("workspace.archived.v1")).click()
        await expect(_fact(panel, "Status")).to_have_text("archived")
        # Reopened through the API while the page is open: the page follows by itself.
        archived = len(events)
        reopened = await board.http.patch(path, json={"status": "active"})
        assert reopened.status_code == 200, status_of(reopened)
        await expect(status).to_have_text("active", timeout=15_000)
        events = (await board.http.get(f"{path}/events")).json()
        assert len(events) > archived
        await expect(entries).to_have_count(len(events), timeout=10_000)
