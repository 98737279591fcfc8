"""Helpers of the realizer's tests on real git: a hermetic git configuration, plain git for
setting scenes up (repositories, commits, an upstream that moves on), a step recorder."""

from __future__ import annotations

import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from workspace_realizer.adapters.ports import Step

__all__ = [
    "StepRecorder",
    "clone_with_bare_origin",
    "commit",
    "git",
    "init_repo",
    "push_to_origin",
    "use_hermetic_git",
    "write",
]


@dataclass
class StepRecorder:
    """A StepSink that keeps every step."""

    steps: list[Step] = field(default_factory=list)

    async def __call__(self, step: Step) -> None:
        self.steps.append(step)

    def commands(self) -> list[str]:
        return [step.command for step in self.steps]

    def text(self) -> str:
        """Everything the steps carry, as one string (to look for leaks)."""
        parts: list[str] = []
        for step in self.steps:
            parts += [
                step.command,
                step.cwd,
                step.stdout.decode(errors="replace"),
                step.stderr.decode(errors="replace"),
                repr(dict(step.metadata)),
            ]
        return "\n".join(parts)


def use_hermetic_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Give test commits an identity; the machine's global and system git config are not read.

    Args:
        tmp_path: Where the test's own global config (``defaultBranch = main``) is written.
        monkeypatch: Sets the git environment variables for the test only.
    """
    global_config = tmp_path / "gitconfig"
    global_config.write_text("[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(global_config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "test@example.com")


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Plain git for setting scenes up and checking results (not the adapter's runner)."""
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {cwd}: {result.stderr}")
    return result.stdout.strip()


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def commit(repo: Path, files: dict[str, str], message: str = "change") -> str:
    """Write files, commit them all, return the new HEAD."""
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def init_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A new repository at ``path`` on ``main`` with one commit (``files``, by default a README).

    Args:
        path: The directory to create.
        files: The first commit's files, by name.

    Returns:
        ``path``.
    """
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    commit(path, files or {"README.md": f"# {path.name}\n"}, "initial")
    return path


def clone_with_bare_origin(tmp: Path, name: str, files: dict[str, str] | None = None) -> Path:
    """``tmp/<name>``: a clone of a bare ``tmp/<name>-origin.git`` on ``main``, with one commit.

    It has an ``origin`` remote with ``origin/main`` and ``origin/HEAD``; the seed the origin was
    made from stays at ``tmp/<name>-seed``.

    Args:
        tmp: The directory the seed, the bare origin and the clone are made in.
        name: The clone's directory name.
        files: The first commit's files, by name (by default ``README.md`` saying ``# <name>``).

    Returns:
        The clone's path.
    """
    seed = init_repo(tmp / f"{name}-seed", files or {"README.md": f"# {name}\n"})
    origin = tmp / f"{name}-origin.git"
    git(tmp, "clone", "-q", "--bare", str(seed), str(origin))
    repo = tmp / name
    git(tmp, "clone", "-q", str(origin), str(repo))
    return repo


def push_to_origin(repo: Path, files: dict[str, str], message: str = "upstream") -> str:
    """Advance ``origin/main`` from a second clone (the local ``main`` does not move)."""
    origin = git(repo, "remote", "get-url", "origin")
    other = repo.parent / f"{repo.name}-other-{uuid.uuid4().hex[:8]}"
    git(repo.parent, "clone", "-q", origin, str(other))
    sha = commit(other, files, message)
    git(other, "push", "-q", "origin", "HEAD:main")
    return sha
