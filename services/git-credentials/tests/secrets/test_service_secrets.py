"""The git-credentials as a real process on a real NATS: secrets over the bus, crypto-shredding
read from the raw files, master-key rotation, a wrong master key, and refused starts."""

from __future__ import annotations

import asyncio
import base64
import itertools
from pathlib import Path
from typing import Any

import msgspec
import nats
import pytest
from secrets_helpers import key_text, new_key, ring, sqlite_app, stored_ciphertexts, vault_rows

from contracts import credential_subjects as subjects
from contracts import subjects as service_subjects
from contracts.base import Actor, ErrorReply, Ok, Principal
from contracts.credentials import (
    CreateSecret,
    DeleteSecret,
    ListSecretAccessEvents,
    ListSecrets,
    RotateSecret,
)
from contracts.service import GetAuditTrail, ReplayReport, VerifyReplay
from git_credentials.adapters.crypto import (
    DecryptionError,
    MasterKey,
    open_value,
    unwrap_data_key,
)
from git_credentials.adapters.masterkey import GENERATE_COMMAND, key_file_path, parse_master_key
from git_credentials.adapters.sealing import SecretSealer
from git_credentials.adapters.vault import SqliteVault, vault_path
from git_credentials.domain.chain import SecretUnavailable
from natsbus import BusClient
from natsbus.codec import decode_reply, encode

pytestmark = pytest.mark.integration

MODULE = "git_credentials"
BOARD = Principal(company_id="c-1", actor=Actor(type="board", id="key-1"))
OTHER_BOARD = Principal(company_id="c-2", actor=Actor(type="board", id="key-2"))
AGENT = Principal(company_id="c-1", actor=Actor(type="agent", id="agent-1"))
ADMIN = Principal(company_id=None, actor=Actor(type="admin", id="operator"))
SQLITE = {"CLIPYARD_STORE": "sqlite", "CLIPYARD_SECRET_KEY": "", "CLIPYARD_SECRET_KEY_PREVIOUS": ""}


class Bus:
    """Requests as raw bytes (to search the replies) and decoded replies."""

    def __init__(self, nc: Any) -> None:
        self.nc = nc
        self.raw: list[bytes] = []

    async def ask(self, subject: str, message: Any) -> Ok | ErrorReply:
        reply = await self.nc.request(subject, encode(message), timeout=10)
        self.raw.append(bytes(reply.data))
        decoded = decode_reply(reply.data)
        assert not isinstance(decoded, ErrorReply) or decoded.status < 500, decoded
        return decoded  # type: ignore[return-value]

    async def ok(self, subject: str, message: Any) -> Any:
        reply = await self.ask(subject, message)
        assert isinstance(reply, Ok), reply
        return reply.result


def _files(path: Path) -> bytes:
    """A SQLite database's bytes with its journal or WAL, if any."""
    return b"".join(
        p.read_bytes()
        for p in (path, *(Path(f"{path}{s}") for s in ("-wal", "-journal")))
        if p.exists()
    )


async def _create(bus: Bus, name: str, value: str, principal: Principal = BOARD) -> Any:
    command = CreateSecret(principal=principal, company_id="c-1", name=name, value=value)
    return await bus.ok(subjects.SECRET_CREATE, command)


