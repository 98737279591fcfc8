"""What the fake GitHub REST API holds and sees: pull requests as GitHub answers them, requests.

:class:`FakePullRequest` is a registered pull request and the JSON GitHub would answer for it;
:class:`RecordedRequest` is one request as :mod:`testkit.github_api` saw it (never the credential).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict

__all__ = ["AuthorizationSeen", "FakePullRequest", "PullJson", "RecordedRequest"]

AuthorizationSeen = Literal["none", "valid", "invalid"]
"""Whether a request carried no ``Authorization``, the server's token, or another."""


class _User(TypedDict):
    login: str
    id: int
    type: str


class _Repo(TypedDict):
    full_name: str
    private: bool


class _Branch(TypedDict):
    label: str
    ref: str
    sha: str
    repo: NotRequired[_Repo]


class PullJson(TypedDict):
    """A pull request as GitHub's REST API answers it (``merged`` and ``mergeable`` may be left
    out, as :attr:`FakePullRequest.include_merged_flag` says)."""

    url: str
    html_url: str
    number: int
    state: Literal["open", "closed"]
    locked: bool
    title: str
    user: _User
    body: str
    created_at: str
    updated_at: str
    closed_at: str | None
    merged_at: str | None
    merge_commit_sha: str
    draft: bool
    head: _Branch
    base: _Branch
    merged: NotRequired[bool]
    mergeable: NotRequired[bool | None]


@dataclass(frozen=True)
class FakePullRequest:
    """A registered pull request."""

    owner: str
    repo: str
    number: int
    state: Literal["open", "closed"]
    merged: bool
    head_ref: str
    head_sha: str
    private: bool
    include_merged_flag: bool

    def body(self, base_url: str) -> PullJson:
        """The JSON GitHub would answer (the fields a client may read, and some it must ignore)."""
        full_name = f"{self.owner}/{self.repo}"
        body = PullJson(
            url=f"{base_url}/repos/{full_name}/pulls/{self.number}",
            html_url=f"https://github.com/{full_name}/pull/{self.number}",
            number=self.number,
            state=self.state,
            locked=False,
            title=f"Pull request {self.number}",
            user=_User(login="octocat", id=1, type="User"),
            body="Answered by testkit.github_api.",
            created_at="2024-01-01T00:00:00Z",
            updated_at="2024-01-02T00:00:00Z",
            closed_at="2024-01-02T00:00:00Z" if self.state == "closed" else None,
            merged_at="2024-01-02T00:00:00Z" if self.merged else None,
            merge_commit_sha="0" * 40,
            draft=False,
            head=_Branch(
                label=f"{self.owner}:{self.head_ref}",
                ref=self.head_ref,
                sha=self.head_sha,
                repo=_Repo(full_name=full_name, private=self.private),
            ),
            base=_Branch(label=f"{self.owner}:main", ref="main", sha="f" * 40),
        )
        if self.include_merged_flag:
            body["merged"] = self.merged
            body["mergeable"] = None if self.merged else True
        return body


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it (never the credential itself)."""

    method: str
    path: str
    authorization: AuthorizationSeen
    accept: str | None
    api_version: str | None
    user_agent: str | None

    @property
    def authorized(self) -> bool:
        """Whether the request carried the server's token."""
        return self.authorization == "valid"
