"""Adapter slots over the bus, with the real supervisor, real processes, real bwrap and real git
worktrees (ARCHITECTURE §6; docs/design/heartbeat-runs.md): trusted and contained launches, what a
contained agent can and cannot reach, timeouts and kills of the whole process group, the
last-line JSON result, the run log, the pool, restart recovery, and the run token kept out of
the store."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import msgspec
import pytest
from bus_world import Sup, Upstream, eventually
from slot_world import STRANGER, Repo, Slots, company_uid

from contracts.base import ErrorReply, Ok
from contracts.slots import AdapterLaunched, RunLogSlice, RunSlot, SlotHealth
from runtime_supervisor.adapters.process import group_members

pytestmark = pytest.mark.integration

PY = "/usr/bin/python3"
CANARY = "clipyard-run-token-" + uuid.uuid4().hex
GIT_ENV = {"GIT_AUTHOR_NAME": "agent", "GIT_AUTHOR_EMAIL": "agent@example.com",
           "GIT_COMMITTER_NAME": "agent", "GIT_COMMITTER_EMAIL": "agent@example.com"}  # fmt: skip

AGENT = r"""
import json, os, subprocess, sys
home, repo, sibling = sys.argv[1], sys.argv[2], sys.argv[3]
found = {"uid": os.getuid(), "token": os.environ.get("CLIPYARD_API_KEY") == sys.argv[4],
         "home": os.environ.get("HOME"), "cwd": os.getcwd()}
def attempt(name, action):
    try:
        action()
        found[name] = "succeeded"
    except OSError as exc:
        found[name] = type(exc).__name__
attempt("read_key", lambda: open(os.path.join(home, "master.key")).read())
attempt("read_store", lambda: open(os.path.join(home, "data", "fake-store.sqlite")).read())
attempt("read_sibling", lambda: open(os.path.join(sibling, "sibling-secret.txt")).read())
attempt("list_home", lambda: os.listdir(home))
def plant():
    with open(os.path.join(repo, ".git", "hooks", "post-checkout"), "w") as hook:
        hook.write("#!/bin/sh\ntouch /tmp/pwned\n")
attempt("plant_hook", plant)
def configure():
    with open(os.path.join(repo, ".git", "config"), "a") as config:
        config.write("[core]\n\thooksPath = /tmp\n")
attempt("write_config", configure)
with open("agent-file.txt", "w") as out:
    out.write("made by the agent\n")
