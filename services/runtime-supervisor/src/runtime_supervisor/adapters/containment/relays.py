"""The relays the supervisor keeps (docs/design/isolation.md), each recorded in a small file so
that a restarted supervisor finds, keeps or replaces it:

- a service's port: the host's ``127.0.0.1:<port>`` into its namespace's ``127.0.0.1:<port>``
  (the preview URL), recorded in the service's run folder (``relay.json``);
- the Clipyard API: the namespace's ``127.0.0.1:<port>`` out to the host's, recorded in
  ``$CLIPYARD_HOME/netns/<namespace>/api.json``;
- a shared service's port: a workspace namespace's ``127.0.0.1:<port>`` to the project workspace's
  namespace where the service runs (``$CLIPYARD_HOME/netns/<namespace>/fwd-<port>.json``);
- a namespace's egress gate (:mod:`~runtime_supervisor.adapters.containment.gate`), recorded in
  ``$CLIPYARD_HOME/netns/<namespace>/gate.json``.

Blocking: call from a thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final, TypedDict, cast

from runtime_supervisor.adapters.process.inspect import proc_stat

__all__ = [
    "GATE_RECORD",
    "Relay",
    "ensure_api_relay",
    "ensure_forward",
    "ensure_gate",
    "ensure_service_relay",
    "gate_of",
    "revive_service_relay",
    "start_relay",
    "stop_relay",
    "stop_relays_into",
    "stop_service_relay",
]

log = logging.getLogger(__name__)

_RELAY: Final = "runtime_supervisor.adapters.containment.relay"
_GATE: Final = "runtime_supervisor.adapters.containment.gate"


class Relay:
    """A started relay: its pid and start time (``/proc/<pid>/stat`` field 22)."""

    def __init__(self, pid: int, start_time: int | None) -> None:
        self.pid = pid
        self.start_time = start_time

    def alive(self) -> bool:
        """Whether the relay still runs (the same process, not a recycled pid)."""
        return _start_time(self.pid) == self.start_time and self.start_time is not None


def _start_time(pid: int) -> int | None:
    """The start time of ``pid`` while it runs (None: gone, or a zombie)."""
    stat = proc_stat(pid)
    return None if stat is None or stat.ended else stat.start_time


def start_relay(listen: str, target: str, log: Path) -> Relay:
    """Start a relay from ``listen`` to ``target`` (each ``[ns-path@]host:port``) and wait
    until it listens. Blocking.

    Raises:
        OSError: It could not start or listen (its log says why).
    """
    return _start([_RELAY, listen, target], log, f"the relay {listen} -> {target}")


def _start(argv: list[str], log: Path, what: str) -> Relay:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        # The relay detaches (forks, its first process exits at once): no supervisor has to
        # reap it, and it outlives the supervisor.
        proc = subprocess.Popen(
            [sys.executable, "-I", "-m", *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=out,
            start_new_session=True,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": _pythonpath()},
        )
    assert proc.stdout is not None
    with proc.stdout:
        ready = proc.stdout.readline().split()
    proc.wait()
    if len(ready) != 2 or ready[0] != b"listening" or not ready[1].isdigit():
        raise OSError(f"{what} did not start (see {log})")
    pid = int(ready[1])
    return Relay(pid, _start_time(pid))


def _pythonpath() -> str:
    import runtime_supervisor

    here = Path(runtime_supervisor.__file__).resolve().parent.parent
    return os.pathsep.join([str(here), *sys.path[1:]])


def stop_relay(pid: int, start_time: int | None) -> None:
    """End the relay ``pid`` if it is still the one started then."""
    if start_time is not None and _start_time(pid) == start_time:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


_SERVICE: Final = "relay.json"
_LOOPBACK: Final = "127.0.0.1"


class RelayRecord(TypedDict, total=False):
    """A relay's or gate's record (``relay.json``, ``api.json``, ``fwd-<port>.json``,
    ``gate.json``): the key it was started for (``port``, ``netns``, ``source``; a gate's
    ``netns`` and ``open``), then its process (``pid`` and ``startTime``: None until it
    announced itself) and its command line."""

    port: int
    netns: str
    source: str
    open: str
    pid: int | None
    startTime: int | None
    argv: list[str]


def _read(path: Path) -> RelayRecord | None:
    """The record in ``path`` (None: missing, unreadable or not an object). Its values are not
    checked here: the record may be damaged, so its readers check what they use."""
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict):
            return cast("RelayRecord", data)
    return None


@contextlib.contextmanager
def _locked(record: Path) -> Iterator[None]:
    """One ensure or stop of ``record`` at a time (threads and processes alike)."""
    record.parent.mkdir(parents=True, exist_ok=True)
    with record.with_suffix(".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _ensure(record: Path, listen: str, target: str, key: RelayRecord) -> Relay:
    return _keep(record, key, [_RELAY, listen, target], f"the relay {listen} -> {target}")


def _keep(record: Path, key: RelayRecord, argv: list[str], what: str) -> Relay:
    """The live process ``record`` names for ``key``, else a new one started with ``argv``.

    The record is written before the process starts (with its command line and no pid): a
    supervisor killed meanwhile leaves the key, for its successor to start the process again,
    and the command line, for it to end a process that announced itself to nobody.
    """
    with _locked(record):
        found = _read(record)
        if found is not None and all(found.get(k) == v for k, v in key.items()):
            relay = Relay(int(found.get("pid") or 0), found.get("startTime"))
            if relay.alive():
                return relay
        _stop_locked(record)
        _write(record, {**key, "pid": None, "startTime": None, "argv": argv})
        try:
            relay = _start(argv, record.with_suffix(".log"), what)
        except BaseException:
            record.unlink(missing_ok=True)
            raise
        _write(record, {**key, "pid": relay.pid, "startTime": relay.start_time, "argv": argv})
        return relay


def _write(record: Path, data: RelayRecord) -> None:
    """Replace ``record`` at once (a kill mid-write leaves the old one or the new one)."""
    partial = record.with_suffix(".json.tmp")
    partial.write_text(json.dumps(data))
    os.replace(partial, record)


def _stop(record: Path) -> None:
    if record.parent.is_dir():
        with _locked(record):
            _stop_locked(record)


def _stop_locked(record: Path) -> None:
    found = _read(record)
    if found is not None and found.get("pid"):
        stop_relay(int(found["pid"] or 0), found.get("startTime"))
    elif found is not None and isinstance(found.get("argv"), list):
        _stop_unrecorded([str(arg) for arg in found["argv"]])
    record.unlink(missing_ok=True)


def _stop_unrecorded(argv: list[str]) -> None:
    """End the process started with ``argv`` whose pid was never recorded (its starter died
    after it announced itself). Ours are ``python -I -m <argv>``, leaders of their own session."""
    wanted = ["-I", "-m", *argv]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            args = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")[1:-1]
            if args == wanted:
                os.kill(int(entry.name), signal.SIGKILL)


def ensure_service_relay(run_dir: Path, port: int, netns: Path) -> Relay:
    """The relay of a service's port (started when missing or dead)."""
    return _ensure(
        run_dir / _SERVICE,
        f"{_LOOPBACK}:{port}",
        f"{netns}@{_LOOPBACK}:{port}",
        {"port": port, "netns": str(netns)},
    )


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
    return _ensure(
        _api_record(home, name),
        f"{netns}@{_LOOPBACK}:{port}",
        f"{_LOOPBACK}:{port}",
        {"port": port, "netns": str(netns)},
    )


