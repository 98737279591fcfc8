/*
 * elapsed.js: every [data-elapsed-since="<ISO time>"] on any page reads "running for 1 min 12 s",
 * updated every second (long operations and runs show how long they have been going). No library.
 */
"use strict";

(function () {
  function tick() {
    document.querySelectorAll("[data-elapsed-since]").forEach(function (element) {
      const since = Date.parse(element.getAttribute("data-elapsed-since"));
      if (Number.isNaN(since)) { return; }
      const seconds = Math.max(0, Math.round((Date.now() - since) / 1000));
      const minutes = Math.floor(seconds / 60);
      element.textContent = "running for " + (minutes ? minutes + " min " : "") + (seconds % 60) + " s";
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    tick();
    window.setInterval(tick, 1000);
  });
  document.addEventListener("clipyard:fragment", tick);
})();
