"""Who a company's contained processes run as (docs/design/isolation.md): one unprivileged uid
and gid per company, never root, unique on the host across every Clipyard stack.

Each stack (one ``$CLIPYARD_HOME``) owns a range of ids in a host-wide registry
(``/var/lib/clipyard/id-ranges.json``, changed only under an exclusive lock on the file beside
it): a stack finds its range again by its home; a range whose home is gone, or whose home no
longer carries the marker naming it (``$CLIPYARD_HOME/id-range``), is reclaimed. Within the
range, a company's offset is kept in ``$CLIPYARD_HOME/identities.json`` (under its own lock, so
replicas of one stack agree): a company keeps its uid for the life of the home.

No user is added to the host's ``/etc/passwd``: ``setpriv`` takes numeric ids, and each sandbox
gets a generated ``/etc/passwd`` and ``/etc/group`` naming the id ``clipyard`` so ``whoami`` and
git work. Blocking: call from a thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = ["FIRST_ID", "RANGE_SIZE", "IdRange", "Identities", "Identity", "IdentityError"]

FIRST_ID: Final = 1_200_000
"""The lowest id handed out (far above the ids of the host's own users)."""
RANGE_SIZE: Final = 4096
"""Ids per stack (offset 0 is the range's own and never a company's)."""
_MAX_RANGES: Final = 4096
REGISTRY: Final = Path("/var/lib/clipyard/id-ranges.json")
MARKER: Final = "id-range"
NAME: Final = "clipyard"


class IdentityError(Exception):
    """No identity can be given (the message says what to do)."""


@dataclass(frozen=True, kw_only=True)
class Identity:
    """A company's uid and gid (equal), and the files of its sandbox's ``/etc/passwd`` and
    ``/etc/group``."""

    uid: int
    gid: int
    passwd: Path
    group: Path
    name: str = NAME


@dataclass(frozen=True, kw_only=True)
class IdRange:
    """A stack's ids: ``base`` + 1 .. ``base`` + ``size`` - 1."""

    base: int
    size: int = RANGE_SIZE


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with path.with_name(path.name + ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise IdentityError(f"{path} cannot be read ({exc}): fix or remove it.") from None


def _write(path: Path, value: Any, mode: int = 0o600) -> None:
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(value, out, indent=1, sort_keys=True)
        os.chmod(name, mode)
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def _marker_base(home: str) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int((Path(home) / MARKER).read_text(encoding="ascii").strip())
    return None


def claim_range(home: Path, registry: Path = REGISTRY) -> tuple[IdRange, list[int]]:
    """The range of ``home``'s stack (claimed now if it has none; ranges of gone homes are
    reclaimed first), and the bases of the ranges reclaimed now (their stacks are gone: what is
    left of them is to be ended).

    Raises:
        IdentityError: The registry is unreadable or full.
    """
    home = home.resolve()
    with _locked(registry):
        data = _read(registry) or {"ranges": []}
        ranges = data.get("ranges", [])
        kept = [entry for entry in ranges if _marker_base(entry["home"]) == entry["base"]]
        gone = [int(entry["base"]) for entry in ranges if entry not in kept]
        if gone:
            _write(registry, {"ranges": kept})
        for entry in kept:
            if entry["home"] == str(home):
                return IdRange(base=int(entry["base"]), size=int(entry["size"])), gone
        used = {int(entry["base"]) for entry in kept}
        base = next(
            (
                FIRST_ID + i * RANGE_SIZE
                for i in range(_MAX_RANGES)
                if FIRST_ID + i * RANGE_SIZE not in used
            ),
            None,
        )
        if base is None:
            raise IdentityError(
                f"Every id range of {registry} is held by a live Clipyard home: remove homes "
                "that are no longer used."
            )
        home.mkdir(parents=True, exist_ok=True)
        (home / MARKER).write_text(f"{base}\n", encoding="ascii")
        kept.append({"home": str(home), "base": base, "size": RANGE_SIZE})
        _write(registry, {"ranges": kept})
        return IdRange(base=base), gone


class Identities:
    """The identities of one stack's companies."""

    def __init__(self, home: Path, ids: IdRange) -> None:
        self.home = home
        self.ids = ids
        self.path = home / "identities.json"
        self.etc = home / "identities"
        self._known: dict[str, Identity] = {}

    @property
    def stack(self) -> str:
        """The stack's short name (its range's base), unique on the host."""
        return str(self.ids.base)

    def of(self, company_id: str) -> Identity:
        """The company's identity (assigned now on first use).

        Raises:
            IdentityError: The stack's range is used up.
        """
        known = self._known.get(company_id)
        if known is not None:
            return known
        with _locked(self.path):
            table: dict[str, int] = _read(self.path) or {}
            offset = table.get(company_id)
            if offset is None:
                offset = max(table.values(), default=0) + 1
                if offset >= self.ids.size:
                    raise IdentityError(
                        f"All {self.ids.size - 1} identities of this Clipyard home are used."
                    )
                table[company_id] = offset
                _write(self.path, table)
        identity = self._files(self.ids.base + offset)
        self._known[company_id] = identity
        return identity

    def _files(self, uid: int) -> Identity:
        folder = self.etc / str(uid)
        folder.mkdir(parents=True, exist_ok=True, mode=0o755)
        passwd, group = folder / "passwd", folder / "group"
        passwd.write_text(
            "root:x:0:0:root:/root:/usr/sbin/nologin\n"
            f"{NAME}:x:{uid}:{uid}:Clipyard workspace:/tmp:/bin/sh\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
            encoding="ascii",
        )
        group.write_text(f"root:x:0:\n{NAME}:x:{uid}:\nnogroup:x:65534:\n", encoding="ascii")
        for path in (passwd, group):
            path.chmod(0o644)
        return Identity(uid=uid, gid=uid, passwd=passwd, group=group)
