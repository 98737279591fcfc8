"""A heartbeat agent for the end-to-end tests (stdlib only; run as ``python3 -c <this file>``).

It runs where the ``process`` adapter puts it: for an untrusted agent inside the sandbox, which
shows only the system (read-only), its worktree, the repository's git directory and a private
``/tmp`` (``HOME``). ``AGENT_ROLE`` (from the agent's ``adapterConfig.env``) says what it does:

* ``honest``: reads its environment, calls ``heartbeat-context`` with its run token, asks the
  run's dev server (if the context lists one running), commits ``AGENT_FILE`` in its worktree,
  sets its issue to ``in_review`` with ``X-Run-Id``, and tries to touch ``AGENT_OTHER_ISSUE``.
* ``hostile``: tries to read, list and write what ``AGENT_TARGETS`` (JSON) names and to plant git
  hooks in the repository's common git directory (and ``core.hooksPath`` in its config);
  reports each attempt's outcome.
* ``stubborn``: ignores SIGTERM, starts a child that ignores it too (``AGENT_ESCAPE=1``: and a
  grandchild in a session of its own), then sleeps ``AGENT_SLEEP`` seconds.
* ``sleeper``: sleeps ``AGENT_SLEEP`` seconds (the result gives its start and end times).
* ``logger``: writes ``AGENT_LINES`` numbered lines to stdout and every tenth to stderr.

With ``AGENT_WAIT_FLAG`` (a file name in its cwd) it first prints ``agent waiting`` and waits for
that file to appear (then removes it): the test reads the adapter's environment meanwhile.

It never prints its token. The last stdout line is the JSON ``{"usage": {...}, "result": {...}}``;
it exits 0 unless ``AGENT_EXIT`` says otherwise.
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

STARTED = time.time()
NAMES = (
    "API_URL",
    "API_KEY",
    "RUN_ID",
    "AGENT_ID",
    "COMPANY_ID",
    "TASK_ID",
    "WAKE_REASON",
    "WORKSPACE_ID",
)


def say(text):
    print(text, flush=True)


def api(method, path, body=None, run_id=True):
    """(status, decoded JSON or text) of a call with the run token; never raises."""
    url = os.environ["CLIPYARD_API_URL"].rstrip("/") + path
    headers = {"Authorization": "Bearer " + os.environ.get("CLIPYARD_API_KEY", "")}
    if run_id:
        headers["X-Run-Id"] = os.environ.get("CLIPYARD_RUN_ID", "")
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            status, raw = answer.status, answer.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    except OSError as error:
        return 0, str(error)
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")[:500]


def git(*args):
    """git as the agent runs it: its own identity, any owner's repository accepted."""
    done = subprocess.run(
        [
            "git",
            "-c",
            "safe.directory=*",
            "-c",
            "user.name=Agent",
            "-c",
            "user.email=agent@e2e",
            *args,
        ],
        capture_output=True,
        text=True,
    )
    return done.returncode, (done.stdout + done.stderr).strip()[-500:]


def environment():
    """Which variables it got (never their values), and whether each alias equals its name."""
    seen = {}
    for name in NAMES:
        value = os.environ.get("CLIPYARD_" + name)
        seen[name] = {
            "present": bool(value),
            "aliasMatches": value is not None and os.environ.get("PAPERCLIP_" + name) == value,
        }
    safe = {n: os.environ.get("CLIPYARD_" + n) for n in NAMES if n != "API_KEY"}
    return {"vars": seen, "values": safe, "names": sorted(os.environ)}


def wait_flag():
    flag = os.environ.get("AGENT_WAIT_FLAG")
    if not flag:
        return None
    say("agent waiting")
    deadline = time.time() + 30
    while not os.path.exists(flag):
        if time.time() > deadline:
            return False
        time.sleep(0.05)
    os.remove(flag)
    return True


def honest(result):
    task = os.environ.get("CLIPYARD_TASK_ID")
    status, context = api("GET", f"/api/issues/{task}/heartbeat-context")
    result["context"] = {"status": status, "body": context if status != 200 else None}
    if status == 200:
        workspace = context.get("currentExecutionWorkspace") or {}
        run = context.get("run") or {}
        services = workspace.get("runtimeServices") or []
        result["context"].update(
            issueId=context["issue"]["id"],
            workspaceId=workspace.get("id"),
            workspaceCwd=workspace.get("cwd"),
            branchName=workspace.get("branchName"),
            runId=run.get("id"),
            runStatus=run.get("status"),
            services=services,
        )
        served = []
        for service in services:
            if service.get("status") == "running" and service.get("url"):
                try:
                    with urllib.request.urlopen(service["url"], timeout=10) as answer:
                        served.append({"url": service["url"], "status": answer.status})
                except OSError as error:
                    served.append({"url": service["url"], "error": str(error)})
        result["served"] = served
    name = os.environ.get("AGENT_FILE", "agent-note.txt")
    with open(name, "w") as handle:
        handle.write("written by run {}\n".format(os.environ.get("CLIPYARD_RUN_ID")))
    add = git("add", name)
    commit = git("commit", "-q", "-m", "agent: " + name)
    head = git("rev-parse", "HEAD")
    branch = git("rev-parse", "--abbrev-ref", "HEAD")
    result["git"] = {"add": add, "commit": commit, "head": head[1], "branch": branch[1]}
    status, body = api("PATCH", f"/api/issues/{task}", {"status": "in_review"})
    result["patch"] = {
        "status": status,
        "issueStatus": body.get("status") if status == 200 else body,
    }
    other = os.environ.get("AGENT_OTHER_ISSUE")
    if other:
        read = api("GET", f"/api/issues/{other}")[0]
        patch = api("PATCH", f"/api/issues/{other}", {"status": "blocked"})[0]
        result["otherIssue"] = {"get": read, "patch": patch}


