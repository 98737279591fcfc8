"""Docker detection: CLIPYARD_TESTKIT_DOCKER modes, and an unreachable engine counts as none."""

from __future__ import annotations

import pytest

from testkit.docker import DOCKER_MODE_VAR, docker_available
from testkit.procutil import free_port

detect = docker_available.__wrapped__  # the uncached function


def test_never_skips_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DOCKER_MODE_VAR, "never")
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
    assert detect() is False


def test_an_engine_that_does_not_answer_is_no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DOCKER_MODE_VAR, "auto")
    monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{free_port()}")
    assert detect() is False


def test_always_fails_loudly_without_an_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DOCKER_MODE_VAR, "always")
    monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{free_port()}")
    with pytest.raises(RuntimeError, match="no Docker engine answered"):
        detect()


def test_an_unknown_mode_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DOCKER_MODE_VAR, "sometimes")
    with pytest.raises(ValueError, match=DOCKER_MODE_VAR):
        detect()


def test_a_missing_socket_is_no_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.setenv(DOCKER_MODE_VAR, "auto")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/docker.sock")
    assert detect() is False
