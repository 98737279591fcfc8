"""200 mixed writes spread over both gateways while api-gateway-2, workspace-realizer-2 (a replica
of its company-wide part: projects and issues), the lease holder of heartbeat-controller, the
lease holder of git-credentials and NATS node 2 are SIGKILLed in turn:
every acknowledged write is there (read through both gateways), no write is there twice,
``clipyard replay <service> --verify`` finds no difference on any replica, and WS_EVENTS holds
every public event of every store exactly once, compared by notification id (issue 17). Each
replica's verification is checked to have been asked on its own subject (``$SRV.STATS``).

A write is acknowledged when it answered 2xx. It is sent again only when its first answer proves
nothing was saved: a connection to its gateway that could not be opened (sent to the other one
then), a 503 no-responders ("is not answering": nobody received it), or a 409/503 whose message
says "nothing was saved". Any other failure (a dropped connection, "look at the result before
retrying", a timeout) leaves its outcome unknown: it is recorded as not acknowledged and never
retried, and may be there once or not at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import signal
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec
import psycopg
import pytest
from psycopg import sql

from api_gateway.application import GatewayApplication
from api_gateway.publishing import to_contract as gateway_events
from clipyard_cli.replay import run_replay
from contracts.subjects import EVENT_STREAM, SERVICE_NAMES, SERVICES
from eventstore import OutboxSkips, StoreSettings, build_application
from eventstore.publication import UnpublishableEventError, build_message
from eventstore.settings import postgres_schema
from eventstore.streamcheck import ORIGIN_HEADER
from git_credentials.application import GitCredentialsApplication
from git_credentials.publishing import to_contract as credentials_events
from heartbeat_controller.application import HeartbeatControllerApplication
from heartbeat_controller.publishing import to_contract as controller_events
from natsbus.instances import INSTANCE_METADATA, gather_answers
from natsbus.jetstream import MSG_ID_HEADER
from runtime_supervisor.application import RuntimeSupervisorApplication
from runtime_supervisor.publishing import to_contract as supervisor_events
from servicekit.outbox import published_contract
from tests.cluster.clusterutil import Cluster, bearer, board_key, new_company, retrying, until
from tests.e2e.agents import agent_config
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.publishing import to_contract as realizer_events

pytestmark = pytest.mark.cluster

WRITES = 200
PHASE_NAMES = (
    "api-gateway-2",
    "workspace-realizer-2 (company-wide)",
    "heartbeat-controller holder",
    "git-credentials holder",
    "NATS node 2",
)
"""What each phase kills; each gets a fifth of the writes."""
WORKERS = 4
PACE = 0.25
"""Seconds between the starts of one worker's writes: a phase's 50 writes take about 3 s."""
DOWN_FOR = 2.0
"""Seconds a killed replica or NATS node stays dead."""
MAX_SENDS = 40
"""Sends of one write at most (retries only of answers that prove nothing was saved)."""
COMPANIES = 4
KINDS = ("project", "issue", "secret", "agent") * 2 + ("company", "key")
"""The mix, in turn: 20 % each of projects, issues, secrets and agents, 10 % companies and keys."""
REPLICATED = ("api-gateway", "heartbeat-controller", "git-credentials")
REALIZERS = 4
"""workspace-realizer-1 and -4 serve the two worker nodes' host parts, -2 and -3 the company-wide
part."""
SUPERVISORS = 2
"""runtime-supervisor-1 and -2: one per worker node."""

STORES: dict[str, tuple[type[Any], Callable[[Any], Any]]] = {
    "gateway": (GatewayApplication, gateway_events),
    "realizer": (WorkspaceRealizerApplication, realizer_events),
    "supervisor": (RuntimeSupervisorApplication, supervisor_events),
    "controller": (HeartbeatControllerApplication, controller_events),
    "credentials": (GitCredentialsApplication, credentials_events),
}
"""Each service's token -> its application class and its own public mapping."""

LISTED_AS = {"issue": "title"}
"""The field a list row names a write by (else ``name``)."""


@dataclass(frozen=True)
class Setup:
    """A company made before the kills, with its board key and a project for its issues."""

    id: str
    board: dict[str, str]
    project_id: str


@dataclass(frozen=True)
class Plan:
    """One write of the mix."""

    index: int
    phase: str
    kind: str
    name: str
    company: Setup
    gateway: int


