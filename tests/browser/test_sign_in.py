"""Signing in with a board key through the page: the key travels in a request body only; no URL,
browser storage or service log ever holds it; the only cookie is the HttpOnly session cookie."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import BrowserContext, Page, Request, expect

from tests.browser.apiutil import operator_board
from tests.browser.pageutil import screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.browser]


def _log_files(stack: Any) -> list[Path]:
    """Every service's own log (stdout and stderr) and every ``*.log`` under the stack's home."""
    files = [Path(process.log_path) for process in stack.processes.values()]
    files += [path for path in Path(stack.home).rglob("*.log") if path.is_file()]
    return files


async def test_sign_in_keeps_the_key_out_of_urls_storage_and_logs(
    stack: Any, tmp_path: Path, context: BrowserContext, page: Page
) -> None:
    async with operator_board(stack, tmp_path, name="Zebra Works") as operator:
        key = operator.key
        urls: list[str] = []
        posted: list[Request] = []

        def on_request(request: Request) -> None:
            urls.append(request.url)
            if request.method == "POST":
                posted.append(request)

        page.on("request", on_request)
        page.on("framenavigated", lambda frame: urls.append(frame.url))
        # Without a session a page redirects to the sign-in form.
        sign_in_url = re.compile(re.escape(f"{stack.api}/sign-in") + r"(\?.*)?$")
        await page.goto("/workspaces")
        await expect(page).to_have_url(sign_in_url)
        answer = await page.goto("/sign-in")
        assert answer is not None
        headers = answer.headers
        assert "script-src 'self'" in headers.get("content-security-policy", ""), headers
        assert "frame-ancestors 'none'" in headers.get("content-security-policy", ""), headers
        assert headers.get("referrer-policy") == "no-referrer", headers
        assert headers.get("x-content-type-options") == "nosniff", headers
        field = page.get_by_label("Board key")
        assert await field.get_attribute("type") == "password"
        await screenshot(page, "sign-in")
        # A wrong key: the API's message next to the field, no cookie.
        await field.fill("cy_board_not-a-real-key")
        await page.get_by_role("button", name="Sign in").click()
        async with stack.client() as anonymous:
            refused = await anonymous.post("/api/session", json={"key": "cy_board_not-a-real-key"})
        assert refused.status_code == 401, refused.text
        await expect(page.get_by_role("alert")).to_contain_text(refused.json()["error"])
        assert await context.cookies() == []
        # The real key.
        await field.fill(key)
        await page.get_by_role("button", name="Sign in").click()
        await page.wait_for_url("**/workspaces")
        await expect(page.get_by_role("heading", name="Execution workspaces")).to_be_visible()
        nav = page.get_by_role("navigation", name="Main")
        for link in ("Workspaces", "Issues", "Runs"):
            await expect(nav.get_by_role("link", name=link)).to_be_visible()
        await expect(page.locator("body")).to_contain_text("Zebra Works")
        # The key went in a POST body, never in a URL.
        assert any(key in (request.post_data or "") for request in posted), [r.url for r in posted]
        assert urls
        leaked = [url for url in urls if key in url]
        assert leaked == [], leaked
        # Nothing in browser storage; the only cookie is the HttpOnly session cookie.
        storage = await page.evaluate(
            "async () => ({local: localStorage.length, session: sessionStorage.length,"
            " idb: (await indexedDB.databases()).length})"
        )
        assert storage == {"local": 0, "session": 0, "idb": 0}, storage
        cookies = await context.cookies()
        assert [c["name"] for c in cookies] == ["clipyard_session"], cookies
        assert cookies[0]["httpOnly"] is True, cookies
        assert cookies[0]["sameSite"] == "Strict", cookies
        assert key not in cookies[0]["value"]
        assert "clipyard_session" not in await page.evaluate("document.cookie")
        # The runs page (the company's runs), through the main navigation.
        await page.get_by_role("navigation", name="Main").get_by_role("link", name="Runs").click()
        await page.wait_for_url("**/runs")
        await expect(page.get_by_role("table", name="Runs")).to_be_visible()
        # Signing out ends the session: pages redirect to the sign-in form again.
        await page.get_by_role("button", name="Sign out").click()
        await page.wait_for_url("**/sign-in")
        await page.goto("/workspaces")
        await expect(page).to_have_url(sign_in_url)
        # No service log holds the key (the board key was made by the admin through the API).
        for path in _log_files(stack):
            assert key not in path.read_text(errors="replace"), f"the board key is in {path}"
