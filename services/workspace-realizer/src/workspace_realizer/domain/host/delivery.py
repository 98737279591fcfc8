"""Delivery state (reference §3.4, DECISIONS 2): did the workspace's work reach the base?

Order, first match wins: ``merged_via_pr`` (terminal source issue and a merged pull request whose
head is the workspace's branch at its current HEAD), ``merged_by_ancestry`` (HEAD is an ancestor
of the base; a branch with no commits of its own too, with ``commitsAhead: 0``),
``merged_by_squash`` (merging would change nothing), ``unmerged`` (neither, and no pull request
state is unknown), ``unknown``. Computed on detail and close-readiness reads only, never for rows.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from workspace_realizer.adapters.ports import DeliveryFacts, PullRequestFacts, PullRequestPort

__all__ = [
    "DELIVERED",
    "DeliveryState",
    "PrEvidence",
    "derive_delivery",
    "evaluate_pull_requests",
    "github_repo",
    "pull_request_evidence",
    "pull_request_references",
]

log = logging.getLogger(__name__)

DeliveryState = Literal[
    "merged_via_pr", "merged_by_ancestry", "merged_by_squash", "unmerged", "unknown"
]
DELIVERED: Final = frozenset({"merged_via_pr", "merged_by_ancestry", "merged_by_squash"})

_REPO = re.compile(
    r"^(?:https://(?:www\.)?github\.com/|ssh://git@github\.com/|git@github\.com:)"
    r"(?P<owner>[A-Za-z0-9_.-]+)/(?P<repo>[A-Za-z0-9_.-]+?)(?:\.git)?/?$"
)
_PR_URL = re.compile(
    r"https://(?:www\.)?github\.com/(?P<owner>[A-Za-z0-9_.-]+)/(?P<repo>[A-Za-z0-9_.-]+)/pull/"
    r"(?P<number>\d+)"
)
_PR_SHORT = re.compile(
    r"(?<![\w/])(?P<owner>[A-Za-z0-9_.-]+)/(?P<repo>[A-Za-z0-9_.-]+)#(?P<number>\d+)"
)
MAX_WORK_PRODUCTS: Final = 100


@dataclass(frozen=True)
class PrEvidence:
    """What the issue's pull requests say: merged as this branch at this HEAD, or unknown."""

    merged: bool = False
    unknown: bool = False


def github_repo(url: str | None) -> tuple[str, str] | None:
    """``(owner, repo)`` lower-cased of a GitHub remote URL, or None for anything else."""
    match = _REPO.match((url or "").strip())
    return (match["owner"].lower(), match["repo"].lower()) if match else None


def pull_request_references(
    work_products: Iterable[Mapping[str, Any]], repo_url: str | None
) -> list[str]:
    """Canonical PR URLs named by the ``pull_request`` work products, for this repository only.

    Looks in ``url``, ``externalId``, ``title`` and the JSON of ``metadata`` of the latest 100.
    """
    repo = github_repo(repo_url)
    if repo is None:
        return []
    products = [p for p in work_products if p.get("type") == "pull_request"][-MAX_WORK_PRODUCTS:]
    found: list[str] = []
    for product in products:
        text = (
            " ".join(str(product.get(key) or "") for key in ("url", "externalId", "title"))
            + " "
            + json.dumps(product.get("metadata") or {}, sort_keys=True)
        )
        for pattern in (_PR_URL, _PR_SHORT):
            for match in pattern.finditer(text):
                if (match["owner"].lower(), match["repo"].lower()) != repo:
                    continue
                canonical = f"https://github.com/{repo[0]}/{repo[1]}/pull/{match['number']}"
                if canonical not in found:
                    found.append(canonical)
    return found


def evaluate_pull_requests(
    facts: Sequence[PullRequestFacts], *, branch: str | None, head_sha: str | None
) -> PrEvidence:
    """Merged evidence needs ``state == merged`` with the workspace's branch and current HEAD; a
    ``merged`` PR with a missing head, or an ``unknown`` one, makes the state unknown."""
    merged = unknown = False
    for fact in facts:
        if fact.state == "unknown":
            unknown = True
        elif fact.state == "merged":
            if not (fact.head_ref and fact.head_sha and head_sha and branch):
                unknown = True
            elif fact.head_ref == branch and fact.head_sha == head_sha:
                merged = True
    return PrEvidence(merged=merged, unknown=unknown and not merged)


async def pull_request_evidence(
    port: PullRequestPort,
    *,
    company_id: str,
    repo_url: str | None,
    work_products: Iterable[Mapping[str, Any]],
    source_terminal: bool,
    branch: str | None,
    head_sha: str | None,
) -> PrEvidence:
    """Ask the pull-request port about the issue's PRs (only once the source issue is terminal).

    A failing lookup makes the evidence unknown rather than failing the read.
    """
    references = pull_request_references(work_products, repo_url) if source_terminal else []
    if not references or repo_url is None:
        return PrEvidence()
    try:
        facts = await port.facts(company_id=company_id, repo_url=repo_url, references=references)
    except Exception:
        log.warning("pull-request lookup failed", exc_info=True, extra={"repo_url": repo_url})
        return PrEvidence(unknown=True)
    return evaluate_pull_requests(facts, branch=branch, head_sha=head_sha)


def derive_delivery(
    facts: DeliveryFacts | None, *, source_terminal: bool, pr: PrEvidence
) -> tuple[DeliveryState, int | None]:
    """The delivery state and ``commitsAhead`` (DECISIONS 2 order)."""
    ahead = facts.commits_ahead if facts is not None else None
    if source_terminal and pr.merged:
        return "merged_via_pr", ahead
    if facts is None:
        return "unknown", ahead
    if facts.merged_by_ancestry is True:
        return "merged_by_ancestry", ahead
    if facts.merged_by_squash is True:
        return "merged_by_squash", ahead
    if facts.merged_by_ancestry is False and facts.merged_by_squash is False and not pr.unknown:
        return "unmerged", ahead
    return "unknown", ahead
