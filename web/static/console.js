// paddock console: data tabs; nothing else needs script, and every page works without it.
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
