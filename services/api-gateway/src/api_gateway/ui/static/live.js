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
 *                onOpen: called on every (re)connection, the first one included, so the page can
 *                refetch what it may have missed (events between the page's rendering and the
 *                stream opening, or while it was away)}.
 *   Opens an EventSource on /api/companies/{companyId}/events/stream?types=... (companyId from
 *   <body data-company-id>; the session cookie authenticates it). The status element (role="status",
 *   aria-live="polite") reads "Live" while connected and "Reconnecting…" otherwise. When the stream
 *   fails or ends, the session is checked (GET /api/companies/{companyId}): a 401 (or a redirect to
 *   /sign-in) means it ended, so the page goes to /sign-in and stops reconnecting; otherwise (the
 *   gateway restarted, the network went away) the stream is reopened with a growing delay (up to
 *   15 s). The stream is closed on `pagehide` and reopened on a `pageshow` from the back/forward
 *   cache (with onOpen, as the page may have missed events meanwhile).
 *
 * Declarative use (no page script needed): an element with
 *   data-live-types="workspace.realized.v1,..."  and  data-live-fragment="rows"
 * refreshes the fragment "rows" (refreshFragment from actions.js, at most every 250 ms) on each of
 * those events, and after every reconnection.
 */
"use strict";

function _signedOut() {
  window.location.assign("/sign-in");
}

// Is the session still valid? Resolves "valid", "ended" or "unknown" (no answer).
async function _sessionState(companyId) {
  let response;
  try {
    response = await fetch("/api/companies/" + encodeURIComponent(companyId), {
      credentials: "same-origin", headers: { "Accept": "application/json" }, cache: "no-store",
    });
  } catch (error) {
    return "unknown";
  }
  if (response.status === 401 || (response.redirected && new URL(response.url).pathname === "/sign-in")) {
    return "ended";
  }
  return response.ok || response.status === 403 || response.status === 404 ? "valid" : "unknown";
}

function subscribe(types, onEvent, options) {
  const opts = options || {};
  const status = opts.status || document.querySelector("[data-live-status]");
  const companyId = document.body.getAttribute("data-company-id");
  const url = "/api/companies/" + encodeURIComponent(companyId) + "/events/stream?types=" +
    encodeURIComponent(types.join(","));
  let source = null;
  let closed = false;
  let delay = 1000;
  let timer = null;
  let checking = false;

  function say(text) {
    if (status && status.textContent !== text) { status.textContent = text; }
  }

  function stop() {
    if (timer !== null) { window.clearTimeout(timer); timer = null; }
    if (source) { source.close(); source = null; }
  }

  // The stream failed or ended: find out whether the session did, before trying again.
  async function check(current) {
    if (checking) { return; }
    checking = true;
    const state = await _sessionState(companyId);
    checking = false;
    if (closed || current !== source) { return; }
    if (state === "ended") {
      closed = true;
      stop();
      say("Signed out.");
      _signedOut();
      return;
    }
    if (current.readyState === EventSource.CLOSED) {
      current.close();
      source = null;
      timer = window.setTimeout(function () { timer = null; open(); }, delay);
      delay = Math.min(delay * 2, 15000);
    }
  }

  function open() {
    if (closed || source !== null) { return; }
    const current = new EventSource(url, { withCredentials: true });
    source = current;
    current.addEventListener("open", function () {
      if (current !== source) { return; }
      delay = 1000;
      say("Live");
      if (typeof opts.onOpen === "function") { opts.onOpen(); }
    });
    current.addEventListener("error", function () {
      if (current !== source || closed) { return; }
      say("Reconnecting…");
      check(current);
    });
    types.forEach(function (type) {
      current.addEventListener(type, function (event) {
        let data = null;
        try { data = JSON.parse(event.data); } catch (error) { data = event.data; }
        onEvent(type, data, event);
      });
    });
  }

  const handle = {
    close: function () {
      closed = true;
      stop();
    },
  };
  say("Reconnecting…");
  open();
  window.addEventListener("pagehide", function () {
    if (closed) { return; }
    stop();
    closed = true;
    handle.suspended = true;
  });
  window.addEventListener("pageshow", function (event) {
    if (!event.persisted || !handle.suspended) { return; }
    handle.suspended = false;
    closed = false;
    delay = 1000;
    say("Reconnecting…");
    open();
  });
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
