"""The runs page shows a real heartbeat run (a trusted ``process`` agent woken without an issue);
a session ended while a live page is open (``DELETE /api/session`` with the page's cookie) sends
the page to the sign-in form instead of reconnecting its event stream forever."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import BrowserContext, Page, expect

from tests.browser.apiutil import operator_board
from tests.browser.pageutil import expect_live, screenshot, sign_in
from tests.e2e.heartbeatutil import grant_trust
from tests.e2e.hostfacts import wait_until
from tests.e2e.runtimeutil import status_of

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

AGENT_CONFIG = {
    "command": ["/usr/bin/python3", "-c", 'print(\'{"usage": {}, "result": "ok"}\')'],
}
"""An agent that answers at once with an empty usage and the result "ok"."""


async def test_the_runs_page_shows_a_real_run(stack: Any, tmp_path: Path, page: Page) -> None:
    async with operator_board(stack, tmp_path) as operator:
        board = operator.board
        made = await board.http.post(
            f"/api/companies/{operator.company_id}/agents",
            json={
                "name": "Quick answerer",
                "adapterType": "process",
                "adapterConfig": AGENT_CONFIG,
            },
        )
        assert made.status_code == 201, status_of(made)
        agent = await grant_trust(board.http, made.json()["id"])
        woken = await board.http.post(f"/api/agents/{agent['id']}/wakeup", json={})
        assert woken.status_code == 202, status_of(woken)
        run_id = woken.json()["runId"]
        seen: list[Any] = [None]

        async def ended() -> dict[str, Any] | None:
            answer = await board.http.get(f"/api/runs/{run_id}")
            assert answer.status_code == 200, status_of(answer)
            seen[0] = answer.json()
            return seen[0] if seen[0]["status"] not in ("queued", "running") else None

        run = await wait_until(ended, 60, f"run {run_id} to end")
        assert run["status"] == "succeeded", seen[0]
        await sign_in(page, operator.key)
        await page.goto("/runs")
        table = page.get_by_role("table", name="Runs")
        row = table.locator(f'tr[data-run-id="{run_id}"]')
        await expect(row).to_be_visible()
        await expect(row).to_contain_text("Quick answerer")
        await expect(row).to_contain_text("succeeded")
        await expect(row).to_contain_text(run["stage"])
        await expect(row.get_by_role("link").first).to_have_attribute("href", f"/api/runs/{run_id}")
        await screenshot(page, "runs")


async def test_a_session_ended_elsewhere_sends_the_page_to_sign_in(
    stack: Any, tmp_path: Path, context: BrowserContext, page: Page
) -> None:
    async with operator_board(stack, tmp_path) as operator:
        _, ws = await operator.board.realize("Watch me")
        await sign_in(page, operator.key)
        await page.goto(f"/workspaces/{ws['id']}")
        await expect_live(page)
        csrf = await page.locator('meta[name="csrf-token"]').get_attribute("content")
        (cookie,) = [c for c in await context.cookies() if c["name"] == "clipyard_session"]
        # The session ends through the API (as "Sign out" in another tab would); the page keeps
        # its cookie, which no longer opens anything.
        async with stack.client() as http:
            ended = await http.delete(
                "/api/session",
                headers={
                    "Cookie": f"clipyard_session={cookie['value']}",
                    "X-CSRF-Token": csrf or "",
                },
            )
        assert ended.status_code == 204, status_of(ended)
        await expect(page).to_have_url(
            re.compile(re.escape(f"{stack.api}/sign-in") + r"(\?.*)?$"), timeout=10_000
        )
        await expect(page.get_by_label("Board key")).to_be_visible()
