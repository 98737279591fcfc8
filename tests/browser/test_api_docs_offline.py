"""``/api/docs`` renders with every request off the gateway blocked: Swagger UI's files come from
the gateway (the ``swagger-ui-py`` package), not from a CDN."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import BrowserContext, Page, Route, expect

from tests.browser.pageutil import screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.browser]


async def test_the_api_docs_render_with_the_network_blocked(
    stack: Any, context: BrowserContext, page: Page
) -> None:
    blocked: list[str] = []

    async def only_the_gateway(route: Route) -> None:
        if route.request.url.startswith(stack.api + "/"):
            await route.continue_()
        else:
            blocked.append(route.request.url)
            await route.abort("internetdisconnected")

    await context.route("**/*", only_the_gateway)
    await page.goto("/api/docs")
    await expect(page.get_by_role("heading", name="Clipyard API")).to_be_visible()
    # The operations of the document, grouped by tag, and one opened with its parameters.
    await expect(page.locator(".opblock-tag-section").first).to_be_visible()
    assert await page.locator(".opblock").count() > 50
    operation = page.locator("#operations-companies-getCompany")
    await operation.locator(".opblock-summary").click()
    await expect(operation.locator(".parameters-col_name", has_text="company_id")).to_be_visible()
    await screenshot(page, "api-docs")
    assert blocked == [], f"the docs page asked beyond the gateway: {blocked}"
