"""The page's static files (public, cached, offline), its security headers, and its absence from
the OpenAPI document."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api_gateway.ui import STATIC_DIR, TEMPLATE_DIR
from api_gateway.ui.headers import CONTENT_SECURITY_POLICY

_spec = importlib.util.spec_from_file_location("pages", Path(__file__).parent / "pages.py")
assert _spec
assert _spec.loader
pages: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pages)

Client = TestClient[Any]
MINE = ("app.css", "live.js", "actions.js", "sign-in.js")
TYPES = {".css": "text/css", ".js": "text/javascript"}


@pytest.mark.parametrize("name", MINE)
def test_static_files_are_served_without_a_key_and_cached(client: Client, name: str) -> None:
    response = client.get(f"/static/{name}")
    assert response.status_code == 200
    assert response.content == (STATIC_DIR / name).read_bytes()
    content_type = response.headers["content-type"]
    assert content_type.startswith(TYPES[Path(name).suffix]) or (
        name.endswith(".js") and "javascript" in content_type
    )
    assert "max-age=3600" in response.headers["cache-control"]
    assert "public" in response.headers["cache-control"]
    assert response.headers["x-content-type-options"] == "nosniff"


def test_an_unknown_static_file_is_404_and_no_path_escapes(client: Client) -> None:
    assert client.get("/static/nope.js").status_code == 404
    assert client.get("/static/../__init__.py").status_code == 404
    assert client.get("/static/%2e%2e/__init__.py").status_code == 404


def test_the_page_needs_nothing_from_another_host() -> None:
    remote = re.compile(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", re.IGNORECASE)
    for path in [*STATIC_DIR.iterdir(), *TEMPLATE_DIR.iterdir()]:
        text = path.read_text()
        assert not remote.search(text), f"{path.name} reaches another host"


def test_templates_have_no_inline_script_or_style() -> None:
    for path in TEMPLATE_DIR.iterdir():
        text = path.read_text()
        # Data for scripts may sit in <script type="application/json">; code never inline.
        assert not re.search(r'<script(?![^>]*\b(src=|type="application/json"))[^>]*>', text), (
            path.name
        )
        assert not re.search(r"\sstyle=", text), path.name
        assert "<style" not in text, path.name
        assert not re.search(r"\son[a-z]+=", text), path.name


def test_scripts_keep_the_key_out_of_storage_and_urls() -> None:
    for name in ("sign-in.js", "actions.js", "live.js"):
        text = (STATIC_DIR / name).read_text()
        for word in ("localStorage", "sessionStorage", "indexedDB", "document.cookie"):
            assert word not in text, f"{name} uses {word}"
    sign_in = (STATIC_DIR / "sign-in.js").read_text()
    assert 'input.value = ""' in sign_in
    assert '"/api/session", { key: key }' in sign_in


def test_pages_carry_the_security_headers(
    client: Client, company: str, make_board_key: Callable[[str], str], bus: Any
) -> None:
    sign_in_page = client.get("/sign-in")
    pages.sign_in(client, make_board_key(company), bus)
    for response in (sign_in_page, client.get("/workspaces"), client.get("/runs")):
        assert response.status_code == 200
        headers = response.headers
        assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert "script-src 'self';" in CONTENT_SECURITY_POLICY
        assert "style-src 'self';" in CONTENT_SECURITY_POLICY
        assert "frame-ancestors 'none'" in CONTENT_SECURITY_POLICY
        assert headers["referrer-policy"] == "no-referrer"
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["cache-control"] == "no-store"
        assert headers["content-type"].startswith("text/html")
        assert '<meta name="viewport" content="width=device-width' in response.text
    redirect = client.get("/", follow_redirects=False)
    assert redirect.headers["content-security-policy"] == CONTENT_SECURITY_POLICY


def test_pages_are_not_in_the_openapi_document(client: Client) -> None:
    document = client.get("/api/openapi.json").json()
    paths = set(document["paths"])
    assert paths
    assert all(path.startswith("/api/") for path in paths), sorted(
        p for p in paths if not p.startswith("/api/")
    )
