"""GitHubPullRequests against a real local HTTP server answering like GitHub (testkit.github_api)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

import httpx
import pytest

from contracts.credentials import PullRequestFact
from git_credentials.adapters.github import GitHubPullRequests
from testkit.github_api import FakeGitHubApi

pytestmark = pytest.mark.integration

REPO = "https://github.com/octo/repo.git"
COMPANY = "company-1"
TIMEOUT = 1.5
"""The client's timeout in the timeout tests: room for an answer on a loaded machine."""
STALLED = 60.0
"""Seconds the fake API sits on a request that must time out: far beyond ``TIMEOUT`` (the fake
stops waiting when it is stopped)."""


class _AnySha(str):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and len(other) == 40

    __hash__ = str.__hash__


ANY_SHA = _AnySha("<any 40-hex sha>")


def pr(number: int, owner: str = "octo", repo: str = "repo") -> str:
    return f"https://github.com/{owner}/{repo}/pull/{number}"


class Clock:
    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def pulls(github_api: FakeGitHubApi, clock: Clock) -> AsyncIterator[GitHubPullRequests]:
    client = GitHubPullRequests(api_url=f"{github_api.url}/", clock=clock, timeout=2.0)
    yield client
    await client.aclose()


async def facts(
    pulls: GitHubPullRequests,
    *references: str,
    token: str | None = None,
    company: str = COMPANY,
    repo_url: str = REPO,
) -> list[PullRequestFact]:
    found: list[PullRequestFact] = await pulls.facts(
        company_id=company, repo_url=repo_url, references=list(references), token=token
    )
    return found


def unknown(url: str) -> PullRequestFact:
    return PullRequestFact(url=url, state="unknown", head_ref=None, head_sha=None)


async def test_states_and_heads_in_the_order_asked(
    github_api: FakeGitHubApi, pulls: GitHubPullRequests
) -> None:
    github_api.add_pull_request("octo", "repo", 1, state="open", head_ref="a", head_sha="1" * 40)
    github_api.add_pull_request("octo", "repo", 2, state="closed", head_ref="b", head_sha="2" * 40)
    github_api.add_pull_request(
        "octo", "repo", 3, state="closed", merged=True, head_ref="c", head_sha="3" * 40
    )
    github_api.add_pull_request(
        "Octo",
        "Repo",
        4,
        state="closed",
        merged=True,
        head_ref="d",
        head_sha="4" * 40,
        include_merged_flag=False,
    )
    references = [pr(3), pr(1), "https://www.github.com/Octo/Repo/pull/4", pr(2)]

    found = await facts(pulls, *references)

    assert found == [
        PullRequestFact(url=pr(3), state="merged", head_ref="c", head_sha="3" * 40),
        PullRequestFact(url=pr(1), state="open", head_ref="a", head_sha="1" * 40),
        PullRequestFact(url=references[2], state="merged", head_ref="d", head_sha="4" * 40),
        PullRequestFact(url=pr(2), state="closed", head_ref="b", head_sha="2" * 40),
    ]
    assert sorted(r.path for r in github_api.requests) == [
        "/repos/Octo/Repo/pulls/4",
        "/repos/octo/repo/pulls/1",
        "/repos/octo/repo/pulls/2",
        "/repos/octo/repo/pulls/3",
    ]


async def test_headers_and_bearer_token(
    github_api: FakeGitHubApi, pulls: GitHubPullRequests
) -> None:
    github_api.add_pull_request("octo", "repo", 1, private=True, head_ref="x")
    github_api.add_pull_request("octo", "public", 2, head_ref="y")

    with_token = await facts(pulls, pr(1), token=github_api.token)
    without = await facts(pulls, pr(2, repo="public"), repo_url="git@github.com:octo/public.git")
    private_without = await facts(pulls, pr(1), company="company-2")

    assert with_token[0].state == "open"
    assert with_token[0].head_ref == "x"
    assert without[0].head_ref == "y"
    assert private_without == [unknown(pr(1))]  # GitHub hides private repos: 404
    seen = github_api.requests
    assert [r.authorization for r in seen] == ["valid", "none", "none"]
    for request in seen:
        assert request.method == "GET"
        assert request.accept == "application/vnd.github+json"
        assert request.api_version == "2022-11-28"
        assert request.user_agent == "clipyard"


