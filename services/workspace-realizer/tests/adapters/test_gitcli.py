"""The git runner: hardening, environment, scrubbing, per-repository serialization."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from realizer_git_helpers import StepRecorder, git

from workspace_realizer.adapters.gitcli import GitResult, GitRunner
from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.adapters.ports import GitInvocation

pytestmark = pytest.mark.integration


def test_argv_puts_hardening_after_credential_options(tmp_path: Path) -> None:
    runner = GitRunner(home=tmp_path)
    auth = GitInvocation(config_args=("-c", "core.hooksPath=/evil", "-c", "credential.helper="))
    argv = runner.argv(["status"], auth)
    assert argv[0] == "git"
    assert argv[-1] == "status"
    hooks = [i for i, a in enumerate(argv) if a.startswith("core.hooksPath=")]
    assert argv[hooks[-1]] == f"core.hooksPath={tmp_path / 'run' / 'git-no-hooks'}"
    for setting in ("core.fsmonitor=false", "safe.directory=*", "core.pager=cat"):
        assert setting in argv
    assert list((tmp_path / "run" / "git-no-hooks").iterdir()) == []


def test_env_is_sanitized_and_fixed(tmp_path: Path) -> None:
    runner = GitRunner(
        home=tmp_path,
        base_env={"PATH": "/usr/bin", "HOME": "/h", "GITHUB_TOKEN": "x", "CLIPYARD_NATS_URL": "n",
                  "GIT_DIR": "/elsewhere", "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_GLOBAL": "/g",
                  "GIT_TERMINAL_PROMPT": "1", "LANG": "de_DE.UTF-8"},
    )  # fmt: skip
    env = runner.env(GitInvocation(env={"CLIPYARD_GIT_TOKEN": "tok", "GIT_TERMINAL_PROMPT": "1"}))
    assert env["CLIPYARD_GIT_TOKEN"] == "tok"
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert env["GIT_EDITOR"] == "true"
    assert env["LC_ALL"] == "C"
    assert env["GIT_CONFIG_GLOBAL"] == "/g"
    for dropped in ("GITHUB_TOKEN", "CLIPYARD_NATS_URL", "GIT_DIR", "GIT_CONFIG_COUNT"):
        assert dropped not in env


def test_hooks_dir_is_emptied_at_start(tmp_path: Path) -> None:
    hooks = tmp_path / "run" / "git-no-hooks"
    hooks.mkdir(parents=True)
    (hooks / "post-checkout").write_text("#!/bin/sh\n")
    GitRunner(home=tmp_path)
    assert list(hooks.iterdir()) == []


async def test_failures_and_timeouts_are_steps(tmp_path: Path) -> None:
    runner = GitRunner(home=tmp_path)
    steps = StepRecorder()
    result = await runner.run(
        ["rev-parse", "--verify", "nope"], cwd=tmp_path, phase="worktree_prepare", sink=steps
    )
    assert not result.ok
    assert steps.steps[0].status == "failed"
    assert steps.steps[0].exit_code == result.returncode
    assert steps.steps[0].command == "git rev-parse --verify nope"


async def test_secrets_in_metadata_and_output_are_scrubbed(tmp_path: Path) -> None:
    runner = GitRunner(home=tmp_path)
    steps = StepRecorder()
    auth = GitInvocation(env={"CLIPYARD_GIT_TOKEN": "sekrit-token-value"})
    await runner.run(
        ["ls-remote", "https://u:pw-in-url@127.0.0.1:1/r.git?x=sekrit-token-value"],
        cwd=tmp_path, phase="worktree_prepare", sink=steps, auth=auth,
        metadata={"repoUrl": "https://u:pw-in-url@h/r.git", "nested": {"t": "sekrit-token-value"}},
    )  # fmt: skip
    text = steps.text()
    assert "pw-in-url" not in text
    assert "sekrit-token-value" not in text


class CountingRunner(GitRunner):
    """Records how many git processes run at once per working directory's repository."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.active = 0
        self.peak = 0

    async def run(self, args: Sequence[str], **kwargs: Any) -> GitResult:
        probing_key = list(args[:2]) == ["rev-parse", "--path-format=absolute"]
        if not probing_key:
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            await asyncio.sleep(0)
            return await super().run(args, **kwargs)
        finally:
            if not probing_key:
                self.active -= 1


async def test_git_work_on_one_repository_never_overlaps(
    make_repo, home: Path, tmp_path: Path
) -> None:
    repo = make_repo("app", bare_origin=True)
    runner = CountingRunner(home=home)
    host = HostGit(runner)
    steps = StepRecorder()

    async def realize(i: int) -> None:
        base = await host.resolve_base_ref(repo_root=repo, configured="main", auth=None, sink=steps)
        outcome = await host.ensure_worktree(
            repo_root=repo, path=home / "wt" / f"b{i}", branch=f"b{i}", base=base, sink=steps
        )
        assert outcome.created

    # Everything that writes (fetch, worktree add) is serialized on the repository. Read-only
    # inspections deliberately are not (test_inspection: they never wait behind a fetch).
    await asyncio.gather(*(realize(i) for i in range(8)))
    assert runner.peak == 1
    assert len(git(repo, "worktree", "list").splitlines()) == 9
    # Another repository has its own lock: work on both can overlap.
    other = make_repo("other")
    assert await runner.repo_key(repo) != await runner.repo_key(other)
    assert await runner.repo_key(home / "wt" / "b0") == await runner.repo_key(repo)
