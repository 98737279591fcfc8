"""Reference cases 6 and 7 (ours): one resolution and one audit event per run or operation and
provider; the memo's single flight, TTL, bound and failure handling."""

from __future__ import annotations

import asyncio

import pytest
from resolution_fakes import AuditLog, FakeSecrets, make_resolver, unavailable

from git_credentials.domain.chain import ResolvedToken
from git_credentials.usecases.memo import ResolutionMemo
from git_credentials.usecases.resolver import CredentialResolver, ResolutionRecord

TOKEN = ResolvedToken("t", "company_secret", "GH_TOKEN", "github")


class Counter:
    """A resolve function that counts its calls (and can wait on a gate or fail)."""

    def __init__(self, result: ResolvedToken | None = TOKEN) -> None:
        self.calls = 0
        self.result = result
        self.gate: asyncio.Event | None = None
        self.error: Exception | None = None

    async def __call__(self) -> ResolvedToken | None:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.error is not None:
            raise self.error
        return self.result


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_case6_three_remotes_in_one_run_cause_one_resolution() -> None:
    secrets = FakeSecrets({("c1", "GH_TOKEN"): "gh"})
    audit = AuditLog()
    resolver = make_resolver(secrets, audit)
    urls = ["https://github.com/x/r.git", "https://github.com/x/r.git", "https://github.com/x/o"]

    answers = [
        await resolver.invocation(company_id="c1", remote_url=u, run_id="run-1", operation_id=None)
        for u in urls
    ]

    assert all(a.credential is not None for a in answers)
    assert secrets.names() == ["GITHUB_TOKEN", "GH_TOKEN"]
    assert len(audit.records) == 1


async def test_case6_concurrent_callers_share_one_in_flight_resolution() -> None:
    secrets = FakeSecrets({("c1", "GITHUB_TOKEN"): "gh"})
    secrets.delay = 0.02
    audit = AuditLog()
    resolver = make_resolver(secrets, audit)

    answers = await asyncio.gather(
        *(
            resolver.invocation(
                company_id="c1",
                remote_url=f"https://github.com/x/r{i}.git",
                run_id="run-1",
                operation_id=None,
            )
            for i in range(10)
        )
    )

    assert {a.credential.env["CLIPYARD_GIT_TOKEN"] for a in answers if a.credential} == {"gh"}
    assert secrets.names() == ["GITHUB_TOKEN"]
    assert len(audit.records) == 1


async def test_case6_another_run_resolves_again_and_sees_a_rotation() -> None:
    secrets = FakeSecrets({("c1", "GITHUB_TOKEN"): "v1"})
    audit = AuditLog()
    resolver = make_resolver(secrets, audit)
    url = "https://github.com/x/r.git"

    first = await resolver.token_for(
        company_id="c1", provider="github", remote_host="github.com", run_id="r1", operation_id=None
    )
    secrets.secrets[("c1", "GITHUB_TOKEN")] = "v2"
    same_run = await resolver.invocation(
        company_id="c1", remote_url=url, run_id="r1", operation_id=None
    )
    next_run = await resolver.invocation(
        company_id="c1", remote_url=url, run_id="r2", operation_id=None
    )

    assert first is not None
    assert first.token == "v1"
    assert same_run.credential is not None
    assert same_run.credential.env["CLIPYARD_GIT_TOKEN"] == "v1"
    assert next_run.credential is not None
    assert next_run.credential.env["CLIPYARD_GIT_TOKEN"] == "v2"
    assert len(audit.records) == 2


async def test_case6_operation_id_memoizes_when_no_run_and_reads_share_a_short_window() -> None:
    secrets = FakeSecrets({("c1", "GITHUB_TOKEN"): "gh"})
    audit = AuditLog()
    now = [0.0]
    resolver = make_resolver(secrets, audit, memo=ResolutionMemo(clock=lambda: now[0]))
    url = "https://github.com/x/r.git"

    for _ in range(2):
        await resolver.invocation(company_id="c1", remote_url=url, run_id=None, operation_id="op")
    # Reads (neither run nor operation): one resolution per five minutes, however many reads.
    for _ in range(3):
        await resolver.invocation(company_id="c1", remote_url=url, run_id=None, operation_id=None)
    now[0] = 299.0
    await resolver.invocation(company_id="c1", remote_url=url, run_id=None, operation_id=None)
    now[0] = 300.0
    await resolver.invocation(company_id="c1", remote_url=url, run_id=None, operation_id=None)

    assert secrets.names() == ["GITHUB_TOKEN"] * 3
    assert len(audit.records) == 3
    assert [r.operation_id for r in audit.records] == ["op", None, None]


