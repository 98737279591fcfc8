"""A service's own log file (``configure_logging(log_file=...)``): stdout and stderr go to it, and
it rotates by size, in a process of its own (descriptors 1 and 2 are redirected)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from telemetry.rotation import backup_path, kept_files

SERVICE = """
import logging, os, sys
from pathlib import Path
from telemetry.logs import configure_logging
from telemetry.rotation import Rotation

path = Path(sys.argv[1])
print("before logging is configured")  # goes where the process's stdout was: the pipe
configure_logging("svc", log_file=path, rotation=Rotation(max_bytes=1000, backups=2))
print("printed", flush=True)
log = logging.getLogger("svc.test")
for n in range(60):
    log.info("record %d", n, extra={"pad": "x" * 40})
os.write(2, b"written to descriptor 2\\n")
log.info("after the raw write")
raise RuntimeError("the end")
"""


def test_stdout_and_stderr_go_to_the_log_file_which_rotates(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "svc.log"
    path.parent.mkdir()
    path.write_text("x" * 2000 + "\n")  # already full: it rotates at once
    result = subprocess.run(
        [sys.executable, "-c", SERVICE, str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout == "before logging is configured\n"
    assert result.stderr == ""
    files = kept_files(path)
    assert files == [backup_path(path, 2), backup_path(path, 1), path]
    assert not backup_path(path, 3).exists()
    assert all(file.stat().st_size < 1000 + 400 for file in files)
    text = path.read_text()
    # The process's last words (a traceback on descriptor 2) are in the live file.
    assert "RuntimeError: the end" in text
    lines = [line for file in files for line in file.read_text().splitlines()]
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert records[-1]["msg"] == "after the raw write"
    numbers = [int(r["msg"].split()[1]) for r in records if r["msg"].startswith("record ")]
    # What is kept is the end of what was logged, without a gap.
    assert numbers == list(range(60 - len(numbers), 60))
    assert "written to descriptor 2" in lines