async def test_secrets_over_the_bus_answer_views_never_values(
    nats_server: Any, service_process: Any
) -> None:
    canary = "ghp_CANARY_bus_5e81"
    proc = await service_process(MODULE, env={**SQLITE, "CLIPYARD_SECRET_KEY": key_text(new_key())})
    nc = await nats.connect(nats_server.url)
    published: list[bytes] = []

    async def collect(msg: Any) -> None:
        published.append(bytes(msg.data))

    await nc.subscribe("ws.evt.secret.>", cb=collect)
    try:
        bus = Bus(nc)
        # Create: a view of version 1.
        created = await _create(bus, "GH_TOKEN", canary)
        assert (created["companyId"], created["name"], created["version"]) == ("c-1", "GH_TOKEN", 1)
        assert set(created) == {"id", "companyId", "name", "version", "createdAt", "updatedAt"}
        secret_id = created["id"]
        # The same name again: 409 saying to rotate it instead.
        taken = await bus.ask(
            subjects.SECRET_CREATE,
            CreateSecret(principal=BOARD, company_id="c-1", name="GH_TOKEN", value="other"),
        )
        assert isinstance(taken, ErrorReply)
        assert (taken.code, taken.status) == ("state_conflict", 409)
        assert f"PUT /api/secrets/{secret_id}" in taken.message
        # A name the contract refuses: 400 naming the field, never the value.
        bad = await bus.ask(
            subjects.SECRET_CREATE,
            CreateSecret(principal=BOARD, company_id="c-1", name="BAD-NAME", value=canary),
        )
        assert isinstance(bad, ErrorReply)
        assert (bad.code, bad.status) == ("validation_failed", 400)
        # Rotate: version 2; list: names, versions and dates.
        rotated = await bus.ok(
            subjects.SECRET_ROTATE,
            RotateSecret(principal=BOARD, secret_id=secret_id, value=canary + "-v2"),
        )
        assert rotated["version"] == 2
        page = await bus.ok(subjects.SECRET_LIST, ListSecrets(principal=BOARD, company_id="c-1"))
        assert page == {"items": [rotated], "total": 1}
        # Another company: not found; an agent: forbidden.
        for principal, code in ((OTHER_BOARD, "not_found"), (AGENT, "forbidden")):
            refused = await bus.ask(
                subjects.SECRET_ROTATE,
                RotateSecret(principal=principal, secret_id=secret_id, value="stolen"),
            )
            assert isinstance(refused, ErrorReply)
            assert refused.code == code
        # Access events: none yet (nothing resolved a credential).
        events = await bus.ok(
            subjects.SECRET_ACCESS_EVENTS, ListSecretAccessEvents(principal=BOARD, company_id="c-1")
        )
        assert events == {"items": [], "total": 0}
        # The audit trail (admin) shows the history without ciphertext.
        trail = await bus.ok(
            service_subjects.service_query("credentials", "audit"),
            GetAuditTrail(principal=ADMIN, aggregate_id=secret_id),
        )
        assert trail["total"] == 2
        assert "ciphertext" not in msgspec.json.encode(trail).decode()
        # Delete, then it is gone.
        deleted = await bus.ok(
            subjects.SECRET_DELETE, DeleteSecret(principal=BOARD, secret_id=secret_id)
        )
        assert deleted == {"id": secret_id}
        page = await bus.ok(subjects.SECRET_LIST, ListSecrets(principal=BOARD, company_id="c-1"))
        assert page == {"items": [], "total": 0}
        # The read models rebuilt from the store equal the live ones.
        report = await BusClient(nc).call(
            service_subjects.service_query("credentials", "replay_verify"),
            VerifyReplay(principal=ADMIN),
            ReplayReport,
            timeout=10,
        )
        assert report.ok, report.differences
        # Three public events, none with a value or a ciphertext.
        for _ in range(50):
            if len([p for p in published if secret_id.encode() in p]) >= 3:
                break
            await asyncio.sleep(0.1)
        mine = [msgspec.json.decode(p) for p in published if secret_id.encode() in p]
        assert [e["type"] for e in mine] == [
            "secret.created.v1",
            "secret.rotated.v1",
            "secret.deleted.v1",
        ]
        assert mine[2]["versionsDestroyed"] == 2
        assert not any(b"ciphertext" in p or canary.encode() in p for p in published)
        # No reply ever held the value.
        assert bus.raw
        assert not any(canary.encode() in raw for raw in bus.raw)
    finally:
        await nc.drain()
    await proc.terminate()
    assert canary not in proc.logs()


