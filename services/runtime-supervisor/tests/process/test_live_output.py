"""A command's output written to its operation's files as it comes: whole lines, URL secrets
hidden, a partial line held until it ends (or grows too long), and nothing past the limit."""

from __future__ import annotations

from pathlib import Path

from runtime_supervisor.adapters.process import live_output
from runtime_supervisor.adapters.process.live_output import LiveFile, live_files


def test_whole_lines_are_written_as_they_come_with_secrets_hidden(tmp_path: Path) -> None:
    out, err = live_files(tmp_path / "op")
    assert out is not None
    assert err is not None
    out.write(b"cloning https://user:hunter2@example.com/r.git\nhalf a li")
    assert (tmp_path / "op" / "stdout").read_bytes() == b"cloning https://***@example.com/r.git\n"
    out.write(b"ne\rprogress 50%\r")
    assert (tmp_path / "op" / "stdout").read_bytes().endswith(b"half a line\rprogress 50%\r")
    out.write(b"no end")
    out.close()
    err.close()
    assert (tmp_path / "op" / "stdout").read_bytes().endswith(b"no end")
    assert (tmp_path / "op" / "stderr").read_bytes() == b""


def test_a_long_unended_line_is_written_up_to_its_last_blank(tmp_path: Path) -> None:
    live = LiveFile(tmp_path / "stdout")
    live.write(b"ab " * 1700 + b"tail")
    assert (tmp_path / "stdout").read_bytes() == b"ab " * 1700
    live.close()
    assert (tmp_path / "stdout").read_bytes().endswith(b"ab tail")


def test_nothing_past_the_limit_is_written(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(live_output, "LIVE_LIMIT", 10)
    live = LiveFile(tmp_path / "stdout")
    live.write(b"0123456789abcdef\nmore\n")
    live.close()
    assert (tmp_path / "stdout").read_bytes() == b"0123456789"


def test_a_symlink_in_place_of_the_file_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"kept\n")
    (tmp_path / "stdout").symlink_to(target)
    live = LiveFile(tmp_path / "stdout")
    live.write(b"line\n")
    live.close()
    assert target.read_bytes() == b"kept\n"


def test_a_secret_in_a_long_unended_line_is_never_cut_in_two(tmp_path: Path) -> None:
    live = LiveFile(tmp_path / "stdout")
    secret = b"https://user:ghp_SECRETTOKEN@github.com/acme/robot.git"
    # The hold boundary falls inside the URL: the words before it are written, the URL waits.
    live.write(b"word " * 810 + secret[:20])
    live.write(secret[20:] + b" and more\n")
    live.close()
    written = (tmp_path / "stdout").read_bytes()
    assert b"ghp_SECRETTOKEN" not in written
    assert b"https://***@github.com/acme/robot.git and more\n" in written


def test_a_huge_line_without_blanks_is_left_out_not_written_unscrubbed(tmp_path: Path) -> None:
    live = LiveFile(tmp_path / "stdout")
    live.write(b"https://user:ghp_SECRET@example.com/" + b"x" * 70_000)
    live.close()
    written = (tmp_path / "stdout").read_bytes()
    assert b"ghp_SECRET" not in written
    assert b"left out" in written


def test_a_linked_directory_is_not_written_through(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "op").symlink_to(elsewhere)
    assert live_files(tmp_path / "op") == (None, None)
    assert list(elsewhere.iterdir()) == []
