"""Helpers of the host adapters' tests: plain git for setting scenes up, a step recorder."""

from __future__ import annotations

import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from workspace_realizer.adapters.ports import Step

__all__ = ["StepRecorder", "commit", "git", "push_to_origin", "write"]


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


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Plain git for setting scenes up and checking results (not the adapter's runner)."""
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
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


def push_to_origin(repo: Path, files: dict[str, str], message: str = "upstream") -> str:
    """Advance ``origin/main`` from a second clone (the local ``main`` does not move)."""
    origin = git(repo, "remote", "get-url", "origin")
    other = repo.parent / f"{repo.name}-other-{uuid.uuid4().hex[:8]}"
    git(repo.parent, "clone", "-q", origin, str(other))
    sha = commit(other, files, message)
    git(other, "push", "-q", "origin", "HEAD:main")
    return sha
