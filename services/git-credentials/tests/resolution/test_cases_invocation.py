"""Reference cases 13, 14 (changed), 15 (config side) and 16 (ours instead): the invocation."""

from __future__ import annotations

import pytest
from resolution_fakes import AuditLog, FakeSecrets, make_resolver

from contracts.credentials import GitCredential
from git_credentials.domain.chain import ResolvedToken
from git_credentials.domain.hosts import Remote, classify_remote
from git_credentials.domain.invocation import build_credential, helper_script

CANARY = "ghp_CANARY_7f3a9c"
GITHUB_TOKEN = ResolvedToken(CANARY, "company_secret", "GH_TOKEN", "github")
GITLAB_TOKEN = ResolvedToken(CANARY, "server_env", None, "gitlab")
SELF_MANAGED = Remote("gitlab", "gitlab.mycompany.com", ("gitlab.mycompany.com",), True)
REWRITES = [
    "url.https://github.com/.insteadOf=git@github.com:",
    "url.https://github.com/.insteadOf=git@www.github.com:",
    "url.https://github.com/.insteadOf=ssh://git@github.com/",
    "url.https://github.com/.insteadOf=ssh://git@www.github.com/",
]


def github_credential(url: str = "https://github.com/x/r.git") -> GitCredential:
    remote = classify_remote(url, ())
    assert remote is not None
    return build_credential(remote, GITHUB_TOKEN, "/etc/ca.pem")


def test_case14_changed_github_invocation_shape() -> None:
    credential = github_credential()
    args = credential.config_args
    script = helper_script(("github.com", "www.github.com"), "x-access-token")

    assert args == [
        "-c",
        "credential.helper=",
        "-c",
        f"credential.https://github.com.helper={script}",
        "-c",
        f"credential.https://www.github.com.helper={script}",
    ]
    assert script.startswith("!")
    assert "x-access-token" in script
    assert "$CLIPYARD_GIT_TOKEN" in script
    assert credential.env == {"CLIPYARD_GIT_TOKEN": CANARY, "GIT_TERMINAL_PROMPT": "0"}
    assert credential.secret_name == "GH_TOKEN"
    assert credential.source == "company_secret"
    assert credential.provider_label == "GitHub"


def test_case14_changed_no_token_in_argv_no_home_no_gh_token() -> None:
    credential = github_credential()
    assert not any(CANARY in arg for arg in credential.config_args)
    assert not {"HOME", "GH_TOKEN", "GITHUB_TOKEN", "GIT_ASKPASS"} & credential.env.keys()
    assert CANARY not in repr(credential)


def test_case14_gitlab_helper_uses_oauth2() -> None:
    remote = classify_remote("https://gitlab.com/g/r.git", ())
    assert remote is not None
    credential = build_credential(remote, GITLAB_TOKEN, None)
    script = helper_script(("gitlab.com", "www.gitlab.com"), "oauth2")
    assert credential.config_args == [
        "-c",
        "credential.helper=",
        "-c",
        f"credential.https://gitlab.com.helper={script}",
        "-c",
        f"credential.https://www.gitlab.com.helper={script}",
    ]
    assert "oauth2" in script
    assert "x-access-token" not in script
    assert credential.provider_label == "GitLab"
    assert credential.secret_name is None
    assert credential.source == "server_env"


def test_case14_helper_quotes_hosts_for_shell_case() -> None:
    script = helper_script(("[::1]:8443", "gitlab.x.example"), "oauth2")
    assert "'[::1]:8443'" in script
    assert "gitlab.x.example|gitlab.x.example:443" in script
    with pytest.raises(ValueError, match="at least one host"):
        helper_script((), "oauth2")


@pytest.mark.parametrize("ca", ["/etc/clipyard/gitlab-ca.pem", "  /etc/clipyard/gitlab-ca.pem \n"])
def test_case13_ca_is_set_for_self_managed_gitlab(ca: str) -> None:
    credential = build_credential(SELF_MANAGED, GITLAB_TOKEN, ca)
    assert credential.env["GIT_SSL_CAINFO"] == "/etc/clipyard/gitlab-ca.pem"
    assert credential.config_args[3].startswith("credential.https://gitlab.mycompany.com.helper=!")
    assert len(credential.config_args) == 4


@pytest.mark.parametrize("ca", [None, "", "   \t"])
def test_case13_blank_ca_is_unset(ca: str | None) -> None:
    assert "GIT_SSL_CAINFO" not in build_credential(SELF_MANAGED, GITLAB_TOKEN, ca).env


