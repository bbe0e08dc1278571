// dsh console: live updates over server-sent events, answers without a
// page reload, deadline countdowns. The pages work without it (forms post
// and redirect); it only keeps them current.
(function () {
  "use strict";
  var csrf = (document.querySelector('meta[name="csrf"]') || {}).content || "";
  var page = document.body.getAttribute("data-page");

  function place() {
    document.querySelectorAll(".waterfall .stage").forEach(function (el) {
      el.style.left = el.getAttribute("data-left") + "%";
      el.style.width = el.getAttribute("data-width") + "%";
    });
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-deadline]").forEach(function (el) {
      var left = Math.max(0, Number(el.getAttribute("data-deadline")) - now);
      var s = Math.ceil(left / 1000);
      el.textContent = left <= 0 ? "expired" : (Math.floor(s / 60) + "m " + (s % 60) + "s left");
      el.classList.toggle("urgent", left < 30000);
    });
  }

  var pending = {};
  function refresh(url, sel) {
    if (pending[sel]) { pending[sel] = 2; return; }
    pending[sel] = 1;
    fetch(url, { credentials: "same-origin" }).then(function (r) {
      if (r.status === 401) { location.href = "/login"; return ""; }
      return r.text();
    }).then(function (html) {
      var el = document.querySelector(sel);
      if (el && html) { el.innerHTML = html; place(); tick(); }
    }).finally(function () {
      var again = pending[sel] === 2;
      pending[sel] = 0;
      if (again) { setTimeout(function () { refresh(url, sel); }, 100); }
    });
  }

  function flash(msg, bad) {
    var el = document.getElementById("flash");
    if (!el) { return; }
    el.textContent = msg;
    el.className = bad ? "error" : "ok";
  }

  document.addEventListener("submit", function (ev) {
    var f = ev.target;
    if (!f.classList || !f.classList.contains("answer")) { return; }
    ev.preventDefault();
    var body = new URLSearchParams(new FormData(f));
    fetch(f.action, {
      method: "POST", credentials: "same-origin", body: body,
      headers: { "Accept": "application/json", "X-CSRF-Token": csrf }
    }).then(function (r) {
      return r.json().then(function (j) { return { ok: r.ok, j: j }; });
    }).then(function (res) {
      if (res.ok) { flash("Answered: " + body.get("answer") + " (" + res.j.ask.tool + ")", false); }
      else { flash("Not taken: " + (res.j.error || "refused"), true); }
      refresh("/?fragment=1", "#inbox");
    });
  });

  place();
  tick();
  setInterval(tick, 250);

  if (page === "inbox" || page === "timeline") {
    var es = new EventSource("/events");
    var onAsk = function () { if (page === "inbox") { refresh("/?fragment=1", "#inbox"); } };
    var onCall = function () { if (page === "timeline") { refresh("/timeline?fragment=1", "#timeline"); } };
    es.addEventListener("ask", onAsk);
    es.addEventListener("call", onCall);
    es.addEventListener("calls", onCall);
    es.addEventListener("resync", function () { onAsk(); onCall(); });
    es.addEventListener("open", function () { document.body.setAttribute("data-live", "1"); onAsk(); onCall(); });
  }
})();
