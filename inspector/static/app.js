// agentmem inspector: live updates (Server-Sent Events from the watch),
// time travel without a reload, rendering tabs. No framework.
(function () {
  "use strict";

  // Replace #live with the same element of a fresh copy of url.
  function refresh(url, push) {
    return fetch(url, { headers: { "Accept": "text/html" }, credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("live"), cur = document.getElementById("live");
        if (!fresh || !cur) return;
        var open = {};
        cur.querySelectorAll("details.item").forEach(function (d) { open[d.dataset.id] = d.open; });
        cur.replaceWith(fresh);
        fresh.querySelectorAll("details.item").forEach(function (d) { if (d.dataset.id in open) d.open = open[d.dataset.id]; });
        if (push) history.replaceState(null, "", url);
        init(fresh);
        document.dispatchEvent(new CustomEvent("inspector:updated"));
      });
  }

  var source = null;
  function follow(root) {
    var url = root.dataset.live;
    if (!url || !window.EventSource) return;
    if (source) source.close();
    source = new EventSource(url);
    var badge = document.getElementById("livebadge");
    source.onopen = function () { if (badge) badge.classList.add("on"); };
    source.addEventListener("change", function () {
      if (badge) { badge.classList.add("flash"); setTimeout(function () { badge.classList.remove("flash"); }, 600); }
      source.close(); source = null;
      refresh(location.href, false).catch(function () { setTimeout(function () { follow(document.getElementById("live")); }, 1000); });
    });
    source.addEventListener("failed", function () { if (badge) badge.classList.remove("on"); source.close(); });
  }

  function tabs(root) {
    root.querySelectorAll("[data-tabs]").forEach(function (bar) {
      bar.addEventListener("click", function (e) {
        var b = e.target.closest("button[data-tab]");
        if (!b) return;
        bar.querySelectorAll("button").forEach(function (x) { x.classList.toggle("on", x === b); });
        bar.parentElement.querySelectorAll("[data-pane]").forEach(function (p) { p.hidden = p.dataset.pane !== b.dataset.tab; });
      });
    });
  }

  function travel(root) {
    var form = root.querySelector("#travel");
    if (!form) return;
    var seqs = form.dataset.seqs.split(",").map(Number);
    var slider = form.querySelector("#seq-slider"), input = form.querySelector("#seq-input");
    function go(seq) {
      var u = new URL(location.href);
      u.searchParams.set("seq", seq);
      refresh(u.toString(), true);
    }
    slider.addEventListener("input", function () { input.value = seqs[+slider.value]; });
    slider.addEventListener("change", function () { go(seqs[+slider.value]); });
    form.addEventListener("submit", function (e) { e.preventDefault(); go(input.value); });
  }

  // Keep the timeline's current batch in view (inside its own scroll box).
  function center(root) {
    var box = root.querySelector("#timeline"), cur = box && box.querySelector(".ev.current");
    if (cur) box.scrollTop = cur.offsetTop - box.offsetTop - box.clientHeight / 2;
  }

  function init(root) {
    center(root);
    tabs(root);
    travel(root);
    follow(root);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var root = document.getElementById("live") || document.body;
    init(root);
  });
})();
