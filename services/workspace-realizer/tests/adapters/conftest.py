"""Fixtures for the host adapters' tests: real git repositories in temporary directories, a step
recorder, and a hermetic git configuration (no global or system config of the machine)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from realizer_git_helpers import StepRecorder, clone_with_bare_origin, init_repo, use_hermetic_git

from workspace_realizer.adapters.hostgit import HostGit


@pytest.fixture(autouse=True)
def hermetic_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Identity for test commits; the machine's global and system git config are not read."""
    use_hermetic_git(tmp_path, monkeypatch)


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
        if bare_origin:
            return clone_with_bare_origin(tmp_path, name, files)
        return init_repo(tmp_path / name, files)

    return make
