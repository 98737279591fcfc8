"""Load from ``wrk`` (Debian's package, installed by ``./dev``): requests per second and latency."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

__all__ = ["WrkResult", "wrk"]

_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


@dataclass(frozen=True)
class WrkResult:
    """One wrk run: throughput and the latency percentiles it printed (ms)."""

    rps: float
    p50_ms: float
    p99_ms: float


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    if match is None:
        raise ValueError(f"wrk printed a latency this cannot read: {text!r}")
    return float(match[1]) * _UNITS[match[2]]


def wrk(url: str, *, seconds: float, connections: int = 8, token: str | None = None) -> WrkResult:
    """Run ``wrk -t1 -c<connections> --latency`` against ``url`` for ``seconds``."""
    binary = shutil.which("wrk")
    if binary is None:
        raise AssertionError("wrk is not installed: run ./dev install (it installs Debian's wrk)")
    args = [binary, "-t1", f"-c{connections}", f"-d{seconds}s", "--latency"]
    if token is not None:
        args += ["-H", f"Authorization: Bearer {token}"]
    out = subprocess.run([*args, url], check=True, capture_output=True, text=True).stdout
    if "Non-2xx" in out:
        raise AssertionError(f"wrk met answers other than 2xx from {url}:\n{out}")
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p50 = re.search(r"^\s*50%\s+(\S+)", out, re.MULTILINE)
    p99 = re.search(r"^\s*99%\s+(\S+)", out, re.MULTILINE)
    if rps is None or p50 is None or p99 is None:
        raise AssertionError(f"wrk's output lacks its totals:\n{out}")
    return WrkResult(rps=float(rps[1]), p50_ms=_ms(p50[1]), p99_ms=_ms(p99[1]))
