"""Pure credential resolution: host gating, the secret chain, the memo and the git invocation."""

from __future__ import annotations

from git_credentials.resolution.chain import (
    GITHUB_SECRET_NAMES,
    GITLAB_SECRET_NAMES,
    SERVER_ENV_NAMES,
    ResolvedToken,
    SecretLookup,
    SecretUnavailable,
    resolve_token,
)
from git_credentials.resolution.hosts import (
    Remote,
    classify_remote,
    is_github_https_remote,
    parse_gitlab_hosts,
)
from git_credentials.resolution.invocation import TOKEN_ENV, build_credential, helper_script
from git_credentials.resolution.memo import ResolutionMemo
from git_credentials.resolution.resolver import CredentialResolver, ResolutionRecord

__all__ = [
    "GITHUB_SECRET_NAMES",
    "GITLAB_SECRET_NAMES",
    "SERVER_ENV_NAMES",
    "TOKEN_ENV",
    "CredentialResolver",
    "Remote",
    "ResolutionMemo",
    "ResolutionRecord",
    "ResolvedToken",
    "SecretLookup",
    "SecretUnavailable",
    "build_credential",
    "classify_remote",
    "helper_script",
    "is_github_https_remote",
    "parse_gitlab_hosts",
    "resolve_token",
]