def attempt(action, path):
    try:
        if action == "read":
            with open(path, "rb") as handle:
                data = handle.read(64)
            return {"path": path, "ok": True, "detail": f"read {len(data)} bytes"}
        if action == "list":
            return {"path": path, "ok": True, "detail": ",".join(sorted(os.listdir(path))[:20])}
        with open(path, "w") as handle:
            handle.write(
                "#!/bin/sh\necho planted >> '{}'\n".format(os.environ["AGENT_HOOK_MARKER"])
            )
        os.chmod(path, 0o755)
        return {"path": path, "ok": True, "detail": "written"}
    except OSError as error:
        return {"path": path, "ok": False, "detail": f"{type(error).__name__}: {error}"}


def hostile(result):
    targets = json.loads(os.environ.get("AGENT_TARGETS", "{}"))
    attempts = []
    for action in ("read", "list", "write"):
        for path in targets.get(action, []):
            attempts.append(dict(attempt(action, path), action=action))
    rc, common = git("rev-parse", "--path-format=absolute", "--git-common-dir")
    result["commonDir"] = common if rc == 0 else None
    if rc == 0:
        for hook in ("post-checkout", "reference-transaction", "post-index-change", "pre-commit"):
            path = os.path.join(common, "hooks", hook)
            attempts.append(dict(attempt("write", path), action="hook"))
        if os.environ.get("AGENT_HOOKSPATH", "1") == "0":
            result["attempts"] = attempts
            return
        try:
            with open(os.path.join(common, "config"), "a") as handle:
                handle.write("[core]\n\thooksPath = {}\n".format(os.path.abspath("planted-hooks")))
            attempts.append(
                {"action": "config", "path": "config", "ok": True, "detail": "appended"}
            )
        except OSError as error:
            attempts.append(
                {"action": "config", "path": "config", "ok": False, "detail": str(error)}
            )
        rc, out = git("config", "core.hooksPath", os.path.abspath("planted-hooks"))
        attempts.append(
            {"action": "git-config", "path": "core.hooksPath", "ok": rc == 0, "detail": out}
        )
        rc, out = git(
            "config", "core.fsmonitor", "echo planted >> {}".format(os.environ["AGENT_HOOK_MARKER"])
        )
        attempts.append(
            {"action": "git-config", "path": "core.fsmonitor", "ok": rc == 0, "detail": out}
        )
    result["attempts"] = attempts


def hostile_role(result):
    hostile(result)
    result["visiblePids"] = len([p for p in os.listdir("/proc") if p.isdigit()])


def stubborn(result):
    seconds = float(os.environ.get("AGENT_SLEEP", "600"))
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = f"import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep({seconds:f})"
    subprocess.Popen([sys.executable, "-c", child])
    if os.environ.get("AGENT_ESCAPE") == "1":
        subprocess.Popen([sys.executable, "-c", child], start_new_session=True)
    say("stubborn started")
    time.sleep(seconds)
    result["survived"] = True


def sleeper(result):
    say("sleeper started")
    time.sleep(float(os.environ.get("AGENT_SLEEP", "1")))
    result["endedAt"] = time.time()


def logger(result):
    count = int(os.environ.get("AGENT_LINES", "100"))
    for number in range(count):
        say(f"line {number:04d} of the agent's log")
        if number % 10 == 0:
            print(f"err {number:04d}", file=sys.stderr, flush=True)
    result["lines"] = count


def main():
    result = {"role": os.environ.get("AGENT_ROLE"), "startedAt": STARTED}
    result["env"] = environment()
    result["uid"] = os.getuid()
    result["cwd"] = os.getcwd()
    result["home"] = os.environ.get("HOME")
    result["waited"] = wait_flag()
    roles = {
        "honest": honest,
        "hostile": hostile_role,
        "stubborn": stubborn,
        "sleeper": sleeper,
        "logger": logger,
    }
    roles[os.environ.get("AGENT_ROLE", "sleeper")](result)
    result["endedAt"] = time.time()
    say(json.dumps({"usage": {"inputTokens": 3, "outputTokens": 5}, "result": result}))
    sys.exit(int(os.environ.get("AGENT_EXIT", "0")))


main()
