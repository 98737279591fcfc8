"""An external NATS (``CLIPYARD_NATS_EXTERNAL=1``, or several servers in ``CLIPYARD_NATS_URL``):
how the stack settings, ``clipyard up`` and the CLI's commands read it, log in, and say what is
wrong; the commands against a list whose first server is dead."""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path
from typing import Any

import nats
import nats.js.errors
import pytest
from nats.js.api import StreamConfig

from clipyard_cli.bus import login_from_env
from clipyard_cli.events import run_tail
from clipyard_cli.home import NATS_USERS, HomeError, password_env_var
from clipyard_cli.natsmode import external_passwords
from clipyard_cli.probes import StackSettings
from clipyard_cli.run import run_env
from clipyard_cli.stack import SERVICE_LAUNCHES, service_env
from clipyard_cli.status import run_status
from clipyard_cli.up import run_up
from contracts.subjects import EVENT_STREAM
from testkit.procutil import free_port

LIST = "nats://10.0.0.1:4222, nats://10.0.0.2:4222 ,nats://10.0.0.3:4222"
SERVERS = ("nats://10.0.0.1:4222", "nats://10.0.0.2:4222", "nats://10.0.0.3:4222")


def _env(home: Path, **settings: str) -> dict[str, str]:
    return {"CLIPYARD_HOME": str(home), **settings}


def _all_passwords() -> dict[str, str]:
    return {password_env_var(user): f"pw{user}" for user in NATS_USERS}


def test_several_servers_mean_an_external_nats_used_as_a_list(tmp_path: Path) -> None:
    settings = StackSettings.from_env(_env(tmp_path, CLIPYARD_NATS_URL=LIST))
    assert settings.nats_external
    assert settings.nats_servers == SERVERS
    assert settings.nats_url == ",".join(SERVERS)


def test_one_server_is_the_stacks_own_unless_said_external(tmp_path: Path) -> None:
    own = StackSettings.from_env(_env(tmp_path, CLIPYARD_NATS_URL="nats://0.0.0.0:14222"))
    assert not own.nats_external
    assert own.nats_url == "nats://127.0.0.1:14222"
    for yes in ("1", "true", "YES", "on"):
        env = _env(
            tmp_path, CLIPYARD_NATS_URL="nats://nats.example:4222", CLIPYARD_NATS_EXTERNAL=yes
        )
        external = StackSettings.from_env(env)
        assert external.nats_external
        assert external.nats_url == "nats://nats.example:4222"
    off = _env(tmp_path, CLIPYARD_NATS_EXTERNAL="0")
    assert not StackSettings.from_env(off).nats_external


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"CLIPYARD_NATS_URL": LIST, "CLIPYARD_NATS_EXTERNAL": "0"}, "names 3 servers"),
        ({"CLIPYARD_NATS_EXTERNAL": "maybe"}, "CLIPYARD_NATS_EXTERNAL='maybe' is neither 1 nor 0"),
        ({"CLIPYARD_NATS_URL": "nats://a:4222,nats://b:70000"}, "'nats://b:70000'"),
    ],
)
def test_unusable_nats_settings_name_the_variable(
    tmp_path: Path, settings: dict[str, str], named: str
) -> None:
    with pytest.raises(ValueError) as caught:
        StackSettings.from_env(_env(tmp_path, **settings))
    assert named in str(caught.value)


def test_external_passwords_are_all_or_none() -> None:
    users = ["cli", "gateway", "realizer"]
    assert external_passwords({}, users) == {}
    given = {password_env_var(user): f"pw-{user}" for user in users}
    assert external_passwords(given, users) == {user: f"pw-{user}" for user in users}
    partial = {password_env_var("cli"): "pw-cli"}
    with pytest.raises(ValueError) as caught:
        external_passwords(partial, users)
    message = str(caught.value)
    assert "CLIPYARD_NATS_PASSWORD_GATEWAY, CLIPYARD_NATS_PASSWORD_REALIZER are not set" in message
    assert ".env" in message


def test_the_cli_logs_in_to_an_external_nats_without_the_homes_password_file(
    tmp_path: Path,
) -> None:
    # No passwords.json: the stack's own NATS cannot be reached, an external one can.
    with pytest.raises(HomeError):
        login_from_env(_env(tmp_path))
    bare = login_from_env(_env(tmp_path, CLIPYARD_NATS_URL=LIST))
    assert (bare.url, bare.user, bare.password) == (",".join(SERVERS), None, None)
    assert bare.inbox_prefix == "_INBOX"
    users = login_from_env(_env(tmp_path, CLIPYARD_NATS_URL=LIST, **_all_passwords()))
    assert (users.user, users.password) == ("cli", "pwcli")
    assert users.inbox_prefix == "_INBOX_cli"


