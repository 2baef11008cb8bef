// paddock console: data tabs and live updates; every page works without script.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var tabs = document.querySelector("[data-tabs]");
  if (!tabs) return;
  var panels = document.querySelectorAll("[data-panel]");
  function show(name) {
    panels.forEach(function (p) { p.hidden = p.getAttribute("data-panel") !== name; });
    tabs.querySelectorAll("button").forEach(function (b) {
      b.classList.toggle("active", b.getAttribute("data-tab") === name);
    });
  }
  tabs.addEventListener("click", function (e) {
    var name = e.target.getAttribute("data-tab");
    if (name) show(name);
  });
  show(tabs.querySelector("[data-tab=json]") ? "json" : "text");
});

// Live updates: a page whose <main> (or <body>) has data-topic follows
// /api/v1/events?topic=...; on a change it reloads, unless the user is typing into or
// has edited a form, in which case it shows a notice with a reload button instead.
document.addEventListener("DOMContentLoaded", function () {
  var holder = document.querySelector("main[data-topic], body[data-topic]");
  if (!holder || !window.EventSource) return;
  var topic = holder.getAttribute("data-topic");
  var edited = false;
  document.addEventListener("input", function (e) {
    if (e.target.form) edited = true;
  });
  function busy() {
    var a = document.activeElement;
    return edited || (a && a.form && /^(INPUT|TEXTAREA|SELECT)$/.test(a.tagName) && a.type !== "submit");
  }
  var notice = null;
  function showNotice() {
    if (notice) return;
    notice = document.createElement("p");
    notice.className = "live-notice";
    notice.textContent = "This page changed. ";
    var b = document.createElement("button");
    b.type = "button";
    b.textContent = "Reload";
    b.addEventListener("click", function () { location.reload(); });
    notice.appendChild(b);
    holder.insertBefore(notice, holder.firstChild);
  }
  var timer = null;
  var es = new EventSource("/api/v1/events?topic=" + encodeURIComponent(topic));
  es.addEventListener("change", function () {
    if (timer) return;
    timer = setTimeout(function () { // coalesce bursts of changes into one reload
      timer = null;
      if (busy()) showNotice(); else { es.close(); location.reload(); }
    }, 300);
  });
  window.addEventListener("pagehide", function () { es.close(); });
});
