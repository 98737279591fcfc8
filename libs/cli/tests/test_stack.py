"""Starting and stopping the local stack's processes, and what each one is given."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from clipyard_cli.compose import compose_env_lines
from clipyard_cli.home import NATS_USERS, password_env_var
from clipyard_cli.probes import StackSettings
from clipyard_cli.stack import (
    SERVICE_LAUNCHES,
    StackError,
    find_nats_config,
    find_nats_server,
    nats_server_env,
    resolve_service,
    service_env,
    spawn,
    stop_process,
)
from contracts.subjects import SERVICE_NAMES, SERVICES

REPO = Path(__file__).resolve().parents[3]
PASSWORDS = {user: f"pw-{user}" for user in NATS_USERS}
BASE = {
    "PATH": "/usr/bin:/bin",
    "CLIPYARD_ADMIN_KEY": "admin-secret",
    "CLIPYARD_NATS_PASSWORD_GATEWAY": "leaked",
    "CLIPYARD_NATS_PASSWORD": "leaked-too",
    "CLIPYARD_SECRET_KEY": "vault-key",
    "CLIPYARD_SECRET_KEY_PREVIOUS": "old-vault-key",
    "GITHUB_TOKEN": "ghp-server",
    "GH_TOKEN": "gh-server",
    "GITLAB_TOKEN": "glpat-server",
}
CREDENTIAL_ONLY = (
    "CLIPYARD_SECRET_KEY",
    "CLIPYARD_SECRET_KEY_PREVIOUS",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITLAB_TOKEN",
)


def launch(token: str):  # type: ignore[no-untyped-def]
    return next(one for one in SERVICE_LAUNCHES if one.token == token)


def test_every_service_is_launched_once_with_the_gateway_last() -> None:
    assert sorted(one.token for one in SERVICE_LAUNCHES) == sorted(SERVICES)
    assert SERVICE_LAUNCHES[-1].token == "gateway"
    assert {one.name for one in SERVICE_LAUNCHES} == set(SERVICE_NAMES.values())
    for one in SERVICE_LAUNCHES:
        assert (REPO / "services" / one.name / "src" / one.module).is_dir()


def test_a_service_gets_only_its_own_password_and_settings(tmp_path: Path) -> None:
    env = service_env(
        BASE,
        launch("realizer"),
        home=tmp_path,
        nats_url="nats://127.0.0.1:1",
        password="mine",
        admin_key="k",
    )
    assert env["CLIPYARD_NATS_USER"] == "realizer"
    assert env["CLIPYARD_NATS_PASSWORD"] == "mine"
    assert env["CLIPYARD_HOME"] == str(tmp_path)
    assert env["CLIPYARD_NATS_URL"] == "nats://127.0.0.1:1"
    assert env["CLIPYARD_STORE"] == "sqlite"
    assert env["CLIPYARD_NODE_ID"] == "local"
    assert "CLIPYARD_ADMIN_KEY" not in env
    assert "CLIPYARD_SECRET_KEY" not in env
    assert "CLIPYARD_NATS_PASSWORD_GATEWAY" not in env
    assert env["PATH"] == BASE["PATH"]


def test_only_the_gateway_gets_the_admin_key_and_the_store_setting_is_kept(tmp_path: Path) -> None:
    base = {**BASE, "CLIPYARD_STORE": "postgres", "CLIPYARD_NODE_ID": "n2"}
    env = service_env(
        base, launch("gateway"), home=tmp_path, nats_url="u", password="p", admin_key="k"
    )
    assert env["CLIPYARD_ADMIN_KEY"] == "k"
    assert "CLIPYARD_SECRET_KEY" not in env
    assert env["CLIPYARD_STORE"] == "postgres"
    assert env["CLIPYARD_NODE_ID"] == "n2"


def test_only_git_credentials_gets_the_vault_key(tmp_path: Path) -> None:
    env = service_env(
        BASE, launch("credentials"), home=tmp_path, nats_url="u", password="p", admin_key="k"
    )
    assert {name: env[name] for name in CREDENTIAL_ONLY} == {
        name: BASE[name] for name in CREDENTIAL_ONLY
    }
    assert "CLIPYARD_ADMIN_KEY" not in env


@pytest.mark.parametrize("token", ["gateway", "realizer", "supervisor", "controller"])
def test_no_other_service_gets_a_vault_key_or_a_git_token(tmp_path: Path, token: str) -> None:
    env = service_env(BASE, launch(token), home=tmp_path, nats_url="u", password="p", admin_key="k")
    assert [name for name in CREDENTIAL_ONLY if name in env] == []


def test_nats_gets_every_password_quoted_and_the_store_folder(tmp_path: Path) -> None:
    home = tmp_path / "a home"
    env = nats_server_env(BASE, home, PASSWORDS)
    for user in NATS_USERS:
        assert json.loads(env[password_env_var(user)]) == PASSWORDS[user]
    assert json.loads(env["CLIPYARD_NATS_STORE_DIR"]) == str(home / "nats")
    assert "CLIPYARD_NATS_PASSWORD" not in env
    assert "CLIPYARD_ADMIN_KEY" not in env
    assert "CLIPYARD_SECRET_KEY" not in env


def test_the_nats_config_is_found_in_the_repository_or_where_the_environment_says(
    tmp_path: Path,
) -> None:
    assert find_nats_config({}, start=REPO / "libs") == REPO / "deploy" / "nats" / "nats.conf"
    # From outside the repository, the package's own location still finds it.
    assert find_nats_config({}, start=tmp_path) == REPO / "deploy" / "nats" / "nats.conf"
    other = tmp_path / "other.conf"
    other.write_text("port: 1\n")
    assert find_nats_config({"CLIPYARD_NATS_CONFIG": str(other)}) == other
    with pytest.raises(StackError, match="not a file"):
        find_nats_config({"CLIPYARD_NATS_CONFIG": str(tmp_path / "missing.conf")})


def test_the_nats_server_is_the_venvs_own_and_recent() -> None:
    binary = find_nats_server()
    assert binary.parent == Path(os.sys.executable).parent
    assert not str(binary).startswith("/usr/sbin")


@pytest.mark.parametrize(
    ("given", "token"),
    [("realizer", "realizer"), ("workspace-realizer", "realizer"), ("api-gateway", "gateway")],
)
def test_services_are_named_by_token_or_name(given: str, token: str) -> None:
    assert resolve_service(given) == token


def test_an_unknown_service_lists_the_valid_names() -> None:
    with pytest.raises(ValueError, match="git-credentials"):
        resolve_service("billing")


def test_settings_honour_the_environment(tmp_path: Path) -> None:
    settings = StackSettings.from_env(
        {
            "CLIPYARD_HOME": str(tmp_path),
            "CLIPYARD_NATS_URL": "nats://0.0.0.0:14222",
            "CLIPYARD_HTTP_PORT": "18080",
        }
    )
    assert settings.home == tmp_path
    assert settings.nats_port == 14222
    assert settings.nats_url == "nats://127.0.0.1:14222"
    assert settings.api_url == "http://127.0.0.1:18080/api"


def test_a_process_runs_in_its_own_session_and_logs_to_its_file(tmp_path: Path) -> None:
    process = spawn(
        "probe", ["sh", "-c", "echo hello; sleep 60"], {"PATH": "/usr/bin:/bin"}, tmp_path
    )
    try:
        assert os.getsid(process.pid) == process.pid
        deadline = time.monotonic() + 5
        while "hello" not in process.log_tail() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "hello" in process.log_tail()
        assert process.log_path == tmp_path / "logs" / "probe.log"
    finally:
        stop_process(process)
    assert not process.alive()


def gone(pid: int, timeout: float = 5.0) -> bool:
    """Whether ``pid`` has exited (a zombie waiting for init to reap it counts as gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_stopping_ends_the_whole_group_and_escalates_to_sigkill(tmp_path: Path) -> None:
    # The leader ignores SIGTERM; its child would outlive it without a group kill.
    pid_file = tmp_path / "child.pid"
    script = f"trap '' TERM; sleep 60 & echo $! > '{pid_file}'; wait"
    process = spawn("stubborn", ["sh", "-c", script], {"PATH": "/usr/bin:/bin"}, tmp_path)
    deadline = time.monotonic() + 5
    while not pid_file.read_text().strip() if pid_file.exists() else time.monotonic() < deadline:
        time.sleep(0.02)
    child = int(pid_file.read_text())
    started = time.monotonic()
    assert stop_process(process, timeout=0.5) == -9
    assert time.monotonic() - started < 5
    assert gone(child), "the child outlived its group"


def test_skipped_services_are_named_by_token_or_name(tmp_path: Path) -> None:
    settings = StackSettings.from_env(
        {"CLIPYARD_HOME": str(tmp_path)}, skip=["realizer", "api-gateway"]
    )
    assert settings.skip == {"workspace-realizer", "api-gateway"}
    with pytest.raises(ValueError, match="unknown service"):
        StackSettings.from_env({}, skip=["billing"])


def test_a_sourced_compose_env_gives_no_service_another_ones_secret(tmp_path: Path) -> None:
    sourced = dict(line.split("=", 1) for line in compose_env_lines() if "=" in line)
    base = {**BASE, **sourced}
    for one in SERVICE_LAUNCHES:
        env = service_env(base, one, home=tmp_path, nats_url="u", password="own", admin_key="k")
        leaked = sorted(k for k, v in env.items() if v in sourced.values() and v)
        # git-credentials' own: the vault's master key (compose-env generates it for replicas).
        own = ["CLIPYARD_SECRET_KEY"] if one.name == "git-credentials" else []
        assert leaked == own, f"{one.name} got {leaked}"
        assert env["CLIPYARD_NATS_PASSWORD"] == "own"