def test_a_service_gets_the_whole_list_and_its_own_external_login(tmp_path: Path) -> None:
    realizer = next(launch for launch in SERVICE_LAUNCHES if launch.token == "realizer")
    env = run_env(_env(tmp_path, CLIPYARD_NATS_URL=LIST, **_all_passwords()), realizer)
    assert env["CLIPYARD_NATS_URL"] == ",".join(SERVERS)
    assert (env["CLIPYARD_NATS_USER"], env["CLIPYARD_NATS_PASSWORD"]) == ("realizer", "pwrealizer")
    assert not any(name.startswith("CLIPYARD_NATS_PASSWORD_") for name in env)
    bare = run_env(_env(tmp_path, CLIPYARD_NATS_URL=LIST), realizer)
    assert "CLIPYARD_NATS_USER" not in bare
    assert "CLIPYARD_NATS_PASSWORD" not in bare
    plain = service_env(
        {"CLIPYARD_NATS_USER": "stray"},
        realizer,
        home=tmp_path,
        nats_url=LIST,
        password=None,
        admin_key="k",
    )
    assert "CLIPYARD_NATS_USER" not in plain


async def test_up_refuses_an_external_nats_with_only_some_passwords(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    env = _env(
        home,
        CLIPYARD_NATS_URL=LIST,
        CLIPYARD_HTTP_PORT=str(free_port()),
        CLIPYARD_NATS_PASSWORD_CLI="pw",
    )
    assert await run_up(env, io.StringIO()) == 1
    err = capsys.readouterr().err
    assert "CLIPYARD_NATS_PASSWORD_GATEWAY" in err
    assert "Traceback" not in err
    assert not (home / "nats" / "passwords.json").exists()


async def test_up_with_no_external_server_answering_names_them_and_starts_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    dead = [f"nats://127.0.0.1:{free_port()}" for _ in range(2)]
    env = _env(
        home,
        CLIPYARD_NATS_URL=",".join(dead),
        CLIPYARD_HTTP_PORT=str(free_port()),
        CLIPYARD_READY_TIMEOUT="1",
    )
    out = io.StringIO()
    assert await run_up(env, out) == 1
    err = capsys.readouterr().err
    assert "no server of the external NATS answers" in err
    assert all(url in err for url in dead), err
    assert "CLIPYARD_NATS_URL" in err
    assert "starting no nats-server" in out.getvalue()
    assert "starting nats-server" not in out.getvalue()
    assert not (home / "nats").exists()  # no password, store or server configuration
    assert not (home / "logs" / "nats-server.log").exists()


@pytest.mark.integration
async def test_status_and_tail_work_through_a_list_whose_first_server_is_dead(
    tmp_path: Path, nats_server: Any
) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        js = nc.jetstream()
        try:
            await js.stream_info(EVENT_STREAM)
        except nats.js.errors.NotFoundError:
            await js.add_stream(StreamConfig(name=EVENT_STREAM, subjects=["ws.evt.>"]))
        marker = str(uuid.uuid4())
        event = {"type": "company.created.v1", "aggregateId": marker, "companyId": marker}
        await js.publish("ws.evt.company.created", json.dumps(event).encode())
    finally:
        await nc.close()
    dead = f"nats://127.0.0.1:{free_port()}"
    env = _env(tmp_path, CLIPYARD_NATS_URL=f"{dead} , {nats_server.url}")

    out = io.StringIO()
    assert await run_status(env, out) == 1  # no service runs on this server
    lines = out.getvalue().splitlines()
    nats_line = next(line for line in lines if line.startswith("nats "))
    assert nats_line.endswith(f"at {nats_server.url}"), nats_line
    servers = next(line for line in lines if line.startswith("servers "))
    assert f"{dead}, {nats_server.url}" in servers
    assert "external" in servers
    assert any(line.startswith(f"jetstream  {EVENT_STREAM}: ") for line in lines)

    tail = io.StringIO()
    code = await run_tail(env, tail, type_tag="company.created.v1", from_start=True, follow=False)
    assert code == 0
    assert marker in tail.getvalue()
