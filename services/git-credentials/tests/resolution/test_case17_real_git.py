"""Reference case 17 (and the real-git side of 15): the inline helper answered by the REAL
``git credential fill``, from ``CLIPYARD_GIT_TOKEN`` in the environment, never from argv.

git runs hermetically: ``HOME`` is a temporary directory, ``GIT_CONFIG_NOSYSTEM=1``, prompts off,
and nothing of the test process's environment but ``PATH`` is passed on.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from contracts.credentials import GitCredential
from git_credentials.domain.chain import ResolvedToken
from git_credentials.domain.hosts import classify_remote
from git_credentials.domain.invocation import build_credential, helper_script

pytestmark = pytest.mark.integration

TOKEN = "ghp_CANARY_real_git_4d2e"
GITLAB_HOSTS = ("gitlab.mycompany.com:8443", "[::1]:8443")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    assert shutil.which("git"), "git must be installed for these tests"
    path = tmp_path / "home"
    path.mkdir()
    return path


def credential_for(url: str) -> GitCredential:
    remote = classify_remote(url, GITLAB_HOSTS)
    assert remote is not None, url
    token = ResolvedToken(TOKEN, "company_secret", "SOME_TOKEN", remote.provider)
    return build_credential(remote, token, None)


def git(
    home: Path, args: list[str], stdin: str = "", token: str = TOKEN
) -> subprocess.CompletedProcess[str]:
    """Run real git hermetically with the token only in its environment (and trace on)."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
        "GIT_TRACE": "1",
        "CLIPYARD_GIT_TOKEN": token,
    }
    argv = ["git", *args]
    assert not any(TOKEN in arg for arg in argv), "the token must never be in argv"
    return subprocess.run(
        argv, input=stdin, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def fill(home: Path, credential: GitCredential, request: str) -> subprocess.CompletedProcess[str]:
    return git(home, [*credential.config_args, "credential", "fill"], request + "\n")


def answered(result: subprocess.CompletedProcess[str], username: str) -> bool:
    lines = result.stdout.splitlines()
    return (
        result.returncode == 0 and f"username={username}" in lines and f"password={TOKEN}" in lines
    )


def refused(result: subprocess.CompletedProcess[str]) -> bool:
    return result.returncode != 0 and TOKEN not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "request_text",
    [
        "protocol=https\nhost=github.com\n",
        "protocol=https\nhost=www.github.com\n",
        "protocol=https\nhost=github.com\npath=x/r.git\n",
        "url=https://github.com/x/r.git\n",
        "url=https://GitHub.COM/x/r.git\n",
        "url=https://github.com:443/x/r.git\n",
    ],
)
def test_case17_github_helper_answers_github(home: Path, request_text: str) -> None:
    result = fill(home, credential_for("https://github.com/x/r.git"), request_text)
    assert answered(result, "x-access-token"), result


@pytest.mark.parametrize(
    "request_text",
    [
        "protocol=https\nhost=evil.example\n",
        "protocol=http\nhost=github.com\n",
        "protocol=https\nhost=gitlab.com\n",
        "protocol=https\nhost=github.com:8443\n",
        "protocol=https\nhost=github.com.evil.example\n",
        "url=https://evil.example/x/r.git\n",
    ],
)
def test_case17_github_helper_refuses_everything_else(home: Path, request_text: str) -> None:
    result = fill(home, credential_for("https://github.com/x/r.git"), request_text)
    assert refused(result), result


def test_case17_gitlab_helper_answers_gitlab_com_with_oauth2(home: Path) -> None:
    gitlab = credential_for("https://gitlab.com/g/r.git")
    assert answered(fill(home, gitlab, "protocol=https\nhost=gitlab.com\n"), "oauth2")
    assert answered(fill(home, gitlab, "protocol=https\nhost=www.gitlab.com\n"), "oauth2")
    assert refused(fill(home, gitlab, "protocol=https\nhost=github.com\n"))
    github = credential_for("https://github.com/x/r.git")
    assert refused(fill(home, github, "protocol=https\nhost=gitlab.com\n"))


@pytest.mark.parametrize(
    ("url", "host", "wrong"),
    [
        (
            "https://gitlab.mycompany.com:8443/g/r",
            "gitlab.mycompany.com:8443",
            "gitlab.mycompany.com",
        ),
        ("https://[::1]:8443/g/r", "[::1]:8443", "[::1]:8444"),
    ],
)
def test_case17_custom_port_and_bracketed_ipv6_are_answered(
    home: Path, url: str, host: str, wrong: str
) -> None:
    credential = credential_for(url)
    assert answered(fill(home, credential, f"protocol=https\nhost={host}\n"), "oauth2")
    assert refused(fill(home, credential, f"protocol=https\nhost={wrong}\n"))
    assert refused(fill(home, credential, "protocol=https\nhost=gitlab.com\n"))