@pytest.mark.parametrize(
    ("break_it", "registered"),
    [
        pytest.param(lambda api: None, False, id="not-found"),
        pytest.param(lambda api: api.fail_next(500), True, id="server-error"),
        pytest.param(lambda api: api.fail_next(502), True, id="bad-gateway"),
        pytest.param(lambda api: api.rate_limit_next(), True, id="rate-limited"),
        pytest.param(lambda api: api.fail_next(429), True, id="too-many-requests"),
        pytest.param(lambda api: api.garble_next(), True, id="not-json"),
    ],
)
async def test_failures_are_unknown_and_not_cached(
    github_api: FakeGitHubApi,
    pulls: GitHubPullRequests,
    break_it: Callable[[FakeGitHubApi], None],
    registered: bool,
) -> None:
    if registered:
        github_api.add_pull_request("octo", "repo", 5, head_ref="before")
    break_it(github_api)

    assert await facts(pulls, pr(5)) == [unknown(pr(5))]

    github_api.add_pull_request("octo", "repo", 5, head_ref="later")
    second = await facts(pulls, pr(5))
    assert second == [PullRequestFact(url=pr(5), state="open", head_ref="later", head_sha=ANY_SHA)]
    assert len(github_api.requests) == 2  # the unknown answer was retried, not cached


async def test_wrong_token_is_unknown(github_api: FakeGitHubApi, pulls: GitHubPullRequests) -> None:
    github_api.add_pull_request("octo", "repo", 1)
    assert await facts(pulls, pr(1), token="ghp_not_the_one") == [unknown(pr(1))]
    assert [r.authorization for r in github_api.requests] == ["invalid"]


async def test_timeout_is_unknown(github_api: FakeGitHubApi, clock: Clock) -> None:
    github_api.add_pull_request("octo", "repo", 1)
    github_api.delay_next(STALLED)
    pulls = GitHubPullRequests(api_url=github_api.url, clock=clock, timeout=TIMEOUT)
    try:
        started = asyncio.get_running_loop().time()
        assert await facts(pulls, pr(1)) == [unknown(pr(1))]
        assert asyncio.get_running_loop().time() - started < STALLED / 4  # gave up, not waited
        assert (await facts(pulls, pr(1)))[0].state == "open"
    finally:
        await pulls.aclose()


async def test_unreachable_api_is_unknown(clock: Clock) -> None:
    from testkit.github_api import start_github_api

    api = start_github_api()
    url = api.url
    api.stop()  # nothing listens there any more
    pulls = GitHubPullRequests(api_url=url, clock=clock, timeout=1.0)
    try:
        assert await facts(pulls, pr(1)) == [unknown(pr(1))]
    finally:
        await pulls.aclose()


async def test_cached_within_the_ttl_then_asked_again(
    github_api: FakeGitHubApi, pulls: GitHubPullRequests, clock: Clock
) -> None:
    github_api.add_pull_request("octo", "repo", 1, state="open", head_ref="a")

    assert (await facts(pulls, pr(1)))[0].state == "open"
    github_api.add_pull_request("octo", "repo", 1, state="closed", merged=True, head_ref="a")
    clock.now += 299
    again = await facts(pulls, pr(1), "https://github.com/OCTO/Repo/pull/1")
    assert [f.state for f in again] == ["open", "open"]  # same key: owner/repo lower-cased
    assert again[1].url == "https://github.com/OCTO/Repo/pull/1"
    assert len(github_api.requests) == 1

    other_company = await facts(pulls, pr(1), company="company-2")
    assert other_company[0].state == "merged"
    assert len(github_api.requests) == 2

    clock.now += 1  # 300 s after the first answer
    assert (await facts(pulls, pr(1)))[0].state == "merged"
    assert len(github_api.requests) == 3


async def test_concurrent_lookups_share_one_request(
    github_api: FakeGitHubApi, pulls: GitHubPullRequests
) -> None:
    github_api.add_pull_request("octo", "repo", 9, state="closed", merged=True, head_ref="z")
    github_api.delay_next(0.3)

    results = await asyncio.gather(
        *(facts(pulls, pr(9), pr(9)) for _ in range(5)),
        facts(pulls, "https://www.github.com/octo/REPO/pull/9"),
    )

    assert [fact.state for result in results for fact in result] == ["merged"] * 11
    assert len(github_api.requests) == 1


async def test_other_repositories_and_non_references_are_unknown_without_a_request(
    github_api: FakeGitHubApi, pulls: GitHubPullRequests
) -> None:
    github_api.add_pull_request("octo", "repo", 1)
    github_api.add_pull_request("octo", "elsewhere", 1)
    references = [
        pr(1, repo="elsewhere"),
        pr(1, owner="someone"),
        "https://gitlab.com/octo/repo/pull/1",
        "octo/repo#1",
        "not a url",
        pr(1),
    ]

    found = await facts(pulls, *references)

    assert found[:5] == [unknown(reference) for reference in references[:5]]
    assert found[5].state == "open"
    assert [r.path for r in github_api.requests] == ["/repos/octo/repo/pulls/1"]

    github_api.clear_requests()
    not_github = await facts(pulls, pr(1), repo_url="https://gitlab.com/octo/repo.git")
    assert not_github == [unknown(pr(1))]
    assert github_api.requests == []
    assert await facts(pulls) == []


