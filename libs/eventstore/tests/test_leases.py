# mypy: disable-error-code="attr-defined"
"""Leases and fenced writes on every store kind (memory, SQLite, PostgreSQL).

Two replicas on one store are two applications opened on it (the in-memory store is one
process's: its "replicas" are two holders of the one application).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from eventsourcing.persistence import Tracking
from eventstore_backends import MemoryBackend, PostgresBackend, SqliteBackend
from eventstore_sample import GatewayApp

from eventstore import StoreSettings, build_application
from eventstore.fence import Fence, StaleFenceError, fenced

TTL_MS = 300
LEASE = "singleton"


class LeaseBehaviour:
    kind: str

    @pytest.fixture
    def first(self, settings: StoreSettings) -> Iterator[GatewayApp]:
        app = build_application(GatewayApp, service="gateway", settings=settings)
        yield app
        app.close()

    @pytest.fixture
    def second(self, settings: StoreSettings, first: GatewayApp) -> Iterator[GatewayApp]:
        if self.kind == "memory":
            yield first
            return
        app = build_application(GatewayApp, service="gateway", settings=settings)
        yield app
        app.close()

    def test_one_holder_at_a_time_and_a_new_token_on_takeover(
        self, first: GatewayApp, second: GatewayApp
    ) -> None:
        assert first.lease_table.acquire_lease(LEASE, "a", TTL_MS) == 1
        assert second.lease_table.acquire_lease(LEASE, "b", TTL_MS) is None
        assert first.lease_table.renew_lease(LEASE, "a", 1, TTL_MS)
        assert not second.lease_table.renew_lease(LEASE, "b", 1, TTL_MS)  # not its lease
        time.sleep(TTL_MS / 1000 + 0.1)
        assert not first.lease_table.renew_lease(LEASE, "a", 1, TTL_MS)  # ran out: gone
        assert second.lease_table.acquire_lease(LEASE, "b", TTL_MS) == 2
        [record] = first.lease_table.leases()
        assert (record.name, record.holder, record.token, record.live) == (LEASE, "b", 2, True)
        assert 0 < record.expires_in_ms <= TTL_MS

    def test_a_released_lease_is_taken_at_once(self, first: GatewayApp, second: GatewayApp) -> None:
        token = first.lease_table.acquire_lease(LEASE, "a", 60_000)
        assert token is not None
        assert not first.lease_table.release_lease(LEASE, "a", token + 1)  # not that grant
        assert first.lease_table.release_lease(LEASE, "a", token)
        assert second.lease_table.acquire_lease(LEASE, "b", 60_000) == token + 1
        assert not first.lease_table.leases()[0].expires_in_ms <= 0

    def test_a_gone_holder_is_taken_over_only_with_the_token_seen(
        self, first: GatewayApp, second: GatewayApp
    ) -> None:
        assert first.lease_table.acquire_lease(LEASE, "a", 60_000) == 1  # then "a" died
        assert second.lease_table.take_over_lease(LEASE, "b", 60_000, from_token=1) == 2
        assert first.lease_table.take_over_lease(LEASE, "c", 60_000, from_token=1) is None
        assert not first.lease_table.renew_lease(LEASE, "a", 1, 60_000)
        [record] = first.lease_table.leases()
        assert (record.holder, record.token) == ("b", 2)

    def test_the_holder_writes_under_its_fence(self, first: GatewayApp) -> None:
        token = first.lease_table.acquire_lease(LEASE, "a", 60_000)
        assert token is not None
        with fenced(Fence(LEASE, "a", token)):
            company_id = first.create_company("Acme", "ACME")
            first.recorder.insert_tracking(Tracking("upstream", 1))
        assert first.repository.get(company_id).name == "Acme"
        assert first.position("upstream") == 1

    def test_a_holder_whose_lease_moved_on_cannot_write_anything(
        self, first: GatewayApp, second: GatewayApp, caplog: pytest.LogCaptureFixture
    ) -> None:
        company_id = first.create_company("Acme", "ACME")  # unfenced: any replica may
        assert first.lease_table.acquire_lease(LEASE, "a", TTL_MS) == 1
        time.sleep(TTL_MS / 1000 + 0.1)  # "a" paused past its time to live
        assert second.lease_table.acquire_lease(LEASE, "b", 60_000) == 2
        stale = Fence(LEASE, "a", 1)
        before = first.last_notification_id()
        with fenced(stale), pytest.raises(StaleFenceError, match="now held by b with token 2"):
            first.rename(company_id, "Stale")
        with fenced(stale), pytest.raises(StaleFenceError):
            first.recorder.insert_tracking(Tracking("upstream", 1))
        with fenced(stale), pytest.raises(StaleFenceError):
            first.save_with_tracking(tracking=Tracking("upstream", 2))
        assert first.last_notification_id() == before
        assert first.position("upstream") is None
        assert second.repository.get(company_id).name == "Acme"
        assert any(r.message == "fenced write refused" for r in caplog.records)
        with fenced(Fence(LEASE, "b", 2)):
            second.rename(company_id, "Fresh")
        assert second.repository.get(company_id).name == "Fresh"

    def test_a_lapsed_lease_nobody_took_refuses_its_old_holder_too(self, first: GatewayApp) -> None:
        company_id = first.create_company("Acme", "ACME")
        assert first.lease_table.acquire_lease(LEASE, "a", TTL_MS) == 1
        time.sleep(TTL_MS / 1000 + 0.1)
        with fenced(Fence(LEASE, "a", 1)), pytest.raises(StaleFenceError, match="ran out"):
            first.rename(company_id, "Late")
        with (
            fenced(Fence("never-granted", "a", 1)),
            pytest.raises(StaleFenceError, match="never granted"),
        ):
            first.rename(company_id, "Late")

    def test_the_fence_follows_the_writing_context_only(self, first: GatewayApp) -> None:
        # A fenced context does not fence another thread's (a request handler's) writes.
        company_id = first.create_company("Acme", "ACME")
        done: list[str] = []

        def request_handler() -> None:
            first.rename(company_id, "From a request")
            done.append("saved")

        with fenced(Fence(LEASE, "nobody", 7)):
            worker = threading.Thread(target=request_handler)
            worker.start()
            worker.join()
        assert done == ["saved"]

    def test_fenced_and_unfenced_writers_on_one_store_do_not_trip_each_other(
        self, first: GatewayApp, second: GatewayApp
    ) -> None:
        token = first.lease_table.acquire_lease(LEASE, "a", 60_000)
        assert token is not None
        errors: list[BaseException] = []

        def fenced_writer() -> None:
            try:
                with fenced(Fence(LEASE, "a", token)):
                    for n in range(40):
                        first.create_company(f"Fenced {n}", f"F{n}")
            except BaseException as error:
                errors.append(error)

        def request_writer() -> None:
            try:
                for n in range(40):
                    second.create_company(f"Request {n}", f"R{n}")
            except BaseException as error:
                errors.append(error)

        threads = [threading.Thread(target=fenced_writer), threading.Thread(target=request_writer)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert first.last_notification_id() >= 80

    def test_many_contenders_one_winner(self, first: GatewayApp, second: GatewayApp) -> None:
        tokens: list[int | None] = []
        apps = [first, second] * 4

        def contend(index: int) -> None:
            tokens.append(apps[index].lease_table.acquire_lease(LEASE, f"h{index}", 60_000))

        threads = [threading.Thread(target=contend, args=(i,)) for i in range(len(apps))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(tokens, key=lambda t: t or 0) == [None] * 7 + [1]


class TestMemoryLeases(MemoryBackend, LeaseBehaviour):
    pass


class TestSqliteLeases(SqliteBackend, LeaseBehaviour):
    pass


@pytest.mark.integration
class TestPostgresLeases(PostgresBackend, LeaseBehaviour):
    pass
