"""Authenticated managed clones and base-ref fetches with real git against a real HTTPS git server
that requires Basic auth (reference §8.6, §8.8): the token works from the child's environment
only; a rejected or missing credential is described; nothing is left behind; no token leaks.

The server is the testkit's ``https_git_server``; git trusts its throwaway CA through
``GIT_SSL_CAINFO`` in the environment the adapter's git processes start from (so a clone without
any credential still gets past TLS to the server's 401)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from realizer_git_helpers import StepRecorder, git

from testkit.git_repos import token_helper_args
from testkit.https_git import HttpsGitServer
from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.adapters.ports import GitInvocation, HostOperationError

pytestmark = pytest.mark.integration

TOKEN = "glpat-" + "R1ght" * 5
WRONG = "glpat-" + "Wr0ng" * 5


def secret(token: str) -> GitInvocation:
    """A company-secret GitLab credential as git-credentials would answer it (our own helper)."""
    return GitInvocation(
        config_args=token_helper_args("oauth2"),
        env={"CLIPYARD_GIT_TOKEN": token, "GIT_TERMINAL_PROMPT": "0"},
        secret_name="GITLAB_TOKEN",
        source="company_secret",
        provider="gitlab",
        provider_label="GitLab",
    )


@pytest.fixture
def server(https_git_server: HttpsGitServer) -> HttpsGitServer:
    """The HTTPS git server accepting ``TOKEN``, serving ``app`` (a README saying hello)."""
    https_git_server.set_token(TOKEN)
    https_git_server.create_repo("app", {"README.md": "hello\n"})
    return https_git_server


@pytest.fixture
def host(home: Path, server: HttpsGitServer) -> HostGit:
    """The adapter, its git processes trusting the server's CA (and nothing else added)."""
    return HostGit(home=home, base_env={**os.environ, "GIT_SSL_CAINFO": str(server.ca_path)})


def seen(server: HttpsGitServer) -> set[tuple[str | None, bool]]:
    """Each request's username and whether it was let in."""
    return {(r.username, r.auth_ok) for r in server.request_log}


def no_partials(target: Path) -> None:
    assert not target.exists()
    assert [p.name for p in target.parent.iterdir() if ".clone-" in p.name] == []


def leaks(token: str, *texts: str, root: Path | None = None) -> list[str]:
    found = [text for text in texts if token in text]
    if root is not None:
        for path in root.rglob("*"):
            if path.is_file() and token.encode() in path.read_bytes():
                found.append(str(path))
    return found


async def test_the_right_token_clones_from_the_childs_environment_only(
    host: HostGit, server: HttpsGitServer, steps: StepRecorder, tmp_path: Path
) -> None:
    target = tmp_path / "managed" / "app"

    clone = await host.managed_clone(
        repo_url=server.repo_url("app"),
        repo_ref=None,
        target=target,
        auth=secret(TOKEN),
        sink=steps,
    )

    assert clone.cloned
    assert (target / "README.md").read_text() == "hello\n"
    assert ("oauth2", True) in seen(server)
    assert leaks(TOKEN, steps.text(), root=target) == []
    assert "credential" not in (target / ".git" / "config").read_text()


async def test_a_rejected_token_names_the_secret_and_leaves_nothing(
    host: HostGit, server: HttpsGitServer, steps: StepRecorder, tmp_path: Path
) -> None:
    target = tmp_path / "managed" / "app"

    with pytest.raises(HostOperationError) as caught:
        await host.managed_clone(
            repo_url=server.repo_url("app"), repo_ref=None, target=target, auth=secret(WRONG),
            sink=steps,
        )  # fmt: skip

    message = str(caught.value)
    assert message.startswith(f'Failed to prepare managed checkout for "{server.repo_url("app")}"')
    assert "Authentication failed" in message
    assert message.endswith(
        "The operation authenticated with the GITLAB_TOKEN company-secret GitLab credential, "
        "which was rejected or lacks access to this repository."
    )
    assert caught.value.details["reason"] == "git_auth_failed"
    assert ("oauth2", False) in seen(server)
    no_partials(target)
    assert leaks(WRONG, message, repr(caught.value.details), steps.text()) == []


