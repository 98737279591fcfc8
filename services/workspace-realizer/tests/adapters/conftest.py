"""Fixtures for the host adapters' tests: real git repositories in temporary directories, a step
recorder, and a hermetic git configuration (no global or system config of the machine)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from workspace_realizer.adapters.hostgit import HostGit

TESTS_DIR = Path(__file__).parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from realizer_git_helpers import StepRecorder, commit, git  # noqa: E402


@pytest.fixture(autouse=True)
def hermetic_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Identity for test commits; the machine's global and system git config are not read."""
    global_config = tmp_path / "gitconfig"
    global_config.write_text("[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(global_config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "test@example.com")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def host(home: Path) -> HostGit:
    return HostGit(home=home)


@pytest.fixture
def steps() -> StepRecorder:
    return StepRecorder()


MakeRepo = Callable[..., Path]


@pytest.fixture
def make_repo(tmp_path: Path) -> Iterator[MakeRepo]:
    """``make_repo(name, files=None, bare_origin=False)``: a repository on ``main`` with one
    commit; with ``bare_origin`` it is cloned from a bare ``<name>-origin.git`` (so it has an
    ``origin`` remote with ``origin/main`` and ``origin/HEAD``)."""

    def make(name: str, files: dict[str, str] | None = None, *, bare_origin: bool = False) -> Path:
        seed = tmp_path / (f"{name}-seed" if bare_origin else name)
        seed.mkdir(parents=True)
        git(seed, "init", "-q", "-b", "main")
        commit(seed, files or {"README.md": f"# {name}\n"}, "initial")
        if not bare_origin:
            return seed
        origin = tmp_path / f"{name}-origin.git"
        git(tmp_path, "clone", "-q", "--bare", str(seed), str(origin))
        repo = tmp_path / name
        git(tmp_path, "clone", "-q", str(origin), str(repo))
        return repo

    return make
