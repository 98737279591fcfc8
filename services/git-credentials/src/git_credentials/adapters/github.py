"""Pull-request facts from GitHub's REST API (reference §3.4, issue 4 item 6).

``GET {api_url}/repos/{owner}/{repo}/pulls/{number}`` with the resolved GitHub token as a
``Bearer`` credential (none for public repositories). Only the state (``merged`` when GitHub says
``merged`` or gives ``merged_at``, else ``open``/``closed``), the head ref and the head SHA leave
this module. Any failure gives ``unknown`` with no head: never an exception, and never the token in
a log line. Answers are cached for 5 minutes per ``company:owner/repo#number``; failures are not.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Final

import httpx
import msgspec

from contracts.credentials import PullRequestFact, PullRequestState
from git_credentials.adapters.cache import SingleFlightCache
from telemetry import scrub_url_secrets

__all__ = [
    "DEFAULT_TTL",
    "GitHubPullRequests",
    "parse_github_repo_url",
    "parse_pull_request_url",
]

log = logging.getLogger(__name__)

DEFAULT_TTL: Final = 300.0
MAX_CONCURRENT_REQUESTS: Final = 8
_HEADERS: Final = {
    "Accept": "application/vnd.github+json",
    "X-GitHub-Api-Version": "2022-11-28",
    "User-Agent": "clipyard",
}
_NAME = r"[A-Za-z0-9_.-]+"
# Visible ASCII only: anything else would make the HTTP library fail with the header value in
# its error text (which httpcore logs at DEBUG), so such a token is never sent.
_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")
_PR_URL = re.compile(
    rf"^https://(?:www\.)?github\.com/(?P<owner>{_NAME})/(?P<repo>{_NAME})/pull/"
    r"(?P<number>[0-9]{1,10})(?:[/?#].*)?$"
)
_REPO_URL = re.compile(
    rf"^(?:https://(?:www\.)?github\.com/|ssh://git@github\.com/|git@github\.com:)"
    rf"(?P<owner>{_NAME})/(?P<repo>{_NAME}?)(?:\.git)?/?$"
)


def _valid_names(owner: str, repo: str) -> bool:
    return all(name.strip(".") for name in (owner, repo))


def parse_pull_request_url(url: str) -> tuple[str, str, int] | None:
    """``(owner, repo, number)`` of ``https://[www.]github.com/o/r/pull/N``, else None.

    Args:
        url: A pull-request reference (a trailing ``/files``, query or fragment is allowed).

    Returns:
        Owner and repository as written, and the number; None for anything else.
    """
    match = _PR_URL.match(url.strip())
    if match is None or not _valid_names(match["owner"], match["repo"]):
        return None
    number = int(match["number"])
    return (match["owner"], match["repo"], number) if number > 0 else None


def parse_github_repo_url(url: str) -> tuple[str, str] | None:
    """Lower-cased ``(owner, repo)`` of a GitHub remote, else None.

    Args:
        url: ``https://[www.]github.com/o/r``, ``ssh://git@github.com/o/r`` or
            ``git@github.com:o/r``, each with an optional ``.git``.

    Returns:
        The owner and repository, lower-cased; None for any other URL.
    """
    match = _REPO_URL.match(url.strip())
    if match is None or not _valid_names(match["owner"], match["repo"]):
        return None
    return match["owner"].lower(), match["repo"].lower()


class _Head(msgspec.Struct):
    ref: str
    sha: str


class _PullRequest(msgspec.Struct):
    """The fields read from GitHub's answer (everything else is ignored)."""

    state: str
    head: _Head
    merged: bool | None = None
    merged_at: str | None = None


_DECODER: Final = msgspec.json.Decoder(_PullRequest)


def _unknown(url: str) -> PullRequestFact:
    return PullRequestFact(url=url, state="unknown", head_ref=None, head_sha=None)


TokenSource = Callable[[], Awaitable[str | None]]
"""Gives the token when a request is about to be made."""


class _OnceToken:
    """A token given as is, or fetched once from a :data:`TokenSource` by the first caller."""

    def __init__(self, token: str | TokenSource | None) -> None:
        self._token = token
        self._task: asyncio.Task[str | None] | None = None

    async def get(self) -> str | None:
        if self._token is None or isinstance(self._token, str):
            return self._token
        if self._task is None:
            self._task = asyncio.ensure_future(self._token())
        return await asyncio.shield(self._task)