async def test_deleting_a_secret_forgets_the_companys_resolutions() -> None:
    secrets = FakeSecrets({("c1", "GITHUB_TOKEN"): "gh", ("c2", "GITHUB_TOKEN"): "other"})
    memo = ResolutionMemo()
    resolver = make_resolver(secrets, AuditLog(), memo=memo)
    url = "https://github.com/x/r.git"
    for company in ("c1", "c2"):
        await resolver.invocation(company_id=company, remote_url=url, run_id="r", operation_id=None)
    assert memo.forget("c1") == 1
    del secrets.secrets[("c1", "GITHUB_TOKEN")]
    gone = await resolver.invocation(company_id="c1", remote_url=url, run_id="r", operation_id=None)
    kept = await resolver.invocation(company_id="c2", remote_url=url, run_id="r", operation_id=None)
    assert gone.credential is None
    assert kept.credential is not None


async def test_case6_no_token_is_memoized_too_and_audits_nothing() -> None:
    secrets = FakeSecrets()
    audit = AuditLog()
    resolver = make_resolver(secrets, audit)
    for _ in range(3):
        answer = await resolver.invocation(
            company_id="c1", remote_url="https://github.com/x/r", run_id="r", operation_id=None
        )
        assert answer.provider == "github"
        assert answer.credential is None
    assert len(secrets.asked) == 4
    assert audit.records == []


async def test_case7_ours_the_audit_record_carries_the_context() -> None:
    secrets = FakeSecrets({("c1", "GITHUB_TOKEN"): unavailable(), ("c1", "GH_TOKEN"): "ghp_canary"})
    audit = AuditLog()
    resolver = make_resolver(secrets, audit, server_env={"GITLAB_TOKEN": "glpat_canary"})

    await resolver.invocation(
        company_id="c1",
        remote_url="https://www.github.com/x/r",
        run_id="run-9",
        operation_id="op-3",
    )
    await resolver.invocation(
        company_id="c1", remote_url="https://gitlab.com/g/r", run_id=None, operation_id="op-4"
    )

    assert audit.records == [
        ResolutionRecord(
            "c1", "github", "www.github.com", "GH_TOKEN", "company_secret", "run-9", "op-3"
        ),
        ResolutionRecord("c1", "gitlab", "gitlab.com", None, "server_env", None, "op-4"),
    ]
    assert "canary" not in repr(audit.records)


async def test_memo_run_and_operation_ids_are_distinct_namespaces() -> None:
    memo = ResolutionMemo()
    resolve = Counter()
    await memo.get(
        company_id="c", run_id="x", operation_id=None, provider="github", resolve=resolve
    )
    await memo.get(
        company_id="c", run_id=None, operation_id="x", provider="github", resolve=resolve
    )
    await memo.get(
        company_id="c", run_id="x", operation_id=None, provider="gitlab", resolve=resolve
    )
    await memo.get(
        company_id="d", run_id="x", operation_id=None, provider="github", resolve=resolve
    )
    assert resolve.calls == 4


async def test_memo_reports_who_performed_the_resolution() -> None:
    memo = ResolutionMemo()
    resolve = Counter()
    resolve.gate = asyncio.Event()
    calls = [
        memo.get(company_id="c", run_id="r", operation_id=None, provider="github", resolve=resolve)
        for _ in range(3)
    ]
    tasks = [asyncio.ensure_future(c) for c in calls]
    await asyncio.sleep(0)
    resolve.gate.set()
    results = await asyncio.gather(*tasks)
    assert results == [(TOKEN, True), (TOKEN, False), (TOKEN, False)]
    assert resolve.calls == 1


