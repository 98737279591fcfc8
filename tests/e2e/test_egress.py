"""Egress through HTTP (docs/design/isolation.md): a project's ``egressAllowlist`` lets its
workspaces' jobs and provision commands out to what it names and nothing else; each distinct
(host, port, verdict) is an ``egress.*`` event on the workspace's audit trail
(``GET /api/execution-workspaces/{id}/events``); a change of the allowlist holds at the next
connection."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.pong import pong_server
from tests.e2e.hostfacts import wait_until
from tests.e2e.runtimeutil import ISOLATED, runtime_board, status_of

pytestmark = pytest.mark.e2e

REACH = (
    'python3 -c "import json, socket, sys\n'
    "def go(host, port):\n"
    "    try:\n"
    "        with socket.create_connection((host, int(port)), timeout=3) as s:\n"
    "            s.sendall(b'ping')\n"
    "            return s.recv(8).decode() or 'closed'\n"
    "    except OSError as exc:\n"
    "        return type(exc).__name__\n"
    "print(json.dumps({t: go(*t.split(':')) for t in sys.argv[1:]}))\" "
)


@pytest.fixture
def internet() -> Iterator[int]:
    """A test host standing for the internet (it answers ``pong``), on 127.0.8.1."""
    with pong_server("127.0.8.1") as port:
        yield port


async def test_a_projects_allowlist_lets_its_workspaces_out_and_every_verdict_is_an_event(
    stack: Any, tmp_path: Path, reaper: None, internet: int
) -> None:
    allowed, refused = f"127.0.8.1:{internet}", f"127.0.8.9:{internet}"
    strategy = {**ISOLATED["workspaceStrategy"],
                "provisionCommand": REACH + f"{allowed} {refused} > provision-reach.json"}  # fmt: skip
    policy = {**ISOLATED, "workspaceStrategy": strategy,
              "egressAllowlist": [{"host": "127.0.8.1", "port": internet}]}  # fmt: skip
    async with runtime_board(stack, tmp_path, policy=policy) as board:
        assert board.project["executionWorkspacePolicy"]["egressAllowlist"] == [
            {"host": "127.0.8.1", "port": internet}
        ]
        bad = await board.http.patch(f"/api/projects/{board.project['id']}", json={
            "executionWorkspacePolicy": {**policy, "egressAllowlist": [{"host": "http://x"}]}})  # fmt: skip
        assert bad.status_code in (400, 422), status_of(bad)
        _, ws = await board.realize("Reach out")
        # The provision command ran contained, with the project's allowlist.
        provisioned = json.loads(Path(ws["cwd"], "provision-reach.json").read_text())
        assert provisioned == {allowed: "pong", refused: "ConnectionResetError"}, provisioned
        await board.set_runtime(ws["id"], {"jobs": [
            {"name": "reach", "command": REACH + f"{allowed} {refused}"}]})  # fmt: skip

        async def job() -> dict[str, str]:
            ran = await board.control(ws["id"], "run", path="runtime-commands",
                                      workspaceCommandId="job:reach")  # fmt: skip
            assert ran.status_code == 200, status_of(ran)
            detail = await board.http.get(
                f"/api/workspace-operations/{ran.json()['operation']['id']}"
            )
            found: dict[str, str] = json.loads(detail.json()["stdoutExcerpt"].splitlines()[-1])
            return found

        assert await job() == {allowed: "pong", refused: "ConnectionResetError"}

        async def verdicts() -> set[tuple[str, int, str]] | None:
            answer = await board.http.get(f"/api/execution-workspaces/{ws['id']}/events",
                                          params={"limit": 200})  # fmt: skip
            assert answer.status_code == 200, status_of(answer)
            rows = [row for row in answer.json() if row["type"].startswith("egress.")]
            found = {(r["data"]["host"], r["data"]["port"], r["data"]["verdict"]) for r in rows}
            return found if len(found) >= 2 else None

        seen = await wait_until(verdicts, 20.0, "the workspace's egress events")
        assert seen == {("127.0.8.1", internet, "allowed"), ("127.0.8.9", internet, "denied")}

        # The board empties the allowlist: the next connection is refused.
        emptied = await board.http.patch(f"/api/projects/{board.project['id']}", json={
            "executionWorkspacePolicy": {**policy, "egressAllowlist": []}})  # fmt: skip
        assert emptied.status_code == 200, status_of(emptied)

        async def closed() -> bool:
            return (await job())[allowed] == "ConnectionResetError"

        await wait_until(closed, 20.0, "the emptied allowlist to hold")