def test_case17_helper_checks_the_host_itself_without_the_url_scope(home: Path) -> None:
    # The second gate alone: the helper installed for every URL still refuses other hosts.
    script = helper_script(("github.com",), "x-access-token")
    args = ["-c", "credential.helper=", "-c", f"credential.helper={script}"]
    ok = git(home, [*args, "credential", "fill"], "protocol=https\nhost=github.com\n\n")
    evil = git(home, [*args, "credential", "fill"], "protocol=https\nhost=evil.example\n\n")
    plain = git(home, [*args, "credential", "fill"], "protocol=http\nhost=github.com\n\n")
    assert answered(ok, "x-access-token"), ok
    assert refused(evil), evil
    assert refused(plain), plain


def test_case17_empty_token_gets_no_answer(home: Path) -> None:
    credential = credential_for("https://github.com/x/r.git")
    result = git(
        home,
        [*credential.config_args, "credential", "fill"],
        "protocol=https\nhost=github.com\n\n",
        token="",
    )
    assert result.returncode != 0
    assert "password=" not in result.stdout


@pytest.mark.parametrize("action", ["approve", "reject"])
def test_case17_store_and_erase_are_drained_silently(home: Path, action: str) -> None:
    credential = credential_for("https://github.com/x/r.git")
    request = f"protocol=https\nhost=github.com\nusername=x-access-token\npassword={TOKEN}\n\n"
    result = git(home, [*credential.config_args, "credential", action], request)
    assert result.returncode == 0, result
    assert result.stdout == ""
    assert list(home.iterdir()) == []  # nothing stored on disk


def test_case17_ambient_helpers_are_reset(home: Path) -> None:
    ambient = "!f() { cat >/dev/null; echo username=ambient; echo password=AMBIENT_SECRET; }; f"
    (home / ".gitconfig").write_text(
        f'[credential]\n\thelper = "{ambient}"\n'
        f'[credential "https://github.com"]\n\thelper = "{ambient}"\n'
    )
    control = git(home, ["credential", "fill"], "protocol=https\nhost=evil.example\n\n")
    assert "password=AMBIENT_SECRET" in control.stdout  # the planted helper does answer alone

    credential = credential_for("https://github.com/x/r.git")
    evil = fill(home, credential, "protocol=https\nhost=evil.example\n")
    github = fill(home, credential, "protocol=https\nhost=github.com\n")
    assert refused(evil), evil
    assert "AMBIENT" not in evil.stdout
    assert answered(github, "x-access-token"), github
    assert "AMBIENT" not in github.stdout


def test_case17_token_is_nowhere_in_argv(home: Path) -> None:
    credential = credential_for("https://github.com/x/r.git")
    result = fill(home, credential, "protocol=https\nhost=github.com\n")
    assert answered(result, "x-access-token")
    trace = result.stderr
    assert "run_command:" in trace  # GIT_TRACE shows the helper's command line
    assert "CLIPYARD_GIT_TOKEN" in trace
    assert TOKEN not in trace
    assert not any(TOKEN in arg for arg in credential.config_args)


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:o/r.git",
        "git@www.github.com:o/r.git",
        "ssh://git@github.com/o/r.git",
        "ssh://git@www.github.com/o/r.git",
    ],
)
def test_case15_real_git_rewrites_github_ssh_to_https(home: Path, url: str) -> None:
    credential = credential_for(url)
    result = git(home, [*credential.config_args, "ls-remote", "--get-url", url])
    assert result.returncode == 0, result
    assert result.stdout.strip() == "https://github.com/o/r.git"

    without = git(home, ["ls-remote", "--get-url", url])
    assert without.stdout.strip() == url  # control: nothing else rewrites it

    answer = fill(home, credential, f"url={result.stdout.strip()}\n")
    assert answered(answer, "x-access-token"), answer


def test_case15_https_remote_is_not_rewritten(home: Path) -> None:
    credential = credential_for("https://github.com/o/r.git")
    result = git(
        home, [*credential.config_args, "ls-remote", "--get-url", "git@github.com:o/r.git"]
    )
    assert result.stdout.strip() == "git@github.com:o/r.git"