git = ["git", "-c", "core.hooksPath=/dev/null"]
subprocess.run([*git, "add", "agent-file.txt"], check=True)
done = subprocess.run([*git, "commit", "-qm", "agent commit"], capture_output=True, text=True)
found["commit"] = done.returncode
found["commit_err"] = done.stderr[-500:]
print("working...", file=sys.stderr)
print(json.dumps({"usage": {"inputTokens": 3}, "result": found}))
"""


async def _workspace(upstream: Upstream, nc_sup: Sup, cwd: Path, repo: Repo | None = None,
                     branch: str = "agent-work") -> str:  # fmt: skip
    pw = await upstream.project_workspace(str(repo.root)) if repo is not None else None
    ws = await upstream.workspace(str(cwd), pw=pw, branch=branch)
    await nc_sup.known(ws)
    return ws


@pytest.fixture
def bus_sup(slots: Slots) -> Sup:
    return Sup(slots.bus)


async def _members(pgid: int | None, at_least: int) -> list[int] | None:
    members = group_members(pgid or -1)
    return members if len(members) >= at_least else None


async def _launched(slots: Slots, run: str, command: list[str], *, trusted: bool,
                    **fields: Any) -> AdapterLaunched:  # fmt: skip
    grant = await slots.grant(run, trusted=trusted)
    reply = await slots.launch(grant, run, command, trusted=trusted, **fields)
    assert isinstance(reply, Ok), reply
    return msgspec.convert(reply.result, AdapterLaunched)


async def test_an_untrusted_agent_commits_in_its_worktree_and_reaches_nothing_else(
    start_supervisor: Any, upstream: Upstream, slots: Slots, bus_sup: Sup, repo: Repo,
    home: Path,
) -> None:  # fmt: skip
    await start_supervisor()
    ws = await _workspace(upstream, bus_sup, repo.worktree, repo)
    config_before = (repo.root / ".git" / "config").read_text()
    run = str(uuid.uuid4())
    grant = await slots.grant(run, trusted=False)
    assert grant.contained
    assert grant.sandbox == "bwrap"
    assert grant.type == "local_stdio"
    argv = [PY, "-c", AGENT, str(home), str(repo.root), str(repo.sibling), CANARY]
    reply = await slots.launch(grant, run, argv, trusted=False, workspace_id=ws,
                               env={**GIT_ENV, "CLIPYARD_API_KEY": CANARY})  # fmt: skip
    assert isinstance(reply, Ok), reply
    done = await slots.finished(run)

    assert done.end == "exited", done
    assert done.exit_code == 0, done
    assert done.usage == {"inputTokens": 3}
    result = done.result
    assert result["uid"] == company_uid(home) != 0
    assert result["token"] is True
    assert result["home"] == "/tmp"
    assert result["cwd"] == str(repo.worktree)
    for attempt in ("read_key", "read_store", "read_sibling", "list_home", "plant_hook",
                    "write_config"):  # fmt: skip
        assert result[attempt] != "succeeded", (attempt, result)
    assert result["commit"] == 0, result["commit_err"]
    # The commit landed on the workspace branch; nothing was planted in the repository.
    assert repo.git("log", "-1", "--format=%s", "agent-work") == "agent commit"
    assert repo.git("show", "agent-work:agent-file.txt") == "made by the agent"
    assert not (repo.root / ".git" / "hooks" / "post-checkout").exists()
    assert (repo.root / ".git" / "config").read_text() == config_before
    # The worktree stays the company identity's; its git pointer and git dir are ours again.
    assert (repo.worktree / "agent-file.txt").stat().st_uid == company_uid(home)
    assert repo.worktree.stat().st_uid == company_uid(home)
    assert (repo.worktree / ".git").stat().st_uid == os.getuid()
    assert (repo.root / ".git" / "worktrees" / "agent-work" / "HEAD").stat().st_uid == os.getuid()
    # Excerpts and log.
    assert "working..." in (done.stderr_excerpt or "")
    assert json.loads((done.stdout_excerpt or "").strip().splitlines()[-1])["usage"]
    log = msgspec.convert((await slots.log(run)).result, RunLogSlice)
    assert "working..." in log.text
    assert '"inputTokens"' in log.text
    assert log.size == done.log_bytes > 0
    # The run token is in no stored byte.
    for path in (home / "data").rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path
    assert CANARY not in log.text


async def test_a_trusted_agent_runs_as_the_service_user_in_its_worktree(
    start_supervisor: Any, upstream: Upstream, slots: Slots, bus_sup: Sup, repo: Repo
) -> None:
    await start_supervisor()
    ws = await _workspace(upstream, bus_sup, repo.worktree)
    run = str(uuid.uuid4())
    script = ("import os, json; print('noise'); "
              "print(json.dumps({'result': {'uid': os.getuid(), 'cwd': os.getcwd(), "
              "'db': os.environ.get('CLIPYARD_NATS_URL')}}))")  # fmt: skip
    grant = await slots.grant(run, trusted=True)
    assert not grant.contained
    assert grant.sandbox == "none"
    await _launched(slots, run, [PY, "-c", script], trusted=True, workspace_id=ws)
    done = await slots.finished(run)
    assert done.end == "exited"
    assert done.exit_code == 0
    assert done.result == {"uid": os.getuid(), "cwd": str(repo.worktree), "db": None}
    assert done.usage is None


async def test_a_timeout_kills_the_whole_group_even_what_ignores_sigterm(
    start_supervisor: Any, slots: Slots
) -> None:
    await start_supervisor()
    run = str(uuid.uuid4())
    stubborn = ("trap '' TERM; (trap '' TERM; sleep 300 & sleep 300; wait) & "
                "sleep 300 & echo started; wait")  # fmt: skip
    launched = await _launched(slots, run, ["/bin/sh", "-c", stubborn], trusted=True,
                               timeout_sec=1)  # fmt: skip
    assert launched.pgid is not None
    await eventually(lambda: _members(launched.pgid, 4), timeout=5, what="the whole group")
    done = await slots.finished(run, timeout=20)
    assert done.end == "timed_out", done
    assert done.signal == "SIGKILL"
    assert group_members(launched.pgid or -1) == []
    assert "started" in (done.stdout_excerpt or "")


async def test_a_kill_ends_a_contained_adapter_and_its_group(
    start_supervisor: Any, slots: Slots
) -> None:
    await start_supervisor()
    run = str(uuid.uuid4())
    launched = await _launched(slots, run, ["/bin/sh", "-c", "sleep 300 & sleep 300"],
                               trusted=False)  # fmt: skip
    assert launched.pgid is not None
    assert group_members(launched.pgid)
    reply = await slots.kill(run)
    assert isinstance(reply, Ok), reply
    killed = msgspec.convert(reply.result, RunSlot)
    assert killed.end == "killed"
    assert killed.state == "finished"
    assert group_members(launched.pgid) == []
    # Still held until released; then free.
    released = await slots.release(run)
    assert isinstance(released, Ok), released
    assert msgspec.convert((await slots.slot(run)).result, RunSlot).state == "released"


async def test_the_pool_is_bounded_idempotent_per_run_and_company_scoped(
    start_supervisor: Any, slots: Slots
) -> None:
    await start_supervisor()  # CLIPYARD_SLOTS=2
    first, second, third = (str(uuid.uuid4()) for _ in range(3))
    granted = await slots.grant(first, trusted=True)
    assert (await slots.grant(first, trusted=True)).slot_id == granted.slot_id
    await slots.grant(second, trusted=False)
    full = await slots.acquire(third, trusted=True)
    assert isinstance(full, ErrorReply)
    assert full.code == "slot_unavailable"
    assert full.status == 409
    remote = await slots.grant(third, trusted=False, adapter_type="http")
    assert remote.type == "remote_http"
    assert remote.index is None
    health = [msgspec.convert(h, SlotHealth) for h in (await slots.health()).result]
    assert health[0].type == "local_stdio"
    assert health[0].capacity == 2
    assert health[0].in_use == 2
    assert health[0].healthy
    assert health[0].sandbox == "bwrap"
    assert health[1].type == "remote_http"
    assert health[1].capacity is None
    assert health[1].in_use == 1
    hidden = await slots.slot(first, principal=STRANGER)
    assert isinstance(hidden, ErrorReply)
    assert hidden.status == 404
    await slots.release(first)
    fourth = str(uuid.uuid4())
    assert (await slots.grant(fourth, trusted=True)).index == granted.index


async def test_a_restarted_supervisor_records_a_launched_slot_detached_and_frees_grants(
    start_supervisor: Any, slots: Slots
) -> None:
    supervisor = await start_supervisor()
    run, waiting = str(uuid.uuid4()), str(uuid.uuid4())
    launched = await _launched(slots, run, ["/bin/sh", "-c", "trap '' PIPE; sleep 300"],
                               trusted=True)  # fmt: skip
    await slots.grant(waiting, trusted=True)
    supervisor.kill()
    await start_supervisor()
    detached = msgspec.convert((await slots.slot(run)).result, RunSlot)
    assert detached.end == "detached"
    assert detached.state == "finished"
    assert group_members(launched.pgid or -1) == []
    freed = msgspec.convert((await slots.slot(waiting)).result, RunSlot)
    assert freed.state == "released"
