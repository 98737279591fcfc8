"""What an untrusted agent cannot do to the host or the repository through its slot
(ARCHITECTURE §6): rewrite the git pointers the supervisor follows (and a pointer changed anyway
refuses the next launch), damage the shared repository (other branches' refs, packs,
alternates, packed-refs), leave a process for the next run, or reach the root launcher through
its environment."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import msgspec
import pytest
from bus_world import Sup, Upstream
from slot_world import Repo, Slots, company_uid, uid_processes

from contracts.base import ErrorReply, Ok
from contracts.slots import AdapterLaunched, RunLogSlice

pytestmark = pytest.mark.integration

PY = "/usr/bin/python3"
GIT_ENV = {"GIT_AUTHOR_NAME": "agent", "GIT_AUTHOR_EMAIL": "agent@example.com",
           "GIT_COMMITTER_NAME": "agent", "GIT_COMMITTER_EMAIL": "agent@example.com"}  # fmt: skip

HOSTILE = r"""
import glob, json, os, subprocess, sys
wt, common, victim = sys.argv[1], sys.argv[2], sys.argv[3]
git_dir = os.path.join(common, "worktrees", "agent-work")
found = {}
def attempt(name, action):
    try:
        action()
        found[name] = "succeeded"
    except OSError as exc:
        found[name] = type(exc).__name__
def write(path, text):
    with open(path, "w") as out:
        out.write(text)
attempt("rewrite_dot_git", lambda: write(os.path.join(wt, ".git"), "gitdir: " + victim))
attempt("unlink_dot_git", lambda: os.unlink(os.path.join(wt, ".git")))
attempt("rename_over_dot_git", lambda: (write(os.path.join(wt, "x"), "gitdir: " + victim),
                                        os.rename(os.path.join(wt, "x"), os.path.join(wt, ".git"))))
for name in ("gitdir", "commondir", "config.worktree"):
    attempt("rewrite_" + name, lambda: write(os.path.join(git_dir, name), victim))
    attempt("unlink_" + name, lambda: os.unlink(os.path.join(git_dir, name)))
heads = os.path.join(common, "refs", "heads")
attempt("delete_sibling_ref", lambda: os.unlink(os.path.join(heads, "sibling")))
attempt("move_sibling_ref", lambda: write(os.path.join(heads, "sibling"), "0" * 40 + "\n"))
attempt("shadow_packed_main", lambda: write(os.path.join(heads, "main"), "0" * 40 + "\n"))
attempt("write_packed_refs", lambda: write(os.path.join(common, "packed-refs"), ""))
attempt("delete_pack", lambda: os.unlink(glob.glob(os.path.join(common, "objects/pack/*.pack"))[0]))
attempt("plant_alternates", lambda: write(os.path.join(common, "objects/info/alternates"), "/tmp"))
attempt("plant_in_common", lambda: write(os.path.join(common, "evil"), ""))
with open("agent-file.txt", "w") as out:
    out.write("made by the agent\n")
