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
import shlex
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from telemetry import scrub_url_secrets
from telemetry.redaction import is_secret_name
from workspace_realizer.adapters import fs
from workspace_realizer.adapters.environment import sanitize_env
from workspace_realizer.adapters.ports import (
    GitInvocation,
    HostOperationError,
    Phase,
    Step,
    StepSink,
    StepStatus,
)
from workspace_realizer.adapters.process import run_process, scrub_bytes

__all__ = ["DEFAULT_GIT_TIMEOUT", "GitResult", "GitRunner", "display_command"]

DEFAULT_GIT_TIMEOUT = 120.0

# Variables that would point git at another repository, index or config than the one asked for.
_GIT_LOCATION_VARS = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_QUARANTINE_PATH",
        "GIT_EXTERNAL_DIFF",
        "GIT_ASKPASS",
        "GIT_PAGER",
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
    }
)


def display_command(args: Sequence[str], secrets: Sequence[str] = ()) -> str:
    """``git <args>`` quoted for display, with URL secrets (and the given values) hidden.

    Args:
        args: The git arguments after the global ``-c`` options.
        secrets: Literal values to hide.

    Returns:
        The display command.
    """
    text = shlex.join(["git", *args])
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return str(scrub_url_secrets(text))


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
        _ensure_empty_dir(self.hooks_dir)
        self._base_env = dict(os.environ if base_env is None else base_env)
        self.timeout = timeout
        self._locks: dict[str, asyncio.Lock] = {}
        self._keys: dict[str, str] = {}

    # -- process --------------------------------------------------------------------------------

    def hardening_args(self) -> list[str]:
        """The ``-c`` options every git process gets (after any credential options, so they win)."""
        return [
            "-c", f"core.hooksPath={self.hooks_dir}",
            "-c", "core.fsmonitor=false",
            "-c", "safe.directory=*",
            "-c", "core.pager=cat",
            "-c", "core.editor=true",
            "-c", "gc.auto=0",
            "-c", "maintenance.auto=false",
            "-c", "commit.gpgSign=false",
            "-c", "tag.gpgSign=false",
        ]  # fmt: skip

    def argv(self, args: Sequence[str], auth: GitInvocation | None = None) -> list[str]:
        """The full argv of one git process."""
        config = list(auth.config_args) if auth is not None else []
        return ["git", *config, *self.hardening_args(), *args]

    def env(
        self, auth: GitInvocation | None = None, extra: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """The environment of one git process: sanitized base, credential env, then the fixed
        settings (which nothing can override) and ``extra``."""
        env = {
            name: value for name, value in sanitize_env(self._base_env).items() if _inherited(name)
        }
        if auth is not None:
            env.update(auth.env)
        env.update(
            {
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_TERMINAL_PROMPT": "0",
                "GIT_EDITOR": "true",
                "GIT_SEQUENCE_EDITOR": "true",
                "GIT_PAGER": "cat",
                "PAGER": "cat",
                "LC_ALL": "C",
                "LANGUAGE": "C",
            }
        )
        if extra:
            env.update(extra)
        return env

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

        Returns:
            The result, with its step.

        Raises:
            HostOperationError: ``check`` and git failed, or git did not start.
        """
        secrets = _secret_values(auth)
        outcome = await run_process(
            self.argv(args, auth),
            cwd=cwd,
            env=self.env(auth, env),
            timeout=timeout if timeout is not None else self.timeout,
            stdin=stdin,
            keep_full_stdout=True,
        )
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
            stdout=scrub_bytes(outcome.stdout, secrets),
            stderr=stderr,
            truncated=outcome.truncated,
            started_at=outcome.started_at,
            finished_at=outcome.finished_at,
            metadata=_scrub_metadata(metadata or {}, secrets),
        )
        full = outcome.full_stdout if outcome.full_stdout is not None else outcome.stdout
        result = GitResult(
            args=tuple(args),
            returncode=None if outcome.timed_out else outcome.returncode,
            stdout=full.decode("utf-8", errors="surrogateescape"),
            stderr=stderr.decode("utf-8", errors="replace"),
            step=step,
        )
        if sink is not None and phase is not None:
            await sink(step)
        if outcome.spawn_error is not None:
            raise HostOperationError(
                f"could not run git in {cwd}: {outcome.spawn_error}",
                code="unprocessable",
                details={"cwd": str(cwd)},
            )
        if check and not result.ok:
            raise HostOperationError(
                f"{step.command} failed: {result.message()}",
                code="git_failed",
                status=500,
                details={"command": step.command, "cwd": str(cwd), "exitCode": result.returncode},
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


def _inherited(name: str) -> bool:
    if name == "GIT_CONFIG_GLOBAL":
        return True
    return name not in _GIT_LOCATION_VARS and not name.startswith("GIT_CONFIG_")


def _ensure_empty_dir(path: Path) -> None:
    """Create ``path`` (mode 0555) or empty it: it must never hold a hook."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o755)
    for entry in path.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    path.chmod(0o555)


def _secret_values(auth: GitInvocation | None) -> list[str]:
    """The credential values handed to git in its environment (hidden from every output)."""
    if auth is None:
        return []
    return [
        value
        for name, value in auth.env.items()
        if is_secret_name(name) and not name.startswith("GIT_CONFIG_") and len(value) >= 4
    ]


def _scrub_metadata(metadata: Mapping[str, object], secrets: Sequence[str]) -> dict[str, object]:
    def scrub(value: object) -> object:
        if isinstance(value, str):
            for secret in secrets:
                value = value.replace(secret, "***")
            return scrub_url_secrets(value)
        if isinstance(value, Mapping):
            return {str(k): scrub(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [scrub(v) for v in value]
        return value

    return {str(key): scrub(value) for key, value in metadata.items()}
