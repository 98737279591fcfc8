"""Through HTTP, on a stack whose operator allowed no host folder to every company: company B's
board key cannot point a project workspace at A's checkout (or any host folder, or clone a local
repository, or put worktrees at an absolute path): 403 naming the setting, and nothing is made.
The admin key allows B's own source folder (``PUT /api/companies/{id}/host-access``): B then names
it, and still not A's; a board key cannot grant itself anything."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e


@pytest.fixture
def stack_env() -> dict[str, str]:
    return {"CLIPYARD_ALLOWED_ROOTS": ""}


async def _company(stack: Any, name: str) -> tuple[str, str]:
    async with stack.admin as admin:
        company = (await admin.post("/api/companies", json={"name": name})).json()
        key = await admin.post(f"/api/companies/{company['id']}/api-keys",
                               json={"name": "board", "kind": "board"})  # fmt: skip
    return company["id"], key.json()["key"]


async def test_a_board_key_points_the_server_at_no_host_path_without_an_admins_grant(
    stack: Any, tmp_path: Path
) -> None:
    a_checkout = tmp_path / "a" / "checkout"
    a_checkout.mkdir(parents=True)
    (a_checkout / "secret.txt").write_text("A's code")
    b_src = tmp_path / "b" / "src"
    (b_src / "web").mkdir(parents=True)
    b_id, b_key = await _company(stack, "Bravo")
    async with stack.client(b_key) as board:
        project = (await board.post(f"/api/companies/{b_id}/projects",
                                    json={"name": "Web"})).json()  # fmt: skip
        workspaces = f"/api/projects/{project['id']}/workspaces"
        for body, setting in (
            ({"name": "steal", "cwd": str(a_checkout)}, "cwd"),
            ({"name": "own", "cwd": str(b_src / "web")}, "cwd"),
            ({"name": "clone", "repoUrl": str(a_checkout)}, "repoUrl"),
            ({"name": "clone", "repoUrl": f"file://{a_checkout}"}, "repoUrl"),
        ):
            answer = await board.post(workspaces, json=body)
            assert answer.status_code == 403, (body, answer.text)
            assert answer.json()["details"]["field"] == setting, answer.text
            assert "host-access" in answer.json()["error"]
        policy = {"executionWorkspacePolicy": {"enabled": True, "workspaceStrategy": {
            "type": "git_worktree", "worktreeParentDir": str(tmp_path / "a")}}}  # fmt: skip
        answer = await board.patch(f"/api/projects/{project['id']}", json=policy)
        assert answer.status_code == 403, answer.text
        assert (await board.get(workspaces)).json() == []
        # A board key grants itself nothing.
        grab = await board.put(f"/api/companies/{b_id}/host-access",
                               json={"allowedRoots": [str(tmp_path)]})  # fmt: skip
        assert grab.status_code == 403, grab.text
    async with stack.admin as admin:
        bad = await admin.put(f"/api/companies/{b_id}/host-access",
                              json={"allowedRoots": ["relative/path"]})  # fmt: skip
        assert bad.status_code == 400, bad.text  # the schema: a normalized absolute folder
        granted = await admin.put(f"/api/companies/{b_id}/host-access",
                                  json={"allowedRoots": [str(b_src)]})  # fmt: skip
        assert granted.status_code == 200, granted.text
        assert granted.json()["allowedRoots"] == [str(b_src)]
        assert granted.json()["hostTrusted"] is False
    async with stack.client(b_key) as board:
        # The grant reaches the realizer through the event stream: B's own folder now works.
        for _ in range(100):
            own = await board.post(workspaces, json={"name": "own", "cwd": str(b_src / "web")})
            if own.status_code != 403:
                break
            await asyncio.sleep(0.1)
        assert own.status_code == 201, own.text
        steal = await board.post(workspaces, json={"name": "steal", "cwd": str(a_checkout)})
        assert steal.status_code == 403, steal.text
    async with stack.admin as admin:
        trusted = await admin.put(f"/api/companies/{b_id}/host-access",
                                  json={"hostTrusted": True})  # fmt: skip
        assert trusted.status_code == 200, trusted.text
        assert (trusted.json()["hostTrusted"], trusted.json()["allowedRoots"]) == (True, [])
        shown = await admin.get(f"/api/companies/{b_id}")
        assert shown.json()["hostTrusted"] is True
    async with stack.client(b_key) as board:
        for _ in range(100):  # any folder now, once the realizer heard it
            steal = await board.post(workspaces, json={"name": "any", "cwd": str(a_checkout)})
            if steal.status_code != 403:
                break
            await asyncio.sleep(0.1)
        assert steal.status_code == 201, steal.text
    assert (a_checkout / "secret.txt").read_text() == "A's code"
