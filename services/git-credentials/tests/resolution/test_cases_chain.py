"""Reference cases 2, 3, 4, 8, 9 (ours instead), 10, 23 and 24 (changed): the resolution chain."""

from __future__ import annotations

import pytest
from resolution_fakes import AuditLog, FakeSecrets, make_resolver, unavailable

from git_credentials.domain.chain import (
    GITHUB_SECRET_NAMES,
    GITLAB_SECRET_NAMES,
    SERVER_ENV_NAMES,
    ResolvedToken,
    resolve_token,
)

ALL_GITHUB = ["GITHUB_TOKEN", "GH_TOKEN", "CLIPYARD_GITHUB_TOKEN", "PAPERCLIP_GITHUB_TOKEN"]


async def test_case2_first_company_secret_wins_and_probing_stops() -> None:
    secrets = FakeSecrets({("c1", "GH_TOKEN"): "gh-secret", ("c1", "PAPERCLIP_GITHUB_TOKEN"): "pc"})

    token = await resolve_token("github", "c1", secrets, {"GITHUB_TOKEN": "env-token"})

    assert token == ResolvedToken("gh-secret", "company_secret", "GH_TOKEN", "github")
    assert secrets.asked == [("c1", "GITHUB_TOKEN"), ("c1", "GH_TOKEN")]


async def test_case2_later_names_in_order() -> None:
    secrets = FakeSecrets(
        {("c1", "PAPERCLIP_GITHUB_TOKEN"): "pc", ("c1", "CLIPYARD_GITHUB_TOKEN"): "cy"}
    )
    token = await resolve_token("github", "c1", secrets, {})
    assert token == ResolvedToken("cy", "company_secret", "CLIPYARD_GITHUB_TOKEN", "github")
    assert secrets.names() == ALL_GITHUB[:3]


async def test_case3_server_env_github_token_before_gh_token() -> None:
    secrets = FakeSecrets()
    env = {"GITHUB_TOKEN": " env-github \n", "GH_TOKEN": "env-gh"}

    token = await resolve_token("github", "c1", secrets, env)

    assert token == ResolvedToken("env-github", "server_env", None, "github")
    assert secrets.names() == ALL_GITHUB


async def test_case3_server_env_gh_token_when_github_token_blank() -> None:
    token = await resolve_token(
        "github", "c1", FakeSecrets(), {"GITHUB_TOKEN": "  ", "GH_TOKEN": "g"}
    )
    assert token == ResolvedToken("g", "server_env", None, "github")


async def test_case4_nothing_configured_resolves_to_none() -> None:
    secrets = FakeSecrets()
    audit = AuditLog()
    resolver = make_resolver(secrets, audit, server_env={"UNRELATED": "x", "GITLAB_TOKEN": "gl"})

    assert await resolve_token("github", "c1", secrets, {}) is None
    answer = await resolver.invocation(
        company_id="c1", remote_url="https://github.com/x/r.git", run_id="r", operation_id=None
    )

    assert answer.provider == "github"
    assert answer.credential is None
    assert audit.records == []


async def test_case8_unreadable_secret_is_skipped_and_the_chain_continues() -> None:
    secrets = FakeSecrets({("c1", "GITHUB_TOKEN"): unavailable(), ("c1", "GH_TOKEN"): "gh"})

    token = await resolve_token("github", "c1", secrets, {"GITHUB_TOKEN": "env"})

    assert token == ResolvedToken("gh", "company_secret", "GH_TOKEN", "github")


async def test_case8_empty_values_are_skipped_and_values_are_trimmed() -> None:
    secrets = FakeSecrets(
        {
            ("c1", "GITHUB_TOKEN"): "",
            ("c1", "GH_TOKEN"): " \t\n",
            ("c1", "CLIPYARD_GITHUB_TOKEN"): unavailable(),
            ("c1", "PAPERCLIP_GITHUB_TOKEN"): "  pc-token\n",
        }
    )
    token = await resolve_token("github", "c1", secrets, {})
    assert token == ResolvedToken("pc-token", "company_secret", "PAPERCLIP_GITHUB_TOKEN", "github")


async def test_case8_every_secret_unreadable_falls_back_to_server_env() -> None:
    secrets = FakeSecrets({("c1", name): unavailable() for name in ALL_GITHUB})
    token = await resolve_token("github", "c1", secrets, {"GH_TOKEN": "env-gh"})
    assert token == ResolvedToken("env-gh", "server_env", None, "github")


async def test_case8_other_failures_are_not_swallowed() -> None:
    secrets = FakeSecrets(
        {("c1", "GITHUB_TOKEN"): RuntimeError("store down"), ("c1", "GH_TOKEN"): "g"}
    )
    with pytest.raises(RuntimeError, match="store down"):
        await resolve_token("github", "c1", secrets, {})


