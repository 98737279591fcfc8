"""Failure descriptions and scrubbing (reference §8.5, §8.6; credential cases 19-22 with our names,
DECISIONS 9)."""

from __future__ import annotations

import pytest

from telemetry import scrub_url_secrets
from workspace_realizer.adapters.auth_failure import (
    describe_auth_failure,
    is_auth_failure,
    provider_of,
)
from workspace_realizer.adapters.ports import GitInvocation

TOKEN = "ghp_" + "Z" * 36
GH_SECRET = GitInvocation(
    config_args=("-c", "credential.helper="),
    env={"CLIPYARD_GIT_TOKEN": TOKEN, "GIT_TERMINAL_PROMPT": "0"},
    secret_name="GH_TOKEN",
    source="company_secret",
    provider="github",
    provider_label="GitHub",
)
GH_ENV = GitInvocation(
    config_args=("-c", "credential.helper="),
    env={"CLIPYARD_GIT_TOKEN": TOKEN},
    secret_name=None,
    source="server_env",
    provider="github",
    provider_label="GitHub",
)
GITHUB_URL = "https://github.com/acme/app.git"

GITHUB_GUIDANCE = (
    "No GitHub credential is configured — add a GITHUB_TOKEN or GH_TOKEN company secret "
    "(POST /api/companies/{companyId}/secrets), or give this project workspace a local checkout "
    "(cwd)."
)
GITLAB_GUIDANCE = (
    "No GitLab credential is configured — add a GITLAB_TOKEN company secret "
    "(POST /api/companies/{companyId}/secrets), or give this project workspace a local checkout "
    "(cwd)."
)
GENERIC_GUIDANCE = (
    "No git credential is configured — add a GITHUB_TOKEN/GH_TOKEN or GITLAB_TOKEN company secret "
    "(POST /api/companies/{companyId}/secrets), or give this project workspace a local checkout "
    "(cwd)."
)


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        (
            "https://x-access-token:ghp_secret@github.com/a/b.git",
            "https://***@github.com/a/b.git",
        ),
        ("ssh://deploy:hunter2@host/r.git", "ssh://***@host/r.git"),
        ("git@github.com:acme/app.git", "git@github.com:acme/app.git"),
        ("https://example.com/r.git?private_token=abc&x=1", "https://example.com/r.git?***"),
        ("fetch https://h.example/p?x from origin", "fetch https://h.example/p?*** from origin"),
        ("Cloning into 'app'... done.", "Cloning into 'app'... done."),
    ],
)
def test_case19_scrubbing(text: str, scrubbed: str) -> None:
    """The realizer's scrubbing (telemetry's) on the examples of case 19."""
    assert scrub_url_secrets(text) == scrubbed


def test_case20_a_rejected_credential_is_named_by_secret_and_source() -> None:
    error = "fatal: Authentication failed for 'https://github.com/acme/app.git/'"

    from_secret = describe_auth_failure(error, GH_SECRET, GITHUB_URL)
    from_env = describe_auth_failure(error, GH_ENV, GITHUB_URL)

    assert from_secret == (
        "The operation authenticated with the GH_TOKEN company-secret GitHub credential, "
        "which was rejected or lacks access to this repository."
    )
    assert from_env == (
        "The operation authenticated with the server-environment GitHub credential, "
        "which was rejected or lacks access to this repository."
    )
    assert TOKEN not in f"{from_secret}{from_env}{GH_SECRET!r}{GH_ENV!r}"


def test_case20_a_gitlab_secret_is_labelled_gitlab() -> None:
    gitlab = GitInvocation(
        env={"CLIPYARD_GIT_TOKEN": TOKEN}, secret_name="GITLAB_TOKEN", source="company_secret",
        provider="gitlab", provider_label="GitLab",
    )  # fmt: skip
    description = describe_auth_failure(
        "remote: HTTP Basic: Access denied\nfatal: Authentication failed for "
        "'https://gitlab.example.com/g/r.git/'",
        gitlab,
        "https://gitlab.example.com/g/r.git",
    )
    assert description is not None
    assert description.startswith(
        "The operation authenticated with the GITLAB_TOKEN company-secret GitLab credential,"
    )


def test_case21_no_credential_for_github_says_which_secret_to_add() -> None:
    error = "fatal: could not read Username for 'https://github.com': terminal prompts disabled"

    # NoCredentials (None) and a credential-less git-credentials answer give the same guidance.
    assert describe_auth_failure(error, None, GITHUB_URL) == GITHUB_GUIDANCE
    no_secret = GitInvocation(provider="github", provider_label="GitHub")
    assert describe_auth_failure(error, no_secret, GITHUB_URL) == GITHUB_GUIDANCE
    assert describe_auth_failure(error, None, "git@github.com:acme/app.git") == GITHUB_GUIDANCE


