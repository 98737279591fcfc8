"""Limits and edges of slots: the run log's cap, the default file-size limit of untrusted
adapters, a release racing a launch (no adapter outlives its released slot), and the
``remote_http`` adapter against a real local HTTP server."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import msgspec
import pytest
from bus_world import Sup, Upstream
from slot_world import Repo, Slots, company_uid, uid_processes

from contracts.base import Ok
from contracts.slots import AdapterLaunched, RunLogSlice, RunSlot
from runtime_supervisor.adapters.process import group_members

pytestmark = pytest.mark.integration

PY = "/usr/bin/python3"


async def test_the_run_log_is_capped_and_says_so_while_the_result_is_still_read(
    start_supervisor: Any, slots: Slots
) -> None:
    await start_supervisor(CLIPYARD_RUN_LOG_MAX_BYTES="4096")
    run = str(uuid.uuid4())
    script = ("import json, resource, sys; sys.stdout.write('x' * 100 + '\\n') ; "
              "[sys.stdout.write('y' * 999 + '\\n') for _ in range(200)]; "
              "print(json.dumps({'result': {'fsize': resource.getrlimit("
              "resource.RLIMIT_FSIZE)[0]}}))")  # fmt: skip
    grant = await slots.grant(run, trusted=False)
    reply = await slots.launch(grant, run, [PY, "-c", script], trusted=False)
    assert isinstance(reply, Ok), reply
    done = await slots.finished(run)
    assert done.end == "exited", done
    assert done.exit_code == 0
    assert done.result == {"fsize": 1024 * 1024 * 1024}  # untrusted: 1 GiB unless set
    assert "truncated at 4096 bytes" in (done.error or "")
    assert done.log_bytes is not None
    assert 4096 < done.log_bytes < 4096 + 200
    log = msgspec.convert((await slots.log(run)).result, RunLogSlice)
    assert log.text.startswith("x" * 100)
    assert log.text.rstrip().endswith("dropped)]")


async def test_a_release_racing_a_launch_leaves_no_adapter_running(
    start_supervisor: Any, upstream: Upstream, slots: Slots, repo: Repo, home: Path
) -> None:
    await start_supervisor()
    for i in range(20000):  # a worktree whose hand-over takes a moment
        (repo.worktree / f"f{i}").write_bytes(b"")
    pw = await upstream.project_workspace(str(repo.root))
    ws = await upstream.workspace(str(repo.worktree), pw=pw, branch="agent-work")
    await Sup(slots.bus).known(ws)
    run = str(uuid.uuid4())
    grant = await slots.grant(run, trusted=False)
    command = ["/bin/sh", "-c", "sleep 300 & sleep 300"]
    launch = asyncio.ensure_future(
        slots.launch(grant, run, command, trusted=False, workspace_id=ws)
    )
    await asyncio.sleep(0.05)
    released = await slots.release(run)
    assert isinstance(released, Ok), released
    reply = await launch
    view = msgspec.convert((await slots.slot(run)).result, RunSlot)
    assert view.state == "released"
    if isinstance(reply, Ok):  # the launch won the lock: the release killed what it started
        launched = msgspec.convert(reply.result, AdapterLaunched)
        assert group_members(launched.pgid or -1) == []
        assert view.end == "killed", view
    owner = repo.worktree.stat().st_uid  # handed to the company's identity only if launched
    assert owner == (company_uid(home) if isinstance(reply, Ok) else os.getuid())
    if isinstance(reply, Ok):
        assert uid_processes(owner) == []


class _Agent(BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Agent.received.append({"body": body, "auth": self.headers.get("Authorization")})
        if self.path == "/fail":
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"boom")
            return
        data = json.dumps({"usage": {"inputTokens": 7}, "result": {"echo": body["wake"]}})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


@pytest.fixture
def agent_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Agent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def test_a_remote_http_adapter_posts_its_context_and_records_the_answer(
    start_supervisor: Any, slots: Slots, agent_url: str, home: Path
) -> None:
    await start_supervisor()
    _Agent.received.clear()
    token = "clipyard-run-token-" + uuid.uuid4().hex
    ok_run, failing_run = str(uuid.uuid4()), str(uuid.uuid4())
    for run, path in ((ok_run, "/ok"), (failing_run, "/fail")):
        grant = await slots.grant(run, trusted=False, adapter_type="http")
        assert grant.type == "remote_http"
        reply = await slots.launch(grant, run, [], trusted=False, adapter_type="http",
                                   url=agent_url + path,
                                   headers={"Authorization": f"Bearer {token}"},
                                   context={"wake": run})  # fmt: skip
        assert isinstance(reply, Ok), reply
    done = await slots.finished(ok_run)
    assert (done.end, done.exit_code) == ("exited", 0)
    assert done.usage == {"inputTokens": 7}
    assert done.result == {"echo": ok_run}
    failed = await slots.finished(failing_run)
    assert (failed.end, failed.exit_code) == ("exited", 1)
    assert failed.error == "the agent's URL answered HTTP 500"
    assert failed.stdout_excerpt == "boom"
    assert {r["auth"] for r in _Agent.received} == {f"Bearer {token}"}
    for path in (home / "data").rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path
