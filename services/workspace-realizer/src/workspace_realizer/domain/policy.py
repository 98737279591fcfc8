"""Execution-workspace policy: mode resolution (reference §5.1), branch names (reference §5.3, DECISIONS 5)
and where worktrees live (DECISIONS 5). Pure functions over plain data."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, Literal

from workspace_realizer.domain.errors import InvalidInputError

__all__ = [
    "DEFAULT_BRANCH_TEMPLATE",
    "FALLBACK_BRANCH",
    "MAX_BRANCH_LENGTH",
    "Policy",
    "Resolution",
    "Strategy",
    "check_policy_strategy",
    "check_worktree_parent",
    "parse_policy",
    "parse_strategy",
    "render_branch",
    "resolve_mode",
    "sanitize_branch",
    "slugify",
    "worktree_parent",
]

PersistedMode = Literal[
    "shared_workspace", "isolated_workspace", "operator_branch", "adapter_managed"
]
StrategyType = Literal["project_primary", "git_worktree", "adapter_managed", "cloud_sandbox"]

DEFAULT_BRANCH_TEMPLATE: Final = "{{issue.identifier}}-{{slug}}"
FALLBACK_BRANCH: Final = "clipyard-work"
MAX_BRANCH_LENGTH: Final = 120

_DEFAULT_MODES: Final[dict[str, PersistedMode]] = {
    "shared_workspace": "shared_workspace",
    "project_primary": "shared_workspace",
    "isolated_workspace": "isolated_workspace",
    "isolated": "isolated_workspace",
    "operator_branch": "operator_branch",
    "adapter_default": "adapter_managed",
}
_ISSUE_MODES: Final[dict[str, PersistedMode]] = {
    "shared_workspace": "shared_workspace",
    "isolated_workspace": "isolated_workspace",
    "operator_branch": "operator_branch",
    "agent_default": "adapter_managed",
}


@dataclass(frozen=True)
class Strategy:
    """How a checkout is produced (reference §1.6)."""

    type: StrategyType = "git_worktree"
    base_ref: str | None = None
    branch_template: str | None = None
    worktree_parent_dir: str | None = None
    provision_command: str | None = None
    runtime_provision_command: str | None = None
    teardown_command: str | None = None


@dataclass(frozen=True)
class Policy:
    """A project's execution-workspace policy (reference §1.3)."""

    enabled: bool = True
    default_mode: str = "shared_workspace"
    allow_issue_override: bool = True
    default_project_workspace_id: str | None = None
    strategy: Strategy | None = None


@dataclass(frozen=True)
class Resolution:
    """The outcome of mode resolution for one realization."""

    mode: PersistedMode | Literal["reuse_existing"]
    strategy: Strategy
    reuse_workspace_id: str | None = None
    warnings: tuple[str, ...] = ()


