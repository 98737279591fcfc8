"""Reading service logs by lines and by byte ranges."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime_supervisor.adapters.process import LogSlice, read_range, tail_bytes, tail_lines
from runtime_supervisor.adapters.process.logs import MAX_READ


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "output.log"
    path.write_bytes(b"".join(f"line {i}\n".encode() for i in range(1, 11)))
    return path


def test_tail_lines(log: Path) -> None:
    size = log.stat().st_size
    tail = tail_lines(log, 3)
    assert tail.text == "line 8\nline 9\nline 10\n"
    assert (tail.offset, tail.length, tail.size) == (size - len(tail.text), len(tail.text), size)
    assert tail_lines(log, 1).text == "line 10\n"
    assert tail_lines(log, 10).text == log.read_text()
    assert tail_lines(log, 500).text == log.read_text()


def test_tail_lines_counts_an_unfinished_last_line(log: Path) -> None:
    with log.open("ab") as out:
        out.write(b"partial")
    assert tail_lines(log, 2).text == "line 10\npartial"


def test_tail_lines_of_long_lines_is_capped(tmp_path: Path) -> None:
    path = tmp_path / "long.log"
    path.write_bytes(b"x" * (MAX_READ * 2) + b"\nlast\n")
    tail = tail_lines(path, 2)
    assert tail.length == MAX_READ
    assert tail.text.endswith("x\nlast\n")
    assert tail.offset == path.stat().st_size - MAX_READ


def test_tail_of_an_empty_or_missing_log(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert tail_lines(empty, 5) == LogSlice(text="", offset=0, length=0, size=0)
    assert tail_lines(tmp_path / "missing.log", 5) == LogSlice(text="", offset=0, length=0, size=0)
    assert tail_bytes(tmp_path / "missing.log") == LogSlice(text="", offset=0, length=0, size=0)


def test_read_range(log: Path) -> None:
    size = log.stat().st_size
    assert read_range(log, 0, 7) == LogSlice(text="line 1\n", offset=0, length=7, size=size)
    assert read_range(log, 7, 6).text == "line 2"
    end = read_range(log, size - 3, 100)
    assert (end.text, end.length) == ("10\n", 3)
    assert read_range(log, size, 10) == LogSlice(text="", offset=size, length=0, size=size)


def test_a_range_cutting_a_character_ends_before_it_and_one_starting_inside_still_reads(
    tmp_path: Path,
) -> None:
    path = tmp_path / "utf8.log"
    path.write_text("héllo\n", encoding="utf-8")
    cut = read_range(path, 0, 2)
    assert (cut.text, cut.length) == ("h", 1)
    assert read_range(path, 2, 3).text == "\ufffdll"


@pytest.mark.parametrize(
    ("offset", "length", "message"),
    [
        (-1, 10, "offset must be 0 or more"),
        (0, 0, "length must be between 1 and 262144"),
        (0, MAX_READ + 1, "length must be between 1 and 262144"),
        (10_000, 10, "offset 10000 is past the end of the log"),
    ],
)
def test_invalid_ranges(log: Path, offset: int, length: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read_range(log, offset, length)


def test_invalid_tails(log: Path) -> None:
    with pytest.raises(ValueError, match="number of lines must be 1 or more"):
        tail_lines(log, 0)
    with pytest.raises(ValueError, match="length must be between"):
        tail_bytes(log, MAX_READ + 1)


def test_tail_bytes(log: Path) -> None:
    size = log.stat().st_size
    assert tail_bytes(log, 8) == LogSlice(
        text="\nline 10\n"[1:], offset=size - 8, length=8, size=size
    )


def test_ranges_read_in_turn_never_cut_a_character_in_two(tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    text = "héllo wörld — ✓ done 🎉\n" * 50
    log.write_bytes(text.encode())
    offset, read = 0, []
    while offset < log.stat().st_size:
        piece = read_range(log, offset, 7)  # ranges that end inside characters
        assert "\ufffd" not in piece.text, (offset, piece)
        read.append(piece.text)
        offset += piece.length
    assert "".join(read) == text


def test_a_range_of_only_an_unfinished_character_still_moves_on(tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    log.write_bytes("é".encode()[:1])  # a writer stopped halfway
    piece = read_range(log, 0, 10)
    assert (piece.length, piece.text) == (1, "\ufffd")
