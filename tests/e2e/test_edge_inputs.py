"""Bad input through HTTP is answered 400, 404, 413 or 422 and nothing is stored: NUL bytes in
names, titles, commands, paths, URLs and refs; traversal and over-long ids in paths and bodies;
another company's agent and workspace as references; ``ext::`` and option-like repository URLs;
numeric timestamps; a 1 MiB body. "Nothing stored" is checked where every store's events end up:
the ``WS_EVENTS`` stream's last sequence does not move (each service publishes every event it
stores), and the lists read the same."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import nats
import pytest

from contracts.subjects import EVENT_STREAM

pytestmark = pytest.mark.e2e

NUL = "a\u0000b"


async def _last_sequence(url: str) -> int:
    nc = await nats.connect(url)
    try:
        info = await nc.jetstream().stream_info(EVENT_STREAM)
        return int(info.state.last_seq)
    finally:
        await nc.drain()


async def _settled(url: str) -> int:
    """The stream's last sequence once the relays have published what was stored."""
    last = await _last_sequence(url)
    for _ in range(50):
        await asyncio.sleep(0.2)
        now = await _last_sequence(url)
        if now == last:
            return now
        last = now
    return last


async def test_bad_input_is_refused_with_a_4xx_and_stores_nothing(
    stack: Any, nats_server: Any, tmp_path: Path
) -> None:
    repo = tmp_path / "src"
    repo.mkdir()
    async with stack.admin as admin:
        ids = []
        for name in ("Alpha", "Bravo"):
            company = (await admin.post("/api/companies", json={"name": name})).json()
            key = (await admin.post(f"/api/companies/{company['id']}/api-keys",
                                    json={"name": "b", "kind": "board"})).json()["key"]  # fmt: skip
            ids.append((company["id"], key))
    (a, a_key), (b, b_key) = ids
    async with stack.client(b_key) as bravo:
        agent = {"name": "x", "adapterType": "process", "adapterConfig": {"command": ["true"]}}
        b_agent = (await bravo.post(f"/api/companies/{b}/agents", json=agent)).json()["id"]
    async with stack.client(a_key) as alpha:
        project = (await alpha.post(f"/api/companies/{a}/projects", json={"name": "Web"})).json()
        pid = project["id"]
        pw = (await alpha.post(f"/api/projects/{pid}/workspaces",
                               json={"name": "main", "cwd": str(repo)})).json()  # fmt: skip
        issue = (await alpha.post(f"/api/companies/{a}/issues",
                                  json={"title": "t", "projectId": pid})).json()  # fmt: skip
        a_agent = (await alpha.post(f"/api/companies/{a}/agents", json=agent)).json()["id"]
        before = await _settled(nats_server.url)
        lists = [f"/api/companies/{a}/projects", f"/api/projects/{pid}/workspaces",
                 f"/api/companies/{a}/issues", f"/api/companies/{a}/agents"]  # fmt: skip
        shown = [(await alpha.get(url)).json() for url in lists]
        big = '{"name": "' + "x" * (1 << 20) + '"}'
        attempts: list[tuple[str, str, Any]] = [
            ("POST", f"/api/companies/{a}/projects", {"name": NUL}),
            ("PATCH", f"/api/projects/{pid}", {"name": NUL}),
            ("POST", f"/api/projects/{pid}/workspaces", {"name": "w", "cwd": f"/tmp/{NUL}"}),
            ("PATCH", f"/api/projects/{pid}/workspaces/{pw['id']}", {"cwd": f"{repo}\u0000"}),
            ("POST", f"/api/projects/{pid}/workspaces", {"name": "w", "repoUrl": "ext::sh -c id"}),
            ("POST", f"/api/projects/{pid}/workspaces",
             {"name": "w", "repoUrl": "--upload-pack=touch /tmp/x"}),
            ("POST", f"/api/projects/{pid}/workspaces",
             {"name": "w", "repoUrl": "https://example.com/a.git", "repoRef": "--orphan"}),
            ("POST", f"/api/projects/{pid}/workspaces",
             {"name": "w", "repoUrl": f"https://example.com/{NUL}.git"}),
            ("PATCH", f"/api/projects/{pid}", {"executionWorkspacePolicy": {"workspaceStrategy": {
                "type": "git_worktree", "provisionCommand": f"make {NUL}"}}}),
            ("POST", f"/api/companies/{a}/issues", {"title": NUL, "projectId": pid}),
            ("POST", f"/api/companies/{a}/issues",
             {"title": "t", "projectId": pid, "assigneeAgentId": b_agent}),
            ("POST", f"/api/companies/{a}/issues",
             {"title": "t", "projectId": pid, "assigneeAgentId": str(uuid.uuid4())}),
            ("POST", f"/api/companies/{a}/issues",
             {"title": "t", "projectId": pid, "assigneeAgentId": "../../etc"}),
            ("POST", f"/api/companies/{a}/issues",
             {"title": "t", "projectId": pid, "assigneeAgentId": "x" * 100_000}),
            ("PATCH", f"/api/issues/{issue['id']}", {"executionWorkspaceSettings": {
                "mode": "reuse_existing", "executionWorkspaceId": str(uuid.uuid4())}}),
            ("POST", f"/api/agents/{a_agent}/wake", {"issueId": "../../etc"}),
            ("POST", f"/api/agents/{a_agent}/wake", {"issueId": f"{uuid.uuid4()}\u0000"}),
            ("GET", "/api/issues/..%2F..%2Fetc", None),
            ("PATCH", f"/api/execution-workspaces/{uuid.uuid4()}", {"cleanupEligibleAt": 12345}),
            ("POST", f"/api/companies/{a}/projects", big),
        ]  # fmt: skip
        for method, url, body in attempts:
            if isinstance(body, str):
                answer = await alpha.request(method, url, content=body,
                                             headers={"Content-Type": "application/json"})  # fmt: skip
            else:
                answer = await alpha.request(method, url, json=body)
            assert answer.status_code in (400, 404, 413, 422), (method, url, answer.text[:300])
            assert answer.json()["code"], answer.text[:300]
            assert len(answer.text) < 4000, "an error never echoes a huge input whole"
        assert await _settled(nats_server.url) == before, "no event was stored"
        assert [(await alpha.get(url)).json() for url in lists] == shown
