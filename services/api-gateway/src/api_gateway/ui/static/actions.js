/*
 * actions.js: calling the JSON API from the page, and showing its errors. No library.
 *
 * Interface (global functions, also on window.Clipyard):
 *   csrfToken()                       the session's CSRF token, from <meta name="csrf-token">.
 *   api(method, path, body)           fetch `path` (same origin, cookie sent) with `body` as JSON
 *                                     (omitted when undefined) and the X-CSRF-Token header.
 *                                     Resolves to {ok, status, body}: body is the parsed JSON
 *                                     (or the text for non-JSON answers, null when empty). Never
 *                                     rejects: a network failure gives {ok: false, status: 0,
 *                                     body: {error: "...", code: "network_error", details: {}}}.
 *   showError(element, body)          show an API error ({error, code, details}) inside `element`
 *                                     (a form or section): next to the control whose
 *                                     data-api-field (or name) matches details.fields[].field
 *                                     (the longest prefix wins: data-api-field="config.workspaceRuntime"
 *                                     takes "config.workspaceRuntime.services[0].command"), else
 *                                     in the element's [data-error-for=""] slot, else at its top;
 *                                     always in an element with role="alert".
 *   clearErrors(element)              remove the messages showError put in `element`.
 *   refreshFragment(name, container)  fetch the current page with ?fragment=<name> and replace the
 *                                     element [data-fragment="<name>"] (inside `container`,
 *                                     default document) with the answer. Resolves true when
 *                                     replaced. A signed-out session goes to /sign-in.
 */
"use strict";

function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.getAttribute("content") : "";
}

async function api(method, path, body) {
  const headers = { "Accept": "application/json", "X-CSRF-Token": csrfToken() };
  const init = { method: method, headers: headers, credentials: "same-origin" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    return {
      ok: false,
      status: 0,
      body: { error: "The gateway did not answer; check that it is running and try again.",
              code: "network_error", details: {} },
    };
  }
  const text = await response.text();
  let parsed = null;
  if (text) {
    const type = response.headers.get("Content-Type") || "";
    if (type.indexOf("json") !== -1) {
      try { parsed = JSON.parse(text); } catch (error) { parsed = text; }
    } else {
      parsed = text;
    }
  }
  return { ok: response.ok, status: response.status, body: parsed };
}

function _fieldMatches(apiField, candidate) {
  if (!candidate) { return false; }
  if (apiField === candidate) { return true; }
  if (apiField.indexOf(candidate) !== 0) { return false; }
  const next = apiField.charAt(candidate.length);
  return next === "." || next === "[";
}

function _controlFor(element, apiField) {
  let best = null;
  let bestLength = -1;
  element.querySelectorAll("input, select, textarea").forEach(function (control) {
    const names = [control.getAttribute("data-api-field"), control.getAttribute("name")];
    names.forEach(function (name) {
      if (name && _fieldMatches(apiField, name) && name.length > bestLength) {
        best = control;
        bestLength = name.length;
      }
    });
  });
  return best;
}

function _alertAfter(control) {
  const id = (control.id || control.getAttribute("name") || "field") + "-error";
  let alert = document.getElementById(id);
  if (!alert) {
    alert = document.createElement("p");
    alert.id = id;
    alert.className = "error";
    alert.setAttribute("role", "alert");
    alert.setAttribute("data-shown-error", "");
    control.insertAdjacentElement("afterend", alert);
  }
  control.setAttribute("aria-invalid", "true");
  control.setAttribute("aria-describedby", id);
  return alert;
}

function _generalAlert(element) {
  let alert = element.querySelector('[data-error-for=""]');
  if (!alert) {
    alert = element.querySelector("[data-general-error]");
  }
  if (!alert) {
    alert = document.createElement("p");
    alert.className = "error";
    alert.setAttribute("data-general-error", "");
    alert.setAttribute("data-shown-error", "");
    element.insertAdjacentElement("afterbegin", alert);
  }
  alert.setAttribute("role", "alert");
  return alert;
}

function clearErrors(element) {
  element.querySelectorAll("[data-shown-error]").forEach(function (node) { node.remove(); });
  element.querySelectorAll('[data-error-for=""]').forEach(function (node) { node.textContent = ""; });
  element.querySelectorAll('[aria-invalid="true"]').forEach(function (control) {
    control.removeAttribute("aria-invalid");
    control.removeAttribute("aria-describedby");
  });
}

function showError(element, body) {
  clearErrors(element);
  const error = (body && typeof body === "object") ? body : { error: String(body || "The request failed."), details: {} };
  const message = error.error || "The request failed.";
  const fields = (error.details && Array.isArray(error.details.fields)) ? error.details.fields : [];
  let placed = false;
  fields.forEach(function (entry) {
    const control = entry && entry.field ? _controlFor(element, String(entry.field)) : null;
    if (control) {
      _alertAfter(control).textContent = message;
      if (!placed) { control.focus(); }
      placed = true;
    }
  });
  if (!placed && error.details && error.details.field) {
    const control = _controlFor(element, String(error.details.field));
    if (control) {
      _alertAfter(control).textContent = message;
      control.focus();
      placed = true;
    }
  }
  if (!placed) {
    _generalAlert(element).textContent = message;
  }
}

async function refreshFragment(name, container) {
  const url = new URL(window.location.href);
  url.searchParams.set("fragment", name);
  let response;
  try {
    response = await fetch(url.toString(), { credentials: "same-origin", headers: { "Accept": "text/html" } });
  } catch (error) {
    return false;
  }
  if (response.redirected && new URL(response.url).pathname === "/sign-in") {
    window.location.assign("/sign-in");
    return false;
  }
  if (!response.ok) { return false; }
  const html = await response.text();
  const target = (container || document).querySelector('[data-fragment="' + name + '"]');
  if (!target) { return false; }
  const template = document.createElement("template");
  template.innerHTML = html.trim();
  const fresh = template.content.querySelector('[data-fragment="' + name + '"]') || template.content.firstElementChild;
  if (!fresh) { return false; }
  target.replaceWith(fresh);
  document.dispatchEvent(new CustomEvent("clipyard:fragment", { detail: { name: name, element: fresh } }));
  return true;
}

window.Clipyard = Object.assign(window.Clipyard || {}, {
  csrfToken: csrfToken, api: api, showError: showError, clearErrors: clearErrors,
  refreshFragment: refreshFragment,
});
