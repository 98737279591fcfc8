/*
 * progress_panel.js: "Work in progress" on the workspaces page: the company's long operations
 * (a realize, a managed clone, a service start, a job) as they start, move on and end, from the
 * live events operation.started.v1, operation.progressed.v1 and operation.finished.v1. No
 * library; uses live.js (subscribe).
 *
 * Each operation is one list item: its kind, the step it is at (git's own phase and percent for
 * a clone), a <progress> bar when a percent is known, and how long it has been running
 * (elapsed.js). An ended one says how it ended and goes away after a few seconds. The panel is
 * hidden while nothing is in progress. Only operations that start or report while the page is
 * open are shown; after a reconnection each listed one is read again (GET /api/operations/{id})
 * so an end missed meanwhile still removes it.
 */
"use strict";

(function () {
  const KEEP_ENDED_MS = 5000;
  let panel = null;
  let list = null;
  const items = new Map();

  function payload(data) {
    return (data && data.data && typeof data.data === "object") ? data.data : (data || {});
  }

  function item(id, startedAt) {
    let li = items.get(id);
    if (!li) {
      li = document.createElement("li");
      li.setAttribute("data-progress-operation", id);
      const kind = document.createElement("strong");
      kind.setAttribute("data-field", "progress-kind");
      const step = document.createElement("span");
      step.setAttribute("data-field", "progress-step");
      const bar = document.createElement("progress");
      bar.max = 100;
      bar.hidden = true;
      const elapsed = document.createElement("span");
      elapsed.className = "muted";
      elapsed.setAttribute("data-elapsed-since", startedAt || new Date().toISOString());
      li.append(kind, " ", step, " ", bar, " ", elapsed);
      list.append(li);
      items.set(id, li);
    }
    panel.hidden = false;
    return li;
  }

  function show(type, data) {
    const event = payload(data);
    const id = data.aggregateId || event.aggregateId;
    if (!id) { return; }
    const li = item(id, data.occurredAt || event.occurredAt);
    if (event.kind) { li.querySelector('[data-field="progress-kind"]').textContent = event.kind; }
    const step = li.querySelector('[data-field="progress-step"]');
    const bar = li.querySelector("progress");
    if (type.indexOf("operation.progressed") === 0 && event.progress) {
      const progress = event.progress;
      step.textContent = progress.phase.replace(/_/g, " ") + ": " + progress.message +
        (progress.percent !== null && progress.percent !== undefined ? " " + progress.percent + " %" : "");
      bar.hidden = progress.percent === null || progress.percent === undefined;
      if (!bar.hidden) { bar.value = progress.percent; bar.setAttribute("aria-label", step.textContent); }
    } else if (type.indexOf("operation.started") === 0) {
      step.textContent = "started";
    } else if (type.indexOf("operation.finished") === 0) {
      step.textContent = event.status || "ended";
      bar.hidden = true;
      const elapsed = li.querySelector("[data-elapsed-since]");
      if (elapsed) { elapsed.removeAttribute("data-elapsed-since"); elapsed.textContent = ""; }
      window.setTimeout(function () {
        li.remove();
        items.delete(id);
        if (!items.size) { panel.hidden = true; }
      }, KEEP_ENDED_MS);
    }
  }

  // After a reconnection: what each listed operation is now (an end missed meanwhile removes it),
  // and when it really started.
  function recheck() {
    items.forEach(async function (li, id) {
      const answer = await window.Clipyard.api("GET", "/api/operations/" + encodeURIComponent(id));
      if (!answer.ok || !answer.body) { return; }
      const elapsed = li.querySelector("[data-elapsed-since]");
      if (elapsed && answer.body.startedAt) { elapsed.setAttribute("data-elapsed-since", answer.body.startedAt); }
      if (answer.body.status !== "running") {
        show("operation.finished.v1", { aggregateId: id, data: { kind: answer.body.kind, status: answer.body.status } });
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    panel = document.querySelector("[data-progress-panel]");
    if (!panel || !window.Clipyard.subscribe) { return; }
    list = panel.querySelector("[data-progress-list]");
    const types = (panel.getAttribute("data-progress-event-types") || "").split(",").filter(Boolean);
    window.Clipyard.subscribe(types, show, { status: panel.querySelector("[data-progress-status]"), onOpen: recheck });
  });
})();
