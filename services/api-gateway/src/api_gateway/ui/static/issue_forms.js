/*
 * issue_forms.js: creating an issue (/issues, form[data-new-issue]) and changing an issue's status
 * and assignee (/issues/{id}, form[data-issue-change]). No library; uses actions.js.
 *
 * - New issue: POST /api/companies/{companyId}/issues with {title, projectId, status,
 *   assigneeAgentId?}; on 201 the page goes to the new issue's page; else the API's error shows
 *   next to the field it names (data-api-field) or at the form's top.
 * - Change: PATCH /api/issues/{id} with what the operator changed of {status, assigneeAgentId}
 *   (null: unassigned) since the page showed it; on success the "facts" fragment is re-rendered
 *   and the form says "Saved"; else the API's error shows.
 * While a request runs the form is aria-busy and its button disabled.
 */
"use strict";

(function () {
  function fieldsOf(form) {
    const body = {};
    new FormData(form).forEach(function (value, name) { body[name] = String(value); });
    return body;
  }

  async function send(form, method, path, body) {
    const button = form.querySelector("button[type=submit]");
    window.Clipyard.clearErrors(form);
    form.setAttribute("aria-busy", "true");
    if (button) { button.disabled = true; }
    try {
      return await window.Clipyard.api(method, path, body);
    } finally {
      form.removeAttribute("aria-busy");
      if (button) { button.disabled = false; }
    }
  }

  async function create(event) {
    event.preventDefault();
    const form = event.currentTarget;
    const companyId = document.body.getAttribute("data-company-id") || "";
    const body = fieldsOf(form);
    body.title = (body.title || "").trim();
    if (!body.assigneeAgentId) { delete body.assigneeAgentId; }
    const answer = await send(form, "POST", "/api/companies/" + encodeURIComponent(companyId) + "/issues", body);
    if (answer.ok && answer.body && answer.body.id) {
      window.location.assign("/issues/" + encodeURIComponent(answer.body.id));
      return;
    }
    window.Clipyard.showError(form, answer.body);
  }

  async function change(event) {
    event.preventDefault();
    const form = event.currentTarget;
    const root = document.querySelector("[data-issue-page]");
    const issueId = root ? root.getAttribute("data-issue-id") : "";
    const fields = fieldsOf(form);
    // Only what the operator changed since the page showed it: a status or an assignee changed
    // meanwhile (by an agent) is not written back.
    const body = {};
    form.querySelectorAll("select").forEach(function (select) {
      const initial = Array.from(select.options).find(function (o) { return o.defaultSelected; });
      if (select.value !== (initial ? initial.value : "")) {
        body[select.name] = fields[select.name] || null;
      }
    });
    const status = form.querySelector("[data-action-status]");
    if (!Object.keys(body).length) { status.textContent = "Nothing to save"; return; }
    status.textContent = "Saving…";
    const answer = await send(form, "PATCH", "/api/issues/" + encodeURIComponent(issueId), body);
    if (!answer.ok) {
      status.textContent = "";
      window.Clipyard.showError(form, answer.body);
      return;
    }
    await window.Clipyard.refreshFragment("facts");
    form.querySelectorAll("select").forEach(function (select) {
      Array.from(select.options).forEach(function (o) { o.defaultSelected = o.value === select.value; });
    });
    status.textContent = "Saved";
  }

  function start() {
    const created = document.querySelector("form[data-new-issue]");
    if (created) { created.addEventListener("submit", create); }
    const changed = document.querySelector("form[data-issue-change]");
    if (changed) { changed.addEventListener("submit", change); }
  }

  document.addEventListener("DOMContentLoaded", start);
})();
