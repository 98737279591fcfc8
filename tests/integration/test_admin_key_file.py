"""The api-gateway and `clipyard up` share one admin key file, whichever of them starts first."""

from __future__ import annotations

from pathlib import Path

from api_gateway.domain import hash_secret
from api_gateway.settings import GatewaySettings
from clipyard_cli.home import ensure_admin_key


def test_the_gateway_and_clipyard_up_share_one_admin_key_file(tmp_path: Path) -> None:
    # `clipyard up` first: the gateway reads its key...
    key = ensure_admin_key(tmp_path / "a", {})
    assert GatewaySettings.from_env({"CLIPYARD_HOME": str(tmp_path / "a")}).admin_key_hash == (
        hash_secret(key)
    )
    # ...and the gateway first: `clipyard up` prints the gateway's key.
    gateway = GatewaySettings.from_env({"CLIPYARD_HOME": str(tmp_path / "b")})
    assert gateway.admin_key_hash == hash_secret(ensure_admin_key(tmp_path / "b", {}))
