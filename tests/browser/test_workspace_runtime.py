"""The workspace detail drives the runtime supervisor: "Start web" shows the service running with
its URL as a link (and, with its log open, the table's cells keep their words whole), "Stop web"
shows it stopped with its last URL as plain text; "Run hello" shows the job's output."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Locator, Page, expect

from tests.browser.apiutil import operator_board, wait_supervisor_knows
from tests.browser.pageutil import screenshot, section, sign_in
from tests.e2e.runtimeutil import HTTP_SERVER, http_service, rows_of

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

BANNER = "serving the documentation of the whole project from its docs folder, " * 3
"""A long first line of the service's log (a log line is what widens the open log's column)."""


async def _lines(cell: Locator) -> int:
    """How many lines the text of ``cell`` takes on the screen."""
    return int(
        await cell.evaluate(
            """cell => {
              const range = document.createRange();
              range.selectNodeContents(cell);
              const tops = Array.from(range.getClientRects(), rect => Math.round(rect.top));
              return new Set(tops).size;
            }"""
        )
    )


async def test_start_and_stop_a_service_from_its_page(
    stack: Any, tmp_path: Path, page: Page, reaper: None
) -> None:
    async with operator_board(stack, tmp_path) as operator:
        board = operator.board
        _, ws = await board.realize("Serve the docs")
        web = http_service("web", command=f"echo '{BANNER}'; exec {HTTP_SERVER}")
        await board.set_runtime(ws["id"], {"services": [web]})
        await wait_supervisor_knows(board, ws["id"], "service:web")
        await sign_in(page, operator.key)
        await page.goto(f"/workspaces/{ws['id']}")
        services = section(page, "Runtime services")
        table = services.get_by_role("table", name="Runtime services")
        row = table.get_by_role("row").filter(has_text="web").last
        await services.get_by_role("button", name="Start web", exact=True).click()
        status = row.locator('[data-field="service-status"]')
        await expect(status).to_have_text("running", timeout=30_000)
        # The URL shown is the service's, as the API reports it, and is a link.
        detail = (await board.detail(ws["id"])).json()
        (running,) = [r for r in rows_of(detail, "service:web") if r["status"] == "running"]
        link = row.get_by_role("link", name=running["url"].rstrip("/"))
        await expect(link).to_be_visible()
        assert (await link.get_attribute("href") or "").rstrip("/") == running["url"].rstrip("/")
        await expect(row).to_contain_text(str(running["port"]))
        await screenshot(page, "workspace-detail")
        # Its log open, the table scrolls sideways rather than break a word ("runnin/g").
        await row.get_by_text("Show log").click()
        await expect(row.locator("pre.log")).to_contain_text(BANNER.strip())
        for cell in (
            row.get_by_role("rowheader"),
            status,
            row.locator('[data-field="service-url"]'),
            row.locator('[data-field="service-health"]'),
            row.locator('[data-field="service-port"]'),
        ):
            assert await _lines(cell) == 1, await cell.inner_text()
        await services.get_by_role("button", name="Stop web", exact=True).click()
        await expect(status).to_have_text("stopped", timeout=30_000)
        detail = (await board.detail(ws["id"])).json()
        (stopped,) = rows_of(detail, "service:web")
        assert stopped["status"] == "stopped", detail
        # A stopped service's last URL is plain text, no longer a link.
        await expect(row.get_by_role("link")).to_have_count(0)
        await expect(row.locator('[data-field="service-url"]')).to_have_text(stopped["url"])


async def test_run_a_job_and_read_its_output(
    stack: Any, tmp_path: Path, page: Page, reaper: None
) -> None:
    line = f"hello from the job {uuid.uuid4().hex}"
    async with operator_board(stack, tmp_path) as operator:
        board = operator.board
        _, ws = await board.realize("Say hello")
        # A service beside the job: its answer to a stop tells when the supervisor has the config.
        job = {"name": "hello", "command": f"echo '{line}'"}
        await board.set_runtime(ws["id"], {"services": [http_service("web")], "jobs": [job]})
        await wait_supervisor_knows(board, ws["id"], "service:web")
        await sign_in(page, operator.key)
        await page.goto(f"/workspaces/{ws['id']}")
        jobs = section(page, "Jobs")
        output = jobs.locator('pre[data-field="job-output"]')
        await expect(output).to_have_count(0)
        await jobs.get_by_role("button", name="Run hello").click()
        await expect(output).to_contain_text(line, timeout=30_000)
        await expect(jobs).to_contain_text("succeeded")
        # The operations log lists the job's run, with a link to its output.
        operations = await board.operations(ws["id"])
        ran = [op for op in operations if "hello" in (op.get("command") or "")]
        assert ran, operations
        link = section(page, "Operations").locator(f'a[href*="{ran[-1]["id"]}"]')
        await expect(link).to_be_visible(timeout=10_000)
