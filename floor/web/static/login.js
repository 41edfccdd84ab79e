// Floor dashboard login: posts the user and password as JSON to /api/login (same origin, X-Floor: 1); the
// server sets the session cookie (HttpOnly: this script never sees it). Text from the server is shown as text.
"use strict";

async function login(ev) {
  ev.preventDefault();
  const result = document.getElementById("login-result");
  const button = document.getElementById("login-submit");
  button.disabled = true;
  result.textContent = "checking…";
  try {
    const r = await fetch("/api/login", {
      method: "POST",
      headers: {"Content-Type": "application/json", "X-Floor": "1"},
      body: JSON.stringify({user: document.getElementById("login-user").value.trim(),
                            password: document.getElementById("login-password").value}),
    });
    const answer = await r.json();
    if (answer.ok) { window.location.assign("/"); return; }
    result.textContent = "refused: " + String(answer.reason);
  } catch (err) {
    result.textContent = "failed: " + String(err);
  } finally {
    document.getElementById("login-password").value = "";
    button.disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("login").addEventListener("submit", login);
});
