"""Configuration editing on the workspace page: the runtime config the workspace inherits from
its project workspace is shown read-only, named after it, beside an empty editor; a runtime
config the API refuses (a service without a command) shows the API's own message for that field
next to "Runtime config (JSON)", and it stays there when live events re-render the page's other
sections; JSON that does not parse is refused in the page (its own message, no request sent); a
valid one is saved and overrides the inherited one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Locator, Page, Route, expect

from tests.browser.apiutil import operator_board
from tests.browser.pageutil import expect_live, section, sign_in
from tests.e2e.hostfacts import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

INVALID = {"services": [{"name": "web"}]}
"""A service without a command."""
INHERITED = {"jobs": [{"name": "hello", "command": "echo inherited from the project"}]}
"""The project workspace's runtime config."""


async def _message_by(field: Locator) -> Locator:
    """The alert beside ``field``: the one its ``aria-describedby`` names, else the alert in the
    field's own wrapper (its parent element)."""
    described = await field.get_attribute("aria-describedby")
    if described:
        ids = ", ".join(f"[id='{one}']" for one in described.split())
        return field.page.locator(ids).and_(field.page.get_by_role("alert"))
    return field.locator("xpath=..").get_by_role("alert")


async def test_an_invalid_runtime_config_shows_the_api_message_next_to_the_field(
    stack: Any, tmp_path: Path, page: Page
) -> None:
    async with operator_board(stack, tmp_path, runtime_config=INHERITED) as operator:
        board = operator.board
        _, ws = await board.realize("Configure me")
        # What the API itself says about this config (the page must show the same).
        refused = await board.http.patch(
            f"/api/execution-workspaces/{ws['id']}", json={"config": {"workspaceRuntime": INVALID}}
        )
        assert refused.status_code in (400, 422), refused.text
        fields = refused.json()["details"]["fields"]
        (named,) = [f for f in fields if f["field"].startswith("config.workspaceRuntime")]
        summary = refused.json()["error"]
        assert named["message"], refused.json()
        assert named["message"] != summary, refused.json()
        await sign_in(page, operator.key)
        await page.goto(f"/workspaces/{ws['id']}")
        await expect_live(page)
        form = section(page, "Configuration")
        runtime = form.get_by_label("Runtime config (JSON)", exact=True)
        for label in ("Provision command", "Runtime provision command", "Teardown command"):
            await expect(form.get_by_label(label, exact=True)).to_be_editable()
        await expect(form.get_by_label("Cleanup command", exact=True)).to_be_editable()
        # Nothing of its own: the project workspace's runtime config, named and read-only.
        inherited = form.locator("[data-inherited-runtime]")
        await expect(inherited).to_contain_text(
            f"Inherited from project workspace “{board.project_workspace['name']}”"
        )
        shown = inherited.locator('[data-field="inherited-runtime"]')
        await expect(shown).to_contain_text(INHERITED["jobs"][0]["command"])
        assert await shown.evaluate("node => [node.tagName, node.isContentEditable]") == [
            "PRE",
            False,
        ]
        await expect(runtime).to_have_value("")
        await runtime.fill(json.dumps(INVALID))
        await form.get_by_role("button", name="Save configuration").click()
        message = await _message_by(runtime)
        await expect(message).to_be_visible()
        # The field's own message beside it (not the answer's summary repeated at every field).
        await expect(message).to_contain_text(named["message"])
        await expect(message).not_to_contain_text(summary)
        detail = (await board.detail(ws["id"])).json()
        assert not (detail["config"] or {}).get("workspaceRuntime"), detail["config"]
        # A live event re-renders the page's sections; the message and the typed text stay.
        events = f"/api/execution-workspaces/{ws['id']}/events"
        before = len((await board.http.get(events)).json())
        changed = await board.http.patch(
            f"/api/execution-workspaces/{ws['id']}", json={"config": {"cleanupCommand": "true"}}
        )
        assert changed.status_code == 200, changed.text
        grown = len((await board.http.get(events)).json())
        assert grown > before
        timeline = section(page, "Timeline").get_by_role("button", name="As it was after")
        await expect(timeline).to_have_count(grown, timeout=10_000)
        await page.wait_for_timeout(500)
        await expect(message).to_contain_text(named["message"])
        assert json.loads(await runtime.input_value()) == INVALID
        # JSON that does not parse: refused in the page with its own message, no request sent
        # (a PATCH would be aborted and recorded).
        patches: list[str] = []

        async def refuse(route: Route) -> None:
            if route.request.method == "PATCH":
                patches.append(route.request.url)
                await route.abort()
            else:
                await route.fallback()

        await page.route("**/api/execution-workspaces/**", refuse)
        await runtime.fill("{not json")
        await form.get_by_role("button", name="Save configuration").click()
        unparsed = await _message_by(runtime)
        await expect(unparsed).to_contain_text("not valid JSON")
        await page.wait_for_timeout(500)
        assert patches == [], patches
        await page.unroute("**/api/execution-workspaces/**", refuse)
        # A valid config is saved (the message goes away).
        valid = {"services": [{"name": "web", "command": "python3 -m http.server $PORT"}]}
        await runtime.fill(json.dumps(valid))
        await form.get_by_role("button", name="Save configuration").click()
        await expect(await _message_by(runtime)).to_have_count(0)

        async def saved() -> dict[str, Any] | None:
            config = (await board.detail(ws["id"])).json()["config"] or {}
            return config.get("workspaceRuntime") or None

        runtime_saved = await wait_until(saved, 10, "the valid runtime config saved")
        assert runtime_saved["services"][0]["command"] == valid["services"][0]["command"]
        # Its own config now overrides the inherited one, which the section no longer shows.
        await expect(inherited).to_have_count(0)
