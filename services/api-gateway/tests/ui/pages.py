"""Helpers of the page tests: the wire fixtures of the other handler tests, signing in."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from litestar.testing import TestClient

from contracts import heartbeat_subjects, workspace_subjects

Client = TestClient[Any]


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parent.parent / f"{name}.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


wire: Any = _load("workspace_fixtures")
runtime: Any = _load("runtime_fixtures")
heartbeat: Any = _load("heartbeat_fixtures")

_META = re.compile(r'<meta name="csrf-token" content="([^"]+)">')


EMPTY_LISTS = (
    workspace_subjects.WORKSPACE_LIST,
    workspace_subjects.WORKSPACE_LIST_SUMMARIES,
    workspace_subjects.PROJECT_LIST,
    workspace_subjects.ISSUE_LIST,
    heartbeat_subjects.AGENT_LIST,
    heartbeat_subjects.RUN_LIST,
)


def empty_lists(bus: Any) -> None:
    """Script an empty page for every list the list pages ask for (unless scripted already)."""
    for subject in EMPTY_LISTS:
        bus.replies.setdefault(subject, wire.page())


def sign_in(client: Client, key: str, bus: Any) -> str:
    """Sign in as the page's script does; return the CSRF token the next page renders."""
    response = client.post("/sign-in", json={"key": key})
    assert response.status_code == 200, response.text
    empty_lists(bus)
    page = client.get("/runs")
    assert page.status_code == 200, page.text
    return csrf_of(page.text)


def csrf_of(html: str) -> str:
    """The token of ``<meta name="csrf-token">``."""
    found = _META.search(html)
    assert found, html
    return found.group(1)