async def test_deleting_a_secret_shreds_every_version(
    nats_server: Any, service_process: Any, clipyard_home: Path
) -> None:
    canaries = ["ghp_CANARY_shred_v1_0a9f", "ghp_CANARY_shred_v2_77c1"]
    store = clipyard_home / "data" / "credentials.sqlite"
    vault_file = vault_path(clipyard_home)
    nc = await nats.connect(nats_server.url)
    try:
        bus = Bus(nc)
        # First run (master key file created): a secret with two versions, and one that stays.
        proc = await service_process(MODULE, env=SQLITE)
        doomed = await _create(bus, "GITHUB_TOKEN", canaries[0])
        await bus.ok(
            subjects.SECRET_ROTATE,
            RotateSecret(principal=BOARD, secret_id=doomed["id"], value=canaries[1]),
        )
        kept = await _create(bus, "GH_TOKEN", "kept-value")
        await proc.terminate()
        master = MasterKey(parse_master_key(key_file_path(clipyard_home).read_text(), source="f"))

        # The raw files: no plaintext anywhere; the ciphertexts are in the store.
        raw_store, raw_vault = _files(store), _files(vault_file)
        for canary in canaries:
            assert canary.encode() not in raw_store
            assert canary.encode() not in raw_vault
        reader = sqlite_app(clipyard_home)
        ciphertexts = stored_ciphertexts(reader, doomed["id"])
        reader.close()
        assert len(ciphertexts) == 2
        assert all(c.encode() in raw_store for c in ciphertexts)
        doomed_rows = [r for r in vault_rows(vault_file) if r[0] == doomed["id"]]
        assert sorted(r[1] for r in doomed_rows) == [1, 2]
        assert all(r[3] in raw_vault for r in doomed_rows)
        # Control: with the vault's keys these ciphertexts do open (so the check below can fail).
        for (_, version, _, wrapped), ciphertext in zip(
            sorted(doomed_rows), ciphertexts, strict=True
        ):
            data_key = unwrap_data_key(master, wrapped, secret_id=doomed["id"], version=version)
            opened = open_value(
                data_key,
                base64.b64decode(ciphertext),
                company_id="c-1",
                secret_id=doomed["id"],
                version=version,
            )
            assert opened == canaries[version - 1]

        # Second run: delete it.
        proc = await service_process(MODULE, env=SQLITE)
        await bus.ok(subjects.SECRET_DELETE, DeleteSecret(principal=BOARD, secret_id=doomed["id"]))
        await proc.terminate()
    finally:
        await nc.drain()

    # The vault has neither the rows nor the bytes of its wrapped keys; the other secret's stay.
    raw_vault = _files(vault_file)
    assert not any(r[3] in raw_vault for r in doomed_rows)
    left = vault_rows(vault_file)
    assert [r[0] for r in left] == [kept["id"]]
    # The store still holds the ciphertexts (events are never erased), and still no plaintext.
    raw_store = _files(store)
    assert all(c.encode() in raw_store for c in ciphertexts)
    assert not any(canary.encode() in raw_store + raw_vault for canary in canaries)
    # No key left (each remaining data key, and the master key itself) opens any of them.
    keys = [unwrap_data_key(master, r[3], secret_id=r[0], version=r[1]) for r in left]
    keys.append(master.key)
    for key, (version, ciphertext) in itertools.product(keys, enumerate(ciphertexts, start=1)):
        for bound_version in (1, 2, version):
            with pytest.raises(DecryptionError):
                open_value(
                    key,
                    base64.b64decode(ciphertext),
                    company_id="c-1",
                    secret_id=doomed["id"],
                    version=bound_version,
                )


def _offline_value(home: Path, keys: Any, name: str) -> str | None:
    """Read a value straight from the stopped service's store and vault with ``keys``."""
    app = sqlite_app(home)
    vault = SqliteVault(vault_path(home))
    try:
        app.sealer = SecretSealer(vault, keys)
        return app.secret_value("c-1", name)
    finally:
        vault.close()
        app.close()


