/*
 * issue.js: the issue page's "Workspace mode" selector (/issues/{id}). No library.
 *
 * Choosing an option only changes the select (arrow keys fire `change` on every press): nothing
 * is sent until the operator presses the "Save workspace mode" button this script adds to the
 * form (or Enter in the select). Saving PATCHes /api/issues/{id} with {executionWorkspaceSettings:
 * {mode, executionWorkspaceId?}} ("reuse:<id>" → mode reuse_existing with that workspace), then
 * re-renders the "workspace" fragment and says "Saved" (role="status"), or shows the API's error
 * next to the selector (role="alert") and puts the saved choice back. While saving, the form is
 * aria-busy (nothing is disabled, so the focus stays where it was and comes back there after the
 * fragment is re-rendered).
 */
"use strict";

(function () {
  const SAVE_ID = "workspace-mode-save";
  let saving = false;

  function settingsOf(value) {
    if (value.indexOf("reuse:") === 0) {
      return { mode: "reuse_existing", executionWorkspaceId: value.slice("reuse:".length) };
    }
    return { mode: value };
  }

  function statusOf(form, text) {
    const status = form ? form.querySelector("[data-action-status]") : null;
    if (status && status.textContent !== text) { status.textContent = text; }
  }

  function formOf() {
    return document.querySelector("[data-workspace-mode-form]");
  }

  // The "Save workspace mode" button, after the selector's field (once per rendering of the form).
  function enhance() {
    const form = formOf();
    if (!form || form.querySelector("#" + SAVE_ID)) { return; }
    const select = form.querySelector("select");
    if (!select) { return; }
    const actions = document.createElement("div");
    actions.className = "actions";
    const button = document.createElement("button");
    button.type = "submit";
    button.id = SAVE_ID;
    button.textContent = "Save workspace mode";
    actions.appendChild(button);
    const field = select.closest(".field") || select;
    field.insertAdjacentElement("afterend", actions);
  }

  function pending(select) {
    const form = select.closest("form");
    const current = select.getAttribute("data-current") || "inherit";
    if (saving) { return; }
    statusOf(form, select.value === current ? "" : "Not saved yet.");
  }

  async function save(form, issueId) {
    const select = form.querySelector("select");
    if (!select || saving) { return; }
    saving = true;
    const focusedId = document.activeElement && form.contains(document.activeElement) ? document.activeElement.id : "";
    const previous = select.getAttribute("data-current") || "inherit";
    window.Clipyard.clearErrors(form);
    statusOf(form, "Saving…");
    form.setAttribute("aria-busy", "true");
    let answer;
    try {
      answer = await window.Clipyard.api("PATCH", "/api/issues/" + encodeURIComponent(issueId),
        { executionWorkspaceSettings: settingsOf(select.value) });
    } finally {
      form.removeAttribute("aria-busy");
      saving = false;
    }
    if (!answer.ok) {
      statusOf(form, "");
      select.value = previous;
      window.Clipyard.showError(form, answer.body, { focus: false });
      return;
    }
    select.setAttribute("data-current", select.value);
    await window.Clipyard.refreshFragment("workspace");
    enhance();
    const fresh = formOf() || form;
    if (focusedId && document.activeElement !== fresh.querySelector("#" + CSS.escape(focusedId))) {
      const again = document.getElementById(focusedId);
      if (again) { again.focus(); }
    }
    statusOf(fresh, "Saved");
  }

  function start() {
    const root = document.querySelector("[data-issue-page]");
    if (!root) { return; }
    const issueId = root.getAttribute("data-issue-id");
    enhance();
    root.addEventListener("change", function (event) {
      const select = event.target;
      if (select instanceof HTMLSelectElement && select.closest("[data-workspace-mode-form]")) {
        pending(select);
      }
    });
    root.addEventListener("keydown", function (event) {
      const select = event.target;
      if (event.key === "Enter" && select instanceof HTMLSelectElement && select.closest("[data-workspace-mode-form]")) {
        event.preventDefault();
        save(select.closest("form"), issueId);
      }
    });
    root.addEventListener("submit", function (event) {
      const form = event.target;
      if (form instanceof HTMLFormElement && form.hasAttribute("data-workspace-mode-form")) {
        event.preventDefault();
        save(form, issueId);
      }
    });
  }

  document.addEventListener("DOMContentLoaded", start);
})();
