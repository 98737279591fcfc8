/*
 * operation_follow.js: the output of a running workspace operation (a provision command, a job),
 * followed on the page while it grows. No library.
 *
 * Every [data-follow-operation="<id>"] holds a pre[data-follow-stream="stdout"] and one for
 * "stderr". Every second the bytes written since the last read are fetched by range from
 * GET /api/workspace-operations/{id}/output?stream=&offset= and appended (decoded as UTF-8 across
 * reads). At most the last MiB of a stream is kept and shown (joining late, reading starts there).
 * What was read is kept by operation, so a section re-rendered by a live event shows it again at
 * once; an operation no longer on the page is forgotten. A read that fails is tried again later
 * and later (up to 30 s); nothing is read while the tab is hidden. The element is rendered only
 * while the operation is running: once it has ended, the operations table links to its whole
 * output instead.
 */
"use strict";

(function () {
  const POLL_MS = 1000;
  const CHUNK = 65536;
  const SHOWN = 1048576;
  const STREAMS = ["stdout", "stderr"];
  const followed = new Map();

  function stateOf(id) {
    let state = followed.get(id);
    if (!state) {
      state = { failures: 0, nextRead: 0 };
      STREAMS.forEach(function (name) {
        state[name] = { offset: 0, text: "", started: false, decoder: new TextDecoder("utf-8") };
      });
      followed.set(id, state);
    }
    return state;
  }

  // Reads what is new of one stream; resolves false when the server could not be read.
  async function read(id, name, stream) {
    for (;;) {
      const url = "/api/workspace-operations/" + encodeURIComponent(id) + "/output?stream=" + name +
        "&offset=" + stream.offset + "&length=" + CHUNK;
      let bytes;
      let total;
      try {
        const response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
        if (!response.ok) { return false; }
        total = Number(response.headers.get("X-Total-Bytes") || "0");
        bytes = new Uint8Array(await response.arrayBuffer());
      } catch (error) {
        return false;
      }
      if (!stream.started && total > SHOWN) {
        // Joining late: only the last MiB is shown.
        stream.started = true;
        stream.offset = total - SHOWN;
        stream.text = "[earlier output left out]\n";
        continue;
      }
      stream.started = true;
      if (bytes.length) {
        stream.text += stream.decoder.decode(bytes, { stream: true });
        if (stream.text.length > SHOWN) { stream.text = stream.text.slice(-SHOWN); }
        stream.offset += bytes.length;
      }
      if (!bytes.length || stream.offset >= total) { return true; }
    }
  }

  function render(element) {
    const state = stateOf(element.getAttribute("data-follow-operation"));
    STREAMS.forEach(function (name) {
      const pre = element.querySelector('[data-follow-stream="' + name + '"]');
      if (!pre || pre.textContent === state[name].text) { return; }
      const atEnd = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 24;
      const shown = pre.textContent;
      if (shown && state[name].text.startsWith(shown)) {
        pre.append(document.createTextNode(state[name].text.slice(shown.length)));
      } else {
        pre.textContent = state[name].text;
      }
      if (state[name].text) { pre.hidden = false; }
      if (atEnd) { pre.scrollTop = pre.scrollHeight; }
    });
  }

  async function readAll() {
    const ids = Array.from(document.querySelectorAll("[data-follow-operation]"), function (element) {
      return element.getAttribute("data-follow-operation");
    });
    followed.forEach(function (_, id) { if (ids.indexOf(id) === -1) { followed.delete(id); } });
    if (document.hidden) { return; }
    for (const id of ids) {
      const state = stateOf(id);
      if (Date.now() < state.nextRead) { continue; }
      let ok = true;
      for (const name of STREAMS) { ok = (await read(id, name, state[name])) && ok; }
      state.failures = ok ? 0 : state.failures + 1;
      state.nextRead = ok ? 0 : Date.now() + Math.min(30000, POLL_MS * Math.pow(2, state.failures));
    }
    document.querySelectorAll("[data-follow-operation]").forEach(render);
  }

  async function round() {
    try {
      await readAll();
    } finally {
      window.setTimeout(round, POLL_MS);
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (document.querySelector("[data-workspace-page]")) { round(); }
  });
  document.addEventListener("clipyard:fragment", function () {
    document.querySelectorAll("[data-follow-operation]").forEach(render);
  });
})();