async def test_master_key_rotation_and_a_wrong_master_key(
    nats_server: Any, service_process: Any, clipyard_home: Path
) -> None:
    canary = "glpat_CANARY_rotation_1d44"
    old, new, wrong = new_key(), new_key(), new_key()
    nc = await nats.connect(nats_server.url)
    try:
        bus = Bus(nc)
        # Created under the old key.
        proc = await service_process(MODULE, env={**SQLITE, "CLIPYARD_SECRET_KEY": key_text(old)})
        await _create(bus, "GITLAB_TOKEN", canary)
        await proc.terminate()
        # Started with the new key and the old one as previous: its row is rewrapped (a count).
        proc = await service_process(
            MODULE,
            env={
                **SQLITE,
                "CLIPYARD_SECRET_KEY": key_text(new),
                "CLIPYARD_SECRET_KEY_PREVIOUS": key_text(old),
            },
        )
        await proc.terminate()
        logs = proc.logs()
        assert '"rewrapped": 1' in logs
        assert key_text(old) not in logs
        assert key_text(new) not in logs
        assert {r[2] for r in vault_rows(vault_path(clipyard_home))} == {ring(new).current.id}
        assert _offline_value(clipyard_home, ring(new), "GITLAB_TOKEN") == canary

        # Started with a wrong key: it runs (a warning, not a crash) and still takes new secrets.
        proc = await service_process(MODULE, env={**SQLITE, "CLIPYARD_SECRET_KEY": key_text(wrong)})
        await _create(bus, "GH_TOKEN", "made-under-the-wrong-key")
        page = await bus.ok(subjects.SECRET_LIST, ListSecrets(principal=BOARD, company_id="c-1"))
        assert [s["name"] for s in page["items"]] == ["GH_TOKEN", "GITLAB_TOKEN"]
        await proc.terminate()
        assert '"unreadable": 1' in proc.logs()
    finally:
        await nc.drain()
    # Its old value is unavailable under the wrong key (an error naming no secret material).
    with pytest.raises(SecretUnavailable) as caught:
        _offline_value(clipyard_home, ring(wrong), "GITLAB_TOKEN")
    assert canary not in str(caught.value)
    assert _offline_value(clipyard_home, ring(wrong), "GH_TOKEN") == "made-under-the-wrong-key"


async def _refused_start(service_process: Any, env: dict[str, str]) -> str:
    proc = service_process.prepare(MODULE, env=env, check_exit_code=False)
    proc.spawn()
    code = await asyncio.to_thread(proc.process.wait, 30)
    assert code != 0
    return str(proc.logs())


async def test_a_bad_master_key_stops_the_start_with_the_fix(
    service_process: Any, clipyard_home: Path
) -> None:
    # An invalid CLIPYARD_SECRET_KEY: how to generate one, never the value.
    logs = await _refused_start(
        service_process, {**SQLITE, "CLIPYARD_SECRET_KEY": "not-a-key-CANARY-4411"}
    )
    assert GENERATE_COMMAND in logs
    assert "not-a-key-CANARY-4411" not in logs
    # A key file others may read: the chmod to run.
    path = key_file_path(clipyard_home)
    path.parent.mkdir(mode=0o700)
    path.write_text(key_text(new_key()) + "\n")
    path.chmod(0o644)
    logs = await _refused_start(service_process, SQLITE)
    assert f"chmod 600 {path}" in logs
    assert path.read_text().strip() not in logs


async def test_a_replica_whose_key_does_not_open_the_vault_refuses_to_start(
    nats_server: Any, service_process: Any, clipyard_home: Path
) -> None:
    right, wrong = new_key(), new_key()
    nc = await nats.connect(nats_server.url)
    bus = Bus(nc)
    first = await service_process(MODULE, env={**SQLITE, "CLIPYARD_SECRET_KEY": key_text(right)})
    try:
        await _create(bus, "GH_TOKEN", "sealed-by-the-first-replica")
        rows = vault_rows(vault_path(clipyard_home))
        # A second replica with another key: it refuses, names the fix, changes no row.
        logs = await _refused_start(
            service_process, {**SQLITE, "CLIPYARD_SECRET_KEY": key_text(wrong)}
        )
        assert "refuses to start" in logs
        assert "give every replica the same CLIPYARD_SECRET_KEY" in logs
        assert key_text(wrong) not in logs
        assert vault_rows(vault_path(clipyard_home)) == rows
        # A second replica with the same key starts beside it and reads what the first sealed.
        second = await service_process(
            MODULE, env={**SQLITE, "CLIPYARD_SECRET_KEY": key_text(right)}
        )
        await first.terminate()
        # Its ping readiness may have been the first's answer: wait for the second itself.
        for _ in range(100):
            try:
                page = await bus.ok(
                    subjects.SECRET_LIST, ListSecrets(principal=BOARD, company_id="c-1")
                )
                break
            except nats.errors.NoRespondersError:
                await asyncio.sleep(0.1)
        assert [s["name"] for s in page["items"]] == ["GH_TOKEN"]
        await second.terminate()
    finally:
        await nc.drain()
