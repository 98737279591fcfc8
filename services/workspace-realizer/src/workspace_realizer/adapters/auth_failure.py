"""What to tell the operator when git fails to authenticate (reference §8.6, DECISIONS 9).

Only git errors shaped like an authentication failure get a description; any other failure (a
DNS error, ``destination path already exists``, a local ``Permission denied`` on a directory) gets
none, so a credential that was present is never blamed for it. The description says which
credential was used and rejected, that none is configured and which company secret to add, or
that git-credentials did not answer. It never holds a secret value: only secret names, sources and
provider labels.
"""

from __future__ import annotations

import re
from typing import Final

from workspace_realizer.adapters.ports import GitInvocation

__all__ = ["SECRETS_ENDPOINT", "describe_auth_failure", "is_auth_failure", "provider_of"]

SECRETS_ENDPOINT: Final = "POST /api/companies/{companyId}/secrets"

_AUTH_SHAPED = re.compile(
    r"authentication failed"
    r"|could not read (?:username|password)"
    r"|invalid username or password"
    r"|terminal prompts disabled"
    r"|repository not found"
    r"|not accessible"
    r"|permission denied"
    r"|\bhttp\s+40[13]\b"
    r"|requested url returned error:?\s*40[13]\b",
    re.IGNORECASE,
)

# ``Permission denied`` about a local file or directory is not an authentication failure.
_LOCAL_PERMISSION = re.compile(
    r"could not create|unable to create|cannot mkdir|could not open|unable to open|"
    r"cannot open|work tree dir|leading directories|unable to write|could not write",
    re.IGNORECASE,
)

_GITHUB = re.compile(
    r"^(?:https://(?:www\.)?github\.com(?::443)?/"
    r"|ssh://git@(?:www\.)?github\.com/"
    r"|git@(?:www\.)?github\.com:)",
    re.IGNORECASE,
)
_GITLAB = re.compile(r"^https://(?:www\.)?gitlab\.com(?::443)?/", re.IGNORECASE)

_LABELS: Final = {"github": "GitHub", "gitlab": "GitLab"}
_NO_CREDENTIAL: Final = {
    "github": "No GitHub credential is configured — add a GITHUB_TOKEN or GH_TOKEN company secret",
    "gitlab": "No GitLab credential is configured — add a GITLAB_TOKEN company secret",
}
_GENERIC = (
    "No git credential is configured — add a GITHUB_TOKEN/GH_TOKEN or GITLAB_TOKEN company secret"
)
_LOCAL_CHECKOUT = "or give this project workspace a local checkout (cwd)."


def is_auth_failure(error_text: str) -> bool:
    """Whether a git error reads like an authentication failure.

    Args:
        error_text: Git's error output (scrubbed).

    Returns:
        True for the auth-shaped patterns of reference §8.6.
    """
    for line in error_text.splitlines():
        local = _LOCAL_PERMISSION.search(line) is not None
        for match in _AUTH_SHAPED.finditer(line):
            if not (local and match.group(0).lower() == "permission denied"):
                return True
    return False


def provider_of(remote_url: str | None) -> str | None:
    """``github`` or ``gitlab`` for their SaaS remotes, else None (self-managed GitLab hosts are
    known only to git-credentials, which names the provider in its answer).

    Args:
        remote_url: The remote's URL.

    Returns:
        The provider, or None.
    """
    url = (remote_url or "").strip()
    if _GITHUB.match(url):
        return "github"
    if _GITLAB.match(url):
        return "gitlab"
    return None


def describe_auth_failure(
    error_text: str, invocation: GitInvocation | None, remote_url: str | None
) -> str | None:
    """Explain an authentication failure of a git process, or None when it is not one.

    Args:
        error_text: Git's error output (scrubbed).
        invocation: How the process was authenticated (None: no credential was asked for).
        remote_url: The remote's URL (only its provider is used).

    Returns:
        One or two sentences naming the credential that was rejected, the one to configure, or
        why none could be resolved; None for an error that is not about authentication.
    """
    if not is_auth_failure(error_text):
        return None
    if invocation is not None and invocation.has_credential:
        return (
            f"The operation authenticated with {_credential_phrase(invocation)}, "
            "which was rejected or lacks access to this repository."
        )
    if invocation is not None and invocation.unanswered:
        return (
            "The operation ran without a credential because the git-credentials service did not "
            f"answer ({invocation.unanswered}); check `clipyard status` and retry."
        )
    provider = (invocation.provider if invocation is not None else None) or provider_of(remote_url)
    guidance = _NO_CREDENTIAL.get(provider or "", _GENERIC)
    return f"{guidance} ({SECRETS_ENDPOINT}), {_LOCAL_CHECKOUT}"


def _credential_phrase(invocation: GitInvocation) -> str:
    label = invocation.provider_label or _LABELS.get(invocation.provider or "", "git")
    if invocation.source == "server_env":
        return f"the server-environment {label} credential"
    if invocation.source == "company_secret" and invocation.secret_name:
        return f"the {invocation.secret_name} company-secret {label} credential"
    return f"a configured {label} credential"
