"""Browser tests: headless Debian ``chromium`` driven by Playwright against the ``stack`` fixture
(``tests/conftest.py``). One browser per test (Playwright objects belong to the test's event
loop), a fresh context (no cookies, no storage) and one page. Uncaught page errors and Content
Security Policy violations fail the test that caused them.

Waits are 15 s: actions and navigations through the context's default timeout, and every
``expect()`` assertion without its own ``timeout`` through Playwright's global assertion timeout
(``expect.set_options``; the context's default does not reach ``expect``, whose own default is
5 s, too short for a live update on a loaded CI machine)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Error,
    Page,
    async_playwright,
    expect,
)

from tests.e2e.hostfacts import reap

CHROMIUM = Path("/usr/bin/chromium")
"""Debian's ``chromium`` package; Playwright's own browser downloads are never used."""

WAIT_MS = 15_000
"""How long an action, a navigation or an ``expect()`` assertion waits by default."""


@pytest.fixture(autouse=True)
def assertion_timeout() -> Iterator[None]:
    """Every ``expect()`` of the test waits up to ``WAIT_MS`` unless it gives its own timeout.

    ``expect`` is one process-wide object: its option is put back to Playwright's default after
    the test.
    """
    expect.set_options(timeout=WAIT_MS)
    try:
        yield
    finally:
        expect.set_options(timeout=None)


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    """Headless Debian chromium (fails, never skips, when it is not installed)."""
    if not CHROMIUM.is_file():
        pytest.fail(
            f"{CHROMIUM} is missing: the browser tests drive Debian's chromium package; "
            "run ./dev (it installs the Debian package chromium) or apt-get install chromium",
            pytrace=False,
        )
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def context(browser: Browser, stack: Any) -> AsyncIterator[BrowserContext]:
    """A fresh browser context on the stack's API origin (no cookies, no storage)."""
    made = await browser.new_context(base_url=stack.api, viewport={"width": 1280, "height": 900})
    made.set_default_timeout(WAIT_MS)
    try:
        yield made
    finally:
        await made.close()


@pytest.fixture
async def page(context: BrowserContext) -> AsyncIterator[Page]:
    """A page of the context; page errors and CSP violations seen on it fail the test."""
    made = await context.new_page()
    problems: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text or "Refused to" in message.text:
            problems.append(f"console: {message.text}")

    def on_error(error: Error) -> None:
        problems.append(f"page error: {error.message}")

    made.on("console", on_console)
    made.on("pageerror", on_error)
    yield made
    if problems:
        pytest.fail("the page reported:\n" + "\n".join(problems), pytrace=False)


@pytest.fixture
async def reaper(stack: Any) -> AsyncIterator[None]:
    """Whatever a test leaves running of its stack's runtime services is killed after it."""
    yield
    reap(stack.home)
