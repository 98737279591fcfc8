"""A real heartbeat run (a trusted ``process`` agent woken without an issue) appears on the runs
page live; its page shows its stages and its log growing, and Cancel ends it as cancelled;
a session ended while a live page is open (``DELETE /api/session`` with the page's cookie) sends
the page to the sign-in form instead of reconnecting its event stream forever."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import BrowserContext, Page, expect

from tests.browser.apiutil import create_process_agent, operator_board
from tests.browser.pageutil import doc_screenshot, expect_live, screenshot, sign_in
from tests.e2e.heartbeatutil import grant_trust
from tests.e2e.runtimeutil import status_of

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

STEPPER = (
    "import time\nfor i in range(600):\n    print(f'step {i}', flush=True)\n    time.sleep(0.2)\n"
)
AGENT_CONFIG = {"command": ["/usr/bin/python3", "-u", "-c", STEPPER], "timeoutSec": 300}
"""An agent that prints a numbered step five times a second for two minutes."""


async def test_a_run_appears_live_its_page_follows_its_log_and_cancel_ends_it(
    stack: Any, tmp_path: Path, page: Page
) -> None:
    async with operator_board(stack, tmp_path) as operator:
        board = operator.board
        made = await create_process_agent(operator, "Stepper", AGENT_CONFIG)
        agent = await grant_trust(board.http, made["id"])
        await sign_in(page, operator.key)
        await page.goto("/runs")
        await expect_live(page)
        # Woken through the API while the page is open: its row shows within 2 s, no reload.
        woken = await board.http.post(f"/api/agents/{agent['id']}/wakeup", json={})
        assert woken.status_code == 202, status_of(woken)
        run_id = woken.json()["runId"]
        row = page.get_by_role("table", name="Runs").locator(f'tr[data-run-id="{run_id}"]')
        await expect(row).to_be_visible(timeout=2_000)
        await expect(row).to_contain_text("Stepper")
        await screenshot(page, "runs")
        # Its page: the stages with their times, the log growing while it runs.
        await row.get_by_role("link", name=f"Run {run_id[:8]}").click()
        await expect(page).to_have_url(re.compile(f"/runs/{run_id}$"))
        stages = page.locator('[data-field="stages"] li')
        await expect(stages.first).to_contain_text("wakeup")
        await expect(page.locator('li[data-stage="adapter_launch"]')).to_be_visible()
        log = page.locator("[data-run-log]")
        await expect(log).to_contain_text("step 3")
        await expect(log).to_contain_text("step 12")  # later lines, read while it runs
        await expect(page.locator('[data-field="status"]')).to_contain_text("running")
        await screenshot(page, "run")
        await doc_screenshot(page, "run-page")
        # Cancel ends it as cancelled, live.
        cancel = page.get_by_role("button", name="Cancel run")
        await cancel.click()
        await expect(page.locator('[data-field="status"]')).to_contain_text(
            "cancelled", timeout=30_000
        )
        await expect(cancel).to_be_disabled()
        await expect(page.locator("[data-log-status]")).to_contain_text("The run has ended")
        answer = await board.http.get(f"/api/runs/{run_id}")
        assert answer.json()["status"] == "cancelled", answer.json()


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