def _text(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    return value.strip() or None if isinstance(value, str) else None


def parse_strategy(raw: Mapping[str, Any] | None) -> Strategy | None:
    """A strategy from its stored (camelCase) form; None when absent."""
    if not raw:
        return None
    kind: StrategyType = raw.get("type") or "git_worktree"
    return Strategy(
        type=kind,
        base_ref=_text(raw, "baseRef"),
        branch_template=_text(raw, "branchTemplate"),
        worktree_parent_dir=_text(raw, "worktreeParentDir"),
        provision_command=_text(raw, "provisionCommand"),
        runtime_provision_command=_text(raw, "runtimeProvisionCommand"),
        teardown_command=_text(raw, "teardownCommand"),
    )


def parse_policy(raw: Mapping[str, Any] | None) -> Policy:
    """A policy from its stored (camelCase) form; the defaults when absent."""
    raw = raw or {}
    return Policy(
        enabled=bool(raw.get("enabled", True)),
        default_mode=str(raw.get("defaultMode") or "shared_workspace"),
        allow_issue_override=bool(raw.get("allowIssueOverride", True)),
        default_project_workspace_id=raw.get("defaultProjectWorkspaceId"),
        strategy=parse_strategy(raw.get("workspaceStrategy")),
    )


def resolve_mode(
    policy: Policy,
    *,
    requested: str | None,
    settings: Mapping[str, Any] | None,
    requested_workspace_id: str | None = None,
) -> Resolution:
    """Decide how to realize an issue's workspace (reference §5.1).

    Args:
        policy: The project's policy.
        requested: The mode asked for by this request (``None``: the issue's setting).
        settings: The issue's ``executionWorkspaceSettings``.
        requested_workspace_id: The workspace to bind for ``reuse_existing``.

    Returns:
        The mode to persist, the strategy, and the workspace to reuse when pinned.

    Raises:
        InvalidInputError: ``reuse_existing`` without a workspace id, or an unknown mode.
    """
    settings = settings or {}
    wanted = requested or settings.get("mode") or "inherit"
    issue_strategy = parse_strategy(settings.get("workspaceStrategy"))
    if wanted == "reuse_existing":
        pinned = requested_workspace_id or settings.get("executionWorkspaceId")
        if not pinned:
            raise InvalidInputError(
                "Mode reuse_existing needs executionWorkspaceId: the workspace to reuse.",
                field="executionWorkspaceId",
            )
        return Resolution(mode="reuse_existing", strategy=Strategy(), reuse_workspace_id=pinned)
    if wanted != "inherit" and wanted not in _ISSUE_MODES:
        raise InvalidInputError(f"Unknown workspace mode {wanted!r}.", field="mode")
    warnings: list[str] = []
    override = wanted != "inherit" and (not policy.enabled or policy.allow_issue_override)
    if wanted != "inherit" and not override:
        warnings.append(
            f"The project does not allow issues to choose their workspace mode; "
            f"{wanted} was ignored."
        )
    if override:
        mode = _ISSUE_MODES[wanted]
    elif policy.enabled:
        mode = _DEFAULT_MODES.get(policy.default_mode, "shared_workspace")
    else:
        mode = "shared_workspace"
    return Resolution(
        mode=mode, strategy=_strategy_for(mode, issue_strategy, policy), warnings=tuple(warnings)
    )


def _strategy_for(mode: PersistedMode, issue: Strategy | None, policy: Policy) -> Strategy:
    if mode == "isolated_workspace":
        # An isolated workspace is a worktree unless an adapter or sandbox provides it: a
        # ``project_primary`` strategy (the policy's default type) would silently share the
        # primary checkout (Paperclip #6275).
        chosen = issue or policy.strategy or Strategy(type="git_worktree")
        return chosen if chosen.type != "project_primary" else replace(chosen, type="git_worktree")
    if mode == "adapter_managed":
        return Strategy(type="adapter_managed")
    return Strategy(type="project_primary")


def slugify(text: str) -> str:
    """Lower-case ``text``; runs outside ``[a-z0-9_-]`` become ``-``; trim ``-`` and ``_``."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", text.lower())
    return re.sub(r"-{2,}", "-", slug).strip("-_")


def render_branch(template: str | None, values: Mapping[str, str]) -> str:
    """Render a branch template, then sanitize it (unknown variables render empty).

    ``slug`` defaults to the title's slug, else the identifier's, else ``issue``.
    """
    context = dict(values)
    if "slug" not in context:
        title, ident = context.get("issue.title", ""), context.get("issue.identifier", "")
        context["slug"] = slugify(title) or slugify(ident or context.get("issue.id", "")) or "issue"
    rendered = re.sub(
        r"\{\{\s*([A-Za-z0-9_.]+)\s*\}\}",
        lambda match: context.get(match.group(1), ""),
        template or DEFAULT_BRANCH_TEMPLATE,
    )
    return sanitize_branch(rendered)


def sanitize_branch(name: str) -> str:
    """A git-safe branch name of at most 120 characters; ``clipyard-work`` when nothing is left."""
    name = re.sub(r"[^A-Za-z0-9._/-]+", "-", name.strip())
    name = re.sub(r"-{2,}", "-", name)
    name = re.sub(r"/{2,}", "/", re.sub(r"\.{2,}", ".", name))
    parts = [part.lstrip(".-").removesuffix(".lock") for part in name.split("/")]
    name = "/".join(part for part in parts if part)
    name = name.strip("-/.")[:MAX_BRANCH_LENGTH].strip("-/.")
    return name or FALLBACK_BRANCH


def worktree_parent(strategy: Strategy, *, home: Path, project_workspace_id: str) -> Path:
    """Where a project workspace's worktrees go (DECISIONS 5).

    ``worktreeParentDir`` absolute or ``~``-prefixed is used as is; relative, it lies under
    ``$CLIPYARD_HOME``; unset, ``$CLIPYARD_HOME/worktrees/<projectWorkspaceId>``.
    """
    configured = strategy.worktree_parent_dir
    if not configured:
        return home / "worktrees" / project_workspace_id
    path = _expand(configured)
    return path if path.is_absolute() else home / path


def _expand(configured: str) -> Path:
    try:
        return Path(configured).expanduser()
    except RuntimeError as exc:  # ``~nosuchuser/x``: no such home directory
        raise InvalidInputError(
            f"worktreeParentDir {configured!r} names an unknown user's home directory; give an "
            "absolute path, a path relative to CLIPYARD_HOME, or ~/...",
            field="workspaceStrategy.worktreeParentDir",
        ) from exc


def check_policy_strategy(raw: Mapping[str, Any] | None) -> None:
    """Refuse a workspace strategy whose ``worktreeParentDir`` cannot be resolved.

    Raises:
        InvalidInputError: Naming the field.
    """
    strategy = parse_strategy(raw)
    if strategy is not None and strategy.worktree_parent_dir:
        _expand(strategy.worktree_parent_dir)


def check_worktree_parent(parent: Path, checkouts: list[Path]) -> None:
    """Refuse a worktree parent that lies inside (or is) a project checkout.

    Raises:
        InvalidInputError: Naming the checkout and the setting to change.
    """
    resolved = Path(parent).resolve(strict=False)
    for checkout in checkouts:
        root = Path(checkout).resolve(strict=False)
        if resolved == root or root in resolved.parents:
            raise InvalidInputError(
                f"worktreeParentDir {str(parent)!r} lies inside the project checkout "
                f"{str(root)!r}; choose a directory outside every repository.",
                field="workspaceStrategy.worktreeParentDir",
            )
