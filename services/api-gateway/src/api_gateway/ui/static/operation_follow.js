/*
 * operation_follow.js: the output of a running workspace operation (a provision command, a job),
 * followed on the page while it grows. No library.
 *
 * Every [data-follow-operation="<id>"] holds a pre[data-follow-stream="stdout"] and one for
 * "stderr". Every second the bytes written since the last read are fetched by range from
 * GET /api/workspace-operations/{id}/output?stream=&offset= and appended (decoded as UTF-8 across
 * reads). What was read is kept by operation, so a section re-rendered by a live event shows it
 * again at once. The element is rendered only while the operation is running: once it has ended,
 * the operations table links to its whole output instead.
 */
"use strict";

(function () {
  const POLL_MS = 1000;
  const CHUNK = 65536;
  const STREAMS = ["stdout", "stderr"];
  const followed = new Map();

  function stateOf(id) {
    let state = followed.get(id);
    if (!state) {
      state = {};
      STREAMS.forEach(function (name) {
        state[name] = { offset: 0, text: "", decoder: new TextDecoder("utf-8") };
      });
      followed.set(id, state);
    }
    return state;
  }

  async function read(id, stream) {
    for (;;) {
      const url = "/api/workspace-operations/" + encodeURIComponent(id) + "/output?stream=" + stream.name +
        "&offset=" + stream.state.offset + "&length=" + CHUNK;
      let response;
      try {
        response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
      } catch (error) {
        return;
      }
      if (!response.ok) { return; }
      const bytes = new Uint8Array(await response.arrayBuffer());
      const total = Number(response.headers.get("X-Total-Bytes") || "0");
      if (bytes.length) {
        stream.state.text += stream.state.decoder.decode(bytes, { stream: true });
        stream.state.offset += bytes.length;
      }
      if (!bytes.length || stream.state.offset >= total) { return; }
    }
  }

  function render(element) {
    const state = stateOf(element.getAttribute("data-follow-operation"));
    STREAMS.forEach(function (name) {
      const pre = element.querySelector('[data-follow-stream="' + name + '"]');
      if (!pre || pre.textContent === state[name].text) { return; }
      const atEnd = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 24;
      pre.textContent = state[name].text;
      if (state[name].text) { pre.hidden = false; }
      if (atEnd) { pre.scrollTop = pre.scrollHeight; }
    });
  }

  async function round() {
    const elements = Array.from(document.querySelectorAll("[data-follow-operation]"));
    for (const element of elements) {
      const id = element.getAttribute("data-follow-operation");
      const state = stateOf(id);
      for (const name of STREAMS) { await read(id, { name: name, state: state[name] }); }
    }
    document.querySelectorAll("[data-follow-operation]").forEach(render);
    window.setTimeout(round, POLL_MS);
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (document.querySelector("[data-workspace-page]")) { round(); }
  });
  document.addEventListener("clipyard:fragment", function () {
    document.querySelectorAll("[data-follow-operation]").forEach(render);
  });
})();
