"""Managed checkouts of repo-only project workspaces (reference §5.9, §8.8; DECISIONS 14 case 31).

Clones go to a temporary sibling ``<target>.clone-<rand>`` and are renamed into place only when
complete; on failure neither the sibling nor the target is left. An existing checkout is reused, an
empty directory replaced, a non-empty directory that is not a git checkout refused. The caller
serializes calls for one target (the adapter's lock on ``<target>/.git``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
from pathlib import Path

from contracts.errors import ErrorCode
from telemetry import scrub_url_secrets
from workspace_realizer.adapters import fs
from workspace_realizer.adapters.auth_failure import describe_auth_failure
from workspace_realizer.adapters.clone_progress import CloneProgress, report_while
from workspace_realizer.adapters.gitcli import GitResult, GitRunner
from workspace_realizer.adapters.live_steps import abandon_step, begin_step
from workspace_realizer.adapters.ports import (
    GitInvocation,
    HostOperationError,
    ManagedClone,
    Step,
    StepSink,
)
from workspace_realizer.adapters.probes import (
    current_branch,
    ref_exists,
    rev_parse,
    same_path,
    toplevel,
)

__all__ = ["CLONE_TIMEOUT", "managed_clone"]

CLONE_TIMEOUT = 600.0


async def _clone(
    git: GitRunner,
    repo_url: str,
    target: Path,
    work: Path,
    auth: GitInvocation | None,
    sink: StepSink,
) -> GitResult:
    """``git clone --progress`` into ``work``, shown as a step that begins at once and reports
    git's phase and percent while it runs (ended ``failed`` if the clone raises before git's
    step could be reported)."""
    args = ["clone", "--progress", "--origin", "origin", "--", repo_url, str(work)]
    shown = " ".join(["git", *args[:-2], scrub_url_secrets(repo_url), str(work)])
    await begin_step(sink, phase="managed_clone", command=shown, cwd=str(target.parent))
    progress, stop = CloneProgress(), asyncio.Event()
    reporter = asyncio.create_task(report_while(progress, sink, stop))

    async def ended(step: Step) -> None:
        await _stop(reporter, stop)  # git's last progress is reported before the step ends
        await sink(step)

    try:
        return await git.run(
            args,
            cwd=target.parent,
            phase="managed_clone",
            sink=ended,
            auth=auth,
            timeout=CLONE_TIMEOUT,
            metadata={"repoUrl": repo_url, "path": str(target)},
            on_stderr=progress.feed,
        )
    except BaseException as error:
        await _stop(reporter, stop)
        await abandon_step(sink, "managed_clone", f"the clone ended: {error!r}")
        raise
    finally:
        await _stop(reporter, stop)


async def _stop(reporter: asyncio.Task[None], stop: asyncio.Event) -> None:
    """Stop reporting the clone's progress and wait for the last report (its failure is only
    progress lost: it never fails the clone)."""
    stop.set()
    with contextlib.suppress(Exception):
        await reporter


def _normalized_url(url: str) -> str:
    return url.strip().rstrip("/").removesuffix(".git").lower()


def _failure(repo_url: str, target: Path, reason: str, **details: object) -> HostOperationError:
    url = scrub_url_secrets(repo_url)
    return HostOperationError(
        f'Failed to prepare managed checkout for "{url}" at "{target}": {scrub_url_secrets(reason)}',
        code=ErrorCode.UNPROCESSABLE,
        details={"repoUrl": url, "path": str(target)} | details,
    )


def _clone_failure(
    repo_url: str, target: Path, result: GitResult, auth: GitInvocation | None
) -> HostOperationError:
    """The failed clone's error; an authentication failure says which credential was rejected or
    which one to configure (reference §8.6)."""
    hint = describe_auth_failure(result.stderr, auth, repo_url)
    if hint is None:
        return _failure(repo_url, target, result.message())
    error = _failure(repo_url, target, f"{result.message()} {hint}")
    error.details["reason"] = "git_auth_failed"
    return error


async def _reuse(git: GitRunner, *, repo_url: str, target: Path, cloned: bool) -> ManagedClone:
    top = await toplevel(git, target)
    if top is None or not same_path(top, target):
        raise _failure(repo_url, target, "the directory is not the top of a usable git checkout")
    head = await rev_parse(git, target, "HEAD")
    if head is None:
        raise _failure(repo_url, target, "the checkout has no commit checked out")
    warnings: list[str] = []
    origin = await git.run(["remote", "get-url", "origin"], cwd=target)
    if not cloned and (not origin.ok or _normalized_url(origin.out) != _normalized_url(repo_url)):
        shown = scrub_url_secrets(origin.out) if origin.ok else "no origin remote"
        warnings.append(
            f'Managed checkout "{target}" already exists with origin {shown}, not '
            f"{scrub_url_secrets(repo_url)}; using it as it is."
        )
    return ManagedClone(
        path=target,
        head_branch=await current_branch(git, target),
        head_sha=head,
        cloned=cloned,
        warnings=tuple(warnings),
    )


async def _check_out_ref(git: GitRunner, work: Path, repo_ref: str, sink: StepSink) -> None:
    """Check ``repo_ref`` out as a local branch (``origin/HEAD``: the default branch stays)."""
    name = repo_ref.strip().removeprefix("refs/remotes/").removeprefix("refs/heads/")
    name = name.removeprefix("origin/")
    if name in ("", "HEAD"):
        return
    if name == await current_branch(git, work):
        return
    if await ref_exists(git, work, f"refs/remotes/origin/{name}"):
        args = ["checkout", "--quiet", "-B", name, "--track", f"origin/{name}"]
    elif await rev_parse(git, work, repo_ref) is not None:
        args = ["checkout", "--quiet", "--detach", repo_ref]
    else:
        raise HostOperationError(f'repoRef "{repo_ref}" was not found in the repository')
    await git.run(
        args,
        cwd=work,
        phase="managed_clone",
        sink=sink,
        check=True,
        metadata={"repoRef": repo_ref},
    )


def _existing(target: Path) -> str:
    """``absent`` (an empty directory is removed and counts as absent), ``checkout`` or ``other``;
    the parent directory is created."""
    if not os.path.lexists(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        return "absent"
    if (target / ".git").exists():
        return "checkout"
    if target.is_dir() and not target.is_symlink() and not any(target.iterdir()):
        target.rmdir()
        return "absent"
    return "other"


def _publish(work: Path, target: Path) -> bool:
    """Rename the finished clone into place; False (clone removed) when a checkout got there first."""
    try:
        work.rename(target)
    except OSError:
        if (target / ".git").exists():
            _remove(work)
            return False
        raise
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


async def managed_clone(
    git: GitRunner,
    *,
    repo_url: str,
    repo_ref: str | None,
    target: Path,
    auth: GitInvocation | None,
    sink: StepSink,
) -> ManagedClone:
    """Materialize the managed checkout of ``repo_url`` at ``target``.

    Raises:
        HostOperationError: ``state_conflict`` for a non-empty non-git directory (its files are
            untouched), ``unprocessable`` when the clone fails (nothing is left behind).
    """
    target = Path(fs.abspath(target))
    existing = _existing(target)
    if existing == "checkout":
        return await _reuse(git, repo_url=repo_url, target=target, cloned=False)
    if existing == "other":
        raise HostOperationError(
            f'Managed workspace path "{target}" already exists and is not a git checkout; '
            "refusing to use it. Move it away or remove it, or point the project workspace at "
            "an existing checkout with cwd.",
            code=ErrorCode.STATE_CONFLICT,
            details={"reason": "managed_path_not_a_checkout", "path": str(target)},
        )
    work = target.with_name(f"{target.name}.clone-{secrets.token_hex(4)}")
    try:
        result = await _clone(git, repo_url, target, work, auth, sink)
        if not result.ok:
            raise _clone_failure(repo_url, target, result, auth)
        if repo_ref:
            try:
                await _check_out_ref(git, work, repo_ref, sink)
            except HostOperationError as exc:
                raise _failure(repo_url, target, str(exc), repoRef=repo_ref) from None
        if not _publish(work, target):  # another process published it first
            return await _reuse(git, repo_url=repo_url, target=target, cloned=False)
    except BaseException:
        await asyncio.to_thread(_remove, work)
        raise
    return await _reuse(git, repo_url=repo_url, target=target, cloned=True)
