"""Pull-request lookups for ``merged_via_pr`` (reference §3.4): GitHub's REST API, cached."""

from __future__ import annotations

from git_credentials.pull_requests.cache import SingleFlightCache
from git_credentials.pull_requests.github import (
    GitHubPullRequests,
    parse_github_repo_url,
    parse_pull_request_url,
)

__all__ = [
    "GitHubPullRequests",
    "SingleFlightCache",
    "parse_github_repo_url",
    "parse_pull_request_url",
]
