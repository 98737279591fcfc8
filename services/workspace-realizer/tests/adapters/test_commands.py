"""The shell command runner and the process runner under it (reference §5.5; ARCHITECTURE §6;
case 42 as changed by DECISIONS 14)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from realizer_git_helpers import StepRecorder

from workspace_realizer.adapters import process as process_module
from workspace_realizer.adapters.commands import TIMEOUT_EXIT_CODE, ShellCommandRunner
from workspace_realizer.adapters.environment import is_sensitive_name, sanitize_env
from workspace_realizer.adapters.ports import OUTPUT_CAP
from workspace_realizer.adapters.process import run_process

pytestmark = pytest.mark.integration

SECRET_ENV = {
    "CLIPYARD_NATS_URL": "nats://u:p@127.0.0.1:4222",
    "CLIPYARD_NATS_PASSWORD": "natspw",
    "CLIPYARD_HOME": "/srv/clipyard",
    "CLIPYARD_SECRET_KEY": "k",
    "PAPERCLIP_HOME": "/x",
    "PAPERCLIP_INSTANCE_ID": "i",
    "NATS_URL": "nats://127.0.0.1:4222",
    "DATABASE_URL": "postgresql://u:p@db/x",
    "APP_DATABASE_URL": "postgresql://u:p@db/y",
    "GITHUB_TOKEN": "ghp_x",
    "GH_TOKEN": "gho_x",
    "GITLAB_TOKEN": "glpat_x",
    "POSTGRES_PASSWORD": "pw",
    "PGPASSWORD": "pw",
    "PGHOST": "db",
    "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer x",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "authorization=Bearer y",
    "npm_config_tailscale_auth": "x",
    "npm_config_authenticated_private": "x",
    "NPM_CONFIG__AUTHTOKEN": "x",
}
KEPT_ENV = {
    "PATH": os.environ["PATH"],
    "HOME": "/home/agent",
    "LANG": "C.UTF-8",
    "HOST": "0.0.0.0",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
    "npm_config_registry": "https://registry.npmjs.org/",
    "TERM": "xterm",
}


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie waiting for its reaper does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_case42_sanitizer_drops_settings_and_credentials() -> None:
    env = sanitize_env({**SECRET_ENV, **KEPT_ENV})
    assert env == KEPT_ENV
    assert all(is_sensitive_name(name) for name in SECRET_ENV)


async def test_command_sees_sanitized_env_plus_given_vars(tmp_path: Path) -> None:
    steps = StepRecorder()
    runner = ShellCommandRunner(base_env={**SECRET_ENV, **KEPT_ENV})
    result = await runner.run(
        phase="workspace_provision", command="env; pwd", cwd=tmp_path,
        env={"CLIPYARD_WORKSPACE_CWD": str(tmp_path), "CLIPYARD_WORKSPACE_BRANCH": "PAP-1"},
        timeout=10, sink=steps,
    )  # fmt: skip
    lines = result.step.stdout.decode().splitlines()
    seen = {line.split("=", 1)[0] for line in lines if "=" in line}
    assert result.exit_code == 0
    assert result.step.status == "succeeded"
    assert steps.steps == [result.step]
    assert {"CLIPYARD_WORKSPACE_CWD", "CLIPYARD_WORKSPACE_BRANCH", "HOME", "HOST"} <= seen
    assert not seen & set(SECRET_ENV)
    assert str(tmp_path) in lines
    assert result.step.cwd == str(tmp_path)
    assert result.step.phase == "workspace_provision"


async def test_exit_code_becomes_status(tmp_path: Path) -> None:
    steps = StepRecorder()
    runner = ShellCommandRunner()
    result = await runner.run(
        phase="workspace_teardown", command="echo oops >&2; exit 3", cwd=tmp_path, env={},
        timeout=10, sink=steps,
    )  # fmt: skip
    assert result.exit_code == 3
    assert result.step.status == "failed"
    assert result.step.stderr == b"oops\n"


async def test_shell_falls_back_to_bin_sh(tmp_path: Path) -> None:
    runner = ShellCommandRunner(base_env={"PATH": os.environ["PATH"]})
    result = await runner.run(
        phase="workspace_provision", command="echo $0", cwd=tmp_path, env={}, timeout=10,
        sink=StepRecorder(),
    )  # fmt: skip
    assert result.step.stdout == b"/bin/sh\n"


async def test_output_is_capped_to_the_tail(tmp_path: Path) -> None:
    runner = ShellCommandRunner()
    command = "head -c 400000 /dev/zero | tr '\\0' 'a'; echo; echo THE-END"
    result = await runner.run(
        phase="workspace_provision", command=command, cwd=tmp_path, env={}, timeout=20,
        sink=StepRecorder(),
    )  # fmt: skip
    assert result.exit_code == 0
    assert len(result.step.stdout) == OUTPUT_CAP
    assert result.step.stdout.endswith(b"a\nTHE-END\n")
    assert result.step.truncated is True
    small = await runner.run(
        phase="workspace_provision", command="echo hi", cwd=tmp_path, env={}, timeout=10,
        sink=StepRecorder(),
    )  # fmt: skip
    assert small.step.truncated is False


async def test_url_secrets_are_scrubbed_from_steps(tmp_path: Path) -> None:
    runner = ShellCommandRunner()
    command = "echo https://bob:hunter2@example.com/x?token=abc123; echo 'password=sw0rdfish' >&2"
    result = await runner.run(
        phase="workspace_provision", command=command, cwd=tmp_path, env={}, timeout=10,
        sink=StepRecorder(),
    )  # fmt: skip
    text = result.step.command + result.step.stdout.decode() + result.step.stderr.decode()
    for secret in ("hunter2", "abc123", "sw0rdfish"):
        assert secret not in text
    assert b"https://***@example.com/x?***" in result.step.stdout


async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    runner = ShellCommandRunner()
    timeout = 3.0  # ample for the shells to start and set their traps, even on a loaded machine
    started = time.monotonic()
    result = await runner.run(
        phase="workspace_provision",
        # The child writes its pid only once it ignores SIGTERM: only the SIGKILL can end it.
        command=f"/bin/sh -c 'trap \"\" TERM; echo $$ > {pid_file}; exec sleep 60' & "
        "trap '' TERM; wait",
        cwd=tmp_path, env={}, timeout=timeout, sink=StepRecorder(),
    )  # fmt: skip
    # The timeout and the grace after SIGTERM (ignored), not the child's 60 s.
    assert time.monotonic() - started < timeout + 2 + 2.5
    assert result.exit_code == TIMEOUT_EXIT_CODE
    assert result.step.status == "failed"
    assert result.step.metadata["timedOut"] is True
    assert b"timed out" in result.step.stderr
    assert pid_file.exists(), "the child did not set its trap before the timeout"
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10  # a SIGKILLed process takes a moment to be gone
    while alive(child):
        assert time.monotonic() < deadline, "the child outlived the timeout"
        await asyncio.sleep(0.02)


async def test_cancellation_kills_the_process_and_returns(tmp_path: Path) -> None:
    pid_file = tmp_path / "leader.pid"
    task = asyncio.create_task(
        run_process(["sh", "-c", f"echo $$ > {pid_file}; exec sleep 60"], cwd=tmp_path,
                    env=dict(os.environ), timeout=60)
    )  # fmt: skip
    for _ in range(500):  # the shell has written its pid
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert not alive(int(pid_file.read_text()))


async def test_stdin_is_fed_and_large_output_is_read_whole(tmp_path: Path) -> None:
    data = os.urandom(1 << 20)
    outcome = await run_process(
        ["cat"], cwd=tmp_path, env=dict(os.environ), timeout=10, stdin=data, keep_full_stdout=True
    )
    assert outcome.returncode == 0
    assert outcome.full_stdout == data
    assert outcome.truncated is True


async def test_missing_program_or_directory_is_a_spawn_error(tmp_path: Path) -> None:
    outcome = await run_process(
        ["true"], cwd=tmp_path / "missing", env=dict(os.environ), timeout=10
    )
    assert outcome.returncode is None
    assert outcome.spawn_error


async def test_exit_watch_without_pidfd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pidfd(pid: int) -> int:
        raise OSError("pidfd not supported")

    monkeypatch.setattr(process_module.os, "pidfd_open", no_pidfd)
    outcomes = await asyncio.gather(
        *(run_process(["sh", "-c", f"exit {i}"], cwd=tmp_path, env=dict(os.environ), timeout=10)
          for i in range(5))
    )  # fmt: skip
    assert [o.returncode for o in outcomes] == [0, 1, 2, 3, 4]