@dataclass
class Outcome:
    """How one write ended."""

    plan: Plan
    status: int | None
    """The last HTTP status; None when the connection failed or dropped."""
    sends: int
    detail: str = ""

    @property
    def acknowledged(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def label(self) -> str:
        return "connection" if self.status is None else str(self.status)


@dataclass
class Ledger:
    outcomes: list[Outcome] = field(default_factory=list)
    retried: Counter[str] = field(default_factory=Counter)
    """Why writes were sent again (``connect``, ``nothing was saved``, ``no responders``)."""


def _safe_to_resend(answer: httpx.Response) -> str:
    """Why ``answer`` proves nothing was saved (so the write may go again), or ``""``."""
    if answer.status_code not in (409, 503):
        return ""
    with contextlib.suppress(ValueError):
        message = str(answer.json().get("error", ""))
        if "nothing was saved" in message:
            return "nothing was saved"
        if answer.status_code == 503 and " is not answering;" in message:
            return "no responders"  # NATS found no subscriber: nobody received the request
    return ""


def _request(plan: Plan) -> tuple[str, dict[str, Any], dict[str, str]]:
    """Path, body and extra headers of ``plan`` (the clients carry the admin key)."""
    company, name = plan.company, plan.name
    match plan.kind:
        case "company":
            return "/api/companies", {"name": name}, {}
        case "key":
            return f"/api/companies/{company.id}/api-keys", {"name": name, "kind": "board"}, {}
        case "project":
            return f"/api/companies/{company.id}/projects", {"name": name}, company.board
        case "issue":
            body = {"title": name, "projectId": company.project_id}
            return f"/api/companies/{company.id}/issues", body, company.board
        case "secret":
            body = {"name": name, "value": f"value of {name}"}
            return f"/api/companies/{company.id}/secrets", body, company.board
        case "agent":
            body = {"name": name, "adapterType": "process", "adapterConfig": agent_config("ok")}
            return f"/api/companies/{company.id}/agents", body, company.board
    raise AssertionError(plan.kind)


async def _write(cluster: Cluster, ledger: Ledger, plan: Plan) -> Outcome:
    path, body, headers = _request(plan)
    gateway = plan.gateway
    for sends in range(1, MAX_SENDS + 1):
        try:
            answer = await cluster.gateways[gateway].post(
                path, json=body, headers=headers, timeout=20.0
            )
        except httpx.ConnectError as exc:  # no connection was made: nothing was sent
            if sends == MAX_SENDS:
                return Outcome(plan, None, sends, repr(exc))
            ledger.retried["connect"] += 1
            gateway = 1 - gateway  # what a balancer does: the other gateway
            await asyncio.sleep(0.05)
            continue
        except httpx.TransportError as exc:  # sent, then dropped: the outcome is unknown
            return Outcome(plan, None, sends, repr(exc))
        why = _safe_to_resend(answer)
        if why and sends < MAX_SENDS:
            ledger.retried[why] += 1
            await asyncio.sleep(0.25)
            continue
        return Outcome(plan, answer.status_code, sends, answer.text[:300])
    raise AssertionError("unreachable")


async def _worker(
    cluster: Cluster, ledger: Ledger, queue: asyncio.Queue[Plan], done: asyncio.Event
) -> None:
    while not done.is_set():
        plan = await queue.get()
        began = time.monotonic()
        try:
            ledger.outcomes.append(await _write(cluster, ledger, plan))
        finally:
            queue.task_done()
        await asyncio.sleep(max(0.0, PACE - (time.monotonic() - began)))


async def _setup(cluster: Cluster) -> list[Setup]:
    """Companies, board keys and projects made before the kills; each company's issues can be
    made once the realizer knows it (its copy comes through the stream)."""
    a, _ = cluster.gateways
    made: list[Setup] = []
    for n in range(COMPANIES):
        company = await new_company(a, f"Chaos Setup {n}")
        board = bearer((await board_key(a, company["id"]))["key"])
        project = await a.post(
            f"/api/companies/{company['id']}/projects", json={"name": "setup"}, headers=board
        )
        assert project.status_code == 201, project.text
        made.append(Setup(company["id"], board, project.json()["id"]))
    for setup in made:

        async def known(s: Setup = setup) -> bool:
            answer = await a.post(
                f"/api/companies/{s.id}/issues",
                json={"title": "setup", "projectId": s.project_id},
                headers=s.board,
            )
            assert answer.status_code in (201, 404), answer.text  # 404: not known yet
            return answer.status_code == 201

        await until(known, 15.0, f"the realizer knows company {setup.id}")
    return made


def _plans(setups: list[Setup]) -> list[list[Plan]]:
    """The 200 writes, cut into one batch per kill phase."""
    names = {
        "company": "Chaos Company {:03d}",
        "key": "key-{:03d}",
        "project": "project-{:03d}",
        "issue": "issue-{:03d}",
        "secret": "SECRET_{:03d}",
        "agent": "agent-{:03d}",
    }
    per = WRITES // len(PHASE_NAMES)
    plans = [
        Plan(
            index=i,
            phase=PHASE_NAMES[i // per],
            kind=(kind := KINDS[i % len(KINDS)]),
            name=names[kind].format(i),
            company=setups[i % len(setups)],
            gateway=i % 2,
        )
        for i in range(WRITES)
    ]
    return [plans[p * per : (p + 1) * per] for p in range(len(PHASE_NAMES))]


@dataclass
class PhaseTiming:
    name: str
    target: str
    down: float
    """Seconds from the kill until the replica or node answered again."""
    total: float
    """Seconds from the phase's first write until its last write ended."""


async def _phase(
    batch: list[Plan],
    queue: asyncio.Queue[Plan],
    kill: Callable[[], Awaitable[str]],
    revive: Callable[[], Awaitable[None]],
) -> PhaseTiming:
    began = time.monotonic()
    for plan in batch:
        queue.put_nowait(plan)
    await asyncio.sleep(0.3)  # writes are in flight when the kill comes
    target = await kill()
    killed = time.monotonic()
    await asyncio.sleep(DOWN_FOR)
    await revive()
    back = time.monotonic()
    await queue.join()
    return PhaseTiming(batch[0].phase, target, back - killed, time.monotonic() - began)


def _indexes(service: str) -> tuple[int, ...]:
    """The replica indexes of ``service`` in the cluster."""
    if service == "workspace-realizer":
        return tuple(range(1, REALIZERS + 1))
    if service == "runtime-supervisor":
        return tuple(range(1, SUPERVISORS + 1))
    return (1, 2) if service in REPLICATED else (1,)


async def _kill_holder(cluster: Cluster, service: str) -> tuple[int, str]:
    async def led() -> bool:
        return bool((await cluster.leader(service))[0])

    await until(led, 10.0, f"{service} has a lease holder")
    holder, _ = await cluster.leader(service)
    index = cluster.replica_index(holder)
    cluster.stack.kill(service, index, signal.SIGKILL)
    return index, holder


# -- reading back --------------------------------------------------------------------------------


async def _list(http: httpx.AsyncClient, path: str, headers: dict[str, str]) -> list[Any]:
    rows: list[Any] = []
    while True:
        answer = await retrying(
            lambda: http.get(path, params={"limit": 200, "offset": len(rows)}, headers=headers)
        )
        assert answer.status_code == 200, f"{path}: {answer.status_code} {answer.text}"
        page = answer.json()
        rows.extend(page)
        if not page or len(rows) >= int(answer.headers["X-Total-Count"]):
            return rows


async def _listed(
    http: httpx.AsyncClient, setups: list[Setup]
) -> dict[tuple[str, str], Counter[str]]:
    """(kind, company id) -> how often each name is listed (companies under company id "")."""
    listed: dict[tuple[str, str], Counter[str]] = {}
    companies = await _list(http, "/api/companies", {})
    listed["company", ""] = Counter(c["name"] for c in companies)
    paths = {
        "key": "api-keys",
        "project": "projects",
        "issue": "issues",
        "secret": "secrets",
        "agent": "agents",
    }
    for setup in setups:
        for kind, tail in paths.items():
            headers = {} if kind == "key" else setup.board
            rows = await _list(http, f"/api/companies/{setup.id}/{tail}", headers)
            listed[kind, setup.id] = Counter(row[LISTED_AS.get(kind, "name")] for row in rows)
    return listed


def _where(plan: Plan) -> tuple[str, str]:
    return plan.kind, "" if plan.kind == "company" else plan.company.id


# -- the stream against the stores ---------------------------------------------------------------


@dataclass
class StoreView:
    """One store's notifications: origin and whether its relay publishes it."""

    token: str
    app: Any
    to_contract: Callable[[Any], Any]
    origins: dict[int, str] = field(default_factory=dict)
    public: set[int] = field(default_factory=set)
    unpublishable: set[int] = field(default_factory=set)

    def catch_up(self) -> None:
        """Read the notifications saved since the last call (store thread: this one)."""
        after = max(self.origins, default=0)
        while True:
            page = self.app.recorder.select_notifications(
                start=after, limit=500, inclusive_of_start=False
            )
            for n in page:
                origin = f"{n.originator_id}:{n.originator_version}"
                self.origins[n.id] = origin
                event = self.app.mapper.to_domain_event(n)
                if isinstance(event, OutboxSkips.Event):
                    continue  # the relay's own record: private
                try:
                    message = build_message(
                        self.to_contract,
                        event,
                        service=self.token,  # type: ignore[arg-type]
                        notification_id=n.id,
                        origin=origin,
                    )
                except UnpublishableEventError:
                    self.unpublishable.add(n.id)
                    continue
                if message is not None:
                    self.public.add(n.id)
            if len(page) < 500:
                return
            after = page[-1].id


def _open_stores(cluster: Cluster) -> dict[str, StoreView]:
    views: dict[str, StoreView] = {}
    for token in SERVICES:
        application_class, own = STORES[token]
        settings = StoreSettings(kind="postgres", postgres_dsn=cluster.stack.postgres_dsns[token])
        app = build_application(application_class, service=token, settings=settings)
        views[token] = StoreView(token, app, published_contract(SERVICE_NAMES[token], own))
    return views


def _sql_notification_ids(dsn: str) -> dict[str, set[int]]:
    """Each store's notification ids, read with SQL (the recorder's table, as the superuser)."""
    ids: dict[str, set[int]] = {}
    with psycopg.connect(dsn) as conn:
        for token in SERVICES:
            query = sql.SQL("SELECT notification_id FROM {}.store_events").format(
                sql.Identifier(postgres_schema(token))
            )
            ids[token] = {row[0] for row in conn.execute(query)}
    return ids


@dataclass
class StreamView:
    """``WS_EVENTS`` read message by message (as a service user), remembered by sequence."""

    js: Any
    read_upto: int = 0
    msg_ids: Counter[str] = field(default_factory=Counter)
    origins: dict[str, str] = field(default_factory=dict)
    other: int = 0
    """Messages without a Nats-Msg-Id of a store's."""

    async def catch_up(self) -> int:
        info = await self.js.stream_info(EVENT_STREAM)
        first = max(self.read_upto + 1, info.state.first_seq)
        for seq in range(first, info.state.last_seq + 1):
            msg = await self.js.get_msg(EVENT_STREAM, seq)
            headers = msg.headers or {}
            msg_id = headers.get(MSG_ID_HEADER, "")
            if msg_id.partition(":")[0] not in SERVICES:
                self.other += 1
                continue
            self.msg_ids[msg_id] += 1
            self.origins[msg_id] = headers.get(ORIGIN_HEADER, "")
        self.read_upto = max(self.read_upto, info.state.last_seq)
        return int(info.state.last_seq)


def _stream_problems(stores: dict[str, StoreView], stream: StreamView) -> dict[str, list[str]]:
    """What keeps the stream from holding every public event of every store exactly once."""
    problems: dict[str, list[str]] = {"missing": [], "twice": [], "foreign": [], "private": []}
    for msg_id, count in stream.msg_ids.items():
        token, _, number = msg_id.partition(":")
        store = stores[token]
        nid = int(number) if number.isdigit() else -1
        if count > 1:
            problems["twice"].append(f"{msg_id} x{count}")
        if nid not in store.origins or store.origins[nid] != stream.origins[msg_id]:
            problems["foreign"].append(f"{msg_id} ({stream.origins[msg_id]})")
        elif nid not in store.public:
            problems["private"].append(msg_id)
    for token, store in stores.items():
        problems["missing"].extend(
            f"{token}:{nid}"
            for nid in sorted(store.public)
            if stream.msg_ids[f"{token}:{nid}"] == 0
        )
    return problems


async def _replays_served(nc: Any, name: str) -> dict[str, int]:
    """Each live instance of service ``name`` -> the requests its own ``replay_verify`` subject
    (``<subject>.<micro id>``, endpoint ``replay_verify_here``) has served (``$SRV.STATS``)."""
    served: dict[str, int] = {}
    for answer in await gather_answers(nc, f"$SRV.STATS.{name}", wait=1.0):
        stats = msgspec.json.decode(answer.data)
        instance = (stats.get("metadata") or {}).get(INSTANCE_METADATA) or stats["id"]
        for endpoint in stats.get("endpoints") or []:
            if endpoint.get("name") == "replay_verify_here":
                served[instance] = int(endpoint.get("num_requests", 0))
    return served


# -- the test ------------------------------------------------------------------------------------


async def test_writes_survive_killed_replicas_and_a_killed_nats_node(cluster: Cluster) -> None:
    stack = cluster.stack
    began = time.monotonic()
    setups = await _setup(cluster)
    batches = _plans(setups)
    ledger = Ledger()
    queue: asyncio.Queue[Plan] = asyncio.Queue()
    done = asyncio.Event()
    workers = [
        asyncio.create_task(_worker(cluster, ledger, queue, done), name=f"writer-{n}")
        for n in range(WORKERS)
    ]
    timings: list[PhaseTiming] = []
    killed: dict[str, int] = {}
    try:

        async def kill_gateway() -> str:
            stack.kill("api-gateway", 2, signal.SIGKILL)
            return "api-gateway-2"

        async def revive_gateway() -> None:
            await stack.restart("api-gateway", 2)

        timings.append(await _phase(batches[0], queue, kill_gateway, revive_gateway))

        async def kill_realizer() -> str:
            stack.kill("workspace-realizer", 2, signal.SIGKILL)
            return "workspace-realizer-2"

        async def revive_realizer() -> None:
            await stack.restart("workspace-realizer", 2)

        timings.append(await _phase(batches[1], queue, kill_realizer, revive_realizer))
        for service, batch in (
            ("heartbeat-controller", batches[2]),
            ("git-credentials", batches[3]),
        ):

            async def kill_holder(s: str = service) -> str:
                killed[s], holder = await _kill_holder(cluster, s)
                return holder

            async def revive_holder(s: str = service) -> None:
                await stack.restart(s, killed[s])

            timings.append(await _phase(batch, queue, kill_holder, revive_holder))

        async def kill_nats() -> str:
            await stack.stop_nats_node(2, signal.SIGKILL)
            return stack.nats_node(2).name

        async def revive_nats() -> None:
            await stack.start_nats_node(2)
            await stack.wait_ready()

        timings.append(await _phase(batches[4], queue, kill_nats, revive_nats))
    finally:
        done.set()
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    writing = time.monotonic() - began

    outcomes = sorted(ledger.outcomes, key=lambda o: o.plan.index)
    assert [o.plan.index for o in outcomes] == list(range(WRITES))
    acked = [o for o in outcomes if o.acknowledged]
    print(
        f"\n{len(acked)} of {WRITES} writes acknowledged, {WRITES - len(acked)} not "
        f"(setup and writes {writing:.1f} s; resent: {dict(ledger.retried) or 'none'})"
    )
    for timing in timings:
        phase = [o for o in outcomes if o.plan.phase == timing.name]
        tally = Counter(o.label for o in phase)
        print(
            f"  {timing.name} ({timing.target}): down {timing.down:.1f} s, phase {timing.total:.1f}"
            f" s, {sum(o.acknowledged for o in phase)}/{len(phase)} acknowledged {dict(tally)}"
        )
    by_kind = {k: Counter(o.label for o in outcomes if o.plan.kind == k) for k in set(KINDS)}
    print(f"  by kind: { {k: dict(v) for k, v in sorted(by_kind.items())} }")
    for outcome in outcomes:
        if not outcome.acknowledged:
            print(
                f"  not acknowledged: {outcome.plan.kind} {outcome.plan.name} "
                f"via {outcome.plan.gateway + 1}: {outcome.label} {outcome.detail[:160]}"
            )
    # A write that was refused for what it asked (a 4xx other than "nothing was saved") is a
    # mistake of this test or a duplicate the service noticed: neither may happen.
    refused = [o for o in outcomes if o.status is not None and 400 <= o.status < 500]
    assert refused == [], [(o.plan.name, o.status, o.detail) for o in refused]
    assert len(acked) >= WRITES // 2, "most writes are acknowledged"

    # Settled: every replica answers, every service has a lease holder.
    await stack.wait_ready()
    for name in SERVICE_NAMES.values():

        async def led(n: str = name) -> bool:
            return bool((await cluster.leader(n))[0])

        await until(led, 15.0, f"{name} has a lease holder")

    # The stream: every public event of every store exactly once, by notification id.
    checking = time.monotonic()
    stores = await asyncio.to_thread(_open_stores, cluster)
    nc = await stack.connect("gateway")  # the CLI's user may not read messages
    try:
        stream = StreamView(nc.jetstream())
        last = -1
        while True:
            # The table first, then the views: a view then holds at least what the table held.
            # Services may still write (an inbox reaction to an event that waited out a kill),
            # so the loop ends only when nothing moved for a round.
            sql_ids = await asyncio.to_thread(_sql_notification_ids, stack.postgres_dsn)
            for view in stores.values():
                await asyncio.to_thread(view.catch_up)
            seq = await stream.catch_up()
            problems = _stream_problems(stores, stream)
            read_all = all(sql_ids[t] <= set(v.origins) for t, v in stores.items())
            if not problems["missing"] and seq == last and read_all:
                break
            if time.monotonic() - checking > 30.0:
                break
            last = seq
            await asyncio.sleep(0.5)
        after = await asyncio.to_thread(_sql_notification_ids, stack.postgres_dsn)
    finally:
        await nc.close()
        for view in stores.values():
            await asyncio.to_thread(view.app.close)
    for token, view in stores.items():
        # The recorder reads its table: every row, and nothing that is not one.
        assert sql_ids[token] <= set(view.origins) <= after[token], f"{token}: the table's ids"
    counts = {
        t: f"{len(v.public)}/{len(v.origins)}"
        + (f" ({len(v.unpublishable)} skipped)" if v.unpublishable else "")
        for t, v in stores.items()
    }
    print(
        f"  stream: {sum(stream.msg_ids.values())} messages of the stores (public/stored: {counts}),"
        f" {stream.other} others, complete after {time.monotonic() - checking:.1f} s"
    )
    assert problems == {"missing": [], "twice": [], "foreign": [], "private": []}, problems

    # Read back through both gateways: every acknowledged write once, no write twice.
    listed = [await _listed(http, setups) for http in cluster.gateways]
    for outcome in outcomes:
        where, name = _where(outcome.plan), outcome.plan.name
        for n, seen in enumerate(listed, start=1):
            count = seen[where][name]
            assert count <= 1, f"{outcome.plan.kind} {name} listed {count} times by gateway {n}"
            if outcome.acknowledged:
                assert count == 1, f"acknowledged {outcome.plan.kind} {name} not on gateway {n}"
    assert listed[0] == listed[1], "both gateways list the same"
    present = sum(listed[0][_where(o.plan)][o.plan.name] for o in outcomes if not o.acknowledged)
    print(
        f"  read back: {present} of {WRITES - len(acked)} unacknowledged writes were saved anyway"
    )

    # Every replica's read models replay without a difference.
    env = {
        "CLIPYARD_HOME": str(stack.home),
        "CLIPYARD_NATS_URL": ",".join(stack.nats_urls),
        "CLIPYARD_NATS_PASSWORD_CLI": stack.nats_passwords["cli"],
    }
    replaying = time.monotonic()
    names = list(SERVICE_NAMES.values())
    before = await asyncio.gather(*(_replays_served(cluster.nc, n) for n in names))
    for name in names:
        out = io.StringIO()
        code = await run_replay(env, name, out)
        report = out.getvalue()
        assert code == 0, report
        assert "DIFFERENCES" not in report, report
        indexes = _indexes(name)
        for index in indexes if len(indexes) > 1 else ():  # a lone instance is not named
            assert f"instance {name}-{index}:" in report, report
        shown = [line for line in report.splitlines() if "read models:" not in line]
        print("  " + "\n  ".join(shown))
    after = await asyncio.gather(*(_replays_served(cluster.nc, n) for n in names))
    for name, old, new in zip(names, before, after, strict=True):
        # Each replica verified its own read models, asked on its own subject (a report labelled
        # with an instance but answered through the queue group may be another replica's).
        asked = {instance: new[instance] - old.get(instance, 0) for instance in new}
        replicas = {f"{name}-{i}" for i in _indexes(name)}
        assert asked == dict.fromkeys(replicas, 1), f"{name}: own-subject verifications {asked}"
    print(
        f"  replay --verify of every service: {time.monotonic() - replaying:.1f} s; "
        f"whole test {time.monotonic() - began:.1f} s after the cluster started"
    )
