"""The one way Clipyard runs git on the host (ARCHITECTURE §6).

Every git process gets hooks disabled (``core.hooksPath`` pointing at an empty directory that
Clipyard owns), fsmonitor off, ``safe.directory=*``, no pager, no editor, no system config, no
terminal prompt, ``LC_ALL=C``, auto-gc off, commit signing off, and a sanitized environment. A
credential (a :class:`GitInvocation`) adds its config arguments and environment; the token lives
only in the child's environment and is scrubbed, like URL userinfo and query strings, from every
step, error and warning. One :class:`asyncio.Lock` per repository (keyed by its resolved common git
directory) serializes the git work on it: git itself fails on concurrent ``worktree add`` or
``fetch`` in one repository.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from contracts.errors import ErrorCode
from workspace_realizer.adapters import fs
from workspace_realizer.adapters.gitenv import (
    display_command,
    ensure_empty_dir,
    git_env,
    hardening_args,
    scrub_metadata,
    secret_values,
)
from workspace_realizer.adapters.ports import (
    GitInvocation,
    HostOperationError,
    Phase,
    Step,
    StepSink,
    StepStatus,
)
from workspace_realizer.adapters.process import ProcessOutcome, run_process, scrub_bytes

__all__ = ["DEFAULT_GIT_TIMEOUT", "GitResult", "GitRunner"]

DEFAULT_GIT_TIMEOUT = 120.0


@dataclass(frozen=True, kw_only=True)
class GitResult:
    """One finished git process.

    ``stdout`` is raw (for parsing; never show it without scrubbing); ``stderr`` is scrubbed.
    """

    args: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    step: Step
    stdout_bytes: int = 0
    """Bytes git wrote to stdout (``stdout`` holds fewer when the run had a ``stdout_limit``)."""

    @property
    def ok(self) -> bool:
        """True when git exited with status 0."""
        return self.returncode == 0

    @property
    def out(self) -> str:
        """Stdout without surrounding whitespace."""
        return self.stdout.strip()

    def message(self) -> str:
        """A short, scrubbed description of the failure (git's last error lines)."""
        text = " ".join(line.strip() for line in self.stderr.strip().splitlines() if line.strip())
        if not text:
            text = f"exit code {self.returncode}"
        return text[-2000:]


class GitRunner:
    """Runs hardened git processes and hands out the per-repository locks.

    Args:
        hooks_dir: The empty directory given as ``core.hooksPath``. Default: ``<home>/run/git-no-hooks``
            when ``home`` is given, else a fresh temporary directory. Emptied when the runner starts.
        home: ``$CLIPYARD_HOME``.
        base_env: The environment git processes start from, before sanitizing (default: this
            process's environment).
        timeout: Default seconds per git process.
    """

    def __init__(
        self,
        *,
        hooks_dir: Path | None = None,
        home: Path | None = None,
        base_env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_GIT_TIMEOUT,
    ) -> None:
        if hooks_dir is None:
            if home is not None:
                hooks_dir = Path(home).absolute() / "run" / "git-no-hooks"
            else:
                hooks_dir = Path(tempfile.mkdtemp(prefix="clipyard-git-no-hooks-"))
        self.hooks_dir = hooks_dir.absolute()
        ensure_empty_dir(self.hooks_dir)
        self._base_env = dict(os.environ if base_env is None else base_env)
        self.timeout = timeout
        self._locks: dict[str, asyncio.Lock] = {}
        self._keys: dict[str, str] = {}

    # -- process --------------------------------------------------------------------------------

    def argv(self, args: Sequence[str], auth: GitInvocation | None = None) -> list[str]:
        """The full argv of one git process."""
        config = list(auth.config_args) if auth is not None else []
        return ["git", *config, *hardening_args(self.hooks_dir), *args]

    def env(
        self, auth: GitInvocation | None = None, extra: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """The environment of one git process (see :func:`gitenv.git_env`)."""
        return git_env(self._base_env, auth, extra)

    async def run(
        self,
        args: Sequence[str],
        *,
        cwd: Path,
        phase: Phase | None = None,
        sink: StepSink | None = None,
        auth: GitInvocation | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stdin: bytes | None = None,
        check: bool = False,
        metadata: Mapping[str, object] | None = None,
        stdout_limit: int | None = None,
        on_stderr: Callable[[bytes], None] | None = None,
    ) -> GitResult:
        """Run ``git <args>`` in ``cwd``.

        Args:
            args: Git arguments (subcommand first).
            cwd: Working directory.
            phase: The operation phase; with ``sink``, the step is reported.
            sink: Where the step goes (read-only probes pass none and are not reported).
            auth: A credential for this process.
            env: Extra environment (for example ``GIT_INDEX_FILE``).
            timeout: Seconds (default: the runner's).
            stdin: Input bytes.
            check: Raise :class:`HostOperationError` when git fails.
            metadata: Step metadata (scrubbed).
            stdout_limit: Keep at most this many bytes of stdout (``stdout_bytes`` counts all).
            on_stderr: Called with each chunk of stderr as it comes (``--progress`` output).

        Returns:
            The result, with its step.

        Raises:
            HostOperationError: ``check`` and git failed, or git did not start.
        """
        secrets = secret_values(auth)
        outcome = await run_process(
            self.argv(args, auth),
            cwd=cwd,
            env=self.env(auth, env),
            timeout=timeout if timeout is not None else self.timeout,
            stdin=stdin,
            keep_full_stdout=True,
            full_stdout_limit=stdout_limit,
            on_stderr=on_stderr,
        )
        reported = sink is not None and phase is not None
        result = self._result(args, cwd, phase, metadata, secrets, outcome, timeout, reported)
        if sink is not None and phase is not None:
            await sink(result.step)
        if outcome.spawn_error is not None:
            raise HostOperationError(
                f"could not run git in {cwd}: {outcome.spawn_error}",
                code=ErrorCode.UNPROCESSABLE,
                details={"cwd": str(cwd)},
            )
        if check and not result.ok:
            raise HostOperationError(
                f"{result.step.command} failed: {result.message()}",
                code=ErrorCode.UNPROCESSABLE,
                details={
                    "reason": "git_failed",
                    "command": result.step.command,
                    "cwd": str(cwd),
                    "exitCode": result.returncode,
                },
            )
        return result

    def _result(
        self,
        args: Sequence[str],
        cwd: Path,
        phase: Phase | None,
        metadata: Mapping[str, object] | None,
        secrets: list[str],
        outcome: ProcessOutcome,
        timeout: float | None,
        reported: bool,
    ) -> GitResult:
        """The scrubbed step and result of one finished git process.

        The step keeps git's output only when it is reported (or git failed): a probe's output
        is its result's, and scrubbing it for a step nobody keeps cost a realize 31 ms with
        1,000 worktrees listed.
        """
        stderr = scrub_bytes(outcome.stderr, secrets)
        if outcome.timed_out:
            stderr += f"\n[clipyard] git timed out after {timeout or self.timeout:g}s".encode()
        status: StepStatus = (
            "succeeded" if outcome.returncode == 0 and not outcome.timed_out else "failed"
        )
        step = Step(
            phase=phase or "worktree_prepare",
            command=display_command(args, secrets),
            cwd=str(cwd),
            status=status,
            exit_code=outcome.returncode,
            stdout=scrub_bytes(outcome.stdout, secrets) if reported or status == "failed" else b"",
            stderr=stderr,
            truncated=outcome.truncated,
            started_at=outcome.started_at,
            finished_at=outcome.finished_at,
            metadata=scrub_metadata(metadata or {}, secrets),
        )
        full = outcome.full_stdout if outcome.full_stdout is not None else outcome.stdout
        result = GitResult(
            args=tuple(args),
            returncode=None if outcome.timed_out else outcome.returncode,
            stdout=full.decode("utf-8", errors="surrogateescape"),
            stderr=stderr.decode("utf-8", errors="replace"),
            step=step,
            stdout_bytes=outcome.stdout_total,
        )
        return result

    # -- locks ----------------------------------------------------------------------------------

    async def repo_key(self, repo: Path) -> str:
        """The lock key of a repository: its resolved common git directory (cached)."""
        where = fs.realpath(repo)
        cached = self._keys.get(where)
        if cached is not None:
            return cached
        key = where
        if fs.is_dir(where):
            result = await self.run(
                ["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=Path(where)
            )
            if result.ok and result.out:
                key = fs.realpath(result.out)
                self._keys[where] = key
        return key

    def lock(self, key: str) -> asyncio.Lock:
        """The lock for a key (created on first use)."""
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    async def repo_lock(self, repo: Path) -> asyncio.Lock:
        """The lock serializing all git work on the repository holding ``repo``."""
        return self.lock(await self.repo_key(repo))
