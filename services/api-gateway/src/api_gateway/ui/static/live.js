/*
 * live.js: the company's live events (Server-Sent Events) and the "Live" status line. No library.
 *
 * Interface (global function, also window.Clipyard.subscribe):
 *   subscribe(types, onEvent, options) -> {close()}
 *     types     event types to receive, e.g. ["workspace.realized.v1"] (exact names: the stream's
 *               ?types= refuses unknown ones; a page can render its list in a data-* attribute).
 *     onEvent   called as onEvent(type, data, messageEvent) with the event's JSON envelope
 *               (data.aggregateId, data.companyId, data.runId, data.data, ...).
 *     options   {status: element (default the page's [data-live-status]),
 *                onOpen: called on every (re)connection after the first, so the page can refetch
 *                what it may have missed}.
 *   Opens an EventSource on /api/companies/{companyId}/events/stream?types=... (companyId from
 *   <body data-company-id>; the session cookie authenticates it). The status element (role="status",
 *   aria-live="polite") reads "Live" while connected and "Reconnecting…" otherwise; a closed stream
 *   (the gateway restarted, the session ended) is reopened with a growing delay (up to 15 s).
 *
 * Declarative use (no page script needed): an element with
 *   data-live-types="workspace.realized.v1,..."  and  data-live-fragment="rows"
 * refreshes the fragment "rows" (refreshFragment from actions.js, at most every 250 ms) on each of
 * those events, and after every reconnection.
 */
"use strict";

function subscribe(types, onEvent, options) {
  const opts = options || {};
  const status = opts.status || document.querySelector("[data-live-status]");
  const companyId = document.body.getAttribute("data-company-id");
  const url = "/api/companies/" + encodeURIComponent(companyId) + "/events/stream?types=" +
    encodeURIComponent(types.join(","));
  let source = null;
  let closed = false;
  let opened = 0;
  let delay = 1000;
  let timer = null;

  function say(text) {
    if (status && status.textContent !== text) { status.textContent = text; }
  }

  function open() {
    if (closed) { return; }
    source = new EventSource(url, { withCredentials: true });
    source.addEventListener("open", function () {
      delay = 1000;
      say("Live");
      opened += 1;
      if (opened > 1 && typeof opts.onOpen === "function") { opts.onOpen(); }
    });
    source.addEventListener("error", function () {
      say("Reconnecting…");
      if (source.readyState === EventSource.CLOSED) {
        source.close();
        timer = window.setTimeout(open, delay);
        delay = Math.min(delay * 2, 15000);
      }
    });
    types.forEach(function (type) {
      source.addEventListener(type, function (event) {
        let data = null;
        try { data = JSON.parse(event.data); } catch (error) { data = event.data; }
        onEvent(type, data, event);
      });
    });
  }

  say("Reconnecting…");
  open();
  window.addEventListener("pagehide", function () { handle.close(); });
  const handle = {
    close: function () {
      closed = true;
      if (timer !== null) { window.clearTimeout(timer); }
      if (source) { source.close(); }
    },
  };
  return handle;
}

function _liveFragments() {
  document.querySelectorAll("[data-live-types][data-live-fragment]").forEach(function (element) {
    const types = element.getAttribute("data-live-types").split(",").filter(Boolean);
    const name = element.getAttribute("data-live-fragment");
    let pending = null;
    function refresh() {
      if (pending !== null) { return; }
      pending = window.setTimeout(function () {
        pending = null;
        window.Clipyard.refreshFragment(name);
      }, 250);
    }
    subscribe(types, refresh, { onOpen: refresh });
  });
}

window.Clipyard = Object.assign(window.Clipyard || {}, { subscribe: subscribe });
document.addEventListener("DOMContentLoaded", _liveFragments);
