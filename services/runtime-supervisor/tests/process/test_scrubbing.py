"""What the supervisor stores of a service's or a job's output hides URL credentials and query
strings (issue 4: scrubbing in every service)."""

from __future__ import annotations

from pathlib import Path

from runtime_supervisor.adapters.outputs import scrub_output
from runtime_supervisor.adapters.process.inspect import last_output

LEAKY = "cloning https://x-access-token:ghp_Secret123@github.com/a/b.git?token=abc done"


def test_the_last_output_of_a_service_hides_url_secrets(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    log.write_text("starting\n" + LEAKY + "\n")
    shown = last_output(log)
    assert "ghp_Secret123" not in shown
    assert "token=abc" not in shown
    assert "https://***@github.com/a/b.git?***" in shown


def test_stored_job_output_hides_url_secrets_and_keeps_other_bytes() -> None:
    data = b"\xff\xfe binary " + LEAKY.encode() + b" \x00end"
    scrubbed = scrub_output(data)
    assert b"ghp_Secret123" not in scrubbed
    assert b"token=abc" not in scrubbed
    assert scrubbed.startswith(b"\xff\xfe binary ")
    assert scrubbed.endswith(b" \x00end")
