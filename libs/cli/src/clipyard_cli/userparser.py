"""The arguments of the user commands (``workspaces``, ``runs``, ``issues``), which talk to the
HTTP API (:mod:`clipyard_cli.usercmds`) rather than to the bus."""

from __future__ import annotations

import argparse

__all__ = ["USER_COMMANDS", "add_user_commands"]

USER_COMMANDS = ("workspaces", "runs", "issues")
_API = "over the HTTP API: CLIPYARD_API_URL (default http://127.0.0.1:8080) and CLIPYARD_API_KEY"


def _common(parser: argparse.ArgumentParser, *, listing: bool = False) -> None:
    parser.add_argument("--json", action="store_true", help="print the API's answer as JSON")
    if listing:
        parser.add_argument(
            "--company", metavar="ID", help="the company (default: $CLIPYARD_COMPANY_ID)"
        )


def add_user_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``workspaces``, ``runs`` and ``issues`` with their actions."""
    workspaces = commands.add_parser("workspaces", help=f"execution workspaces, {_API}")
    ws = workspaces.add_subparsers(dest="action", required=True, metavar="ACTION")
    listed = ws.add_parser("list", help="the company's workspaces, most recently used first")
    _common(listed, listing=True)
    listed.add_argument("--status", help="only these statuses (comma-separated)")
    show = ws.add_parser("show", help="one workspace, with its delivery state and services")
    show.add_argument("id", metavar="WORKSPACE_ID")
    _common(show)
    diff = ws.add_parser("diff", help="what a workspace changed against its base")
    diff.add_argument("id", metavar="WORKSPACE_ID")
    diff.add_argument("--path", help="also this changed file's unified diff")
    _common(diff)

    runs = commands.add_parser("runs", help=f"heartbeat runs, {_API}")
    rs = runs.add_subparsers(dest="action", required=True, metavar="ACTION")
    listed = rs.add_parser("list", help="the company's runs, newest first")
    _common(listed, listing=True)
    listed.add_argument("--status", help="only runs with this status")
    listed.add_argument("--agent", metavar="AGENT_ID", help="only this agent's runs")
    listed.add_argument("--issue", metavar="ISSUE_ID", help="only this issue's runs")
    for action, what in (("show", "one run, with its stages"), ("cancel", "cancel a run")):
        one = rs.add_parser(action, help=what)
        one.add_argument("id", metavar="RUN_ID")
        _common(one)
    log = rs.add_parser("log", help="a run's log (the adapter's output)")
    log.add_argument("id", metavar="RUN_ID")
    log.add_argument(
        "-f", "--follow", action="store_true", help="keep printing what it adds until it ends"
    )

    issues = commands.add_parser("issues", help=f"issues, {_API}")
    iss = issues.add_subparsers(dest="action", required=True, metavar="ACTION")
    listed = iss.add_parser("list", help="the company's issues, newest first")
    _common(listed, listing=True)
    listed.add_argument("--status", help="only these statuses (comma-separated)")
