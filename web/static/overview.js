// paddock console overview: refreshes the ensemble and platform tables every few
// seconds from /api/v1/overview and draws the last hour's charts from
// /api/v1/overview/history as SVG polylines. The page works without it (as served).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var root = document.getElementById("overview");
  if (!root || !window.fetch) return;
  var SVGNS = "http://www.w3.org/2000/svg";

  function cell(row, text, cls) {
    var td = document.createElement("td");
    if (cls) td.className = cls;
    if (text instanceof Node) td.appendChild(text); else td.textContent = text == null ? "" : String(text);
    row.appendChild(td);
    return td;
  }
  function badge(state, text) {
    var s = document.createElement("span");
    s.className = "state state-" + state;
    s.textContent = text;
    return s;
  }
  function fixed(v) { return v == null ? "–" : (Math.round(v * 10) / 10).toFixed(1); }
  function fill(id, items, empty, cols, rowOf) {
    var body = document.getElementById(id);
    if (!body) return;
    body.textContent = "";
    if (!items || items.length === 0) {
      var r = body.insertRow();
      cell(r, empty, "note").colSpan = cols;
      return;
    }
    items.forEach(function (it) { body.appendChild(rowOf(it)); });
  }
  function text(id, t) { var e = document.getElementById(id); if (e) e.textContent = t; }

  function renderEnsemble(e) {
    text("ensemble-leader", e.leader || "none answers as leader");
    text("ensemble-count", e.members.length);
    text("ensemble-checked", new Date(e.checked).toISOString().substr(11, 8));
    var err = document.getElementById("ensemble-error");
    if (err) { err.textContent = e.error || ""; err.hidden = !e.error; }
    fill("members", e.members, "no member", 11, function (m) {
      var r = document.createElement("tr");
      r.className = "member " + (m.up ? "up" : "down");
      r.setAttribute("data-address", m.address);
      cell(r, m.id || "");
      cell(r, m.address);
      cell(r, m.role || "");
      var st = cell(r, badge(m.up ? "ok" : "error", m.up ? "up" : "down"));
      if (m.error) { var n = document.createElement("span"); n.className = "note"; n.textContent = " " + m.error; st.appendChild(n); }
      cell(r, m.mode || "", "mode");
      cell(r, m.zxid || "");
      cell(r, m.lag_zxids == null ? "–" : m.lag_zxids);
      cell(r, m.connections);
      cell(r, m.up ? fixed(m.latency_avg_ms) + " / " + m.latency_max_ms : "");
      cell(r, fixed(m.latency_p99_ms));
      cell(r, m.via);
      return r;
    });
  }

  function renderPlatform(p) {
    var err = document.getElementById("platform-error");
    if (err) { err.textContent = p.error || ""; err.hidden = !p.error; }
    var body = document.getElementById("tasks-by-state");
    if (body) {
      body.textContent = "";
      p.tasks.by_state.forEach(function (s) {
        var r = body.insertRow();
        r.setAttribute("data-state", s.state);
        var th = document.createElement("th"); th.textContent = s.state; r.appendChild(th);
        cell(r, s.count);
      });
    }
    text("tasks-note", p.tasks.counted + " newest of " + p.tasks.total + " counted");
    text("master", p.workers.master || "none elected");
    fill("workers", p.workers.workers, "no live worker", 3, function (w) {
      var r = document.createElement("tr");
      cell(r, w.id); cell(r, w.running + " / " + w.capacity); cell(r, w.assigned);
      return r;
    });
    fill("replication", p.replication.tasks, "no replication task", 4, function (t) {
      var r = document.createElement("tr");
      cell(r, t.name); cell(r, badge(t.health, t.health)); cell(r, fixed(t.lag_seconds)); cell(r, t.events_behind);
      return r;
    });
    text("log-sources", p.collection.sources);
    fill("collectors", p.collection.collectors, "no collector", 3, function (c) {
      var r = document.createElement("tr");
      cell(r, c.host ? c.id + " on " + c.host : c.id); cell(r, badge(c.live ? "ok" : "stale", c.state || (c.live ? "live" : "not live"))); cell(r, c.sources);
      return r;
    });
  }

  function getJSON(url, then) {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
      .then(then)
      .catch(function () { /* the next poll tries again */ });
  }

  // Charts: x spans the last hour, or less while the console has sampled for less
  // (at least 2 minutes); y 0..the largest value shown.
  var W = 400, H = 120, LEFT = 34, BOTTOM = 14, TOP = 6;
  function svgEl(tag, attrs, parent) {
    var e = document.createElementNS(SVGNS, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    parent.appendChild(e);
    return e;
  }
  function draw(svg, samples, now) {
    var keys = svg.getAttribute("data-series").split(" ");
    var first = samples.length ? Date.parse(samples[0].t) : now;
    var span = Math.min(3600 * 1000, Math.max(120 * 1000, now - first));
    var from = now - span, top = 0;
    keys.forEach(function (k) {
      samples.forEach(function (s) { if (s[k] != null && s[k] > top) top = s[k]; });
    });
    top = top > 0 ? top * 1.1 : 1;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    svgEl("line", { x1: LEFT, y1: H - BOTTOM, x2: W, y2: H - BOTTOM, "class": "axis" }, svg);
    svgEl("line", { x1: LEFT, y1: TOP, x2: LEFT, y2: H - BOTTOM, "class": "axis" }, svg);
    svgEl("text", { x: LEFT - 3, y: TOP + 8, "class": "label", "text-anchor": "end" }, svg).textContent = top < 10 ? top.toFixed(1) : Math.round(top);
    svgEl("text", { x: LEFT - 3, y: H - BOTTOM, "class": "label", "text-anchor": "end" }, svg).textContent = "0";
    svgEl("text", { x: LEFT, y: H - 2, "class": "label" }, svg).textContent = "−" + Math.round(span / 60000) + " min";
    svgEl("text", { x: W, y: H - 2, "class": "label", "text-anchor": "end" }, svg).textContent = "now";
    var any = false;
    keys.forEach(function (k, i) {
      var pts = [];
      samples.forEach(function (s) {
        var t = Date.parse(s.t);
        if (s[k] == null || t < from) return;
        var x = LEFT + (W - LEFT) * (t - from) / span;
        var y = H - BOTTOM - (H - BOTTOM - TOP) * s[k] / top;
        pts.push(x.toFixed(1) + "," + y.toFixed(1));
      });
      if (pts.length === 0) return;
      any = true;
      svgEl("polyline", { points: pts.join(" "), "class": "series series-" + i, "data-key": k }, svg);
      var last = pts[pts.length - 1].split(",");
      svgEl("circle", { cx: last[0], cy: last[1], r: 2, "class": "series-" + i }, svg);
    });
    if (!any) svgEl("text", { x: (W + LEFT) / 2, y: H / 2, "class": "label", "text-anchor": "middle" }, svg).textContent = samples.length ? "no figure in these samples" : "no samples yet";
  }
  function charts() {
    getJSON(root.getAttribute("data-history"), function (h) {
      var now = Date.now();
      root.querySelectorAll("svg[data-series]").forEach(function (svg) { draw(svg, h.samples || [], now); });
    });
  }

  function poll() {
    getJSON(root.getAttribute("data-overview"), function (v) {
      renderEnsemble(v.ensemble);
      renderPlatform(v.platform);
    });
  }
  charts();
  setInterval(poll, 3000);
  setInterval(charts, 10000);
});