async def test_memo_entries_expire_after_the_ttl() -> None:
    clock = Clock()
    memo = ResolutionMemo(ttl_seconds=60, clock=clock)
    resolve = Counter()

    async def get() -> tuple[ResolvedToken | None, bool]:
        return await memo.get(
            company_id="c", run_id="r", operation_id=None, provider="github", resolve=resolve
        )

    assert await get() == (TOKEN, True)
    clock.now += 59
    assert await get() == (TOKEN, False)
    clock.now += 1
    assert await get() == (TOKEN, True)
    assert resolve.calls == 2


async def test_memo_default_ttl_is_six_hours() -> None:
    clock = Clock()
    memo = ResolutionMemo(clock=clock)
    resolve = Counter()
    for advance in (0, 6 * 3600 - 1, 1):
        clock.now += advance
        await memo.get(
            company_id="c", run_id="r", operation_id=None, provider="github", resolve=resolve
        )
    assert resolve.calls == 2


async def test_memo_is_bounded_and_evicts_the_oldest() -> None:
    memo = ResolutionMemo(max_entries=3)
    resolve = Counter()
    for run in ("r1", "r2", "r3", "r4"):
        await memo.get(
            company_id="c", run_id=run, operation_id=None, provider="github", resolve=resolve
        )
    assert len(memo) == 3
    await memo.get(
        company_id="c", run_id="r4", operation_id=None, provider="github", resolve=resolve
    )
    assert resolve.calls == 4
    await memo.get(
        company_id="c", run_id="r1", operation_id=None, provider="github", resolve=resolve
    )
    assert resolve.calls == 5


async def test_memo_does_not_cache_failures_and_shares_them_with_waiters() -> None:
    memo = ResolutionMemo()
    resolve = Counter()
    resolve.gate = asyncio.Event()
    resolve.error = RuntimeError("store down")
    tasks = [
        asyncio.ensure_future(
            memo.get(
                company_id="c", run_id="r", operation_id=None, provider="github", resolve=resolve
            )
        )
        for _ in range(2)
    ]
    await asyncio.sleep(0)
    resolve.gate.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert [type(r) for r in results] == [RuntimeError, RuntimeError]
    assert len(memo) == 0

    resolve.error = None
    resolve.gate = None
    got = await memo.get(
        company_id="c", run_id="r", operation_id=None, provider="github", resolve=resolve
    )
    assert got == (TOKEN, True)
    assert resolve.calls == 2


async def test_memo_a_cancelled_caller_does_not_cancel_the_shared_resolution() -> None:
    memo = ResolutionMemo()
    resolve = Counter()
    resolve.gate = asyncio.Event()
    first = asyncio.ensure_future(
        memo.get(company_id="c", run_id="r", operation_id=None, provider="github", resolve=resolve)
    )
    second = asyncio.ensure_future(
        memo.get(company_id="c", run_id="r", operation_id=None, provider="github", resolve=resolve)
    )
    await asyncio.sleep(0)
    first.cancel()
    resolve.gate.set()
    assert await second == (TOKEN, False)
    with pytest.raises(asyncio.CancelledError):
        await first
    assert resolve.calls == 1


async def test_audit_failure_is_not_cached_and_no_token_is_handed_out() -> None:
    secrets = FakeSecrets({("c1", "GITHUB_TOKEN"): "gh"})
    attempts: list[ResolutionRecord] = []

    async def flaky_audit(record: ResolutionRecord) -> None:
        attempts.append(record)
        if len(attempts) == 1:
            raise RuntimeError("event store down")

    resolver = CredentialResolver(
        lookup=secrets, server_env={}, gitlab_hosts=(), ca_cert_path=None, on_resolved=flaky_audit
    )
    url = "https://github.com/x/r.git"

    with pytest.raises(RuntimeError, match="event store down"):
        await resolver.invocation(company_id="c1", remote_url=url, run_id="r", operation_id=None)
    answer = await resolver.invocation(
        company_id="c1", remote_url=url, run_id="r", operation_id=None
    )

    assert answer.credential is not None
    assert len(attempts) == 2


def test_memo_rejects_nonsense_bounds() -> None:
    with pytest.raises(ValueError, match="positive"):
        ResolutionMemo(ttl_seconds=0)
    with pytest.raises(ValueError, match="positive"):
        ResolutionMemo(max_entries=0)
