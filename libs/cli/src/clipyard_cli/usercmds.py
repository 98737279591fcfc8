"""The user commands over the HTTP API (:mod:`clipyard_cli.api`): ``workspaces list|show|diff``,
``runs list|show|log|cancel``, ``issues list``. Each prints a short table or the facts a person
reads, or with ``--json`` the API's answer as it came.

The lists are of one company: ``--company`` or ``CLIPYARD_COMPANY_ID``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TextIO
from urllib.parse import quote

from clipyard_cli.api import ApiClient, ApiError

__all__ = ["UserCommand", "company_of", "run_user_command"]

ACTIVE: Final = frozenset({"queued", "running"})
FOLLOW_INTERVAL: Final = 1.0
LOG_CHUNK: Final = 262144

UserCommand = Callable[[ApiClient, Any, TextIO], int]


def company_of(args: Any, env: Mapping[str, str]) -> str:
    """The company a list is of.

    Raises:
        ApiError: None is given.
    """
    company = (getattr(args, "company", None) or env.get("CLIPYARD_COMPANY_ID", "")).strip()
    if not company:
        raise ApiError(
            "name the company: --company ID or CLIPYARD_COMPANY_ID (its id is in the answer "
            "that created it, and in GET /api/companies with the admin key)"
        )
    return company


def _table(out: TextIO, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[("—" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    for row in [list(headers), *cells]:
        out.write("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n")
    if not rows:
        out.write("(none)\n")


def _facts(out: TextIO, pairs: Sequence[tuple[str, Any]]) -> None:
    width = max(len(k) for k, _ in pairs)
    for key, value in pairs:
        out.write(f"{key.ljust(width)}  {'—' if value is None else value}\n")


def _q(segment: str) -> str:
    """An id as one path segment of a URL."""
    return quote(segment, safe="")


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _json(out: TextIO, answer: Any) -> int:
    out.write(json.dumps(answer, indent=2, ensure_ascii=False) + "\n")
    return 0


def workspaces_list(api: ApiClient, args: Any, out: TextIO) -> int:
    """``clipyard workspaces list``."""
    rows = api.get(f"/api/companies/{_q(args.company_id)}/execution-workspaces", status=args.status)
    if args.json:
        return _json(out, rows)
    _table(
        out,
        ("ID", "NAME", "STATUS", "MODE", "BRANCH", "LAST USED"),
        [
            (w["id"], w["name"], w["status"], w["mode"], w.get("branchName"), w.get("lastUsedAt"))
            for w in rows
        ],
    )
    return 0


def workspaces_show(api: ApiClient, args: Any, out: TextIO) -> int:
    """``clipyard workspaces show ID``."""
    w = api.get(f"/api/execution-workspaces/{_q(args.id)}")
    if args.json:
        return _json(out, w)
    services = ", ".join(f"{s['serviceName']} {s['status']}" for s in w.get("runtimeServices", []))
    _facts(
        out,
        [
            ("id", w["id"]),
            ("name", w["name"]),
            ("status", w["status"]),
            ("mode", w["mode"]),
            ("cwd", w.get("cwd")),
            ("branch", w.get("branchName")),
            ("base", w.get("baseRef")),
            ("delivery", w.get("deliveryState")),
            ("commits ahead", w.get("commitsAhead")),
            ("services", services or None),
        ],
    )
    return 0


def workspaces_diff(api: ApiClient, args: Any, out: TextIO) -> int:
    """``clipyard workspaces diff ID [--path FILE]``."""
    d = api.get(f"/api/execution-workspaces/{_q(args.id)}/diff", path=args.path)
    if args.json:
        return _json(out, d)
    if not d["available"]:
        out.write(f"nothing to compare: {d.get('reason')}\n")
        return 0
    out.write(
        f"against {d.get('baseRef') or 'HEAD'}: {_n(d['commitsTotal'], 'commit')}, "
        f"{_n(d['filesTotal'], 'file')} changed (+{d['additions']} -{d['deletions']}), "
        f"{d['untrackedTotal']} untracked\n"
    )
    for c in d["commits"]:
        out.write(f"  {c['sha'][:10]} {c['subject']} ({c['authorName']})\n")
    for f in d["files"]:
        counts = "binary" if f.get("binary") else f"+{f.get('additions')} -{f.get('deletions')}"
        renamed = f" (from {f['oldPath']})" if f.get("oldPath") else ""
        out.write(f"  {f['status']:<9} {f['path']}{renamed}  {counts}\n")
    for path in d["untracked"]:
        out.write(f"  untracked {path}\n")
    if d.get("patch"):
        out.write("\n" + d["patch"]["text"])
    return 0


def runs_list(api: ApiClient, args: Any, out: TextIO) -> int:
    """``clipyard runs list``."""
    rows = api.get(
        f"/api/companies/{_q(args.company_id)}/runs",
        status=args.status,
        agentId=args.agent,
        issueId=args.issue,
    )
    if args.json:
        return _json(out, rows)
    _table(
        out,
        ("ID", "AGENT", "ISSUE", "STATUS", "STAGE", "QUEUED", "ERROR"),
        [
            (
                r["id"],
                r["agentId"][:8],
                (r.get("issueId") or "")[:8] or None,
                r["status"],
                r["stage"],
                r["queuedAt"],
                r.get("errorCode"),
            )
            for r in rows
        ],
    )
    return 0


def runs_show(api: ApiClient, args: Any, out: TextIO) -> int:
    """``clipyard runs show ID``."""
    r = api.get(f"/api/runs/{_q(args.id)}")
    if args.json:
        return _json(out, r)
    stages = " > ".join(s["stage"] for s in r.get("stages", [])) or r["stage"]
    _facts(
        out,
        [
            ("id", r["id"]),
            ("status", r["status"]),
            ("stage", r["stage"]),
            ("stages", stages),
            ("agent", r["agentId"]),
            ("issue", r.get("issueId")),
            ("workspace", r.get("executionWorkspaceId")),
            ("queued", r["queuedAt"]),
            ("started", r.get("startedAt")),
            ("finished", r.get("finishedAt")),
            ("exit code", r.get("exitCode")),
            ("error", r.get("error")),
            ("log bytes", r.get("logBytes")),
        ],
    )
    return 0


def runs_log(api: ApiClient, args: Any, out: TextIO) -> int:
    """``clipyard runs log ID [--follow]``: the log; with ``--follow``, what it adds until the run
    ends (as ``tail -f``)."""
    offset = 0
    while True:
        status = api.get(f"/api/runs/{_q(args.id)}")["status"] if args.follow else ""
        try:
            while True:
                text, headers = api.text(
                    f"/api/runs/{_q(args.id)}/log", offset=offset, length=LOG_CHUNK
                )
                out.write(text)
                out.flush()
                offset += int(headers.get("X-Log-Length", "0"))
                if int(headers.get("X-Log-Length", "0")) == 0:
                    break
                if offset >= int(headers.get("X-Total-Bytes", "0")):
                    break
        except ApiError as exc:
            if exc.status != 404 or not args.follow:
                raise  # 404 while following: no adapter yet
        if not args.follow or status not in ACTIVE:
            return 0
        time.sleep(FOLLOW_INTERVAL)


def runs_cancel(api: ApiClient, args: Any, out: TextIO) -> int:
    """``clipyard runs cancel ID``."""
    r = api.post(f"/api/runs/{_q(args.id)}/cancel")
    if args.json:
        return _json(out, r)
    out.write(f"run {r['id']}: {r['status']}{' (cancelling)' if r['cancelRequested'] else ''}\n")
    return 0


def issues_list(api: ApiClient, args: Any, out: TextIO) -> int:
    """``clipyard issues list``."""
    rows = api.get(f"/api/companies/{_q(args.company_id)}/issues", status=args.status)
    if args.json:
        return _json(out, rows)
    _table(
        out,
        ("ID", "IDENTIFIER", "STATUS", "ASSIGNEE", "TITLE"),
        [
            (
                i["id"],
                i["identifier"],
                i["status"],
                (i.get("assigneeAgentId") or "")[:8] or None,
                i["title"],
            )
            for i in rows
        ],
    )
    return 0


COMMANDS: Final[dict[tuple[str, str], UserCommand]] = {
    ("workspaces", "list"): workspaces_list,
    ("workspaces", "show"): workspaces_show,
    ("workspaces", "diff"): workspaces_diff,
    ("runs", "list"): runs_list,
    ("runs", "show"): runs_show,
    ("runs", "log"): runs_log,
    ("runs", "cancel"): runs_cancel,
    ("issues", "list"): issues_list,
}
"""(command, action) → its function."""
LISTS: Final = frozenset({("workspaces", "list"), ("runs", "list"), ("issues", "list")})


def run_user_command(api: ApiClient, args: Any, env: Mapping[str, str], out: TextIO) -> int:
    """Run one user command (``args.command``, ``args.action``)."""
    key = (args.command, args.action)
    if key in LISTS:
        args.company_id = company_of(args, env)
    return COMMANDS[key](api, args, out)
