"""The environment of every server-side git process: no inherited trace can copy the credential
exchange anywhere, and a credential's variables reach git."""

from __future__ import annotations

from workspace_realizer.adapters.gitenv import git_env
from workspace_realizer.adapters.ports import GitInvocation


def test_traces_are_never_inherited_and_redaction_is_forced() -> None:
    base = {
        "PATH": "/usr/bin",
        "GIT_TRACE": "1",
        "GIT_TRACE_CURL": "/tmp/curl.log",
        "GIT_TRACE_PACKET": "2",
        "GIT_TRACE_REDACT": "0",
        "GIT_CURL_VERBOSE": "1",
        "GIT_DIR": "/elsewhere",
    }
    auth = GitInvocation(env={"CLIPYARD_GIT_TOKEN": "t0k3n", "GIT_TERMINAL_PROMPT": "0"})
    env = git_env(base, auth)
    assert env["PATH"] == "/usr/bin"
    assert env["CLIPYARD_GIT_TOKEN"] == "t0k3n"
    assert env["GIT_TRACE_REDACT"] == "1"
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    for name in ("GIT_TRACE", "GIT_TRACE_CURL", "GIT_TRACE_PACKET", "GIT_CURL_VERBOSE", "GIT_DIR"):
        assert name not in env, name


def test_a_credential_cannot_turn_redaction_off() -> None:
    auth = GitInvocation(env={"GIT_TRACE_REDACT": "0", "GIT_TERMINAL_PROMPT": "1"})
    env = git_env({}, auth)
    assert env["GIT_TRACE_REDACT"] == "1"
    assert env["GIT_TERMINAL_PROMPT"] == "0"
