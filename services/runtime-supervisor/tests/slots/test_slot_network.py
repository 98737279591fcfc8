"""An untrusted agent's network (docs/design/isolation.md): its run's namespace reaches the API
it was given (``CLIPYARD_API_URL``, relayed in) and nothing else of the host: not NATS, not a
server standing for the internet on another loopback address, not a port of the host."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from slot_world import Slots

from contracts.base import Ok

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
