"""The CLI's user commands against a running stack over its HTTP API (``CLIPYARD_API_URL``,
``CLIPYARD_API_KEY``): workspaces list, show and diff, runs list, show, log (following a running
run to its end) and cancel, issues list; ``--json`` on each; clear errors without a key or a
company."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.gitutil import git
from tests.e2e.heartbeatutil import create_agent, wait_run, wake
from tests.e2e.runtimeutil import runtime_board

pytestmark = pytest.mark.e2e

COUNTER = (
    "import time\nfor i in range(8):\n    print(f'line {i}', flush=True)\n    time.sleep(0.25)\n"
)
SLEEPER = "import time\nprint('started', flush=True)\ntime.sleep(120)\n"


async def clipyard(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m clipyard_cli ARGS`` with ``env`` (run off the loop: the stack answers it)."""
    argv = [sys.executable, "-m", "clipyard_cli", *args]
    return await asyncio.to_thread(
        subprocess.run, argv, env=env, capture_output=True, text=True, timeout=120, check=False
    )


async def ok(env: dict[str, str], *args: str) -> str:
    done = await clipyard(env, *args)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


async def test_user_commands_over_the_api(stack: Any, tmp_path: Path) -> None:
    async with runtime_board(stack, tmp_path) as board:
        company = board.company["id"]
        key = board.http.headers["Authorization"].removeprefix("Bearer ")
        env = {"PATH": "/usr/bin:/bin", "CLIPYARD_API_URL": stack.api, "CLIPYARD_API_KEY": key}
        issue, ws = await board.realize("Fix the login")
        (Path(ws["cwd"]) / "login.py").write_text("ok = True\n")
        git(ws["cwd"], "add", "login.py")
        git(ws["cwd"], "commit", "-q", "-m", "Add login")
        counter = await create_agent(board, "counter", config={
            "command": [sys.executable, "-u", "-c", COUNTER]}, trust="trusted")  # fmt: skip
        sleeper = await create_agent(board, "sleeper", config={
            "command": [sys.executable, "-u", "-c", SLEEPER]}, trust="trusted")  # fmt: skip

        # Lists need a company: said plainly; then given by --company or the environment.
        refused = await clipyard(env, "workspaces", "list")
        assert refused.returncode == 2
        assert "--company ID or CLIPYARD_COMPANY_ID" in refused.stderr
        listed = await ok(env, "workspaces", "list", "--company", company)
        assert ws["id"] in listed
        assert ws["branchName"] in listed
        env["CLIPYARD_COMPANY_ID"] = company
        rows = json.loads(await ok(env, "workspaces", "list", "--json"))
        assert [w["id"] for w in rows] == [ws["id"]]
        shown = await ok(env, "workspaces", "show", ws["id"])
        assert f"branch         {ws['branchName']}" in shown
        diff = await ok(env, "workspaces", "diff", ws["id"], "--path", "login.py")
        assert "1 commit, 1 file changed (+1 -0), 0 untracked" in diff
        assert "Add login" in diff
        assert "+ok = True" in diff
        issues = await ok(env, "issues", "list")
        assert issue["identifier"] in issues
        assert "Fix the login" in issues

        # A run's log followed to its end; then shown, listed, and a second run cancelled.
        counted = await wake(board.http, counter["id"])
        followed = await ok(env, "runs", "log", counted["runId"], "--follow")
        assert followed.splitlines()[:8] == [f"line {i}" for i in range(8)]
        run = await wait_run(board.http, counted["runId"])
        assert run["status"] == "succeeded", run
        details = await ok(env, "runs", "show", counted["runId"])
        assert "status     succeeded" in details
        assert "wakeup > workspace_resolution" in details
        assert counted["runId"] in await ok(env, "runs", "list")
        slept = await wake(board.http, sleeper["id"])
        await wait_run(board.http, slept["runId"], lambda r: r["status"] == "running", "running")
        cancelled = json.loads(await ok(env, "runs", "cancel", slept["runId"], "--json"))
        assert cancelled["cancelRequested"] is True
        ended = await wait_run(board.http, slept["runId"])
        assert ended["status"] == "cancelled", ended

        # No key: said plainly, nothing asked.
        del env["CLIPYARD_API_KEY"]
        keyless = await clipyard(env, "runs", "show", slept["runId"])
        assert keyless.returncode == 2
        assert "set CLIPYARD_API_KEY" in keyless.stderr
        # A wrong id: the API's own sentence.
        env["CLIPYARD_API_KEY"] = key
        missing = await clipyard(env, "runs", "show", "00000000-0000-4000-8000-000000000000")
        assert missing.returncode == 2
        assert "(404)" in missing.stderr
