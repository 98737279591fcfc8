"""Parsing the command line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clipyard_cli.main import build_parser, main


def parse(*argv: str):  # type: ignore[no-untyped-def]
    return build_parser().parse_args(list(argv))


def test_events_tail_defaults_to_new_events_of_every_type_and_follows() -> None:
    args = parse("events", "tail")
    assert (args.command, args.events_command) == ("events", "tail")
    assert args.type_tag is None
    assert args.from_start is False
    assert args.follow is True


def test_events_tail_takes_types_a_start_and_no_follow() -> None:
    args = parse("events", "tail", "--type", "company.created.v1", "--from-start", "--no-follow")
    assert args.type_tag == ["company.created.v1"]
    assert parse("events", "tail", "--type", "run", "--type", "slot,company").type_tag == [
        "run",
        "slot,company",
    ]
    assert args.from_start is True
    assert args.follow is False


def test_audit_takes_one_aggregate_id() -> None:
    args = parse("audit", "5b0c3d0e-0000-4000-8000-000000000001", "--json")
    assert args.aggregate_id == "5b0c3d0e-0000-4000-8000-000000000001"
    assert args.json is True


def test_replay_requires_verify(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse("replay", "realizer", "--verify").service == "realizer"
    with pytest.raises(SystemExit) as exit_info:
        parse("replay", "realizer")
    assert exit_info.value.code == 2
    assert "--verify" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["launch"], ["events"], ["audit"]])
def test_incomplete_or_unknown_commands_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse(*argv)
    assert exit_info.value.code == 2


def test_up_down_status_run_and_compose_env_parse() -> None:
    for command in ("up", "down", "status", "compose-env"):
        assert parse(command).command == command
    assert parse("run", "api-gateway").service == "api-gateway"


def test_an_unknown_service_is_reported_with_exit_code_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["replay", "billing", "--verify"]) == 2
    assert "unknown service 'billing'" in capsys.readouterr().err


def test_a_cli_without_passwords_says_to_start_the_stack(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CLIPYARD_HOME", str(tmp_path))
    for name in ("CLIPYARD_NATS_PASSWORD", "CLIPYARD_NATS_USER", "CLIPYARD_NATS_URL"):
        monkeypatch.delenv(name, raising=False)
    assert main(["status"]) == 2
    assert "clipyard up" in capsys.readouterr().err


def test_compose_env_prints_a_secret_for_every_compose_variable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compose-env"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("#")]
    names = {line.split("=", 1)[0] for line in lines}
    assert "CLIPYARD_NATS_PASSWORD_CLI" in names
    assert "CLIPYARD_ADMIN_KEY" in names
    assert "POSTGRES_PASSWORD" in names
    assert all(len(line.split("=", 1)[1]) > 40 for line in lines)


def test_up_takes_services_to_skip() -> None:
    assert parse("up").skip == []
    assert parse("up", "--skip", "realizer", "--skip", "api-gateway").skip == [
        "realizer",
        "api-gateway",
    ]


def test_the_user_commands_parse_with_their_options() -> None:
    listed = parse("runs", "list", "--company", "c1", "--status", "running", "--json")
    assert (listed.command, listed.action, listed.company, listed.status) == (
        "runs", "list", "c1", "running",
    )  # fmt: skip
    assert listed.json is True
    followed = parse("runs", "log", "r1", "-f")
    assert (followed.id, followed.follow) == ("r1", True)
    diff = parse("workspaces", "diff", "w1", "--path", "src/a.py")
    assert (diff.id, diff.path, diff.json) == ("w1", "src/a.py", False)
    assert parse("issues", "list").company is None


def test_a_user_command_without_a_key_says_how_to_get_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLIPYARD_API_KEY", raising=False)
    assert main(["workspaces", "show", "w1"]) == 2
    assert "set CLIPYARD_API_KEY to a board key" in capsys.readouterr().err


def test_an_unreachable_api_names_where_it_looked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLIPYARD_API_KEY", "cy_board_x")
    monkeypatch.setenv("CLIPYARD_API_URL", "http://127.0.0.1:9")
    assert main(["runs", "show", "r1"]) == 2
    err = capsys.readouterr().err
    assert "the API at http://127.0.0.1:9 cannot be reached" in err
    assert "CLIPYARD_API_URL" in err


def test_dev_alone_lists_the_recipes() -> None:
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [str(root / ".venv" / "bin" / "just"), "--justfile", str(root / "Justfile")],
        capture_output=True, text=True, timeout=60, check=False, cwd="/",
        env={"PATH": "/usr/bin:/bin", "HOME": "/root"},  # no just on the PATH, as on a fresh machine
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Available recipes:" in done.stdout
    assert "test" in done.stdout
