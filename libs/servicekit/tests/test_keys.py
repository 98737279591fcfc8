"""Private files under $CLIPYARD_HOME: the admin key file, atomic 0600 writes, 0700 folders."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from servicekit import keys


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """A umask that would leave new files world-readable."""
    previous = os.umask(0o002)
    yield
    os.umask(previous)


def test_the_admin_key_is_created_once_private_in_a_private_home(
    tmp_path: Path, loose_umask: None
) -> None:
    home = tmp_path / "new" / "home"
    key = keys.ensure_admin_key_file(home)
    assert key.startswith(keys.ADMIN_KEY_PREFIX)
    assert len(key) >= len(keys.ADMIN_KEY_PREFIX) + 43  # 32 random bytes
    path = keys.admin_key_path(home)
    assert path.read_text() == key + "\n"
    assert mode(path) == 0o600
    assert mode(home) == 0o700
    assert keys.ensure_admin_key_file(home) == key
    # No temporary file is left behind.
    assert sorted(p.name for p in home.iterdir()) == ["admin.key"]


def test_an_existing_home_keeps_its_mode_and_a_loose_key_file_is_tightened(
    tmp_path: Path,
) -> None:
    tmp_path.chmod(0o755)
    path = keys.admin_key_path(tmp_path)
    path.write_text("cy_admin_existing\n")
    path.chmod(0o644)
    assert keys.ensure_admin_key_file(tmp_path) == "cy_admin_existing"
    assert mode(path) == 0o600
    assert mode(tmp_path) == 0o755


def test_an_empty_key_file_gets_a_key(tmp_path: Path) -> None:
    path = keys.admin_key_path(tmp_path)
    path.write_text("  \n")
    key = keys.ensure_admin_key_file(tmp_path)
    assert key.startswith("cy_admin_")
    assert path.read_text().strip() == key
    assert mode(path) == 0o600


def test_concurrent_creators_agree_on_one_key(tmp_path: Path) -> None:
    results: list[str] = []
    barrier = threading.Barrier(8)

    def create() -> None:
        barrier.wait()
        results.append(keys.ensure_admin_key_file(tmp_path))

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(results)) == 1
    assert keys.admin_key_path(tmp_path).read_text().strip() == results[0]


def test_write_private_replaces_atomically_or_refuses_to_overwrite(
    tmp_path: Path, loose_umask: None
) -> None:
    path = tmp_path / "secret.json"
    keys.write_private(path, "one")
    assert (path.read_text(), mode(path)) == ("one", 0o600)
    keys.write_private(path, "two")
    assert path.read_text() == "two"
    with pytest.raises(FileExistsError):
        keys.write_private(path, "three", overwrite=False)
    assert path.read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.json"]


def test_private_dir_is_0700_only_when_it_creates_the_folder(
    tmp_path: Path, loose_umask: None
) -> None:
    created = keys.private_dir(tmp_path / "a" / "b")
    assert mode(created) == 0o700
    existing = tmp_path / "open"
    existing.mkdir(mode=0o755)
    existing.chmod(0o755)
    keys.private_dir(existing)
    assert mode(existing) == 0o755