async def test_the_token_never_reaches_the_logs(
    github_api: FakeGitHubApi, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    token = github_api.token
    github_api.add_pull_request("octo", "repo", 1, private=True)
    github_api.add_pull_request("octo", "repo", 2, private=True)
    github_api.fail_next(500)
    github_api.rate_limit_next()
    github_api.garble_next()
    github_api.delay_next(STALLED)
    pulls = GitHubPullRequests(api_url=github_api.url, clock=clock, timeout=TIMEOUT)
    caplog.set_level(logging.DEBUG)
    try:
        for _ in range(4):
            assert (await facts(pulls, pr(1), token=token))[0].state == "unknown"
        assert (await facts(pulls, pr(3), token=token))[0].state == "unknown"  # 404
        assert (await facts(pulls, pr(1), token=token + "x"))[0].state == "unknown"  # 401
        ok = await facts(pulls, pr(1), pr(2), token=token)
        requests_before = len(github_api.requests)
        bad_header = [
            *await facts(pulls, pr(2), token=f"{token}\nX-Evil: 1", company="c3"),
            *await facts(pulls, pr(2), token=f"{token}\n", company="c4"),
        ]
        assert len(github_api.requests) == requests_before  # such a token is never sent
    finally:
        await pulls.aclose()

    assert [f.state for f in ok] == ["open", "open"]
    assert bad_header == [unknown(pr(2)), unknown(pr(2))]
    assert [r.authorization for r in github_api.requests].count("valid") >= 6
    warnings = [r for r in caplog.records if r.name.startswith("git_credentials")]
    assert len(warnings) == 8
    assert all("/repos/octo/repo/pulls/" in r.getMessage() for r in warnings)
    assert token not in caplog.text
    for record in caplog.records:
        assert token not in record.getMessage()
        assert token not in repr(record.args)
        assert record.exc_info is None or token not in repr(record.exc_info[1])


async def test_a_given_client_is_used_and_left_open(
    github_api: FakeGitHubApi, clock: Clock
) -> None:
    github_api.add_pull_request("octo", "repo", 1)
    async with httpx.AsyncClient() as client:
        pulls = GitHubPullRequests(api_url=github_api.url, client=client, clock=clock)
        assert (await facts(pulls, pr(1)))[0].state == "open"
        await pulls.aclose()
        assert not client.is_closed
    own = GitHubPullRequests(api_url=github_api.url, clock=clock)
    await own.aclose()
    assert own._client.is_closed


@pytest.mark.integration
async def test_a_token_source_is_asked_once_and_only_on_a_cache_miss(
    github_api: FakeGitHubApi,
) -> None:
    github_api.add_pull_request(
        "acme", "api", 7, state="closed", merged=True, head_ref="b", head_sha="s", private=True
    )
    asked: list[int] = []

    async def token() -> str | None:
        asked.append(1)
        return github_api.token

    client = GitHubPullRequests(api_url=github_api.url)
    try:
        refs = ["https://github.com/acme/api/pull/7", "https://github.com/acme/api/pull/7"]
        first = await client.facts(
            company_id="c", repo_url="https://github.com/acme/api", references=refs, token=token
        )
        again = await client.facts(
            company_id="c", repo_url="https://github.com/acme/api", references=refs, token=token
        )
    finally:
        await client.aclose()
    assert [f.state for f in first + again] == ["merged"] * 4
    assert asked == [1]


@pytest.mark.integration
async def test_a_failing_token_source_makes_the_answer_unknown(github_api: FakeGitHubApi) -> None:
    github_api.add_pull_request(
        "acme", "api", 8, state="open", merged=False, head_ref="b", head_sha="s"
    )

    async def token() -> str | None:
        raise RuntimeError("vault unavailable")

    client = GitHubPullRequests(api_url=github_api.url)
    try:
        facts = await client.facts(
            company_id="c",
            repo_url="https://github.com/acme/api",
            references=["https://github.com/acme/api/pull/8"],
            token=token,
        )
    finally:
        await client.aclose()
    assert [f.state for f in facts] == ["unknown"]
    assert github_api.requests == []