async def test_case9_ours_any_run_of_the_company_resolves_the_company_secret() -> None:
    # No managed GitHub connections (DECISIONS 9): nothing is per agent. The runs of two
    # agents of one company both get the company's secret; another company gets its own.
    secrets = FakeSecrets({("c1", "GH_TOKEN"): "c1-token", ("c2", "GH_TOKEN"): "c2-token"})
    audit = AuditLog()
    resolver = make_resolver(secrets, audit)
    url = "https://github.com/x/r.git"

    agent_a = await resolver.invocation(
        company_id="c1", remote_url=url, run_id="run-agent-a", operation_id=None
    )
    agent_b = await resolver.invocation(
        company_id="c1", remote_url=url, run_id="run-agent-b", operation_id=None
    )
    other = await resolver.invocation(
        company_id="c2", remote_url=url, run_id="run-agent-a", operation_id=None
    )

    tokens = [
        a.credential.env["CLIPYARD_GIT_TOKEN"] for a in (agent_a, agent_b, other) if a.credential
    ]
    assert tokens == ["c1-token", "c1-token", "c2-token"]
    assert {company for company, _name in secrets.asked} == {"c1", "c2"}
    assert [(r.company_id, r.run_id) for r in audit.records] == [
        ("c1", "run-agent-a"),
        ("c1", "run-agent-b"),
        ("c2", "run-agent-a"),
    ]


async def test_case10_gitlab_probes_only_gitlab_names() -> None:
    secrets = FakeSecrets({("c1", "GITHUB_TOKEN"): "gh", ("c1", "GH_TOKEN"): "gh"})
    env = {"GITHUB_TOKEN": "env-gh", "GH_TOKEN": "env-gh"}

    assert await resolve_token("gitlab", "c1", secrets, env) is None
    assert secrets.names() == ["GITLAB_TOKEN", "CLIPYARD_GITLAB_TOKEN"]


async def test_case10_gitlab_secret_for_gitlab_com() -> None:
    secrets = FakeSecrets({("c1", "GITLAB_TOKEN"): "gl-token", ("c1", "GITHUB_TOKEN"): "gh"})
    audit = AuditLog()
    resolver = make_resolver(secrets, audit)

    answer = await resolver.invocation(
        company_id="c1", remote_url="https://gitlab.com/g/r.git", run_id="r", operation_id=None
    )

    assert answer.provider == "gitlab"
    assert answer.credential is not None
    assert answer.credential.secret_name == "GITLAB_TOKEN"
    assert answer.credential.provider_label == "GitLab"
    assert secrets.names() == ["GITLAB_TOKEN"]


async def test_case10_one_run_resolves_github_and_gitlab_independently() -> None:
    secrets = FakeSecrets({("c1", "GH_TOKEN"): "gh-token", ("c1", "CLIPYARD_GITLAB_TOKEN"): "gl"})
    audit = AuditLog()
    resolver = make_resolver(secrets, audit, server_env={"GITLAB_TOKEN": "env-gl"})
    urls = [
        "https://gitlab.com/g/r.git",
        "https://github.com/x/r.git",
        "https://www.gitlab.com/g/other.git",
        "git@github.com:x/other.git",
    ]

    answers = [
        await resolver.invocation(company_id="c1", remote_url=u, run_id="r", operation_id=None)
        for u in urls
    ]

    env_tokens = [a.credential.env["CLIPYARD_GIT_TOKEN"] for a in answers if a.credential]
    assert env_tokens == ["gl", "gh-token", "gl", "gh-token"]
    assert [a.provider for a in answers] == ["gitlab", "github", "gitlab", "github"]
    assert secrets.names() == ["GITLAB_TOKEN", "CLIPYARD_GITLAB_TOKEN", "GITHUB_TOKEN", "GH_TOKEN"]
    assert [(r.provider, r.secret_name) for r in audit.records] == [
        ("gitlab", "CLIPYARD_GITLAB_TOKEN"),
        ("github", "GH_TOKEN"),
    ]


def test_case23_secret_name_order_constants() -> None:
    assert GITHUB_SECRET_NAMES == (
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "CLIPYARD_GITHUB_TOKEN",
        "PAPERCLIP_GITHUB_TOKEN",
    )
    assert GITLAB_SECRET_NAMES == ("GITLAB_TOKEN", "CLIPYARD_GITLAB_TOKEN")
    assert SERVER_ENV_NAMES == {"github": ("GITHUB_TOKEN", "GH_TOKEN"), "gitlab": ("GITLAB_TOKEN",)}


async def test_case24_changed_lowercase_secret_name_is_not_found() -> None:
    secrets = FakeSecrets({("c1", "gh_token"): "lower", ("c1", "Gitlab_Token"): "mixed"})

    assert await resolve_token("github", "c1", secrets, {}) is None
    assert await resolve_token("gitlab", "c1", secrets, {}) is None
    assert secrets.names() == [*ALL_GITHUB, "GITLAB_TOKEN", "CLIPYARD_GITLAB_TOKEN"]


async def test_case24_changed_server_env_names_are_exact_too() -> None:
    env = {"github_token": "a", "gh_token": "b", "gitlab_token": "c"}
    assert await resolve_token("github", "c1", FakeSecrets(), env) is None
    assert await resolve_token("gitlab", "c1", FakeSecrets(), env) is None


def test_resolved_token_repr_hides_the_token() -> None:
    token = ResolvedToken("ghp_canary_123", "company_secret", "GH_TOKEN", "github")
    assert "ghp_canary_123" not in repr(token)
    assert "GH_TOKEN" in repr(token)