class GitHubPullRequests:
    """The facts of GitHub pull requests, cached, with concurrent lookups of one PR shared.

    Args:
        api_url: The REST API's root (``CLIPYARD_GITHUB_API_URL``, e.g. ``https://api.github.com``).
        client: An HTTP client to use (not closed by :meth:`aclose`); None: an own one.
        ttl: Seconds a successful answer is served from the cache.
        clock: A monotonic clock (injectable for tests).
        timeout: Seconds allowed for each request.
    """

    def __init__(
        self,
        *,
        api_url: str,
        client: httpx.AsyncClient | None = None,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.monotonic,
        timeout: float = 10.0,
    ) -> None:
        self._api_url = api_url.rstrip("/")
        self._owns_client = client is None
        self._client = client if client is not None else httpx.AsyncClient(timeout=timeout)
        self._timeout = timeout
        self._cache: SingleFlightCache[PullRequestFact] = SingleFlightCache(ttl=ttl, clock=clock)
        self._requests = asyncio.Semaphore(MAX_CONCURRENT_REQUESTS)

    async def facts(
        self,
        *,
        company_id: str,
        repo_url: str,
        references: Sequence[str],
        token: str | TokenSource | None,
    ) -> list[PullRequestFact]:
        """One fact per reference, in the order given.

        Args:
            company_id: The company asking (part of the cache key).
            repo_url: The workspace's repository; references to another repository are
                ``unknown`` without a request.
            references: Pull-request URLs (``https://github.com/o/r/pull/N``).
            token: The GitHub token, sent as ``Bearer`` (None: unauthenticated), or a coroutine
                function giving it, awaited once and only when some answer is not cached (so a
                cached answer costs no credential resolution).

        Returns:
            The facts; ``unknown`` with no head for every reference that could not be read.
        """
        repo = parse_github_repo_url(repo_url)
        source = _OnceToken(token)
        return list(
            await asyncio.gather(
                *(self._fact(company_id, repo, reference, source) for reference in references)
            )
        )

    async def aclose(self) -> None:
        """Stop the running lookups and close the HTTP client if it is this object's own."""
        await self._cache.aclose()
        if self._owns_client:
            await self._client.aclose()

    async def _fact(
        self, company_id: str, repo: tuple[str, str] | None, reference: str, token: _OnceToken
    ) -> PullRequestFact:
        parsed = parse_pull_request_url(reference)
        if repo is None or parsed is None or (parsed[0].lower(), parsed[1].lower()) != repo:
            return _unknown(reference)
        owner, name, number = parsed
        key = f"{company_id}:{owner.lower()}/{name.lower()}#{number}"
        fact = await self._cache.get(
            key,
            lambda: self._fetch(owner, name, number, token),
            keep=lambda found: found.state != "unknown",
        )
        return PullRequestFact(
            url=reference, state=fact.state, head_ref=fact.head_ref, head_sha=fact.head_sha
        )

    async def _fetch(
        self, owner: str, repo: str, number: int, source: _OnceToken
    ) -> PullRequestFact:
        url = f"{self._api_url}/repos/{owner}/{repo}/pulls/{number}"
        headers = dict(_HEADERS)
        try:
            token = await source.get()
        except Exception as exc:  # a failed resolution makes the answer unknown, never a crash
            log.warning(
                "pull-request lookup skipped: no token could be resolved for %s (%s)",
                scrub_url_secrets(url),
                type(exc).__name__,
            )
            return _unknown(url)
        if token:
            if _HEADER_SAFE.fullmatch(token) is None:
                log.warning(
                    "pull-request lookup skipped: unusable token for %s", scrub_url_secrets(url)
                )
                return _unknown(url)
            headers["Authorization"] = f"Bearer {token}"
        try:
            async with self._requests:
                response = await self._client.get(
                    url, headers=headers, timeout=self._timeout, follow_redirects=True
                )
            if response.status_code != 200:
                log.warning(
                    "pull-request lookup failed: HTTP %s from %s",
                    response.status_code,
                    scrub_url_secrets(url),
                )
                return _unknown(url)
            found = _DECODER.decode(response.content)
        except Exception as error:
            # The type only: an error's text may quote a header value.
            log.warning(
                "pull-request lookup failed: %s from %s",
                type(error).__name__,
                scrub_url_secrets(url),
            )
            return _unknown(url)
        state: PullRequestState
        if found.merged or found.merged_at:
            state = "merged"
        elif found.state == "open":
            state = "open"
        elif found.state == "closed":
            state = "closed"
        else:
            log.warning(
                "pull-request lookup failed: state %r from %s",
                found.state[:32],
                scrub_url_secrets(url),
            )
            return _unknown(url)
        return PullRequestFact(
            url=url, state=state, head_ref=found.head.ref, head_sha=found.head.sha
        )
