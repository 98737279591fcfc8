"""The supervisor's side of egress (docs/design/isolation.md): it tells each namespace's gate
whose namespace it is, which project's allowlist holds there and which run holds it now, and
turns what the gates counted into events.

- :func:`open_namespace` writes a namespace's ``policy.json`` (at each launch into it) and its
  project's allowlist file;
- :func:`hold` and :func:`let_go` write and remove ``run.json`` around an agent's run;
- :func:`watch_egress` runs for the supervisor's life: each second it rewrites the allowlist
  files of projects whose copy changed, and records what is new in each namespace's
  ``tally.json`` (:meth:`~runtime_supervisor.usecases.egress.EgressUseCases.note_egress`); a
  namespace that is gone has its last counts recorded, then its folder removed.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from runtime_supervisor.adapters.containment.egress import (
    PolicyFile,
    RuleEntry,
    RunFile,
    TallyFile,
    policy_path,
    project_rules_path,
    read_json,
    run_path,
    tally_path,
    write_json,
)
from runtime_supervisor.adapters.containment.netns import NETNS_DIR
from runtime_supervisor.adapters.containment.relays import GATE_RECORD
from runtime_supervisor.domain import target_key
from runtime_supervisor.orchestration.context import as_system
from runtime_supervisor.usecases.egress import EgressOwner, EgressPeriod, Seen

if TYPE_CHECKING:
    from contracts.workspace_config import EgressRule
    from runtime_supervisor.application import RuntimeSupervisorApplication
    from runtime_supervisor.orchestration.context import Supervisor

__all__ = ["hold", "let_go", "open_namespace", "owner_of", "watch_egress"]

log = logging.getLogger(__name__)

_EVERY: Final = 1.0


def owner_of(app: RuntimeSupervisorApplication, key: str, company_id: str) -> EgressOwner:
    """Whose namespace ``key`` is (store's thread): an execution workspace, a project
    workspace, or neither (a run's own, a realizer's command)."""
    found = app.copy_of("workspace", key)
    if found is not None:
        return EgressOwner(
            company_id=company_id,
            target_key=target_key("execution_workspace", key),
            execution_workspace_id=key,
            project_id=found.get("project_id"),
            project_workspace_id=found.get("project_workspace_id"),
        )
    found = app.copy_of("project_workspace", key)
    if found is not None:
        return EgressOwner(
            company_id=company_id,
            target_key=target_key("project_workspace", key),
            project_workspace_id=key,
            project_id=found.get("project_id"),
        )
    return EgressOwner(company_id=company_id)


def _project_rules(app: RuntimeSupervisorApplication, project_id: str) -> list[Any]:
    found = app.copy_of("project", project_id)
    rules = found.get("egress_allowlist") if found is not None else None
    return list(rules) if isinstance(rules, list) else []


def _write_policy(home: Path, folder: Path, owner: EgressOwner, rules: list[Any] | None) -> None:
    if owner.project_id is not None and rules is not None:
        write_json(project_rules_path(home, owner.project_id), {"rules": rules})
    policy: PolicyFile = {
        "companyId": owner.company_id,
        "target": owner.target_key,
        "executionWorkspaceId": owner.execution_workspace_id,
        "projectWorkspaceId": owner.project_workspace_id,
        "projectId": owner.project_id,
    }
    write_json(policy_path(folder), policy)


async def open_namespace(
    sup: Supervisor, folder: Path, key: str, company_id: str, owner: EgressOwner | None = None
) -> EgressOwner:
    """Tell the gate of ``key``'s namespace (files in ``folder``) whose it is (``owner``, else
    found from the copies) and its project's allowlist; return the owner."""

    def lookup() -> tuple[EgressOwner, list[Any] | None]:
        found = owner or owner_of(sup.app, key, company_id)
        rules = _project_rules(sup.app, found.project_id) if found.project_id else None
        return found, rules

    looked: tuple[EgressOwner, list[Any] | None] = await sup.store(lookup)
    found, rules = looked
    await asyncio.to_thread(_write_policy, sup.settings.home, folder, found, rules)
    return found


def hold(folder: Path, run_id: str, rules: Sequence[EgressRule]) -> None:
    """The run ``run_id`` holds the namespace now; its agent's ``rules`` apply (blocking)."""
    entries: list[RuleEntry] = [{"host": r.host, "port": r.port} for r in rules]
    write_json(run_path(folder), {"runId": run_id, "rules": entries})


