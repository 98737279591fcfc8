"""Git as a user runs it in end-to-end tests (their own identity, no server settings)."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["git", "make_repo"]


def git(cwd: Path | str, *args: str) -> str:
    """Run git as a user would (hooks and config of their own), returning stdout."""
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        env={
            "GIT_AUTHOR_NAME": "Dev",
            "GIT_AUTHOR_EMAIL": "dev@example.com",
            "GIT_COMMITTER_NAME": "Dev",
            "GIT_COMMITTER_EMAIL": "dev@example.com",
            "PATH": "/usr/bin:/bin",
            "HOME": str(cwd),
        },
    )
    return done.stdout.strip()


def make_repo(path: Path) -> Path:
    """A new repository at ``path`` on ``main`` with one commit of ``README.md``."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("hello\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "initial")
    return path