git = ["git", "-c", "core.hooksPath=/dev/null"]
subprocess.run([*git, "add", "agent-file.txt"], check=True)
done = subprocess.run([*git, "commit", "-qm", "agent commit"], capture_output=True, text=True)
found["commit"] = done.returncode
found["commit_err"] = done.stderr[-500:]
print(json.dumps({"result": found}))
"""


@pytest.fixture
def bus_sup(slots: Slots) -> Sup:
    return Sup(slots.bus)


async def _workspace(upstream: Upstream, bus_sup: Sup, repo: Repo) -> str:
    pw = await upstream.project_workspace(str(repo.root))
    ws = await upstream.workspace(str(repo.worktree), pw=pw, branch="agent-work")
    await bus_sup.known(ws)
    return ws


def _owners(root: Path) -> dict[str, int]:
    return {str(p): os.lstat(p).st_uid for p in [root, *root.rglob("*")]}


async def test_an_agent_cannot_rewrite_git_pointers_nor_damage_the_shared_repository(
    start_supervisor: Any, upstream: Upstream, slots: Slots, bus_sup: Sup, repo: Repo,
    tmp_path: Path,
) -> None:  # fmt: skip
    await start_supervisor()
    repo.git("repack", "-adq")
    repo.git("pack-refs", "--all")
    common = repo.root / ".git"
    sibling_before = repo.git("rev-parse", "sibling")
    packs = sorted((common / "objects" / "pack").glob("*.pack"))
    assert packs
    victim = tmp_path / "victim"
    subprocess.run(["git", "init", "-q", str(victim)], check=True)
    ws = await _workspace(upstream, bus_sup, repo)
    run = str(uuid.uuid4())
    grant = await slots.grant(run, trusted=False)
    argv = [PY, "-c", HOSTILE, str(repo.worktree), str(common), str(victim / ".git")]
    reply = await slots.launch(grant, run, argv, trusted=False, workspace_id=ws, env=GIT_ENV)
    assert isinstance(reply, Ok), reply
    done = await slots.finished(run)
    assert done.end == "exited", done
    result = done.result
    assert result["commit"] == 0, result["commit_err"]
    for name, outcome in result.items():
        if name not in ("commit", "commit_err"):
            assert outcome != "succeeded", (name, result)
    assert repo.git("log", "-1", "--format=%s", "agent-work") == "agent commit"
    assert repo.git("rev-parse", "sibling") == sibling_before
    assert repo.git("rev-parse", "main") == repo.git("rev-parse", "agent-work~1")
    assert sorted((common / "objects" / "pack").glob("*.pack")) == packs
    assert not (common / "objects" / "info" / "alternates").exists()
    layout_dir = common / "worktrees" / "agent-work"
    assert (repo.worktree / ".git").read_text().strip() == f"gitdir: {layout_dir}"
    for pointer in (repo.worktree / ".git", layout_dir / "gitdir", layout_dir / "commondir",
                    layout_dir / "config.worktree"):  # fmt: skip
        assert pointer.stat().st_uid == os.getuid(), pointer
    assert (layout_dir / "config.worktree").read_text() == ""
    assert repo.git("status", "--short", cwd=repo.worktree) == "?? x"  # its failed rename


async def test_a_pointer_changed_behind_our_back_refuses_the_launch(
    start_supervisor: Any, upstream: Upstream, slots: Slots, bus_sup: Sup, repo: Repo,
    tmp_path: Path,
) -> None:  # fmt: skip
    await start_supervisor()
    victim = tmp_path / "victim"
    subprocess.run(["git", "init", "-q", str(victim)], check=True)
    (victim / "keep").write_text("another company's\n")
    before = _owners(victim)
    ws = await _workspace(upstream, bus_sup, repo)
    git_dir = repo.root / ".git" / "worktrees" / "agent-work"
    for tamper in (lambda: (git_dir / "commondir").write_text(f"{victim / '.git'}\n"),
                   lambda: (repo.worktree / ".git").write_text(f"gitdir: {victim / '.git'}\n")):  # fmt: skip
        original = {p: p.read_text() for p in (git_dir / "commondir", repo.worktree / ".git")}
        tamper()
        run = str(uuid.uuid4())
        grant = await slots.grant(run, trusted=False)
        reply = await slots.launch(grant, run, [PY, "-c", "print(1)"], trusted=False,
                                   workspace_id=ws)  # fmt: skip
        assert isinstance(reply, ErrorReply), reply
        assert "cannot be handed to the company's identity safely" in reply.message
        done = await slots.finished(run)
        assert done.end == "launch_failed"
        assert "safely" in (done.error or "")
        assert _owners(victim) == before
        assert not (victim / ".git" / "hooks").exists() or _owners(victim) == before
        assert repo.worktree.stat().st_uid == os.getuid()
        await slots.release(run)
        for path, text in original.items():
            path.write_text(text)


async def test_what_a_run_leaves_behind_dies_with_it_and_nothing_else_of_its_company(
    start_supervisor: Any, slots: Slots, home: Path
) -> None:
    await start_supervisor()
    run = str(uuid.uuid4())
    grant = await slots.grant(run, trusted=False)
    escaper = "(setsid sleep 301 &) ; (setsid sh -c 'sleep 302 & wait' &) ; echo left"
    reply = await slots.launch(grant, run, ["/bin/sh", "-c", escaper], trusted=False)
    assert isinstance(reply, Ok), reply
    uid = company_uid(home)
    # Another process of the same company (a service of another workspace) runs as that uid.
    neighbour = subprocess.Popen(
        ["/usr/bin/setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
         "/bin/sleep", "300"], start_new_session=True,
    )  # fmt: skip
    try:
        done = await slots.finished(run)
        assert done.end == "exited", done
        assert uid_processes(uid) == [neighbour.pid]
        assert neighbour.poll() is None
    finally:
        neighbour.kill()
        neighbour.wait(5)


async def test_the_agents_environment_never_reaches_the_root_launcher_nor_an_argv(
    start_supervisor: Any, slots: Slots, home: Path, tmp_path: Path
) -> None:
    await start_supervisor()
    run = str(uuid.uuid4())
    canary = "clipyard-run-token-" + uuid.uuid4().hex
    marker = tmp_path / "root-ran-the-agents-launcher"
    scratch = home / "runs" / run / "scratch"
    scratch.mkdir(parents=True)
    for name in ("bwrap", "setpriv"):  # in the cwd, which a relative PATH entry reaches
        fake = scratch / name
        fake.write_text(f'#!/bin/sh\ntouch {marker}\nexec /usr/bin/{name} "$@"\n')
        fake.chmod(0o755)
    script = ("import json, os, time; time.sleep(1.5); print(json.dumps({'result': "
              "{'path': os.environ.get('PATH'), 'uid': os.getuid(), "
              "'preload': os.environ.get('LD_PRELOAD')}}))")  # fmt: skip
    grant = await slots.grant(run, trusted=False)
    env = {"PATH": ".:/usr/bin:/bin", "LD_PRELOAD": "/nonexistent/clipyard-preload.so",
           "GLIBC_TUNABLES": "glibc.malloc.check=3", "CLIPYARD_API_KEY": canary}  # fmt: skip
    reply = await slots.launch(grant, run, [PY, "-c", script], trusted=False, env=env)
    assert isinstance(reply, Ok), reply
    launched = msgspec.convert(reply.result, AdapterLaunched)
    await asyncio.sleep(0.5)
    seen = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            seen += b"bwrap" in cmdline or b"setpriv" in cmdline
            assert canary.encode() not in cmdline, entry
    assert seen, launched
    done = await slots.finished(run)
    assert done.end == "exited", done
    assert done.result["uid"] != 0
    assert done.result["path"] == ".:/usr/bin:/bin"  # the agent's PATH applies inside
    assert done.result["preload"] is None
    assert not marker.exists()
    log = msgspec.convert((await slots.log(run)).result, RunLogSlice)
    assert "preload" not in log.text.replace('"preload"', "")
    assert "LD_PRELOAD" not in log.text
    json.loads(log.text.strip().splitlines()[-1])