def let_go(folder: Path, run_id: str) -> None:
    """The run ``run_id`` ended: its entries no longer apply (another run's stay)."""
    found = read_json(run_path(folder), RunFile)
    if found is not None and found.get("runId") == run_id:
        run_path(folder).unlink(missing_ok=True)


def _when(raw: Any) -> datetime:
    try:
        return datetime.fromisoformat(str(raw))
    except ValueError:
        return datetime.now(UTC)


def _periods(tally: TallyFile, running: str | None, gone: bool) -> list[EgressPeriod]:
    """The periods of a tally: all but the last ended; the last too when the namespace is gone
    or another run (or none) holds it now."""
    raw = [p for p in tally.get("periods") or [] if isinstance(p, dict)]
    periods: list[EgressPeriod] = []
    for index, item in enumerate(raw):
        run_id = item.get("runId") if isinstance(item.get("runId"), str) else None
        last = index == len(raw) - 1
        ended = gone or not last or run_id != running
        seen = tuple(
            Seen(
                host=str(s["host"]),
                port=int(s["port"]),
                verdict="allowed" if s["verdict"] == "allowed" else "denied",
                count=int(s["count"]),
                first_at=_when(s.get("firstAt")),
                last_at=_when(s.get("lastAt")),
            )
            for s in item.get("seen") or []
            if isinstance(s, dict) and s.get("verdict") in ("allowed", "denied")
        )
        periods.append(
            EgressPeriod(key=str(item.get("period")), run_id=run_id, ended=ended, seen=seen)
        )
    return periods


class _Watch:
    """What :func:`watch_egress` remembers between rounds."""

    def __init__(self) -> None:
        self.copies_seen = -1
        self.projects: dict[str, list[Any]] = {}
        self.tallies: dict[Path, tuple[float, str | None]] = {}


async def _projects(sup: Supervisor, state: _Watch) -> None:
    """Rewrite the allowlist file of every project whose copy changed."""
    app = sup.app

    def changed() -> tuple[int, dict[str, list[Any]]]:
        if app.copies_seen == state.copies_seen:
            return state.copies_seen, {}
        found = {key: _project_rules(app, key) for key in app.copies["project"]}
        return app.copies_seen, {k: v for k, v in found.items() if state.projects.get(k) != v}

    seen, projects = await sup.store(changed)
    for project_id, rules in projects.items():
        path = project_rules_path(sup.settings.home, project_id)
        await asyncio.to_thread(write_json, path, {"rules": rules})
        state.projects[project_id] = rules
    state.copies_seen = seen


async def _namespace(sup: Supervisor, state: _Watch, folder: Path) -> None:
    """Record what is new in one namespace's tally."""
    gone = not (NETNS_DIR / folder.name).exists()
    tally_file = tally_path(folder)
    run = read_json(run_path(folder), RunFile) or {}
    running = run.get("runId") if isinstance(run.get("runId"), str) else None
    try:
        mark = (tally_file.stat().st_mtime, running)
    except OSError:
        mark = None
    if mark is not None and (state.tallies.get(folder) != mark or gone):
        policy = read_json(policy_path(folder), PolicyFile) or {}
        tally = read_json(tally_file, TallyFile) or {}
        company = policy.get("companyId")
        if isinstance(company, str) and company:
            owner = EgressOwner(
                company_id=company,
                target_key=policy.get("target"),
                execution_workspace_id=policy.get("executionWorkspaceId"),
                project_workspace_id=policy.get("projectWorkspaceId"),
                project_id=policy.get("projectId"),
            )
            for period in _periods(tally, running, gone):
                with as_system(f"the egress gate of {folder.name} counted it", period.run_id):
                    await sup.store(sup.app.note_egress, folder.name, owner, period)
        state.tallies[folder] = mark
    if gone and not (folder / GATE_RECORD).exists():
        state.tallies.pop(folder, None)
        await asyncio.to_thread(shutil.rmtree, folder, True)


def _folders(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


async def watch_egress(sup: Supervisor) -> None:
    """Keep the project files and record the gates' counts until cancelled."""
    state = _Watch()
    root = sup.settings.home / "netns"
    while True:
        try:
            await _projects(sup, state)
            folders = await asyncio.to_thread(_folders, root)
            for folder in folders:
                await _namespace(sup, state, folder)
        except asyncio.CancelledError:
            raise
        except Exception:  # a round that failed is tried again at the next
            log.exception("egress watch round failed")
        await asyncio.sleep(_EVERY)
