"""Managed clones (reference cases 25-27, 29-31 and 33; 31 as changed by DECISIONS 14)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from realizer_git_helpers import StepRecorder, commit, git

from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.adapters.ports import GitInvocation, HostOperationError

pytestmark = pytest.mark.integration


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".clone-" in p.name)


async def test_case25_clone_of_a_local_repo_without_auth(
    host: HostGit, make_repo, steps: StepRecorder, tmp_path: Path
) -> None:
    source = make_repo("app", {"app.py": "print('hi')\n"})
    target = tmp_path / "managed" / "app"

    clone = await host.managed_clone(
        repo_url=str(source), repo_ref=None, target=target, auth=None, sink=steps
    )

    assert (target / ".git").is_dir()
    assert (target / "app.py").read_text() == "print('hi')\n"
    assert clone.cloned is True
    assert clone.warnings == ()
    assert clone.path == target
    assert clone.head_branch == "main"
    assert clone.head_sha == git(source, "rev-parse", "HEAD")
    assert [s.phase for s in steps.steps] == ["managed_clone"]
    assert steps.steps[0].status == "succeeded"
    assert leftovers(target.parent) == []


@pytest.mark.parametrize(
    ("repo_ref", "branch", "content"),
    [
        ("develop", "develop", "develop\n"),
        ("origin/develop", "develop", "develop\n"),
        ("origin/HEAD", "main", "main\n"),
    ],
)
async def test_case26_configured_ref_is_checked_out_as_a_local_branch(
    host: HostGit,
    make_repo,
    steps: StepRecorder,
    tmp_path: Path,
    repo_ref: str,
    branch: str,
    content: str,
) -> None:
    source = make_repo("app", {"which.txt": "main\n"})
    git(source, "checkout", "-q", "-b", "develop")
    commit(source, {"which.txt": "develop\n"})
    git(source, "checkout", "-q", "main")
    target = tmp_path / "managed" / "app"

    clone = await host.managed_clone(
        repo_url=str(source), repo_ref=repo_ref, target=target, auth=None, sink=steps
    )

    assert git(target, "symbolic-ref", "--short", "HEAD") == branch
    assert clone.head_branch == branch
    assert (target / "which.txt").read_text() == content


async def test_case26_unknown_ref_fails_and_leaves_nothing(
    host: HostGit, make_repo, steps: StepRecorder, tmp_path: Path
) -> None:
    source = make_repo("app")
    target = tmp_path / "managed" / "app"
    with pytest.raises(HostOperationError, match="Failed to prepare managed checkout"):
        await host.managed_clone(
            repo_url=str(source), repo_ref="nope", target=target, auth=None, sink=steps
        )
    assert not target.exists()
    assert leftovers(target.parent) == []


async def test_case27_a_credential_adds_env_only_to_the_child(
    host: HostGit, steps: StepRecorder, tmp_path: Path
) -> None:
    """The token reaches git's environment (an ssh command prints it to a file) but no argv,
    step or error."""
    token = "tok-" + "s3cr3t" * 4
    marker = tmp_path / "seen-token"
    auth = GitInvocation(
        config_args=(
            "-c",
            f"core.sshCommand=sh -c 'printenv CLIPYARD_GIT_TOKEN > {marker}; exit 1' --",
        ),
        env={"CLIPYARD_GIT_TOKEN": token},
        secret_name="GITHUB_TOKEN",
        source="company_secret",
    )
    target = tmp_path / "managed" / "remote"
    with pytest.raises(HostOperationError) as caught:
        await host.managed_clone(
            repo_url="ssh://git@example.invalid/x/r.git", repo_ref=None, target=target,
            auth=auth, sink=steps,
        )  # fmt: skip
    assert marker.read_text().strip() == token
    assert token not in str(caught.value)
    assert token not in repr(caught.value.details)
    assert token not in steps.text()
    assert not target.exists()
    assert leftovers(target.parent) == []


async def test_case29_concurrent_clones_of_one_target_share_it(
    host: HostGit, make_repo, steps: StepRecorder, tmp_path: Path
) -> None:
    source = make_repo("app")
    target = tmp_path / "managed" / "app"

    first, second = await asyncio.gather(
        host.managed_clone(repo_url=str(source), repo_ref=None, target=target, auth=None, sink=steps),
        host.managed_clone(repo_url=str(source), repo_ref=None, target=target, auth=None, sink=steps),
    )  # fmt: skip

    assert first.path == second.path == target
    assert first.warnings == second.warnings == ()
    assert sorted([first.cloned, second.cloned]) == [False, True]
    assert leftovers(target.parent) == []
    assert sorted(os.listdir(target.parent)) == ["app"]


async def test_case30_failed_clone_leaves_neither_target_nor_temp(
    host: HostGit, steps: StepRecorder, tmp_path: Path
) -> None:
    target = tmp_path / "managed" / "missing"
    with pytest.raises(HostOperationError) as caught:
        await host.managed_clone(
            repo_url=str(tmp_path / "does-not-exist"), repo_ref=None, target=target, auth=None,
            sink=steps,
        )  # fmt: skip
    assert "Failed to prepare managed checkout" in str(caught.value)
    assert not target.exists()
    assert leftovers(target.parent) == []
    assert steps.steps[-1].status == "failed"


async def test_case31_changed_non_empty_non_git_directory_is_refused(
    host: HostGit, make_repo, steps: StepRecorder, tmp_path: Path
) -> None:
    source = make_repo("app")
    target = tmp_path / "managed" / "app"
    target.mkdir(parents=True)
    (target / "notes.txt").write_text("mine\n")

    with pytest.raises(HostOperationError, match="not a git checkout") as caught:
        await host.managed_clone(
            repo_url=str(source), repo_ref=None, target=target, auth=None, sink=steps
        )

    assert caught.value.code == "state_conflict"
    assert os.listdir(target) == ["notes.txt"]
    assert (target / "notes.txt").read_text() == "mine\n"
    assert steps.steps == []


async def test_empty_directory_is_replaced_and_existing_checkout_reused(
    host: HostGit, make_repo, steps: StepRecorder, tmp_path: Path
) -> None:
    source = make_repo("app")
    target = tmp_path / "managed" / "app"
    target.mkdir(parents=True)

    first = await host.managed_clone(
        repo_url=str(source), repo_ref=None, target=target, auth=None, sink=steps
    )
    (target / "local-edit.txt").write_text("kept\n")
    again = await host.managed_clone(
        repo_url=str(source), repo_ref=None, target=target, auth=None, sink=steps
    )

    assert first.cloned is True
    assert again.cloned is False
    assert again.warnings == ()
    assert (target / "local-edit.txt").read_text() == "kept\n"


async def test_case33_same_name_repos_in_distinct_targets(
    host: HostGit, make_repo, steps: StepRecorder, tmp_path: Path
) -> None:
    one = make_repo("one/app", {"who.txt": "one\n"})
    two = make_repo("two/app", {"who.txt": "two\n"})
    target_one = tmp_path / "managed" / "p1" / "app"
    target_two = tmp_path / "managed" / "p2" / "app"

    a, b = await asyncio.gather(
        host.managed_clone(repo_url=str(one), repo_ref=None, target=target_one, auth=None, sink=steps),
        host.managed_clone(repo_url=str(two), repo_ref=None, target=target_two, auth=None, sink=steps),
    )  # fmt: skip

    assert a.path != b.path
    assert git(target_one, "remote", "get-url", "origin") == str(one)
    assert git(target_two, "remote", "get-url", "origin") == str(two)
    assert (target_one / "who.txt").read_text() == "one\n"
    assert (target_two / "who.txt").read_text() == "two\n"


async def test_reused_checkout_with_another_origin_is_flagged(
    host: HostGit, make_repo, steps: StepRecorder, tmp_path: Path
) -> None:
    one = make_repo("one/app")
    two = make_repo("two/app")
    target = tmp_path / "managed" / "app"
    await host.managed_clone(repo_url=str(one), repo_ref=None, target=target, auth=None, sink=steps)
    again = await host.managed_clone(
        repo_url=str(two), repo_ref=None, target=target, auth=None, sink=steps
    )
    assert again.cloned is False
    assert len(again.warnings) == 1
    assert str(two) in again.warnings[0]


async def test_clone_failure_scrubs_url_secrets(
    host: HostGit, steps: StepRecorder, tmp_path: Path
) -> None:
    url = "https://alice:hunter2secret@127.0.0.1:1/org/repo.git?access_token=qsecret42"
    target = tmp_path / "managed" / "repo"
    with pytest.raises(HostOperationError) as caught:
        await host.managed_clone(repo_url=url, repo_ref=None, target=target, auth=None, sink=steps)
    text = f"{caught.value} {caught.value.details} {steps.text()}"
    assert "hunter2secret" not in text
    assert "qsecret42" not in text
    assert "https://***@127.0.0.1:1/org/repo.git?***" in steps.steps[0].command
    assert not target.exists()
    assert leftovers(target.parent) == []
