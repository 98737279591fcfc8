"""A managed clone shows while it runs: it begins as a step at once, and git's own progress
(phase and percent, from ``git clone --progress``) is reported as it comes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from realizer_git_helpers import StepRecorder

from workspace_realizer.adapters.clone_progress import CloneProgress
from workspace_realizer.adapters.hostgit import HostGit


def test_git_progress_lines_give_the_phase_and_percent() -> None:
    progress = CloneProgress()
    progress.feed(b"Cloning into 'app.clone-1'...\nremote: Enumerating objects: 30, done.\n")
    progress.feed(b"remote: Counting objects:  50% (15/30)\rremote: Counting objects: 100% (30/30)")
    assert (progress.phase, progress.percent) == ("Counting objects", 50)  # the last line is open
    progress.feed(
        b", done.\nReceiving objects:  12% (4/30)\rReceiving objects:  45% (14/30), 1.2 MiB"
    )
    assert (progress.phase, progress.percent) == ("Receiving objects", 12)
    progress.feed(b" | 3 MiB/s\r")
    assert (progress.phase, progress.percent) == ("Receiving objects", 45)
    progress.feed(b"Resolving deltas: 100% (2/2), done.\n")
    assert (progress.phase, progress.percent) == ("Resolving deltas", 100)


def test_other_stderr_is_no_progress() -> None:
    progress = CloneProgress()
    progress.feed(b"warning: You appear to have cloned an empty repository.\n")
    progress.feed(b"fatal: repository 'x' does not exist\n")
    assert (progress.phase, progress.percent) == (None, None)


@dataclass
class LiveRecorder(StepRecorder):
    """A sink that also takes the beginning of a step and its progress."""

    begun: list[tuple[str, str]] = field(default_factory=list)
    reports: list[tuple[str, str, int | None]] = field(default_factory=list)
    order: list[str] = field(default_factory=list)

    async def begin(self, *, phase: str, command: str, cwd: str) -> str:
        self.begun.append((phase, command))
        self.order.append("begin")
        return "ref"

    async def progress(self, phase: str, message: str, percent: int | None = None) -> None:
        self.reports.append((phase, message, percent))
        self.order.append("progress")

    async def __call__(self, step) -> None:  # type: ignore[no-untyped-def]
        await super().__call__(step)
        self.order.append("end")


@pytest.mark.integration
async def test_a_managed_clone_begins_at_once_and_reports_git_progress(
    host: HostGit, make_repo, tmp_path: Path
) -> None:
    files = {f"f{i}.txt": f"{i}\n" * 200 for i in range(40)}
    source = make_repo("app", files)
    sink = LiveRecorder()
    await host.managed_clone(
        repo_url=f"file://{source}",
        repo_ref=None,
        target=tmp_path / "m" / "app",
        auth=None,
        sink=sink,
    )
    assert [phase for phase, _ in sink.begun] == ["managed_clone"]
    assert "--progress" in sink.begun[0][1]
    assert str(source) in sink.begun[0][1]
    assert [step.phase for step in sink.steps] == ["managed_clone"]
    phases = {message for _, message, _ in sink.reports}
    assert phases & {
        "Receiving objects",
        "Counting objects",
        "Resolving deltas",
        "Compressing objects",
    }, sink.reports
    assert all(0 <= (percent or 0) <= 100 for _, _, percent in sink.reports)
    # Every report comes after the beginning and before the end (none after it, naming no step).
    assert sink.order[0] == "begin"
    assert sink.order[-1] == "end"
    assert sink.order.count("end") == 1
