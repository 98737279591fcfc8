"""github_api: a real local HTTP server answering like GitHub's REST API for pull requests."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from testkit.github_api import FakeGitHubApi, start_github_api


def get(api: FakeGitHubApi, path: str, authorization: str | None = None) -> tuple[int, Any, Any]:
    """(status, body, headers) of ``GET path``; the body is parsed when it is JSON."""
    request = urllib.request.Request(f"{api.url}{path}")
    request.add_header("Accept", "application/vnd.github+json")
    request.add_header("User-Agent", "testkit-test")
    if authorization is not None:
        request.add_header("Authorization", authorization)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            status, raw, headers = response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        with error:
            status, raw, headers = error.code, error.read(), error.headers
    if headers.get_content_type() == "application/json":
        return status, json.loads(raw), headers
    return status, raw, headers


def test_answers_a_registered_pull_request_like_github(github_api: FakeGitHubApi) -> None:
    github_api.add_pull_request(
        "Octo", "Repo", 7, state="closed", merged=True, head_ref="topic", head_sha="a" * 40
    )
    github_api.add_pull_request("octo", "repo", 8, state="open")

    status, body, _ = get(github_api, "/repos/octo/repo/pulls/7")
    assert status == 200
    assert body["state"] == "closed"
    assert body["merged"] is True
    assert body["merged_at"]
    assert body["head"]["ref"] == "topic"
    assert body["head"]["sha"] == "a" * 40
    assert body["number"] == 7

    status, body, _ = get(github_api, "/repos/OCTO/REPO/pulls/8")
    assert status == 200
    assert (body["state"], body["merged"], body["merged_at"]) == ("open", False, None)
    assert len(body["head"]["sha"]) == 40

    assert get(github_api, "/repos/octo/repo/pulls/9")[0] == 404
    assert get(github_api, "/repos/octo/other/pulls/7")[0] == 404
    assert get(github_api, "/user")[0] == 404


def test_the_merged_flag_can_be_left_out(github_api: FakeGitHubApi) -> None:
    github_api.add_pull_request("o", "r", 1, state="closed", merged=True, include_merged_flag=False)
    _, body, _ = get(github_api, "/repos/o/r/pulls/1")
    assert "merged" not in body
    assert body["merged_at"]
    with pytest.raises(ValueError, match="closed"):
        github_api.add_pull_request("o", "r", 2, state="open", merged=True)


def test_private_repositories_need_the_token(github_api: FakeGitHubApi) -> None:
    github_api.add_pull_request("o", "secret-repo", 3, state="open", private=True)
    github_api.add_pull_request("o", "public-repo", 4, state="open")
    path = "/repos/o/secret-repo/pulls/3"

    assert get(github_api, path)[0] == 404
    assert get(github_api, path, f"Bearer {github_api.token}")[0] == 200
    assert get(github_api, path, f"token {github_api.token}")[0] == 200
    status, body, _ = get(github_api, path, "Bearer ghp_wrong")
    assert (status, body["message"]) == (401, "Bad credentials")
    assert get(github_api, "/repos/o/public-repo/pulls/4", "Bearer ghp_wrong")[0] == 401
    assert get(github_api, "/repos/o/public-repo/pulls/4")[0] == 200

    seen = [(r.method, r.path, r.authorization) for r in github_api.requests]
    assert seen == [
        ("GET", path, "none"),
        ("GET", path, "valid"),
        ("GET", path, "valid"),
        ("GET", path, "invalid"),
        ("GET", "/repos/o/public-repo/pulls/4", "invalid"),
        ("GET", "/repos/o/public-repo/pulls/4", "none"),
    ]
    assert [r.authorized for r in github_api.requests][:3] == [False, True, True]
    first = github_api.requests[0]
    assert (first.accept, first.user_agent) == ("application/vnd.github+json", "testkit-test")
    assert github_api.token not in repr(github_api.requests)
    github_api.clear_requests()
    assert github_api.requests == []


def test_injected_failures_apply_to_the_next_requests_only(github_api: FakeGitHubApi) -> None:
    github_api.add_pull_request("o", "r", 1)
    path = "/repos/o/r/pulls/1"

    github_api.fail_next(500, count=2)
    github_api.rate_limit_next()
    github_api.garble_next()
    assert get(github_api, path)[0] == 500
    assert get(github_api, path)[0] == 500
    status, body, headers = get(github_api, path)
    assert (status, headers["X-RateLimit-Remaining"]) == (403, "0")
    assert "rate limit" in body["message"]
    status, raw, _ = get(github_api, path)
    assert status == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)
    assert get(github_api, path)[0] == 200
    assert len(github_api.requests) == 5


def test_delayed_answers_wait_and_stop_ends_them() -> None:
    api = start_github_api(token="ghp_fixed")
    try:
        assert api.token == "ghp_fixed"
        api.add_pull_request("o", "r", 1)
        api.delay_next(0.3)
        started = time.monotonic()
        assert get(api, "/repos/o/r/pulls/1")[0] == 200
        assert time.monotonic() - started >= 0.3

        api.delay_next(30)
        failures: list[BaseException] = []

        def slow_request() -> None:
            try:
                get(api, "/repos/o/r/pulls/1")
            except Exception as error:
                failures.append(error)

        client = threading.Thread(target=slow_request)
        client.start()
        deadline = time.monotonic() + 5
        while len(api.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(api.requests) == 2
    finally:
        started = time.monotonic()
        api.stop()
    client.join(timeout=5)
    assert time.monotonic() - started < 5
    assert failures  # the waiting request was cut off, not answered
    with pytest.raises(RuntimeError, match="not running"):
        _ = api.url
