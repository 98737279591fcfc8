"""An untrusted agent's network (docs/design/isolation.md): its run's namespace reaches the API
it was given (``CLIPYARD_API_URL``, relayed in) and nothing else of the host: not NATS, not a
server standing for the internet on another loopback address, not a port of the host; the
agent's own allowlist entries let it out to what they name, in its workspace, while its run
holds it, and each verdict is an event of that run; in its workspace it reaches the workspace's
own dev server on loopback."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from bus_world import BOARD, Sup, Upstream, eventually, http_service, runtime
from slot_world import Repo, Slots

from contracts.base import Ok
from contracts.execution_commands import GetWorkspaceEvents
from contracts.execution_views import WorkspaceEventRow
from contracts.workspace_config import EgressRule
from contracts.workspace_subjects import workspace_events
from contracts.workspace_views import Page

pytestmark = pytest.mark.integration

PROBE = r"""
import json, os, socket, sys, urllib.request
found = {}
def attempt(name, action):
    try:
        found[name] = action()
    except Exception as exc:
        found[name] = type(exc).__name__
def connect(port, host="127.0.0.1"):
    with socket.create_connection((host, port), timeout=2) as s:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        return "succeeded" if s.recv(1) else "closed"
def api():
    request = urllib.request.Request(os.environ["CLIPYARD_API_URL"] + "/api/whoami",
                                     headers={"Authorization": "Bearer " + os.environ["TOKEN"]})
    with urllib.request.urlopen(request, timeout=5) as answer:
        return answer.read().decode()
attempt("api", api)
attempt("nats", lambda: connect(int(sys.argv[1])))
attempt("internet", lambda: connect(int(sys.argv[3]), sys.argv[2]))
attempt("host_port", lambda: connect(int(sys.argv[4])))
print(json.dumps({"result": found}))
"""


class _Api(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"token": self.headers.get("Authorization", "")}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        del args


def _serve(host: str) -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer((host, 0), _Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def api_server() -> Iterator[ThreadingHTTPServer]:
    yield from _serve("127.0.0.1")


@pytest.fixture
def internet() -> Iterator[ThreadingHTTPServer]:
    yield from _serve("127.0.0.2")


async def test_an_untrusted_agent_reaches_its_api_and_nothing_else_of_the_host(
    start_supervisor: Any, slots: Slots, own_nats: Any, api_server: ThreadingHTTPServer,
    internet: ThreadingHTTPServer,
) -> None:  # fmt: skip
    await start_supervisor()
    run = str(uuid.uuid4())
    grant = await slots.grant(run, trusted=False)
    api_port, internet_port = api_server.server_address[1], internet.server_address[1]
    command = ["/usr/bin/python3", "-c", PROBE, str(own_nats.port), "127.0.0.2",
               str(internet_port), str(own_nats.monitor_port)]  # fmt: skip
    env = {"CLIPYARD_API_URL": f"http://127.0.0.1:{api_port}", "TOKEN": "run-token-1"}
    reply = await slots.launch(grant, run, command, trusted=False, env=env)
    assert isinstance(reply, Ok), reply
    done = await slots.finished(run)
    assert done.end == "exited", done
    found = done.result
    assert json.loads(found["api"]) == {"token": "Bearer run-token-1"}, found
    # The API's port is the only one of the host's it reaches.
    assert found["host_port"] == "ConnectionRefusedError", found
    assert found["nats"] == "ConnectionRefusedError", found
    # Leaving the namespace, it met the egress gate: reset (nothing is allowed).
    assert found["internet"] == "ConnectionResetError", found


@pytest.fixture
def allowed_host() -> Iterator[ThreadingHTTPServer]:
    yield from _serve("127.0.8.1")


REACH = r"""
import json, socket, sys
def connect(port, host):
    try:
        with socket.create_connection((host, port), timeout=3) as s:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            return "succeeded" if s.recv(1) else "closed"
    except Exception as exc:
        return type(exc).__name__
print(json.dumps({"result": {"allowed_host": connect(int(sys.argv[1]), "127.0.8.1"),
                              "own_dev_server": connect(int(sys.argv[2]), "127.0.0.1")}}))
"""


async def test_an_agents_own_allowlist_holds_in_its_workspace_only_while_its_run_does(
    start_supervisor: Any, slots: Slots, upstream: Upstream, repo: Repo,
    allowed_host: ThreadingHTTPServer,
) -> None:  # fmt: skip
    await start_supervisor()
    await upstream.project([])  # the project allows nothing
    pw = await upstream.project_workspace(str(repo.root), runtime(http_service("web")))
    ws = await upstream.workspace(str(repo.worktree), pw=pw, branch="agent-work")
    bus = Sup(slots.bus)
    await bus.known(ws)
    (web,) = (await bus.ok_control("start", ws))["runtimeServices"]  # its dev server
    port = allowed_host.server_address[1]
    entry = EgressRule(host="127.0.8.1", port=port)
    outcomes: dict[str, str] = {}
    for run, entries in ((str(uuid.uuid4()), [entry]), (str(uuid.uuid4()), [])):
        grant = await slots.grant(run, trusted=False)
        command = ["/usr/bin/python3", "-c", REACH, str(port), str(web["port"])]
        reply = await slots.launch(grant, run, command, trusted=False, workspace_id=ws,
                                   egress_allowlist=entries)  # fmt: skip
        assert isinstance(reply, Ok), reply
        done = await slots.finished(run)
        assert done.end == "exited", done
        outcomes[run] = done.result["allowed_host"]
        assert done.result["own_dev_server"] == "succeeded", done.result  # on its loopback
    first, second = outcomes
    # The agent's entry let its own run out; the next run (an agent without it) is kept in.
    assert outcomes == {first: "succeeded", second: "ConnectionResetError"}, outcomes

    async def verdicts() -> dict[str | None, str] | None:
        page = await bus.bus.call(
            workspace_events("supervisor"),
            GetWorkspaceEvents(principal=BOARD, workspace_id=ws, limit=500),
            Page[WorkspaceEventRow],
        )
        found = {row.run_id: row.data["verdict"] for row in page.items
                 if row.type == "egress.observed.v1" and row.data["port"] == port}  # fmt: skip
        return found if len(found) == 2 else None

    # Each verdict is an event of the run that held the workspace.
    assert await eventually(verdicts, what="the runs' egress events") == {
        first: "allowed",
        second: "denied",
    }