def stop_relays_into(home: Path, name: str) -> None:
    """End every relay into namespace ``name`` (the API's, the shared services' forwards) and
    its gate."""
    folder = home / "netns" / name
    _stop(_api_record(home, name))
    _stop(folder / GATE_RECORD)
    if folder.is_dir():
        for record in folder.glob("fwd-*.json"):
            _stop(record)


def ensure_forward(home: Path, name: str, netns: Path, port: int, source: Path) -> Relay:
    """The forward of a shared service's port: ``127.0.0.1:<port>`` inside namespace ``name``
    to the same address in the namespace ``source`` where the service runs."""
    return _ensure(
        home / "netns" / name / f"fwd-{port}.json",
        f"{netns}@{_LOOPBACK}:{port}",
        f"{source}@{_LOOPBACK}:{port}",
        {"port": port, "netns": str(netns), "source": str(source)},
    )


GATE_RECORD: Final = "gate.json"
"""The record of a namespace's gate, in its folder."""


def ensure_gate(home: Path, name: str, netns: Path, opened: str) -> Relay:
    """The egress gate of namespace ``name`` (started when missing or dead); ``opened`` the
    operator's host networks a rule may name (``CLIPYARD_EGRESS_HOST_NETWORKS``)."""
    folder = home / "netns" / name
    record = folder / GATE_RECORD
    argv = [_GATE, str(netns), str(folder), str(home), f"--open={opened}"]
    return _keep(record, {"netns": str(netns), "open": opened}, argv, f"the gate of {name}")


def gate_of(home: Path, name: str) -> int | None:
    """The pid recorded for namespace ``name``'s gate (None: none recorded)."""
    found = _read(home / "netns" / name / GATE_RECORD)
    pid = found.get("pid") if found is not None else None
    return pid if isinstance(pid, int) else None
