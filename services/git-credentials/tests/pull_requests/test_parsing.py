"""Pull-request and repository URLs understood by the lookups (reference §3.4)."""

from __future__ import annotations

import pytest

from git_credentials.adapters.github import parse_github_repo_url, parse_pull_request_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/octo/repo/pull/12", ("octo", "repo", 12)),
        ("https://www.github.com/Octo/Re.po_x-1/pull/3", ("Octo", "Re.po_x-1", 3)),
        ("  https://github.com/o/r/pull/7/files  ", ("o", "r", 7)),
        ("https://github.com/o/r/pull/7#issuecomment-1", ("o", "r", 7)),
        ("https://github.com/o/r/pull/7?w=1", ("o", "r", 7)),
    ],
)
def test_pull_request_urls(url: str, expected: tuple[str, str, int]) -> None:
    assert parse_pull_request_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "http://github.com/o/r/pull/1",
        "https://gitlab.com/o/r/pull/1",
        "https://github.com.evil.example/o/r/pull/1",
        "https://user:pw@github.com/o/r/pull/1",
        "https://github.com/o/r/issues/1",
        "https://github.com/o/r/pull/0",
        "https://github.com/o/r/pull/abc",
        "https://github.com/o/r/pull/12345678901",
        "https://github.com/o/../pull/1",
        "https://github.com/o/r/x/pull/1",
        "o/r#1",
        "",
    ],
)
def test_not_pull_request_urls(url: str) -> None:
    assert parse_pull_request_url(url) is None


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/Octo/Repo", ("octo", "repo")),
        ("https://github.com/Octo/Repo.git", ("octo", "repo")),
        ("https://www.github.com/octo/repo/", ("octo", "repo")),
        ("ssh://git@github.com/octo/repo.git", ("octo", "repo")),
        ("git@github.com:Octo/my.repo.git", ("octo", "my.repo")),
    ],
)
def test_repository_urls(url: str, expected: tuple[str, str]) -> None:
    assert parse_github_repo_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "https://gitlab.com/octo/repo",
        "http://github.com/octo/repo",
        "https://x-access-token:t@github.com/octo/repo",
        "https://github.com/octo",
        "https://github.com/octo/repo/tree/main",
        "/srv/git/repo",
    ],
)
def test_not_repository_urls(url: str) -> None:
    assert parse_github_repo_url(url) is None
