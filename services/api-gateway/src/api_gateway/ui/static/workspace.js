/*
 * workspace.js: the workspace detail page (/workspaces/{id}). No library.
 *
 * Actions are calls to the JSON API (api() of actions.js: same origin, cookie, X-CSRF-Token);
 * after each, the sections it affects are re-rendered from ?fragment=<section>. A long action
 * answered 202 {operationId} is followed on GET /api/operations/{id} until it ends. Live events
 * (live.js subscribe) that name this workspace (or one of its runs or issues) refresh the
 * sections again. Controls carry data-* attributes; nothing here is inline in the page.
 *
 * An action's message (error or status) is written in its section's top-level slots
 * ([data-error-for=""], [data-action-status], [data-blocking-reasons]), which refreshFragment
 * keeps across live refreshes: it stays until the next action. The configuration form is not
 * re-rendered by a live event while it is focused, edited or shows an error. After archive /
 * reopen the focus goes to the button that undoes it (ids lifecycle-archive / lifecycle-reopen).
 */
"use strict";

(function () {
  const POLL_MS = 1000;
  const POLL_LIMIT_MS = 30 * 60 * 1000;
  const LIVE_SECTIONS = ["summary", "readiness", "services", "jobs", "operations", "lifecycle", "timeline", "runs"];

  let root = null;
  let workspaceId = "";
  let wsPath = "";

  function section(name) {
    return document.querySelector('[data-fragment="' + name + '"]');
  }

  function statusIn(name, text) {
    const element = section(name);
    const status = element ? element.querySelector("[data-action-status]") : null;
    if (status) { status.textContent = text; }
  }

  function errorIn(name, body) {
    const element = section(name);
    if (element) { window.Clipyard.showError(element, body); }
  }

  function clearIn(name) {
    const element = section(name);
    if (element) { window.Clipyard.clearErrors(element); }
  }

  function openLogs() {
    const open = [];
    document.querySelectorAll("details[data-log-for]").forEach(function (details) {
      if (details.open) { open.push(details.getAttribute("data-log-for")); }
    });
    return open;
  }

  // Where the focus belongs after the last archive / reopen: a live refresh finishing after it
  // re-renders the section (the button is a new element) and puts the focus back there.
  let wantFocus = null;
  document.addEventListener("focusin", function (event) {
    if (wantFocus && wantFocus.indexOf(event.target.id) === -1) { wantFocus = null; }
  });

  async function refresh(names, focusNext) {
    const logs = openLogs();
    const focusedId = document.activeElement ? document.activeElement.id : "";
    const focusedLabel = document.activeElement ? document.activeElement.getAttribute("data-label") : null;
    await Promise.all(names.map(function (name) { return window.Clipyard.refreshFragment(name); }));
    logs.forEach(function (id) {
      const details = document.querySelector('details[data-log-for="' + id + '"]');
      if (details) { details.open = true; }
    });
    if (focusNext) { wantFocus = focusNext; }
    if (wantFocus && (document.activeElement === document.body || document.activeElement === null)) {
      const next = wantFocus.map(function (id) { return document.getElementById(id); }).filter(Boolean)[0];
      if (next) { next.focus(); return; }
    }
    if (focusedLabel) {
      const again = document.querySelector('[data-label="' + CSS.escape(focusedLabel) + '"]');
      if (again && document.activeElement === document.body) { again.focus(); }
    } else if (focusedId && document.activeElement === document.body) {
      const again = document.getElementById(focusedId);
      if (again) { again.focus(); }
    }
  }

  // Follow a 202 answer to its end: resolves to {ok, status, body} like api() (body = the result
  // the synchronous call would have answered, or the operation's error).
  async function settle(answer) {
    if (answer.status !== 202 || !answer.body || !answer.body.operationId) { return answer; }
    const id = answer.body.operationId;
    const started = Date.now();
    while (Date.now() - started < POLL_LIMIT_MS) {
      await new Promise(function (resolve) { window.setTimeout(resolve, POLL_MS); });
      const polled = await window.Clipyard.api("GET", "/api/operations/" + encodeURIComponent(id));
      if (!polled.ok) { return polled; }
      const op = polled.body || {};
      if (op.status === "succeeded") { return { ok: true, status: 200, body: op.result }; }
      if (op.status === "failed") {
        const raw = (op.error && typeof op.error === "object") ? op.error : {};
        const error = {
          error: raw.error || raw.message || "The operation failed.",
          code: raw.code || "operation_failed",
          details: raw.details || {},
        };
        return { ok: false, status: raw.status || 500, body: error };
      }
    }
    return { ok: false, status: 0, body: { error: "The operation is still running; refresh the page later.", details: {} } };
  }

  async function call(method, path, body, sectionName, busyText) {
    clearIn(sectionName);
    statusIn(sectionName, busyText);
    let answer = await window.Clipyard.api(method, path, body);
    if (answer.status === 202) {
      statusIn(sectionName, busyText + " (still running)");
      answer = await settle(answer);
    }
    statusIn(sectionName, answer.ok ? "Done." : "");
    return answer;
  }

  async function runtimeAction(button) {
    const verb = button.getAttribute("data-runtime-action");
    const body = {};
    if (button.hasAttribute("data-service-index")) {
      body.serviceIndex = Number(button.getAttribute("data-service-index"));
    } else if (button.hasAttribute("data-runtime-service-id")) {
      body.runtimeServiceId = button.getAttribute("data-runtime-service-id");
    }
    button.disabled = true;
    const label = button.getAttribute("data-label") || verb;
    const answer = await call("POST", wsPath + "/runtime-services/" + verb, body, "services", label + "…");
    const failed = answer.ok ? null : answer.body;
    await refresh(["services", "summary", "readiness", "operations", "timeline"]);
    if (failed) { errorIn("services", failed); } else { statusIn("services", label + ": done."); }
  }

  async function runJob(button) {
    const commandId = button.getAttribute("data-run-job");
    const label = button.getAttribute("data-label") || "Run";
    button.disabled = true;
    const answer = await call("POST", wsPath + "/runtime-commands/run", { workspaceCommandId: commandId }, "jobs", label + "…");
    const failed = answer.ok ? null : answer.body;
    const operation = answer.ok && answer.body && answer.body.operation ? answer.body.operation : null;
    if (operation && operation.id) {
      await refreshJobs(operation.id);
    } else {
      await refresh(["jobs"]);
    }
    await refresh(["operations", "timeline", "summary"]);
    if (failed) { errorIn("jobs", failed); } else { statusIn("jobs", label + ": " + (operation ? operation.status : "done") + "."); }
  }

  // The "Jobs" fragment with the output of one operation (?operationId=).
  async function refreshJobs(operationId) {
    const url = new URL(window.location.href);
    url.searchParams.set("fragment", "jobs");
    url.searchParams.set("operationId", operationId);
    let response;
    try {
      response = await fetch(url.toString(), { credentials: "same-origin", headers: { "Accept": "text/html" } });
    } catch (error) {
      return;
    }
    if (!response.ok) { return; }
    const template = document.createElement("template");
    template.innerHTML = (await response.text()).trim();
    const fresh = template.content.querySelector('[data-fragment="jobs"]');
    const target = section("jobs");
    if (fresh && target) { target.replaceWith(fresh); }
  }

  function configBody(form) {
    const config = {};
    ["provisionCommand", "runtimeProvisionCommand", "teardownCommand", "cleanupCommand"].forEach(function (name) {
      const value = form.elements.namedItem(name).value.trim();
      config[name] = value === "" ? null : value;
    });
    const raw = form.elements.namedItem("workspaceRuntime").value.trim();
    if (raw === "") {
      config.workspaceRuntime = null;
      return { config: config };
    }
    let parsed;
    try {
      parsed = JSON.parse(raw);
    } catch (error) {
      return { invalid: "Runtime config (JSON) is not valid JSON: " + error.message + ". Nothing was saved." };
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      return { invalid: "Runtime config (JSON) must be a JSON object such as {\"services\": [...], \"jobs\": [...]}. Nothing was saved." };
    }
    config.workspaceRuntime = parsed;
    return { config: config };
  }

  async function saveConfig(form) {
    const built = configBody(form);
    if (built.invalid) {
      window.Clipyard.showError(form, {
        error: built.invalid, code: "invalid_json",
        details: { fields: [{ field: "config.workspaceRuntime", message: built.invalid }] },
      });
      statusIn("configuration", "");
      return;
    }
    const button = form.querySelector('button[type="submit"]');
    if (button) { button.disabled = true; }
    window.Clipyard.clearErrors(form);
    statusIn("configuration", "Saving…");
    let answer = await window.Clipyard.api("PATCH", wsPath, { config: built.config });
    answer = await settle(answer);
    if (button) { button.disabled = false; }
    if (!answer.ok) {
      statusIn("configuration", "");
      window.Clipyard.showError(form, answer.body);
      return;
    }
    await refresh(["configuration", "services", "jobs", "timeline"]);
    statusIn("configuration", "Saved");
  }

  function showBlockingReasons(body) {
    const list = section("lifecycle") ? section("lifecycle").querySelector("[data-blocking-reasons]") : null;
    if (!list) { return; }
    list.textContent = "";
    const details = (body && body.details) || {};
    const reasons = details.blockingReasons || (details.closeReadiness && details.closeReadiness.blockingReasons) || [];
    reasons.forEach(function (reason) {
      const item = document.createElement("li");
      item.textContent = reason;
      list.appendChild(item);
    });
    list.hidden = reasons.length === 0;
  }

  async function lifecycle(status, text) {
    showBlockingReasons(null);
    const answer = await call("PATCH", wsPath, { status: status }, "lifecycle", text);
    const failed = answer.ok ? null : answer.body;
    const mine = status === "archived" ? "lifecycle-archive" : "lifecycle-reopen";
    const undo = status === "archived" ? "lifecycle-reopen" : "lifecycle-archive";
    await refresh(LIVE_SECTIONS, failed ? [mine, undo] : [undo, mine]);
    if (failed) {
      errorIn("lifecycle", failed);
      showBlockingReasons(failed);
    } else {
      statusIn("lifecycle", status === "archived" ? "Archived." : "Reopened.");
    }
  }

  function askArchive() {
    const dialog = root.querySelector("[data-archive-dialog]");
    if (!dialog || typeof dialog.showModal !== "function") {
      lifecycle("archived", "Archiving…");
      return;
    }
    dialog.returnValue = "";
    dialog.showModal();
  }

  function fact(list, term, value) {
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    dd.textContent = value === null || value === undefined || value === "" ? "—" : String(value);
    list.appendChild(dt);
    list.appendChild(dd);
  }

  // The result of "As it was after" is far below the button on a long page: scroll it to the
  // top of the view and move the focus there (a screen reader reads it; Tab goes on from it).
  function reveal(element) {
    element.setAttribute("tabindex", "-1");
    element.scrollIntoView({ block: "start" });
    element.focus({ preventScroll: true });
  }

  async function showHistory(button) {
    const panel = root.querySelector("[data-history-panel]");
    if (!panel) { return; }
    const query = button.hasAttribute("data-version")
      ? "version=" + encodeURIComponent(button.getAttribute("data-version"))
      : "at=" + encodeURIComponent(button.getAttribute("data-at"));
    panel.textContent = "Loading…";
    const answer = await window.Clipyard.api("GET", wsPath + "/history?" + query);
    panel.textContent = "";
    if (!answer.ok) {
      const alert = document.createElement("p");
      alert.className = "error";
      alert.setAttribute("role", "alert");
      alert.textContent = (answer.body && answer.body.error) || "The history could not be read.";
      panel.appendChild(alert);
      reveal(alert);
      return;
    }
    const history = answer.body;
    const ws = history.workspace || {};
    const heading = document.createElement("h3");
    heading.setAttribute("data-history-version", String(history.version));
    heading.textContent = "After event " + history.version + " (" + history.occurredAt + "):";
    panel.appendChild(heading);
    reveal(heading);
    const list = document.createElement("dl");
    list.className = "facts";
    fact(list, "Status", ws.status);
    fact(list, "Mode", ws.mode);
    fact(list, "Branch", ws.branchName);
    fact(list, "Base ref", ws.baseRef);
    fact(list, "Working directory", ws.cwd);
    fact(list, "Generation", ws.lifecycleGeneration);
    fact(list, "Closed", ws.closedAt);
    fact(list, "Cleanup", ws.cleanupReason);
    if (ws.unconfined) {
      fact(list, "Confinement", "unconfined: this company is host-trusted, its commands run as the service user on the host, outside any sandbox.");
    }
    panel.appendChild(list);
    const details = document.createElement("details");
    const summary = document.createElement("summary");
    summary.textContent = "Full record";
    const pre = document.createElement("pre");
    pre.className = "log";
    pre.textContent = JSON.stringify(ws, null, 2);
    details.appendChild(summary);
    details.appendChild(pre);
    panel.appendChild(details);
  }

  function onClick(event) {
    const target = event.target instanceof Element ? event.target.closest("button") : null;
    if (!target || !root.contains(target) || target.disabled) { return; }
    if (target.hasAttribute("data-runtime-action")) { runtimeAction(target); }
    else if (target.hasAttribute("data-run-job")) { runJob(target); }
    else if (target.hasAttribute("data-archive")) { askArchive(); }
    else if (target.hasAttribute("data-reopen")) { lifecycle("active", "Reopening…"); }
    else if (target.hasAttribute("data-history")) { showHistory(target); }
  }

  function onSubmit(event) {
    const form = event.target;
    if (form instanceof HTMLFormElement && form.hasAttribute("data-config-form")) {
      event.preventDefault();
      saveConfig(form);
    }
  }

  function onDialogClose(event) {
    const dialog = event.target;
    if (dialog instanceof HTMLDialogElement && dialog.hasAttribute("data-archive-dialog")) {
      if (dialog.returnValue === "archive") { lifecycle("archived", "Archiving…"); }
    }
  }

  // Does a live event concern this page? Its JSON names the workspace, one of its runs or issues.
  function concerns(type, data) {
    const text = typeof data === "string" ? data : JSON.stringify(data || {});
    if (text.indexOf(workspaceId) !== -1) { return true; }
    if (type.indexOf("run.") !== 0) { return false; }
    const runs = section("runs");
    const ids = runs ? (runs.getAttribute("data-run-ids") + "," + runs.getAttribute("data-issue-ids")).split(",") : [];
    return ids.some(function (id) { return id && text.indexOf(id) !== -1; });
  }

  // Is the configuration form in use (focused, edited, or showing an error)? Then a live event
  // does not re-render it (what the operator typed, and the API's message about it, stay).
  function busyForm(form) {
    if (form.contains(document.activeElement)) { return true; }
    if (form.querySelector("[data-shown-error], [aria-invalid=\"true\"]")) { return true; }
    const slot = form.querySelector('[data-error-for=""]');
    if (slot && slot.textContent.trim() !== "") { return true; }
    return Array.from(form.elements).some(function (control) {
      return (control instanceof HTMLInputElement || control instanceof HTMLTextAreaElement) &&
        control.value !== control.defaultValue;
    });
  }

  // "Refresh" of the Changes section: the section again, from git (the link alone would only
  // move to its anchor when the page's address is already the same).
  document.addEventListener("click", function (event) {
    const link = event.target instanceof Element ? event.target.closest("[data-diff-refresh]") : null;
    if (!link) { return; }
    event.preventDefault();
    refresh(["diff"]);
  });

  function live() {
    const types = (root.getAttribute("data-live-event-types") || "").split(",").filter(Boolean);
    if (!types.length || !window.Clipyard.subscribe) { return; }
    let pending = null;
    let configChanged = false;
    function later() {
      if (pending !== null) { return; }
      pending = window.setTimeout(function () {
        pending = null;
        const names = LIVE_SECTIONS.slice();
        const form = document.querySelector("[data-config-form]");
        if (configChanged && form && !busyForm(form)) { names.push("configuration"); }
        configChanged = false;
        refresh(names);
      }, 300);
    }
    window.Clipyard.subscribe(types, function (type, data) {
      if (!concerns(type, data)) { return; }
      if (type.indexOf("workspace.config_changed") === 0) { configChanged = true; }
      later();
    }, { onOpen: later });
  }

  function start() {
    root = document.querySelector("[data-workspace-page]");
    if (!root) { return; }
    workspaceId = root.getAttribute("data-workspace-id");
    wsPath = "/api/execution-workspaces/" + encodeURIComponent(workspaceId);
    root.addEventListener("click", onClick);
    root.addEventListener("submit", onSubmit);
    root.addEventListener("close", onDialogClose, true);
    live();
  }

  document.addEventListener("DOMContentLoaded", start);
})();
