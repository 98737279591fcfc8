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


def test_a_long_unended_line_is_not_held_forever(tmp_path: Path) -> None:
    live = LiveFile(tmp_path / "stdout")
    live.write(b"." * 5000)
    assert len((tmp_path / "stdout").read_bytes()) == 5000
    live.close()


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
