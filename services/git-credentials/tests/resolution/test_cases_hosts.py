"""Reference cases 1, 5, 11, 12 and the host side of 15: which URLs get a credential."""

from __future__ import annotations

import pytest
from resolution_fakes import AuditLog, FakeSecrets, make_resolver

from git_credentials.domain.hosts import (
    Remote,
    classify_remote,
    is_github_https_remote,
    parse_gitlab_hosts,
)

GITHUB = ("github.com", "www.github.com")

REJECTED = [
    "git@github.com:x/r.git",  # SSH is not an *HTTPS* remote (it is rewritten, case 15)
    "ssh://git@github.com/x/r.git",
    "http://github.com/x/r.git",
    "https://github.example-enterprise.com/x/r.git",
    "https://gitlab.com/x/r.git",
    "https://alice:token@github.com/x/r.git",
    "/srv/repos/r.git",
]


@pytest.mark.parametrize("url", ["https://github.com/x/r.git", "https://www.github.com/x/r.git"])
def test_case1_github_https_remotes_are_accepted(url: str) -> None:
    assert is_github_https_remote(url)


@pytest.mark.parametrize("url", REJECTED)
def test_case1_everything_else_is_not_a_github_https_remote(url: str) -> None:
    assert not is_github_https_remote(url)


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://github.com/x/r.git", "github.com"),
        ("https://www.github.com/x/r", "www.github.com"),
        ("https://GitHub.com/x/r.git", "github.com"),
        ("https://github.com:443/x/r.git", "github.com"),
    ],
)
def test_case1_github_remote_is_scoped_to_both_github_hosts(url: str, host: str) -> None:
    assert classify_remote(url, ()) == Remote("github", host, GITHUB)


@pytest.mark.parametrize(
    "url",
    [
        "http://github.com/x/r.git",
        "http://gitlab.com/x/r.git",
        "https://github.example-enterprise.com/x/r.git",
        "https://bitbucket.org/x/r.git",
        "https://gitlab.internal.example/x/r.git",
        "https://alice:token@github.com/x/r.git",
        "https://alice@github.com/x/r.git",
        "https://oauth2:glpat@gitlab.com/x/r.git",
        "https://github.com:8443/x/r.git",
        "https://github.com:notaport/x/r.git",
        "https://github.com:/x/r.git",
        "https://[::1/x/r.git",
        "/srv/repos/r.git",
        "./r",
        "file:///srv/repos/r.git",
        "C:\\repos\\r",
        "not a url",
        "https://github.com/x/r.git\n",
        "",
        "git@gitlab.com:x/r.git",
        "git@github.example-enterprise.com:x/r.git",
        "ssh://git@github.com:22/x/r.git",
        "ssh://deploy@github.com/x/r.git",
        "git@github.com:",
        "GIT@github.com:x/r",
    ],
)
def test_case5_urls_without_credential_classify_as_none(url: str) -> None:
    assert classify_remote(url, ("gitlab.a.example",)) is None


@pytest.mark.parametrize(
    "url", ["https://bitbucket.org/x/r.git", "https://gitlab.internal.example/x/r.git"]
)
async def test_case5_no_provider_and_the_secret_store_is_never_queried(url: str) -> None:
    secrets = FakeSecrets({("c1", "GITHUB_TOKEN"): "t", ("c1", "GITLAB_TOKEN"): "t"})
    audit = AuditLog()
    resolver = make_resolver(secrets, audit, server_env={"GITHUB_TOKEN": "e", "GITLAB_TOKEN": "e"})

    answer = await resolver.invocation(
        company_id="c1", remote_url=url, run_id="run-1", operation_id=None
    )

    assert answer.provider is None
    assert answer.credential is None
    assert secrets.asked == []
    assert audit.records == []


def test_case11_gitlab_hosts_are_trimmed_lowercased_and_normalized() -> None:
    raw = (
        "gitlab.a.example, gitlab.mycompany.com ,gitlab.b.example,,  ,"
        "https://GitLab.C.example:8443/group/, http://user:pw@gitlab.d.example/, "
        "gitlab.e.example:443, [::1]:8443, https://[FE80::1]/x, gitlab.a.example"
    )
    assert parse_gitlab_hosts(raw) == (
        "gitlab.a.example",
        "gitlab.mycompany.com",
        "gitlab.b.example",
        "gitlab.c.example:8443",
        "gitlab.d.example",
        "gitlab.e.example",
        "[::1]:8443",
        "[fe80::1]",
    )
    assert parse_gitlab_hosts(None) == ()
    assert parse_gitlab_hosts("  ") == ()
    assert parse_gitlab_hosts("gitlab.x.example:notaport, gitlab.y.example") == (
        "gitlab.y.example",
    )


def test_case11_self_managed_remote_is_scoped_to_exactly_its_host() -> None:
    hosts = parse_gitlab_hosts("gitlab.a.example, gitlab.mycompany.com ,gitlab.b.example")

    remote = classify_remote("https://gitlab.mycompany.com/team/r.git", hosts)

    assert remote == Remote(
        "gitlab", "gitlab.mycompany.com", ("gitlab.mycompany.com",), self_managed=True
    )
    assert classify_remote("https://gitlab.other.example/team/r.git", hosts) is None
    assert classify_remote("https://sub.gitlab.mycompany.com/team/r.git", hosts) is None


def test_case11_full_url_entries_and_raw_entries_match() -> None:
    remote = classify_remote(
        "https://gitlab.c.example:8443/g/r.git", ["https://GitLab.C.example:8443/group/"]
    )
    assert remote is not None
    assert remote.scoped_hosts == ("gitlab.c.example:8443",)


def test_case11_gitlab_com_is_saas_even_when_listed() -> None:
    remote = classify_remote("https://www.gitlab.com/g/r.git", ["gitlab.com", "www.gitlab.com"])
    assert remote == Remote("gitlab", "www.gitlab.com", ("gitlab.com", "www.gitlab.com"))


def test_case12_entry_without_port_matches_only_443() -> None:
    hosts = ("gitlab.mycompany.com",)
    assert classify_remote("https://gitlab.mycompany.com:1234/g/r.git", hosts) is None
    explicit = classify_remote("https://gitlab.mycompany.com:443/g/r.git", hosts)
    assert explicit is not None
    assert explicit.host == "gitlab.mycompany.com"


def test_case12_entry_with_port_matches_only_that_port() -> None:
    hosts = ("gitlab.mycompany.com:1234",)
    remote = classify_remote("https://gitlab.mycompany.com:1234/g/r.git", hosts)
    assert remote == Remote(
        "gitlab", "gitlab.mycompany.com:1234", ("gitlab.mycompany.com:1234",), self_managed=True
    )
    assert classify_remote("https://gitlab.mycompany.com:4321/g/r.git", hosts) is None
    assert classify_remote("https://gitlab.mycompany.com/g/r.git", hosts) is None


def test_case12_bracketed_ipv6_host_with_port() -> None:
    remote = classify_remote("https://[::1]:8443/g/r.git", ("[::1]:8443",))
    assert remote is not None
    assert remote.scoped_hosts == ("[::1]:8443",)
    assert classify_remote("https://[::1]:8444/g/r.git", ("[::1]:8443",)) is None


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:o/r.git",
        "git@github.com:o/r",
        "git@www.github.com:o/r",
        "ssh://git@github.com/o/r",
        "ssh://git@www.github.com/o/r.git",
    ],
)
def test_case15_github_ssh_remotes_are_rewritten(url: str) -> None:
    assert classify_remote(url, ()) == Remote("github", "github.com", GITHUB, ssh_rewrite=True)
