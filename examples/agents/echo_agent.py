"""An example ``process`` agent: it reads what its run gives it, leaves a note in its workspace
and commits it, then reports (stdlib only; README.md, "Agents and runs", creates it).

The heartbeat-controller starts it in the issue's workspace (the worktree, its current
directory) with its run in the environment: ``CLIPYARD_API_URL``, ``CLIPYARD_API_KEY`` (the run
token), ``CLIPYARD_RUN_ID``, ``CLIPYARD_TASK_ID`` (the issue), ``CLIPYARD_WAKE_REASON`` and
``CLIPYARD_WORKSPACE_ID``. An untrusted agent runs contained: as an unprivileged user in a sandbox
that shows the system, its worktree and a private ``/tmp``, not the checkout this file is in. So
the README passes this file's text on the command line (``python3 -c <source>``), as a script
that needs nothing but the system's Python and git.

What it does:

1. reads ``GET /api/issues/{issue}/heartbeat-context`` with its run token (the issue, its
   workspace and the runtime services started for the run) and asks each running service's URL;
2. appends a few lines about the run to ``ECHO.md`` in its worktree and commits them on the
   workspace's branch (as "Echo agent"); woken without an issue, it runs in a scratch folder
   and only writes the note;
3. prints, as its last stdout line, the JSON ``{"usage": {...}, "result": {...}}`` the controller
   records on the run.

It never prints its token. It exits 1 when the commit fails.
"""

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

NOTE = "ECHO.md"
IDENTITY = ["-c", "user.name=Echo agent", "-c", "user.email=echo-agent@example.invalid"]


def say(text):
    """One line of the run's log."""
    print(text, flush=True)


def call(path):
    """(status, decoded JSON) of a GET of the API with the run token; (0, reason) when the API
    cannot be reached."""
    url = os.environ["CLIPYARD_API_URL"].rstrip("/") + path
    token = os.environ.get("CLIPYARD_API_KEY", "")
    request = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")[:300]
    except OSError as error:
        return 0, str(error)


def context(issue_id):
    """What the run is about: the issue, its workspace's branch and its running services."""
    if not issue_id:
        return {}
    status, body = call(f"/api/issues/{issue_id}/heartbeat-context")
    if status != 200:
        say(f"heartbeat-context answered {status}: {body}")
        return {}
    issue = body["issue"]
    workspace = body.get("currentExecutionWorkspace") or {}
    services = [s for s in workspace.get("runtimeServices") or [] if s.get("status") == "running"]
    say(f"issue {issue['identifier']}: {issue['title']} (branch {workspace.get('branchName')})")
    for service in services:
        say(f"service {service['serviceName']} at {service.get('url')}: {probe(service)}")
    return {"issue": issue, "branch": workspace.get("branchName"), "services": services}


def probe(service):
    """What a running service answers on its URL."""
    if not service.get("url"):
        return "no URL"
    try:
        with urllib.request.urlopen(service["url"], timeout=10) as answer:
            return f"HTTP {answer.status}"
    except OSError as error:
        return f"unreachable ({error})"


def git(*args):
    """Run git in the worktree; its exit status and output."""
    done = subprocess.run(["git", *IDENTITY, *args], capture_output=True, text=True)
    return done.returncode, (done.stdout + done.stderr).strip()


def write_and_commit(run_id, about):
    """Append the note and commit it: the new commit's id, or None outside a git worktree (a
    run woken without an issue works in a scratch folder). Raises RuntimeError when git fails."""
    issue = about.get("issue")
    lines = [f"## Run {run_id}", ""]
    lines.append(f"- woken for: {os.environ.get('CLIPYARD_WAKE_REASON') or 'no reason given'}")
    if issue:
        lines.append(f"- issue: {issue['identifier']} {issue['title']}")
    for service in about.get("services", []):
        lines.append(f"- service {service['serviceName']}: {service.get('url')}")
    with open(NOTE, "a", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n\n")
    if git("rev-parse", "--is-inside-work-tree")[0] != 0:
        return None
    for args in (("add", NOTE), ("commit", "-q", "-m", f"Echo agent: run {run_id[:8]}")):
        status, output = git(*args)
        if status != 0:
            raise RuntimeError(f"git {args[0]} failed: {output}")
    return git("rev-parse", "HEAD")[1]


def main():
    run_id = os.environ.get("CLIPYARD_RUN_ID", "")
    say(f"echo agent: run {run_id} in {os.getcwd()}")
    about = context(os.environ.get("CLIPYARD_TASK_ID"))
    try:
        head = write_and_commit(run_id, about)
    except RuntimeError as error:
        print(error, file=sys.stderr, flush=True)
        return 1
    say(f"committed {NOTE} as {head[:12]}" if head else f"wrote {NOTE} (not a git worktree)")
    issue = about.get("issue") or {}
    result = {
        "summary": f"wrote {NOTE} and committed it" if head else f"wrote {NOTE}",
        "file": NOTE,
        "commit": head,
        "branch": about.get("branch"),
        "issue": issue.get("identifier"),
    }
    say(json.dumps({"usage": {"inputTokens": 0, "outputTokens": 0}, "result": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
