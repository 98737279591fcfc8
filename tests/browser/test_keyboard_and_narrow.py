"""Keyboard use and a narrow screen on the workspace detail: the main controls are reached with
Tab (focus visible) and operated with Enter and Space; at 375 px the page reflows to one column
(no sideways scrolling) and is saved as a screenshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect

from tests.browser.apiutil import operator_board, wait_supervisor_knows
from tests.browser.pageutil import screenshot, section, sign_in
from tests.e2e.runtimeutil import http_service

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

FOCUSED = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const label = el.labels && el.labels.length ? el.labels[0].textContent : null;
  const style = getComputedStyle(el);
  return {
    name: (el.getAttribute('aria-label') || label || el.textContent || '').trim()
      .replace(/\\s+/g, ' '),
    tag: el.tagName,
    outline: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0
      || style.boxShadow !== 'none',
  };
}"""

WIDEST = """() => [...document.querySelectorAll('body *')]
  .map(el => [el, el.getBoundingClientRect().right,
    el.parentElement ? el.parentElement.getBoundingClientRect().right : 0])
  .filter(([el, right, parent]) => right > window.innerWidth + 1 && right > parent + 1)
  .sort((a, b) => b[1] - a[1])
  .slice(0, 6)
  .map(([el, right]) => el.tagName + (el.id ? '#' + el.id : '')
    + (el.className ? '.' + el.className : '') + ' ' + Math.round(right) + 'px')"""
"""The elements that reach past the viewport and past their parent, widest first (for the
failure message)."""

MAIN_CONTROLS = (
    "Workspaces",
    "Issues",
    "Runs",
    "Sign out",
    "Start web",
    "Stop web",
    "Start all services",
    "Stop all services",
    "Run hello",
    "Save configuration",
    "Archive workspace",
)


async def _tab_to(page: Page, name: str, seen: list[dict[str, Any]], limit: int = 150) -> None:
    """Press Tab until the focused element's accessible name is ``name``."""
    for _ in range(limit):
        await page.keyboard.press("Tab")
        focused = await page.evaluate(FOCUSED)
        if focused is not None:
            seen.append(focused)
            if focused["name"] == name:
                return
    raise AssertionError(f"{name!r} never got the focus; focused: {[f['name'] for f in seen]}")


async def test_keyboard_reaches_and_operates_the_controls_and_narrow_reflows(
    stack: Any, tmp_path: Path, page: Page, reaper: None
) -> None:
    async with operator_board(stack, tmp_path) as operator:
        board = operator.board
        _, ws = await board.realize("Keys only")
        job = {"name": "hello", "command": "echo hello from the keyboard"}
        await board.set_runtime(ws["id"], {"services": [http_service("web")], "jobs": [job]})
        await wait_supervisor_knows(board, ws["id"], "service:web")
        await sign_in(page, operator.key)
        await page.goto(f"/workspaces/{ws['id']}")
        await expect(page.get_by_role("heading", level=1)).to_have_text(ws["name"])
        # Every main control is reached with Tab, in a full round over the page.
        seen: list[dict[str, Any]] = []
        for _ in range(200):
            await page.keyboard.press("Tab")
            focused = await page.evaluate(FOCUSED)
            if focused is None:
                continue
            if seen and focused == seen[0] and len(seen) > 5:
                break
            seen.append(focused)
        names = [f["name"] for f in seen]
        missing = [name for name in MAIN_CONTROLS if name not in names]
        assert missing == [], f"not reached with Tab: {missing}; reached: {names}"
        invisible = [f["name"] for f in seen if not f["outline"]]
        assert invisible == [], f"focus not visible on: {invisible}"
        # Operated from the keyboard: Enter starts the service, Space stops it.
        status = section(page, "Runtime services").locator('[data-field="service-status"]')
        start = page.get_by_role("button", name="Start web", exact=True)
        await start.focus()
        await page.keyboard.press("Enter")
        await expect(status).to_have_text("running", timeout=30_000)
        await page.get_by_role("button", name="Stop web", exact=True).focus()
        await page.keyboard.press("Space")
        await expect(status).to_have_text("stopped", timeout=30_000)
        # The "Show log" disclosure opens with the keyboard too.
        disclosure = section(page, "Runtime services").locator("details summary").first
        await disclosure.focus()
        await page.keyboard.press("Enter")
        await expect(section(page, "Runtime services").locator("details pre").first).to_be_visible()
        # A narrow screen: one column, nothing wider than the viewport.
        await page.set_viewport_size({"width": 375, "height": 800})
        await page.reload()
        await expect(page.get_by_role("heading", level=1)).to_have_text(ws["name"])
        await screenshot(page, "workspace-detail-375px")
        width = await page.evaluate("document.documentElement.scrollWidth")
        wide = await page.evaluate(WIDEST)
        assert width <= 375, f"the page is {width} px wide at a 375 px viewport; widest: {wide}"
        viewport = await page.locator('meta[name="viewport"]').get_attribute("content")
        assert viewport is not None
        assert "width=device-width" in viewport
