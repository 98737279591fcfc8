"""A workspace's contained launches (docs/design/isolation.md): the glue between a runtime
target and the node's launcher, for services, jobs and the runtime provision command.

A launch binds the target's folder read-write (its worktree, its managed checkout or the
project's own folder), a worktree's ``.git`` pointer read-only (the server's git follows it), and
starts in the command's ``cwd`` inside it. A folder Clipyard made
(an execution workspace's worktree, anything under ``$CLIPYARD_HOME``) is handed to the
company's identity; a folder of the user's (a shared workspace on the project's own checkout) keeps
its owner, and the identity writes there only what its permissions allow.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from runtime_supervisor.adapters.containment.cgroups import CgroupError, Limits, Unit
from runtime_supervisor.adapters.containment.forwarding import forward_shared
from runtime_supervisor.adapters.containment.identities import IdentityError
from runtime_supervisor.adapters.containment.launcher import ContainmentUnavailableError, joiner
from runtime_supervisor.adapters.containment.netns import NetnsError
from runtime_supervisor.adapters.containment.relays import ensure_api_relay
from runtime_supervisor.adapters.containment.sandbox import contained_env
from runtime_supervisor.adapters.process import JOB_OUTPUT_CAP, JobResult, run_job
from runtime_supervisor.adapters.slots.layout import LayoutError
from runtime_supervisor.adapters.slots.ownership import check_ancestors
from runtime_supervisor.domain import ContainmentError
from runtime_supervisor.domain.identity import require_cwd
from runtime_supervisor.orchestration.egress import open_namespace

if TYPE_CHECKING:
    from contracts.workspace_config import ResourceLimits
    from runtime_supervisor.adapters.containment.identities import Identity
    from runtime_supervisor.adapters.containment.launcher import Launcher
    from runtime_supervisor.domain import RuntimeTarget
    from runtime_supervisor.orchestration.context import Supervisor
    from runtime_supervisor.usecases.egress import EgressOwner

__all__ = [
    "ContainedLaunch",
    "api_port",
    "end_unit",
    "host_trusted",
    "job_unit",
    "limits_of",
    "not_started",
    "prepare_in",
    "prepare_launch",
    "run_contained_job",
    "run_prepared",
    "service_unit",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class ContainedLaunch:
    """What a contained start needs: the sandbox's argv prefix, what the child runs before
    exec, the identity and the unit."""

    prefix: list[str]
    preexec: Callable[[], None] | None
    identity: Identity | None
    """None: the company is ``hostTrusted`` and the command runs unconfined (in its unit)."""
    unit: Unit
    netns: Path | None = None
    """The network namespace it runs in (None: the host's)."""

    def env(self, env: dict[str, str]) -> dict[str, str]:
        """The command's environment."""
        return env if self.identity is None else contained_env(env, self.identity)


def api_port(url: str | None) -> int | None:
    """The port of a loopback API URL (the one relayed into namespaces); None otherwise."""
    if not url:
        return None
    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost"):
        return None
    return parts.port or (443 if parts.scheme == "https" else 80)


def service_unit(service_id: str) -> str:
    """The unit of a service instance (found again by its id after a restart)."""
    return f"svc-{service_id}"


def job_unit(operation_id: str) -> str:
    """The unit of a job or provision command (its operation's id)."""
    return f"job-{operation_id}"


def limits_of(limits: ResourceLimits | None) -> Limits:
    """A command's configured limits as a unit's."""
    if limits is None:
        return Limits()
    return Limits(memory_mb=limits.memory_mb, pids=limits.processes, cpus=limits.cpus)


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _clipyard_made(target: RuntimeTarget, root: Path, home: Path) -> bool:
    del root, home  # a folder under the home is handed over by prepare_in
    return target.kind == "execution_workspace" and target.mode not in (None, "shared_workspace")


async def prepare_launch(
    sup: Supervisor,
    target: RuntimeTarget,
    unit: str,
    limits: Limits,
    cwd: Path,
    *,
    shared: bool = False,
) -> ContainedLaunch:
    """Prepare the contained launch ``unit`` of a command of ``target`` starting in ``cwd``: in
    the target's namespace, with the project workspace's shared services forwarded into it; a
    ``shared`` service (reused across the project workspace) in the project workspace's.

    Raises:
        ContainmentError: The node cannot contain it (it then does not run).
        InvalidInputError: The target has no folder.
    """
    root = Path(require_cwd(target))
    owned = _clipyard_made(target, root, sup.settings.home)
    key = (target.project_workspace_id or target.id) if shared else target.id
    launch = await prepare_in(
        sup, target.company_id, root, owned=owned, unit=unit, limits=limits, cwd=cwd, netns_key=key
    )
    if not shared and target.project_workspace_id and launch.netns is not None:
        await forward_shared(sup, target.project_workspace_id, launch.netns)
    return launch


def host_trusted(sup: Supervisor, company_id: str) -> bool:
    """Whether an admin made the company ``hostTrusted`` (store's thread)."""
    copy = sup.app.copy_of("company", company_id)
    return bool(copy is not None and copy.fields.get("host_trusted"))


def _unconfined(launcher: Launcher, unit: str, limits: Limits) -> ContainedLaunch:
    """A ``hostTrusted`` company's launch: as the service user on the host's network, in a
    resource unit all the same (its limits hold, its end is by freezer)."""
    try:
        _tools, _identities, cgroups = launcher.require()
        made = cgroups.create(unit, limits)
    except (ContainmentUnavailableError, CgroupError) as exc:
        raise ContainmentError(str(exc)) from None
    return ContainedLaunch(
        prefix=[], preexec=joiner(made, file_size=False), identity=None, unit=made
    )


async def prepare_in(
    sup: Supervisor,
    company_id: str,
    root: Path,
    *,
    owned: bool,
    unit: str,
    limits: Limits,
    cwd: Path,
    netns_key: str,
    owner: EgressOwner | None = None,
) -> ContainedLaunch:
    """Prepare a contained launch of ``company_id`` in the folder ``root`` (handed to its
    identity when ``owned``), starting in ``cwd``, in the network namespace of ``netns_key``
    (made if missing, with the API relayed into it, and its gate told whose it is: ``owner``,
    else the workspace ``netns_key`` names).

    Raises:
        ContainmentError: The node cannot contain it, or ``root`` would show ``$CLIPYARD_HOME``.
    """
    launcher = sup.launcher
    if launcher is None:
        raise ContainmentError("This node cannot contain a company's work: it has no launcher.")
    home = sup.settings.home
    if await sup.store(host_trusted, sup, company_id):
        return await asyncio.to_thread(_unconfined, launcher, unit, limits)

    def prepare() -> ContainedLaunch:
        real, own_home = root.resolve(), home.resolve()
        if real == own_home or real in own_home.parents or real == Path("/"):
            raise ContainmentError(
                f"{root} holds CLIPYARD_HOME (or is it): a contained command never sees it.",
                root=str(root),
            )
        if real != Path(os.path.abspath(root)):
            raise ContainmentError(
                f"{root} goes through a symbolic link: a contained command's folder is named "
                "by its real path only.",
                root=str(root),
            )
        try:
            check_ancestors(root)
        except LayoutError as exc:
            raise ContainmentError(str(exc), root=str(root)) from None
        own = [root] if owned or _within(real, own_home) else []
        try:
            contained = launcher.prepare(company_id, unit, limits, own=own)
            namespace = launcher.namespace(netns_key)
            api = api_port(sup.settings.api_url)
            if api is not None:
                ensure_api_relay(home, namespace.name, namespace, api)
        except (
            ContainmentUnavailableError,
            IdentityError,
            CgroupError,
            NetnsError,
            OSError,
        ) as exc:
            raise ContainmentError(str(exc), companyId=company_id) from None
        pointer = root / ".git"  # a worktree's pointer, or a checkout's git dir: read-only
        binds = ["--ro-bind", str(pointer), str(pointer)] if pointer.exists() else []
        prefix = launcher.command(
            [], contained, cwd=cwd, writable=[root], binds=binds, netns=namespace
        )
        return ContainedLaunch(
            prefix=prefix,
            preexec=joiner(contained.unit),
            identity=contained.identity,
            unit=contained.unit,
            netns=namespace,
        )

    launch = await asyncio.to_thread(prepare)
    folder = launcher.namespace_folder(netns_key)
    if folder is not None:
        await open_namespace(sup, folder, netns_key, company_id, owner)
    return launch


async def end_unit(sup: Supervisor, name: str) -> list[int]:
    """Kill what is left in the unit ``name`` and remove it; returns the pids that survived."""
    launcher = sup.launcher
    unit = launcher.unit(name) if launcher is not None else None
    if unit is None:
        return []

    def end() -> list[int]:
        left = unit.kill()
        if not left:
            unit.remove()
        return left

    left = await asyncio.to_thread(end)
    if left:
        log.error("processes of resource unit %s survived SIGKILL: %s", name, left)
    return left


async def run_contained_job(
    sup: Supervisor,
    target: RuntimeTarget,
    unit: str,
    limits: Limits,
    *,
    command: str,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    cap: int = JOB_OUTPUT_CAP,
    live: Path | None = None,
) -> JobResult:
    """Run a one-shot command of ``target`` contained in the unit ``unit``; whatever it left
    running dies with the unit, and a hit limit is named in the result (``live``: the output
    directory written as the output comes)."""
    try:
        launch = await prepare_launch(sup, target, unit, limits, cwd)
    except ContainmentError as exc:
        return not_started(str(exc))
    return await run_prepared(
        sup, launch, command=command, cwd=cwd, env=env, timeout=timeout, cap=cap, live=live
    )


def not_started(error: str) -> JobResult:
    """The result of a command that could not be contained (it never ran)."""
    now = datetime.now(UTC)
    return JobResult(
        exit_code=None,
        signal=None,
        stdout="",
        stderr=f"{error}\n",
        stdout_bytes=0,
        stderr_bytes=0,
        truncated=False,
        timed_out=False,
        started_at=now,
        finished_at=now,
        error=error,
    )


async def run_prepared(
    sup: Supervisor,
    launch: ContainedLaunch,
    *,
    command: str,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    cap: int = JOB_OUTPUT_CAP,
    live: Path | None = None,
) -> JobResult:
    """Run ``command`` under a prepared launch; its unit ends with it."""
    try:
        result = await run_job(
            command=command,
            cwd=cwd,
            env=launch.env(env),
            timeout=timeout,
            cap=cap,
            prefix=launch.prefix,
            preexec=launch.preexec,
            live=live,
        )
        hit = await asyncio.to_thread(launch.unit.usage)
    finally:
        await end_unit(sup, launch.unit.name)
    if result.exit_code != 0 and hit.reason():
        return dataclasses.replace(result, limit=hit.reason())
    return result
