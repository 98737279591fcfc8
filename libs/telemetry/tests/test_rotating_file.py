"""RotatingFile: rotation by size, a bounded number of backups, nothing lost or torn, and several
writer processes at once (each a subprocess of its own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from telemetry.rotating_file import RotatingFile
from telemetry.rotation import Rotation, backup_path, kept_files

WRITER = """
import json, sys, time
from pathlib import Path
from telemetry.rotating_file import RotatingFile
from telemetry.rotation import Rotation

path, writer, count, max_bytes, backups, go = sys.argv[1:]
out = RotatingFile(Path(path), Rotation(int(max_bytes), int(backups)))
while not Path(go).exists():
    time.sleep(0.001)
n = 0
while n < int(count):
    batch = 1 + n % 3  # one to three lines per write, as the span exporter batches
    lines = [
        json.dumps({"w": int(writer), "n": i, "pad": "x" * (i * 7 % 90)}) + "\\n"
        for i in range(n, min(n + batch, int(count)))
    ]
    out.write("".join(lines).encode())
    n += batch
out.close()
"""


def _lines(path: Path) -> list[dict[str, Any]]:
    """Every line of the kept files, oldest first (each must be a whole JSON object)."""
    found = []
    for file in kept_files(path):
        text = file.read_text()
        assert text.endswith("\n") or not text, f"{file} ends inside a line"
        found += [json.loads(line) for line in text.splitlines()]
    return found


def _writers(path: Path, tmp_path: Path, *, writers: int, count: int, rotation: Rotation) -> None:
    go = tmp_path / "go"
    argv = [str(rotation.max_bytes), str(rotation.backups), str(go)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(w), str(count), *argv],
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(writers)
    ]
    time.sleep(0.5)  # every writer has opened the file and waits
    go.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err


def test_a_full_file_rotates_and_at_most_n_backups_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    out = RotatingFile(path, Rotation(max_bytes=100, backups=3))
    written = [f"line {i:04d} {'x' * (i % 20)}\n".encode() for i in range(200)]
    for line in written:
        out.write(line)
    out.close()
    files = kept_files(path)
    assert files == [backup_path(path, n) for n in (3, 2, 1)] + [path]
    assert not backup_path(path, 4).exists()
    assert all(file.stat().st_size <= 100 for file in files)
    # Nothing lost in what is kept: the files, oldest first, are the end of what was written,
    # at least the last 3 full files' worth.
    kept = b"".join(file.read_bytes() for file in files)
    assert b"".join(written).endswith(kept)
    assert len(kept) > 3 * (100 - 30)
    assert (tmp_path / "spans.jsonl.lock").exists()


def test_a_write_larger_than_the_limit_gets_a_file_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "out.log"
    out = RotatingFile(path, Rotation(max_bytes=10, backups=2))
    out.write(b"small\n")
    out.write(b"a line far longer than ten bytes\n")
    out.write(b"next\n")
    out.close()
    assert backup_path(path, 2).read_bytes() == b"small\n"
    assert backup_path(path, 1).read_bytes() == b"a line far longer than ten bytes\n"
    assert path.read_bytes() == b"next\n"


def test_without_backups_the_old_content_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "out.log"
    out = RotatingFile(path, Rotation(max_bytes=10, backups=0))
    for word in (b"one one\n", b"two two\n", b"three\n"):
        out.write(word)
    out.close()
    assert kept_files(path) == [path]
    assert path.read_bytes() == b"three\n"


def test_backups_beyond_a_lowered_setting_are_deleted_at_the_next_rotation(tmp_path: Path) -> None:
    path = tmp_path / "out.log"
    for index in range(1, 6):
        backup_path(path, index).write_text(f"old {index}\n")
    path.write_text("live\n")
    out = RotatingFile(path, Rotation(max_bytes=8, backups=2))
    out.write(b"new line\n")
    out.close()
    assert kept_files(path) == [backup_path(path, 2), backup_path(path, 1), path]
    assert backup_path(path, 2).read_text() == "old 1\n"
    assert backup_path(path, 1).read_text() == "live\n"


def test_a_writer_follows_the_path_when_the_file_was_rotated_or_removed(tmp_path: Path) -> None:
    path = tmp_path / "out.log"
    first = RotatingFile(path, Rotation(max_bytes=12, backups=2))
    second = RotatingFile(path, Rotation(max_bytes=12, backups=2))
    first.write(b"first 1\n")
    second.write(b"sec1\n")  # does not fit next to it: the second writer rotates
    first.write(b"f2\n")  # fits: the first writer follows the path, not its rotated file
    assert backup_path(path, 1).read_bytes() == b"first 1\n"
    assert path.read_bytes() == b"sec1\nf2\n"
    path.unlink()
    first.write(b"again\n")
    assert path.read_bytes() == b"again\n"
    first.close()
    second.close()


def test_the_second_write_of_a_rotation_race_lands_in_the_live_file(tmp_path: Path) -> None:
    path = tmp_path / "out.log"
    first = RotatingFile(path, Rotation(max_bytes=12, backups=2))
    second = RotatingFile(path, Rotation(max_bytes=12, backups=2))
    first.write(b"first 1\n")
    second.write(b"second 1\n")
    first.write(b"first 2\n")
    # "first 2" (8 bytes) does not fit next to "second 1" (9): it rotated again.
    assert [file.read_bytes() for file in kept_files(path)] == [
        b"first 1\n",
        b"second 1\n",
        b"first 2\n",
    ]
    first.close()
    second.close()


def test_rotate_if_full_rotates_a_file_written_through_another_descriptor(tmp_path: Path) -> None:
    path = tmp_path / "service.log"
    opened: list[int] = []
    out = RotatingFile(path, Rotation(max_bytes=10, backups=1), on_open=opened.append)
    assert len(opened) == 1
    other = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(other, b"12345\n")
    assert out.rotate_if_full() is False
    os.write(other, b"67890\n")
    assert out.rotate_if_full() is True
    os.close(other)
    assert len(opened) == 2
    assert backup_path(path, 1).read_bytes() == b"12345\n67890\n"
    assert path.read_bytes() == b""
    out.close()
    out.close()
    with pytest.raises(ValueError, match="closed"):
        out.write(b"late\n")


def test_several_writer_processes_lose_nothing_and_tear_no_line(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    rotation = Rotation(max_bytes=2048, backups=10_000)  # enough backups to keep everything
    _writers(path, tmp_path, writers=4, count=400, rotation=rotation)
    lines = _lines(path)
    files = kept_files(path)
    assert len(files) > 20, "the files rotated many times while all four wrote"
    assert all(file.stat().st_size <= rotation.max_bytes for file in files)
    for writer in range(4):
        # Every line of every writer, once, in the order it was written.
        assert [line["n"] for line in lines if line["w"] == writer] == list(range(400))


def test_several_writer_processes_keep_the_last_lines_of_each(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    rotation = Rotation(max_bytes=1024, backups=3)
    _writers(path, tmp_path, writers=4, count=300, rotation=rotation)
    files = kept_files(path)
    assert len(files) <= 4
    assert not backup_path(path, 4).exists()
    lines = _lines(path)
    assert len(lines) * 60 > 2 * rotation.max_bytes
    for writer in range(4):
        # What is kept of each writer is the end of what it wrote, without a gap.
        kept = [line["n"] for line in lines if line["w"] == writer]
        assert kept == list(range(300 - len(kept), 300))
