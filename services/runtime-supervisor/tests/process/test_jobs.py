"""Jobs run once as real processes: exit codes, separate capped streams, timeouts that kill the group."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from runtime_supervisor.adapters.process import JOB_OUTPUT_CAP, run_job

pytestmark = pytest.mark.integration


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def _ends(pid: int) -> bool:
    """Whether ``pid`` ends within a second (a SIGKILLed process closes its pipes before it is
    quite gone)."""
    deadline = time.monotonic() + 1
    while _running(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


async def _pid_from(path: Path) -> int:
    deadline = time.monotonic() + 5
    while not path.exists() or not path.read_text().strip():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    return int(path.read_text())


async def test_a_job_reports_its_exit_code_and_both_streams(tmp_path: Path, service_env) -> None:
    result = await run_job(
        command="echo to-out; echo to-err >&2; echo \"$ONLY-$HOME\"; exit 4",
        cwd=tmp_path, env={**service_env, "ONLY": "given"}, timeout=10,
    )  # fmt: skip
    assert (result.exit_code, result.signal) == (4, None)
    assert result.stdout == "to-out\ngiven-\n"  # no HOME: the environment is the one given
    assert result.stderr == "to-err\n"
    assert not result.truncated
    assert not result.timed_out
    assert result.error is None
    assert result.started_at <= result.finished_at


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
async def test_output_over_256_kib_keeps_its_tail_and_is_truncated(
    tmp_path: Path, service_env, stream: str
) -> None:
    big = f"import sys; sys.{stream}.write('a' * 300_000 + 'END'); sys.{stream}.flush()"
    other = "stderr" if stream == "stdout" else "stdout"
    small = f"import sys; sys.{other}.write('small')"
    result = await run_job(
        command=f"{sys.executable} -c \"{big}\"; {sys.executable} -c \"{small}\"",
        cwd=tmp_path, env=service_env, timeout=30,
    )  # fmt: skip
    kept, untouched = getattr(result, stream), getattr(result, other)
    assert result.exit_code == 0
    assert result.truncated
    assert len(kept) == JOB_OUTPUT_CAP == 256 * 1024
    assert kept.endswith("aaaEND")
    assert getattr(result, f"{stream}_bytes") == 300_003
    assert untouched == "small"


async def test_output_at_the_cap_is_not_truncated(tmp_path: Path, service_env) -> None:
    result = await run_job(
        command=f"{sys.executable} -c \"print('b' * 99, end='')\"", cwd=tmp_path,
        env=service_env, timeout=10, cap=99,
    )  # fmt: skip
    assert result.stdout == "b" * 99
    assert not result.truncated


async def test_a_job_killed_by_a_signal(tmp_path: Path, service_env) -> None:
    result = await run_job(command="kill -KILL $$", cwd=tmp_path, env=service_env, timeout=10)
    assert (result.exit_code, result.signal) == (None, 9)


# The jobs below sleep 300 s: a timeout of seconds leaves their shell ample time to start (and to
# set its trap, write bg.pid and print) even on a loaded machine, and still cuts them short.
_JOB_TIMEOUT = 3.0


async def test_a_timeout_kills_the_whole_group(tmp_path: Path, service_env) -> None:
    started = time.monotonic()
    result = await run_job(
        command="sleep 300 & echo $! > bg.pid; echo waiting; sleep 300",
        cwd=tmp_path, env=service_env, timeout=_JOB_TIMEOUT,
    )  # fmt: skip
    assert result.timed_out
    assert result.signal == 15
    assert result.stdout == "waiting\n"
    # The timeout, and no kill grace (SIGTERM ended it) nor the 300 s sleep.
    assert _JOB_TIMEOUT <= time.monotonic() - started < _JOB_TIMEOUT + 2.5
    assert await _ends(int((tmp_path / "bg.pid").read_text()))


async def test_a_timeout_that_ignores_sigterm_gets_sigkill(tmp_path: Path, service_env) -> None:
    started = time.monotonic()
    result = await run_job(
        command="trap '' TERM; sleep 300 & echo $! > bg.pid; echo waiting; sleep 300",
        cwd=tmp_path, env=service_env, timeout=_JOB_TIMEOUT,
    )  # fmt: skip
    assert result.timed_out
    assert result.signal == 9
    assert result.stdout == "waiting\n"  # its trap was set before the SIGTERM came
    # The timeout and the 2 s grace after SIGTERM, not the 300 s sleep.
    assert _JOB_TIMEOUT + 2 <= time.monotonic() - started < _JOB_TIMEOUT + 5
    assert await _ends(int((tmp_path / "bg.pid").read_text()))


async def test_what_a_job_leaves_running_in_its_group_is_killed(
    tmp_path: Path, service_env
) -> None:
    started = time.monotonic()
    result = await run_job(
        command="sleep 300 & echo $! > bg.pid; echo done", cwd=tmp_path, env=service_env,
        timeout=30,
    )  # fmt: skip
    assert (result.exit_code, result.timed_out, result.stdout) == (0, False, "done\n")
    assert time.monotonic() - started < 3  # the leftover held stdout open: not waited for
    assert await _ends(int((tmp_path / "bg.pid").read_text()))


async def test_a_cancelled_job_kills_its_group(tmp_path: Path, service_env) -> None:
    job = asyncio.create_task(
        run_job(
            command="sleep 300 & echo $! > bg.pid; sleep 300", cwd=tmp_path, env=service_env,
            timeout=60,
        )
    )  # fmt: skip
    background = await _pid_from(tmp_path / "bg.pid")
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    assert await _ends(background)


async def test_a_job_in_a_missing_directory_reports_an_error(tmp_path: Path, service_env) -> None:
    result = await run_job(command="true", cwd=tmp_path / "absent", env=service_env, timeout=5)
    assert result.exit_code is None
    assert result.signal is None
    assert result.error is not None
    assert "cannot start the job in" in result.error


async def test_a_job_is_reaped(tmp_path: Path, service_env) -> None:
    await run_job(command="echo $$ > me.pid", cwd=tmp_path, env=service_env, timeout=5)
    pid = int((tmp_path / "me.pid").read_text())
    with pytest.raises(ChildProcessError):  # no zombie child left to wait for
        os.waitpid(pid, os.WNOHANG)  # noqa: ASYNC222 (WNOHANG: it never blocks)