@pytest.mark.parametrize(
    "order",
    [
        ["https://gitlab.mycompany.com/g/r", "https://gitlab.com/g/r", "https://github.com/x/r"],
        ["https://github.com/x/r", "https://gitlab.com/g/r", "https://gitlab.mycompany.com/g/r"],
    ],
)
async def test_case13_ca_only_for_self_managed_in_either_order(order: list[str]) -> None:
    secrets = FakeSecrets({("c1", "GITLAB_TOKEN"): "gl", ("c1", "GITHUB_TOKEN"): "gh"})
    resolver = make_resolver(
        secrets, AuditLog(), gitlab_hosts=("gitlab.mycompany.com",), ca_cert_path="/ca.pem"
    )

    cainfo = {}
    for url in order:
        answer = await resolver.invocation(
            company_id="c1", remote_url=url, run_id="r", operation_id=None
        )
        assert answer.credential is not None
        cainfo[url] = answer.credential.env.get("GIT_SSL_CAINFO")

    assert cainfo == {
        "https://gitlab.mycompany.com/g/r": "/ca.pem",
        "https://gitlab.com/g/r": None,
        "https://github.com/x/r": None,
    }


async def test_case12_self_managed_helper_key_has_the_port() -> None:
    secrets = FakeSecrets({("c1", "GITLAB_TOKEN"): "gl"})
    resolver = make_resolver(secrets, AuditLog(), gitlab_hosts=("host.example:1234",))

    answer = await resolver.invocation(
        company_id="c1",
        remote_url="https://host.example:1234/g/r.git",
        run_id="r",
        operation_id=None,
    )
    wrong_port = await resolver.invocation(
        company_id="c1",
        remote_url="https://host.example:4321/g/r.git",
        run_id="r",
        operation_id=None,
    )

    assert answer.credential is not None
    helper_keys = [a.split("=", 1)[0] for a in answer.credential.config_args if a != "-c"]
    assert helper_keys == ["credential.helper", "credential.https://host.example:1234.helper"]
    assert wrong_port.provider is None
    assert wrong_port.credential is None


async def test_case11_self_managed_helper_scoped_only_to_that_host() -> None:
    secrets = FakeSecrets({("c1", "GITLAB_TOKEN"): "gl"})
    hosts = ["gitlab.a.example", " gitlab.mycompany.com ", "https://gitlab.b.example/"]
    resolver = make_resolver(secrets, AuditLog(), gitlab_hosts=hosts)

    answer = await resolver.invocation(
        company_id="c1",
        remote_url="https://gitlab.mycompany.com/g/r",
        run_id="r",
        operation_id=None,
    )

    assert answer.credential is not None
    joined = " ".join(answer.credential.config_args)
    assert "credential.https://gitlab.mycompany.com.helper=" in joined
    for other in ("gitlab.com", "gitlab.a.example", "gitlab.b.example"):
        assert other not in joined


def test_case15_ssh_remote_gets_the_four_insteadof_rewrites() -> None:
    credential = github_credential("git@github.com:x/r.git")
    args = credential.config_args
    assert args[:2] == ["-c", "credential.helper="]
    assert args[6:] == [item for rewrite in REWRITES for item in ("-c", rewrite)]
    assert credential.env == {"CLIPYARD_GIT_TOKEN": CANARY, "GIT_TERMINAL_PROMPT": "0"}


def test_case15_https_remote_gets_no_rewrite() -> None:
    assert not any("insteadOf" in arg for arg in github_credential().config_args)


async def test_case15_ssh_remote_without_token_is_left_to_ambient_ssh() -> None:
    resolver = make_resolver(FakeSecrets(), AuditLog())
    answer = await resolver.invocation(
        company_id="c1", remote_url="git@github.com:x/r.git", run_id="r", operation_id=None
    )
    assert answer.provider == "github"
    assert answer.credential is None


async def test_case16_ours_the_token_is_in_exactly_one_env_value() -> None:
    secrets = FakeSecrets({("c1", "GH_TOKEN"): CANARY})
    resolver = make_resolver(secrets, AuditLog(), server_env={"GITHUB_TOKEN": "server"})

    answer = await resolver.invocation(
        company_id="c1", remote_url="git@github.com:x/r.git", run_id="r", operation_id=None
    )

    assert answer.credential is not None
    env = answer.credential.env
    assert [name for name, value in env.items() if CANARY in value] == ["CLIPYARD_GIT_TOKEN"]
    assert not any(CANARY in arg for arg in answer.credential.config_args)
    assert not any(name.startswith(("GIT_AUTHOR", "GIT_COMMITTER", "GIT_CONFIG")) for name in env)
    assert not any(
        arg.startswith(("user.name", "user.email")) for arg in answer.credential.config_args
    )


async def test_case13_ca_reaches_a_self_managed_host_even_without_a_credential() -> None:
    # Without it a host behind a private CA fails on the certificate, and the missing secret is
    # never described as missing.
    resolver = make_resolver(
        FakeSecrets({}), AuditLog(), gitlab_hosts=("gitlab.mycompany.com",), ca_cert_path="/ca.pem"
    )
    answers = {
        url: await resolver.invocation(
            company_id="c1", remote_url=url, run_id="r", operation_id=None
        )
        for url in ("https://gitlab.mycompany.com/g/r", "https://gitlab.com/g/r")
    }
    mine, saas = answers.values()
    assert (mine.provider, mine.credential, mine.env) == (
        "gitlab",
        None,
        {"GIT_SSL_CAINFO": "/ca.pem"},
    )
    assert (saas.provider, saas.credential, saas.env) == ("gitlab", None, {})