async def test_no_credential_for_a_gitlab_remote_says_which_secret_to_add(
    host: HostGit, server: HttpsGitServer, steps: StepRecorder, tmp_path: Path
) -> None:
    target = tmp_path / "managed" / "app"
    credential_less = GitInvocation(provider="gitlab", provider_label="GitLab")

    with pytest.raises(HostOperationError) as caught:
        await host.managed_clone(
            repo_url=server.repo_url("app"), repo_ref=None, target=target, auth=credential_less,
            sink=steps,
        )  # fmt: skip

    message = str(caught.value)
    assert "terminal prompts disabled" in message
    assert message.endswith(
        "No GitLab credential is configured — add a GITLAB_TOKEN company secret "
        "(POST /api/companies/{companyId}/secrets), or give this project workspace a local "
        "checkout (cwd)."
    )
    no_partials(target)


async def test_an_unanswered_resolution_is_named_instead_of_a_missing_secret(
    host: HostGit, server: HttpsGitServer, steps: StepRecorder, tmp_path: Path
) -> None:
    target = tmp_path / "managed" / "app"

    with pytest.raises(HostOperationError) as caught:
        await host.managed_clone(
            repo_url=server.repo_url("app"), repo_ref=None, target=target,
            auth=GitInvocation(unanswered="no answer within 15 s"), sink=steps,
        )  # fmt: skip

    assert "the git-credentials service did not answer (no answer within 15 s)" in str(caught.value)
    assert "company secret" not in str(caught.value)
    no_partials(target)


async def test_a_credential_is_not_blamed_for_an_unreachable_server(
    host: HostGit, steps: StepRecorder, tmp_path: Path
) -> None:
    target = tmp_path / "managed" / "app"

    with pytest.raises(HostOperationError) as caught:
        await host.managed_clone(
            repo_url="http://127.0.0.1:1/g/app.git", repo_ref=None, target=target,
            auth=secret(TOKEN), sink=steps,
        )  # fmt: skip

    assert "authenticated with" not in str(caught.value)
    assert "reason" not in caught.value.details
    no_partials(target)


async def test_a_rejected_fetch_of_the_base_ref_is_described_in_its_warning(
    host: HostGit, server: HttpsGitServer, steps: StepRecorder, tmp_path: Path
) -> None:
    target = tmp_path / "managed" / "app"
    await host.managed_clone(
        repo_url=server.repo_url("app"),
        repo_ref=None,
        target=target,
        auth=secret(TOKEN),
        sink=steps,
    )
    known = git(target, "rev-parse", "origin/main")

    fresh = await host.resolve_base_ref(
        repo_root=target, configured="main", auth=secret(TOKEN), sink=steps
    )
    rejected = await host.resolve_base_ref(
        repo_root=target, configured="main", auth=secret(WRONG), sink=steps
    )
    without = await host.resolve_base_ref(
        repo_root=target, configured="main", auth=None, sink=steps
    )

    assert (fresh.ref, fresh.sha, fresh.warnings) == ("origin/main", known, ())
    assert rejected.sha == known
    [warning] = rejected.warnings
    assert warning.startswith("Could not refresh base ref origin/main")
    assert "Authentication failed" in warning
    assert warning.endswith(
        "The operation authenticated with the GITLAB_TOKEN company-secret GitLab credential, "
        "which was rejected or lacks access to this repository."
    )
    # No credential and a host only git-credentials could name: the generic guidance.
    [plain] = without.warnings
    assert "terminal prompts disabled" in plain
    assert plain.endswith(
        "No git credential is configured — add a GITHUB_TOKEN/GH_TOKEN or GITLAB_TOKEN company "
        "secret (POST /api/companies/{companyId}/secrets), or give this project workspace a "
        "local checkout (cwd)."
    )
    assert leaks(WRONG, warning, steps.text()) == []
    assert leaks(TOKEN, steps.text(), root=target) == []
