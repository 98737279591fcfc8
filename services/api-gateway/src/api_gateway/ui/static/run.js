/*
 * run.js: the run page (/runs/{id}). No library; uses actions.js (api, showError, clearErrors,
 * refreshFragment) and live.js (subscribe).
 *
 * - The log: read from GET /api/runs/{id}/log by byte range (?offset=), appended to [data-run-log]
 *   and kept scrolled to its end while the reader is there; every second while the run is queued
 *   or running, once more when it has ended. A run that has no adapter yet answers 404: tried again.
 * - Live: the run's events (data-live-event-types, those naming this run) refresh the "summary"
 *   fragment, whose data-run-status says whether the run is still active.
 * - Cancel: POST /api/runs/{id}/cancel; the API's error shows next to the button.
 * - Elapsed time: [data-elapsed-since] is kept by elapsed.js.
 */
"use strict";

(function () {
  const POLL_MS = 1000;
  const CHUNK = 65536;
  let root = null;
  let runId = "";
  let offset = 0;
  let reading = false;
  let readAgain = false;
  let finalRead = false;

  function summary() {
    return document.querySelector('[data-fragment="summary"]');
  }

  function active() {
    const element = summary();
    const status = element ? element.getAttribute("data-run-status") : "";
    return status === "queued" || status === "running";
  }

  function atEnd(pre) {
    return pre.scrollHeight - pre.scrollTop - pre.clientHeight < 24;
  }

  // One read at a time; a read asked for meanwhile runs when it ends (so the last bytes, written
  // just before the run ended, are read even when the end is seen during a read).
  async function readLog() {
    if (reading) { readAgain = true; return; }
    reading = true;
    readAgain = false;
    const pre = root.querySelector("[data-run-log]");
    const note = root.querySelector("[data-log-status]");
    try {
      for (;;) {
        const url = "/api/runs/" + encodeURIComponent(runId) + "/log?offset=" + offset + "&length=" + CHUNK;
        let response;
        try {
          response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
        } catch (error) {
          break;
        }
        if (response.status === 404) { break; }
        if (!response.ok) {
          note.textContent = "The log could not be read (" + response.status + ").";
          break;
        }
        const text = await response.text();
        const length = Number(response.headers.get("X-Log-Length") || "0");
        const total = Number(response.headers.get("X-Total-Bytes") || "0");
        if (text) {
          const follow = atEnd(pre);
          pre.append(document.createTextNode(text));
          if (follow) { pre.scrollTop = pre.scrollHeight; }
        }
        offset += length;
        if (length === 0 || offset >= total) { break; }
      }
    } finally {
      reading = false;
    }
    if (readAgain) { return readLog(); }
    if (!active()) {
      note.textContent = offset ? "The run has ended; this is its whole log." : "The run has ended without output.";
    }
  }

  function follow() {
    readLog().finally(function () {
      if (active()) {
        window.setTimeout(follow, POLL_MS);
      } else if (!finalRead) {
        finalRead = true;
        readLog();
      }
    });
  }

  function syncCancel() {
    const button = root.querySelector("[data-cancel-run]");
    const cancelling = summary() && summary().textContent.indexOf("(cancelling)") !== -1;
    if (button) { button.disabled = !active() || cancelling; }
  }

  async function refreshSummary() {
    const wasActive = active();
    await window.Clipyard.refreshFragment("summary");
    syncCancel();
    if (wasActive && !active()) { follow(); }
  }

  async function cancel(event) {
    const button = event.currentTarget;
    const actions = button.closest(".actions");
    window.Clipyard.clearErrors(actions);
    button.disabled = true;
    const answer = await window.Clipyard.api("POST", "/api/runs/" + encodeURIComponent(runId) + "/cancel");
    if (!answer.ok) {
      window.Clipyard.showError(actions, answer.body, { focus: false });
      button.disabled = false;
      return;
    }
    await refreshSummary();
  }

  function live() {
    const types = (root.getAttribute("data-live-event-types") || "").split(",").filter(Boolean);
    if (!types.length || !window.Clipyard.subscribe) { return; }
    let pending = null;
    function later() {
      if (pending !== null) { return; }
      pending = window.setTimeout(function () { pending = null; refreshSummary(); }, 200);
    }
    window.Clipyard.subscribe(types, function (type, data) {
      if (data && (data.aggregateId === runId || data.runId === runId)) { later(); }
    }, { onOpen: later });
  }

  function start() {
    root = document.querySelector("[data-run-page]");
    if (!root) { return; }
    runId = root.getAttribute("data-run-id");
    const button = root.querySelector("[data-cancel-run]");
    if (button) { button.addEventListener("click", cancel); }
    follow();
    live();
  }

  document.addEventListener("DOMContentLoaded", start);
})();
