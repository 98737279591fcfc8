"""What the browser tests do on the operator page: sign in, find a section, save screenshots."""

from __future__ import annotations

import os
from pathlib import Path

from playwright.async_api import Locator, Page, expect

__all__ = [
    "DOC_SCREENSHOTS",
    "SCREENSHOTS",
    "doc_screenshot",
    "expect_live",
    "screenshot",
    "section",
    "sign_in",
]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
"""Where the tests save a screenshot of each page (git-ignored; CI keeps them)."""

DOC_SCREENSHOTS = "CLIPYARD_DOC_SCREENSHOTS"
"""The variable naming the folder of the documentation's screenshots (``just screenshots`` sets
it to ``docs/images``); unset, :func:`doc_screenshot` saves nothing."""


async def screenshot(page: Page, name: str) -> Path:
    """Save a full-page screenshot as ``artifacts/screenshots/<name>.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0, path
    return path


async def doc_screenshot(page: Page, name: str) -> Path | None:
    """With ``CLIPYARD_DOC_SCREENSHOTS`` set, save what the window shows (its viewport, scrolled
    to the top) as ``<that folder>/<name>.png``, for the README; else nothing."""
    folder = os.environ.get(DOC_SCREENSHOTS)
    if not folder:
        return None
    path = Path(folder) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    await page.evaluate("window.scrollTo(0, 0)")
    await page.screenshot(path=str(path), animations="disabled", caret="hide")
    assert path.stat().st_size > 0, path
    return path


async def sign_in(page: Page, key: str) -> None:
    """Sign in through the page: the key typed into "Board key", then "Sign in"."""
    await page.goto("/sign-in")
    await page.get_by_label("Board key").fill(key)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url("**/workspaces")


def section(page: Page, heading: str) -> Locator:
    """The ``<section aria-labelledby>`` of the workspace detail titled ``heading`` (its h2)."""
    return page.get_by_role("region", name=heading, exact=True)


async def expect_live(page: Page) -> None:
    """Wait for the page's live status line to say "Live" (its EventSource is open)."""
    await expect(page.get_by_role("status").filter(has_text="Live")).to_be_visible()
