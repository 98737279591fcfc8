"""Side-by-side measurement: each benchmark times Clipyard's path and its physical limit in one run.

Machines here are noisy, so each side runs several rounds, interleaved (limit, ours, limit, ...), and
the report keeps medians and their ratio. Nothing asserts an absolute time.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["Comparison", "Report", "measure_async", "measure_sync"]

RESULTS = Path(__file__).parent / "results"


def results_path() -> Path:
    """Where this run's report is written."""
    return RESULTS / (os.environ.get("CLIPYARD_BENCH_RESULTS") or "latest.json")


@dataclass
class Comparison:
    """One benchmark: per-operation medians of Clipyard's path and of the limit."""

    name: str
    ours: str
    limit: str
    ours_us: float
    limit_us: float
    rounds: int
    ops_per_round: int
    notes: str = ""
    goal_ratio: float | None = None
    """The issue's goal as the largest ratio allowed (a throughput goal of 0.7x is 1/0.7)."""
    goal_added_us: float | None = None
    """The issue's goal as the most time allowed on top of the limit's (µs per operation)."""
    goal: str = ""
    """The goal as the issue words it."""

    @property
    def ratio(self) -> float:
        """How many times slower than the limit Clipyard's path is (1.0 = at the limit)."""
        return self.ours_us / self.limit_us

    @property
    def met(self) -> bool | None:
        """Whether the goal holds in this run; None where the row has no goal."""
        if self.goal_ratio is None and self.goal_added_us is None:
            return None
        within_ratio = self.goal_ratio is None or self.ratio <= self.goal_ratio
        added = self.ours_us - self.limit_us
        return within_ratio and (self.goal_added_us is None or added <= self.goal_added_us)


@dataclass
class Report:
    """Every comparison of one ``just bench`` run, printed and written as JSON."""

    comparisons: list[Comparison] = field(default_factory=list)

    def add(self, comparison: Comparison) -> None:
        """Record one comparison."""
        self.comparisons.append(comparison)

    def render(self) -> str:
        """A table a person reads."""
        lines = [
            f"{'benchmark':<40} {'ours (µs/op)':>13} {'limit (µs/op)':>14} {'ratio':>7}  "
            f"{'goal':<24} met   limit",
        ]
        for c in self.comparisons:
            met = {None: "-", True: "yes", False: "NO"}[c.met]
            lines.append(
                f"{c.name:<40} {c.ours_us:>13.1f} {c.limit_us:>14.1f} {c.ratio:>6.2f}x  "
                f"{c.goal:<24} {met:<5} {c.limit}"
            )
            if c.notes:
                lines.append(f"{'':<40} {c.notes}")
        return "\n".join(lines)

    def write(self) -> Path:
        """Write ``results/latest.json`` (ignored by git; ``CLIPYARD_BENCH_RESULTS`` names
        another file there) and return its path."""
        RESULTS.mkdir(exist_ok=True)
        path = results_path()
        rows = [asdict(c) | {"ratio": round(c.ratio, 3), "met": c.met} for c in self.comparisons]
        path.write_text(json.dumps({"measuredAt": time.time(), "comparisons": rows}, indent=2))
        return path


def measure_sync(
    sides: dict[str, Callable[[], None]], *, ops: int, rounds: int = 5
) -> dict[str, float]:
    """Median µs per operation of each side, rounds interleaved; each call of a side does ``ops``."""
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, run in sides.items():
            started = time.perf_counter()
            run()
            samples[name].append((time.perf_counter() - started) / ops * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


async def measure_async(
    sides: dict[str, Callable[[], Awaitable[None]]], *, ops: int, rounds: int = 5
) -> dict[str, float]:
    """The async twin of :func:`measure_sync`."""
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, run in sides.items():
            started = time.perf_counter()
            await run()
            samples[name].append((time.perf_counter() - started) / ops * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}
