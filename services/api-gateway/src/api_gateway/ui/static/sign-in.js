/*
 * sign-in.js: sign in without reloading the page. The board key goes in a JSON request body to
 * POST /api/session (never in a URL, a log or browser storage); the input is cleared whether the
 * sign-in worked or not; on success the gateway has set the HttpOnly session cookie and the page
 * moves on to the workspaces; on failure the API's message is shown next to the field
 * (showError from actions.js). Without JavaScript the form posts the same key to /sign-in.
 */
"use strict";

document.addEventListener("DOMContentLoaded", function () {
  const form = document.getElementById("sign-in-form");
  if (!form) { return; }
  const input = form.querySelector('input[name="key"]');
  const button = form.querySelector('button[type="submit"]');
  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    const key = input.value;
    input.value = "";
    button.disabled = true;
    const answer = await window.Clipyard.api("POST", "/api/session", { key: key });
    button.disabled = false;
    if (answer.ok) {
      window.location.assign("/workspaces");
      return;
    }
    window.Clipyard.showError(form, answer.body);
    input.focus();
  });
});
