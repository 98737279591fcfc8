"""Delivery state (reference §3.4 and case 60, DECISIONS 2)."""

from __future__ import annotations

from typing import Any

from workspace_realizer.adapters.ports import DeliveryFacts, PullRequestFacts
from workspace_realizer.domain.host.delivery import (
    PrEvidence,
    derive_delivery,
    evaluate_pull_requests,
    github_repo,
    pull_request_evidence,
    pull_request_references,
)

REPO = "https://github.com/acme/api.git"


def facts(ancestry: bool | None, squash: bool | None, ahead: int | None = 2) -> DeliveryFacts:
    return DeliveryFacts(
        merged_by_ancestry=ancestry, merged_by_squash=squash, commits_ahead=ahead, head_sha="h1"
    )


def test_the_order_of_delivery_states() -> None:
    merged_pr = PrEvidence(merged=True)
    # A merged PR counts only once the source issue is terminal.
    assert derive_delivery(facts(False, False), source_terminal=True, pr=merged_pr) == (
        "merged_via_pr",
        2,
    )
    assert derive_delivery(facts(False, False), source_terminal=False, pr=merged_pr) == (
        "unmerged",
        2,
    )
    # Ancestry before squash; a branch with no commits of its own is merged by ancestry, with 0.
    assert derive_delivery(facts(True, True, 0), source_terminal=False, pr=PrEvidence()) == (
        "merged_by_ancestry",
        0,
    )
    assert derive_delivery(facts(False, True), source_terminal=False, pr=PrEvidence()) == (
        "merged_by_squash",
        2,
    )
    # Unmerged only when every check answered and no PR state is unknown.
    assert derive_delivery(
        facts(False, False), source_terminal=True, pr=PrEvidence(unknown=True)
    ) == ("unknown", 2)
    assert derive_delivery(facts(False, None), source_terminal=False, pr=PrEvidence()) == (
        "unknown",
        2,
    )
    assert derive_delivery(None, source_terminal=True, pr=PrEvidence()) == ("unknown", None)


def test_merged_evidence_needs_the_branch_and_the_current_head() -> None:
    def pr(**kw: Any) -> PullRequestFacts:
        return PullRequestFacts(
            url="u", **({"state": "merged", "head_ref": "b", "head_sha": "h1"} | kw)
        )

    assert evaluate_pull_requests([pr()], branch="b", head_sha="h1") == PrEvidence(merged=True)
    # A merged PR whose head differs from the workspace HEAD does not count.
    assert evaluate_pull_requests([pr(head_sha="h0")], branch="b", head_sha="h1") == PrEvidence()
    assert evaluate_pull_requests([pr(head_ref="other")], branch="b", head_sha="h1") == PrEvidence()
    # Missing facts, or an unknown state, make it unknown.
    assert evaluate_pull_requests([pr(head_sha=None)], branch="b", head_sha="h1") == PrEvidence(
        unknown=True
    )
    assert evaluate_pull_requests([pr(state="unknown")], branch="b", head_sha="h1") == PrEvidence(
        unknown=True
    )
    assert evaluate_pull_requests([pr(state="open")], branch="b", head_sha="h1") == PrEvidence()


def test_pull_request_references_of_this_repository_only() -> None:
    products = [
        {"type": "pull_request", "url": "https://github.com/Acme/API/pull/12"},
        {"type": "pull_request", "externalId": "acme/api#13", "title": "see acme/api#12"},
        {
            "type": "pull_request",
            "metadata": {"links": ["https://www.github.com/acme/api/pull/14"]},
        },
        {"type": "pull_request", "url": "https://github.com/other/api/pull/1"},
        {"type": "branch", "url": "https://github.com/acme/api/pull/99"},
    ]
    assert pull_request_references(products, REPO) == [
        "https://github.com/acme/api/pull/12",
        "https://github.com/acme/api/pull/13",
        "https://github.com/acme/api/pull/14",
    ]
    assert pull_request_references(products, "/srv/repo") == []
    assert github_repo("git@github.com:Acme/api.git") == ("acme", "api")
    assert github_repo("ssh://git@github.com/acme/api") == ("acme", "api")
    assert github_repo("https://gitlab.com/acme/api") is None


class Port:
    def __init__(self, answer: list[PullRequestFacts] | Exception) -> None:
        self.answer, self.asked = answer, 0

    async def facts(
        self, *, company_id: str, repo_url: str, references: list[str]
    ) -> list[PullRequestFacts]:
        self.asked += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


async def test_the_port_is_asked_only_for_a_terminal_issue_with_references() -> None:
    merged = PullRequestFacts(url="u", state="merged", head_ref="b", head_sha="h1")
    products = [{"type": "pull_request", "url": "https://github.com/acme/api/pull/1"}]
    port = Port([merged])
    common: dict[str, Any] = {"company_id": "c", "repo_url": REPO, "branch": "b", "head_sha": "h1"}
    assert (
        await pull_request_evidence(port, work_products=products, source_terminal=False, **common)
        == PrEvidence()
    )
    assert port.asked == 0
    assert await pull_request_evidence(
        port, work_products=products, source_terminal=True, **common
    ) == PrEvidence(merged=True)
    assert (
        await pull_request_evidence(port, work_products=[], source_terminal=True, **common)
        == PrEvidence()
    )
    assert port.asked == 1
    # A failing lookup is unknown, not an error.
    broken = Port(RuntimeError("rate limited"))
    assert await pull_request_evidence(
        broken, work_products=products, source_terminal=True, **common
    ) == PrEvidence(unknown=True)
