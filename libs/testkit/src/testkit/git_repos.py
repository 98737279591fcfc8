"""Real git for the test git servers and their clients.

:class:`BareRepositoryHost` keeps bare repositories under ``<root>/repos`` and makes real commits
in them (no working clone: ``commit-tree`` and ``update-ref`` on the bare repository). A server
subclass gives the base :attr:`~BareRepositoryHost.url` its clone URLs start with.
:func:`isolated_git_env` is the environment of git processes that nothing ambient answers for;
:func:`token_helper_args` gives a client git a credential helper reading its token from there.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["BareRepositoryHost", "isolated_git_env", "run_git", "token_helper_args"]

_AMBIENT = ("SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE", "GCM_INTERACTIVE")
_PROXIES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


def isolated_git_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment for git subprocesses that nothing ambient answers for.

    The process environment without ``GIT_*``, proxy and CA-bundle variables, plus ``HOME=home``,
    ``GIT_CONFIG_NOSYSTEM=1``, ``GIT_TERMINAL_PROMPT=0`` and ``extra``.

    Args:
        home: An empty folder used as ``HOME`` (no ``~/.gitconfig``, no stored credentials).
        extra: Variables added last (e.g. ``GIT_SSL_CAINFO``).

    Returns:
        The environment mapping.
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("GIT_") and key not in _AMBIENT and key.lower() not in _PROXIES
    }
    env |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": "Clipyard Test",
        "GIT_AUTHOR_EMAIL": "test@clipyard.invalid",
        "GIT_COMMITTER_NAME": "Clipyard Test",
        "GIT_COMMITTER_EMAIL": "test@clipyard.invalid",
    }
    return env | dict(extra or {})


def token_helper_args(
    username: str = "x-access-token", variable: str = "CLIPYARD_GIT_TOKEN"
) -> tuple[str, ...]:
    """``-c`` options giving git one credential helper (any configured ones cleared) that answers
    ``get`` with ``username`` and the password read from ``$variable``: the token stays in the
    process environment, never in argv or config.

    Args:
        username: The Basic auth username it answers (``oauth2`` for GitLab).
        variable: The environment variable holding the token.

    Returns:
        The options, ``-c`` and value alternating.
    """
    helper = (
        '!f() { test "$1" = get || exit 0; '
        f'echo username={username}; echo "password=${variable}"; }}; f'
    )
    return ("-c", "credential.helper=", "-c", f"credential.helper={helper}")


def run_git(*args: str, env: Mapping[str, str] | None, check: bool = True) -> str:
    """Run ``git <args>`` (60 s at most) and return its standard output.

    Args:
        *args: The git arguments.
        env: The process environment (None: this process's).
        check: Raise on a non-zero exit.

    Returns:
        The standard output, undecorated.

    Raises:
        RuntimeError: git failed and ``check`` is set (the message holds git's stderr).
    """
    result = subprocess.run(
        ["git", *args], env=env, capture_output=True, text=True, check=False, timeout=60
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed ({result.returncode}): {result.stderr.strip()}")
    return result.stdout


class BareRepositoryHost(ABC):
    """Bare repositories under ``<root>/repos``, cloned from ``<url>/<name>.git``.

    Args:
        root: The folder of the repositories (``repos``) and of git's ``HOME`` (``home``).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.project_root = self.root / "repos"
        self._git_env = isolated_git_env(self.root / "home")

    @property
    @abstractmethod
    def url(self) -> str:
        """The base URL the repositories are served under (no trailing slash)."""

    def repo_path(self, name: str) -> Path:
        """The bare repository folder of ``name`` (``<project_root>/<name>.git``).

        Args:
            name: The repository name, slashes allowed (``org/repo``).

        Returns:
            The folder.
        """
        parts = Path(name.removesuffix(".git")).parts
        if not parts or Path(name).is_absolute() or ".." in parts:
            raise ValueError(f"bad repository name {name!r}")
        return self.project_root.joinpath(*parts[:-1], parts[-1] + ".git")

    def repo_url(self, name: str) -> str:
        """The clone URL of ``name``: ``<url>/<name>.git``.

        Args:
            name: The repository name.

        Returns:
            The URL (no credentials in it).
        """
        return f"{self.url}/{self.repo_path(name).relative_to(self.project_root).as_posix()}"

    def create_repo(
        self,
        name: str,
        files: Mapping[str, str | bytes] | None = None,
        *,
        branches: Mapping[str, Mapping[str, str | bytes]] | Iterable[str] = (),
        default_branch: str = "main",
        message: str = "initial commit",
    ) -> str:
        """Make a bare repository whose default branch holds one real commit of ``files``.

        Args:
            name: The repository name (``repo`` or ``org/repo``).
            files: Path → content of the first commit (default: a README).
            branches: More branches: names (at the first commit), or name → files committed on
                top of the first commit.
            default_branch: The branch ``HEAD`` points at.
            message: The first commit's message.

        Returns:
            The clone URL.
        """
        bare = self.repo_path(name)
        if bare.exists():
            raise FileExistsError(bare)
        run_git("init", "--quiet", "--bare", "-b", default_branch, str(bare), env=self._git_env)
        self.commit(
            name, files or {"README.md": f"# {name}\n"}, branch=default_branch, message=message
        )
        extra: Iterable[tuple[str, Mapping[str, str | bytes]]] = (
            branches.items() if isinstance(branches, Mapping) else ((b, {}) for b in branches)
        )
        for branch, branch_files in extra:
            run_git("--git-dir", str(bare), "branch", branch, default_branch, env=self._git_env)
            if branch_files:
                self.commit(name, branch_files, branch=branch, message=f"work on {branch}")
        return self.repo_url(name)

    def commit(
        self,
        name: str,
        files: Mapping[str, str | bytes | None],
        *,
        branch: str = "main",
        message: str = "update",
    ) -> str:
        """Commit ``files`` on ``branch`` of the server's repository (None deletes a path).

        Args:
            name: The repository name.
            files: Path → new content, or None to delete the path.
            branch: The branch to move (created when missing).
            message: The commit message.

        Returns:
            The new commit's sha.
        """
        bare = self.repo_path(name)
        with tempfile.TemporaryDirectory(prefix="commit-", dir=self.root) as scratch:
            work = Path(scratch) / "tree"
            env = self._git_env | {
                "GIT_DIR": str(bare),
                "GIT_WORK_TREE": str(work),
                "GIT_INDEX_FILE": str(Path(scratch) / "index"),
            }
            ref = f"refs/heads/{branch}"
            parent = run_git("rev-parse", "--verify", "--quiet", ref, env=env, check=False).strip()
            if parent:
                run_git("read-tree", parent, env=env)
            for path, content in files.items():
                target = work / path
                if content is None:
                    run_git("rm", "--cached", "--quiet", "--", path, env=env)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content.encode() if isinstance(content, str) else content)
                run_git("add", "--", path, env=env)
            tree = run_git("write-tree", env=env).strip()
            sha = run_git(
                "commit-tree", tree, *(["-p", parent] if parent else []), "-m", message, env=env
            )
            run_git("update-ref", ref, sha.strip(), parent or "", env=env)
        return sha.strip()
