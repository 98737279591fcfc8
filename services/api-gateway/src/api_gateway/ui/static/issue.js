/*
 * issue.js: the issue page's "Workspace mode" selector (/issues/{id}). No library.
 *
 * Choosing an option PATCHes /api/issues/{id} with {executionWorkspaceSettings: {mode,
 * executionWorkspaceId?}} ("reuse:<id>" → mode reuse_existing with that workspace), then
 * re-renders the "workspace" fragment and says "Saved" (role="status"), or shows the API's error
 * next to the selector (role="alert") and puts the previous choice back.
 */
"use strict";

(function () {
  function settingsOf(value) {
    if (value.indexOf("reuse:") === 0) {
      return { mode: "reuse_existing", executionWorkspaceId: value.slice("reuse:".length) };
    }
    return { mode: value };
  }

  function statusOf(form, text) {
    const status = form ? form.querySelector("[data-action-status]") : null;
    if (status) { status.textContent = text; }
  }

  async function choose(select, issueId) {
    const form = select.closest("form");
    const previous = select.getAttribute("data-current") || "inherit";
    window.Clipyard.clearErrors(form);
    statusOf(form, "Saving…");
    select.disabled = true;
    const answer = await window.Clipyard.api("PATCH", "/api/issues/" + encodeURIComponent(issueId),
      { executionWorkspaceSettings: settingsOf(select.value) });
    select.disabled = false;
    if (!answer.ok) {
      statusOf(form, "");
      select.value = previous;
      window.Clipyard.showError(form, answer.body);
      return;
    }
    await window.Clipyard.refreshFragment("workspace");
    const fresh = document.querySelector("[data-workspace-mode-form]");
    const again = fresh ? fresh.querySelector("select") : null;
    if (again) { again.focus(); }
    statusOf(fresh, "Saved");
  }

  function start() {
    const root = document.querySelector("[data-issue-page]");
    if (!root) { return; }
    const issueId = root.getAttribute("data-issue-id");
    root.addEventListener("change", function (event) {
      const select = event.target;
      if (select instanceof HTMLSelectElement && select.closest("[data-workspace-mode-form]")) {
        choose(select, issueId);
      }
    });
    root.addEventListener("submit", function (event) {
      if (event.target instanceof HTMLFormElement && event.target.hasAttribute("data-workspace-mode-form")) {
        event.preventDefault();
      }
    });
  }

  document.addEventListener("DOMContentLoaded", start);
})();
