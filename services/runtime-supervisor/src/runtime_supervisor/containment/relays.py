"""The relays the supervisor keeps (docs/design/isolation.md), each recorded in a small file so
that a restarted supervisor finds, keeps or replaces it:

- a service's port: the host's ``127.0.0.1:<port>`` into its namespace's ``127.0.0.1:<port>``
  (the preview URL), recorded in the service's run folder (``relay.json``);
- the Clipyard API: the namespace's ``127.0.0.1:<port>`` out to the host's, recorded in
  ``$CLIPYARD_HOME/netns/<namespace>/api.json``;
- a shared service's port: a workspace namespace's ``127.0.0.1:<port>`` to the project workspace's
  namespace where the service runs (``$CLIPYARD_HOME/netns/<namespace>/fwd-<port>.json``).

Blocking: call from a thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from runtime_supervisor.containment.relay import Relay, start_relay, stop_relay

__all__ = [
    "ensure_api_relay",
    "ensure_forward",
    "ensure_service_relay",
    "revive_service_relay",
    "stop_api_relay",
    "stop_service_relay",
]

log = logging.getLogger(__name__)

_SERVICE: Final = "relay.json"
_LOOPBACK: Final = "127.0.0.1"


def _read(path: Path) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict):
            return data
    return None


@contextlib.contextmanager
def _locked(record: Path) -> Iterator[None]:
    """One ensure or stop of ``record`` at a time (threads and processes alike)."""
    record.parent.mkdir(parents=True, exist_ok=True)
    with record.with_suffix(".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _ensure(record: Path, listen: str, target: str, key: dict[str, object]) -> Relay:
    with _locked(record):
        return _ensure_locked(record, listen, target, key)


def _ensure_locked(record: Path, listen: str, target: str, key: dict[str, object]) -> Relay:
    found = _read(record)
    if found is not None and all(found.get(k) == v for k, v in key.items()):
        relay = Relay(int(found["pid"] or 0), found.get("startTime"))
        if relay.alive():
            return relay
    _stop_locked(record)
    relay = start_relay(listen, target, record.with_suffix(".log"))
    record.write_text(json.dumps({**key, "pid": relay.pid, "startTime": relay.start_time}))
    return relay


def _stop(record: Path) -> None:
    if record.parent.is_dir():
        with _locked(record):
            _stop_locked(record)


def _stop_locked(record: Path) -> None:
    found = _read(record)
    if found is not None and found.get("pid"):
        stop_relay(int(found["pid"] or 0), found.get("startTime"))
    record.unlink(missing_ok=True)


def ensure_service_relay(run_dir: Path, port: int, netns: Path) -> Relay:
    """The relay of a service's port (started when missing or dead)."""
    return _ensure(run_dir / _SERVICE, f"{_LOOPBACK}:{port}", f"{netns}@{_LOOPBACK}:{port}",
                   {"port": port, "netns": str(netns)})  # fmt: skip


def revive_service_relay(run_dir: Path) -> None:
    """Start again the recorded relay of an adopted service when it died (none: nothing;
    errors logged: the service itself runs on)."""
    found = _read(run_dir / _SERVICE)
    if found is None or not found.get("port") or not found.get("netns"):
        return
    try:
        ensure_service_relay(run_dir, int(found["port"] or 0), Path(str(found["netns"])))
    except OSError as exc:
        log.error("the relay of %s could not start again: %s", run_dir.name, exc)


def stop_service_relay(run_dir: Path) -> None:
    """End a service's relay (none: nothing)."""
    _stop(run_dir / _SERVICE)


def _api_record(home: Path, name: str) -> Path:
    return home / "netns" / name / "api.json"


def ensure_api_relay(home: Path, name: str, netns: Path, port: int) -> Relay:
    """The relay that shows the API (the host's ``127.0.0.1:<port>``) inside namespace
    ``name`` on the same address."""
    return _ensure(_api_record(home, name), f"{netns}@{_LOOPBACK}:{port}",
                   f"{_LOOPBACK}:{port}", {"port": port, "netns": str(netns)})  # fmt: skip


def stop_api_relay(home: Path, name: str) -> None:
    """End every relay into namespace ``name`` (the API's and the shared services' forwards)."""
    folder = home / "netns" / name
    _stop(_api_record(home, name))
    if folder.is_dir():
        for record in folder.glob("fwd-*.json"):
            _stop(record)


def ensure_forward(home: Path, name: str, netns: Path, port: int, source: Path) -> Relay:
    """The forward of a shared service's port: ``127.0.0.1:<port>`` inside namespace ``name``
    to the same address in the namespace ``source`` where the service runs."""
    return _ensure(home / "netns" / name / f"fwd-{port}.json", f"{netns}@{_LOOPBACK}:{port}",
                   f"{source}@{_LOOPBACK}:{port}",
                   {"port": port, "netns": str(netns), "source": str(source)})  # fmt: skip