def test_case21_no_credential_for_gitlab_names_gitlab_token() -> None:
    error = "fatal: could not read Username for 'https://gitlab.com': terminal prompts disabled"
    assert describe_auth_failure(error, None, "https://gitlab.com/g/r.git") == GITLAB_GUIDANCE
    # A self-managed host: only git-credentials knows it is GitLab (CLIPYARD_GITLAB_HOSTS).
    self_managed = GitInvocation(provider="gitlab", provider_label="GitLab")
    assert (
        describe_auth_failure(error, self_managed, "https://git.corp.example:8443/g/r.git")
        == GITLAB_GUIDANCE
    )
    assert "GITHUB_TOKEN" not in GITLAB_GUIDANCE


@pytest.mark.parametrize(
    "url", ["https://bitbucket.org/acme/app.git", "https://git.corp.example/a/b.git", "/srv/app"]
)
def test_case21_unknown_provider_gets_the_generic_guidance(url: str) -> None:
    error = "fatal: could not read Username for 'https://bitbucket.org': terminal prompts disabled"
    assert describe_auth_failure(error, None, url) == GENERIC_GUIDANCE


@pytest.mark.parametrize(
    "error",
    [
        "fatal: unable to access 'https://github.com/acme/app.git/': Could not resolve host: "
        "github.com",
        "fatal: destination path 'app' already exists and is not an empty directory.",
        "fatal: unable to access 'https://github.com/acme/app.git/': Failed to connect to "
        "github.com port 443 after 3 ms: Connection refused",
        "fatal: could not create work tree dir 'app': Permission denied",
        "exit code 128",
    ],
)
@pytest.mark.parametrize("invocation", [GH_SECRET, GH_ENV, None])
def test_case22_other_failures_are_never_blamed_on_credentials(
    error: str, invocation: GitInvocation | None
) -> None:
    assert describe_auth_failure(error, invocation, GITHUB_URL) is None


@pytest.mark.parametrize(
    "error",
    [
        "fatal: Authentication failed for 'https://github.com/acme/app.git/'",
        "fatal: could not read Username for 'https://github.com': terminal prompts disabled",
        "fatal: could not read Password for 'https://x@github.com': No such device or address",
        "remote: Invalid username or password.",
        "remote: Repository not found.\nfatal: repository 'https://github.com/a/b.git/' not found",
        "remote: Write access to repository not accessible by integration",
        "git@github.com: Permission denied (publickey).",
        "error: RPC failed; HTTP 401 curl 22 The requested URL returned error: 401",
        "fatal: unable to access 'https://github.com/a/b.git/': The requested URL returned "
        "error: 403",
        "error: HTTP 403 while accessing https://github.com/a/b.git/info/refs",
    ],
)
def test_auth_shaped_errors(error: str) -> None:
    assert is_auth_failure(error)
    assert describe_auth_failure(error, GH_SECRET, GITHUB_URL) is not None


def test_a_404_or_500_is_not_auth_shaped() -> None:
    assert not is_auth_failure("fatal: The requested URL returned error: 404")
    assert not is_auth_failure("error: RPC failed; HTTP 500 curl 22")
    assert not is_auth_failure("fatal: The requested URL returned error: 4031")


def test_when_git_credentials_did_not_answer_no_secret_is_blamed() -> None:
    unanswered = GitInvocation(unanswered="no answer within 15 s")
    error = "fatal: could not read Username for 'https://github.com': terminal prompts disabled"

    description = describe_auth_failure(error, unanswered, GITHUB_URL)

    assert description is not None
    assert "the git-credentials service did not answer (no answer within 15 s)" in description
    assert "No GitHub credential" not in description
    assert "add a" not in description
    assert describe_auth_failure("fatal: Could not resolve host", unanswered, GITHUB_URL) is None


@pytest.mark.parametrize(
    ("url", "provider"),
    [
        ("https://github.com/a/b.git", "github"),
        ("https://www.github.com/a/b", "github"),
        ("git@github.com:a/b.git", "github"),
        ("ssh://git@github.com/a/b.git", "github"),
        ("https://gitlab.com/g/r.git", "gitlab"),
        ("http://github.com/a/b.git", None),
        ("https://github.example.com/a/b.git", None),
        ("https://alice@github.com/a/b.git", None),
        ("/srv/repos/app", None),
        (None, None),
    ],
)
def test_provider_of_saas_remotes(url: str | None, provider: str | None) -> None:
    assert provider_of(url) == provider
