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
 *   showError(element, body, options)
 *                                     show an API error ({error, code, details}) inside `element`
 *                                     (a form or section): each details.fields[] entry's own
 *                                     message (its top-level `error` when it has none) next to
 *                                     the control whose data-api-field (or name) matches its
 *                                     field (the longest prefix wins: data-api-field=
 *                                     "config.workspaceRuntime" takes
 *                                     "config.workspaceRuntime.services[0].command"); the
 *                                     top-level `error` (plus the messages of fields no control
 *                                     takes) in the element's [data-error-for=""] slot, else at
 *                                     its top, when no field took a message. Always in an element
 *                                     with role="alert". The first control named gets the focus
 *                                     unless options.focus === false.
 *   clearErrors(element)              remove the messages showError put in `element`.
 *   refreshFragment(name, container)  fetch the current page with ?fragment=<name> and put the
 *                                     answer in place of the element [data-fragment="<name>"]
 *                                     (inside `container`, default document). The element's own
 *                                     top-level action slots ([data-error-for=""],
 *                                     [data-action-status], [data-blocking-reasons]) are kept as
 *                                     they are (an action's message stays until the next action),
 *                                     and a top-level role="alert" whose text did not change is
 *                                     kept too (not announced again). Resolves true when
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

function _add(alert, text) {
  const lines = alert.textContent ? alert.textContent.split("\n") : [];
  if (lines.indexOf(text) === -1) { lines.push(text); }
  alert.textContent = lines.join("\n");
}

function showError(element, body, options) {
  clearErrors(element);
  const focus = !(options && options.focus === false);
  const error = (body && typeof body === "object") ? body : { error: String(body || "The request failed."), details: {} };
  const message = error.error || "The request failed.";
  const details = (error.details && typeof error.details === "object") ? error.details : {};
  const fields = Array.isArray(details.fields) ? details.fields.slice() : [];
  if (!fields.length && details.field) {
    fields.push({ field: details.field, message: details.message });
  }
  let first = null;
  const unplaced = [];
  fields.forEach(function (entry) {
    if (!entry || !entry.field) { return; }
    const text = (typeof entry.message === "string" && entry.message) ? entry.message : message;
    const control = _controlFor(element, String(entry.field));
    if (control) {
      _add(_alertAfter(control), text);
      if (first === null) { first = control; }
    } else if (text !== message) {
      unplaced.push(String(entry.field) + ": " + text);
    }
  });
  if (first === null || unplaced.length) {
    const general = _generalAlert(element);
    general.textContent = "";
    _add(general, message);
    unplaced.forEach(function (text) { _add(general, text); });
  }
  if (first !== null && focus) { first.focus(); }
}

// Top-level children of a fragment kept across a refresh: the action slots (always: an action's
// message and status stay until the next action) and an alert whose text did not change (not
// announced again). The key pairs an old child with its fresh counterpart.
function _keepKey(node, index) {
  if (!(node instanceof Element)) { return null; }
  if (node.matches('[data-error-for=""]')) { return "slot:error"; }
  if (node.matches("[data-action-status]")) { return "slot:status"; }
  if (node.matches("[data-blocking-reasons]")) { return "slot:reasons"; }
  if (node.getAttribute("role") === "alert") { return "alert:" + index + ":" + node.textContent.trim(); }
  return null;
}

function _keyed(element) {
  const keys = new Map();
  let alerts = 0;
  Array.from(element.children).forEach(function (child) {
    const key = _keepKey(child, alerts);
    if (key === null) { return; }
    if (key.indexOf("alert:") === 0) { alerts += 1; }
    if (!keys.has(key)) { keys.set(key, child); }
  });
  return keys;
}

// Make `target` show `fresh` without taking the kept children out of the document.
function _morph(target, fresh) {
  const old = _keyed(target);
  const incoming = _keyed(fresh);
  const keep = new Set();
  const general = Array.from(target.children).filter(function (child) { return child.matches("[data-general-error]"); });
  general.forEach(function (child) { keep.add(child); });
  const wanted = general.concat(Array.from(fresh.childNodes).map(function (node) {
    for (const [key, element] of incoming) {
      if (element === node && old.has(key)) {
        keep.add(old.get(key));
        return old.get(key);
      }
    }
    return node;
  }));
  Array.from(target.attributes).forEach(function (attr) {
    if (!fresh.hasAttribute(attr.name)) { target.removeAttribute(attr.name); }
  });
  Array.from(fresh.attributes).forEach(function (attr) {
    if (target.getAttribute(attr.name) !== attr.value) { target.setAttribute(attr.name, attr.value); }
  });
  Array.from(target.childNodes).forEach(function (node) {
    if (!keep.has(node)) { node.remove(); }
  });
  let cursor = target.firstChild;
  wanted.forEach(function (node) {
    if (node === cursor) {
      cursor = cursor.nextSibling;
    } else {
      target.insertBefore(node, cursor);
    }
  });
  return target;
}

/* A live refresh must not take the keyboard's focus away: the control focused before it (named by
 * its id, data-label, name or data-log-for) is focused again in the fresh fragment. */
function _focusKey(element) {
  for (const attr of ["id", "data-label", "name", "data-log-for"]) {
    const value = element.getAttribute && element.getAttribute(attr);
    if (value) { return [attr, value]; }
  }
  return null;
}

function _refocus(element, focused) {
  if (!focused || element.contains(document.activeElement)) { return; }
  const again = element.querySelector("[" + focused[0] + '="' + CSS.escape(focused[1]) + '"]');
  if (again) { again.focus({ preventScroll: true }); }
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
  const focused = target.contains(document.activeElement) ? _focusKey(document.activeElement) : null;
  let element = fresh;
  if (fresh.tagName === target.tagName) {
    element = _morph(target, fresh);
  } else {
    target.replaceWith(fresh);
  }
  _refocus(element, focused);
  document.dispatchEvent(new CustomEvent("clipyard:fragment", { detail: { name: name, element: element } }));
  return true;
}

window.Clipyard = Object.assign(window.Clipyard || {}, {
  csrfToken: csrfToken, api: api, showError: showError, clearErrors: clearErrors,
  refreshFragment: refreshFragment,
});
