// agentmem inspector: live updates, time travel without a reload, paged
// timeline rows appended live, rendering tabs, long messages on demand.
// No framework.
(function () {
  "use strict";

  function get(url) {
    return fetch(url, { headers: { "Accept": "text/html" }, credentials: "same-origin" });
  }

  // notice shows a failure on the page (never silently nothing).
  function notice(text) {
    var n = document.getElementById("notice");
    if (!n) {
      n = document.createElement("div");
      n.id = "notice";
      n.className = "card error floating";
      n.setAttribute("role", "alert");
      document.body.appendChild(n);
    }
    n.textContent = text;
    n.hidden = !text;
  }

  // The error page's message, from the HTML of a failed answer.
  function errorText(status, html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var m = doc.querySelector(".errmsg, .error p");
    return "Error " + status + ": " + (m ? m.textContent : "the inspector did not answer");
  }

  // Replace #live with the same element of a fresh copy of url.
  function refresh(url, push) {
    return get(url).then(function (r) {
      return r.text().then(function (html) {
        if (!r.ok) { notice(errorText(r.status, html)); return; }
        notice("");
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("live"), cur = document.getElementById("live");
        if (!fresh || !cur) return;
        var open = {};
        cur.querySelectorAll("details.item").forEach(function (d) { open[d.dataset.id] = d.open; });
        cur.replaceWith(fresh);
        fresh.querySelectorAll("details.item").forEach(function (d) { if (d.dataset.id in open) d.open = open[d.dataset.id]; });
        if (push) history.replaceState(null, "", url);
        init(fresh);
        badge(liveState);
        document.dispatchEvent(new CustomEvent("inspector:updated"));
      });
    });
  }

  // ---- live: one stream per browser (a SharedWorker), else per page ----
  var live = null, liveState = "connecting";
  function badge(state) {
    liveState = state;
    var b = document.getElementById("livebadge");
    if (!b) return;
    b.classList.toggle("on", state === "live");
    b.classList.toggle("retry", state === "reconnecting");
    b.classList.toggle("off", state === "failed");
    b.textContent = state === "live" ? "live" : state === "reconnecting" ? "reconnecting…" : state === "failed" ? "not live" : "connecting…";
  }

  function follow(session, from, onChange) {
    if (live) live.stop();
    var stopped = false;
    function change(d) {
      if (stopped || d.session !== session) return;
      var b = document.getElementById("livebadge");
      if (b) { b.classList.add("flash"); setTimeout(function () { b.classList.remove("flash"); }, 600); }
      onChange(d);
    }
    function failed(d) {
      if (d.session !== session) return;
      badge("failed");
      notice("Live updates stopped: " + d.error);
    }
    if (window.SharedWorker) {
      var w = new SharedWorker("/ui/static/live-worker.js", { name: "agentmem-live" });
      w.port.onmessage = function (m) {
        var d = m.data;
        if (d.state) badge(d.state);
        if (d.change) change(d.change);
        if (d.failed) failed(d.failed);
      };
      w.port.start();
      w.port.postMessage({ follow: session, from: from });
      var bye = function () { w.port.postMessage({ unfollow: true }); };
      window.addEventListener("pagehide", bye);
      live = { stop: function () { stopped = true; bye(); window.removeEventListener("pagehide", bye); w.port.close(); } };
      return;
    }
    if (!window.EventSource) return;
    var es = null, timer = null;
    function open() {
      es = new EventSource("/ui/live?s=" + encodeURIComponent(session + ":" + from));
      es.onopen = function () { badge("live"); };
      es.onerror = function () { badge("reconnecting"); es.close(); timer = setTimeout(open, 2000); };
      es.addEventListener("change", function (ev) { var d = JSON.parse(ev.data); from = Math.max(from, d.seq); change(d); });
      es.addEventListener("failed", function (ev) { es.close(); failed(JSON.parse(ev.data)); });
    }
    open();
    live = { stop: function () { stopped = true; clearTimeout(timer); if (es) es.close(); } };
  }

  // redraw refreshes the page in place, one refresh at a time: changes
  // that come while one is in flight make one more after it, not one
  // each (a busy session's context page is large).
  var redrawing = false, again = false;
  function redraw() {
    if (redrawing) { again = true; return; }
    redrawing = true;
    refresh(location.href, false)
      .catch(function (e) { notice("Refresh failed: " + e.message); })
      .then(function () { redrawing = false; if (again) { again = false; redraw(); } });
  }

  // startLive follows the page's session; a refreshed #live is read anew
  // at each change (its data-last says what it shows).
  function startLive(first) {
    var session = first.dataset.session, last = +first.dataset.last;
    if (!session || !last) return;
    follow(session, last, function (d) {
      var root = document.getElementById("live");
      if (!root || d.seq <= +root.dataset.last) return;
      if (root.querySelector("#timeline")) { timelineChange(root, d.seq); return; }
      if (root.dataset.follow === "latest") { redraw(); return; }
      var n = root.querySelector("#newer");
      if (n) n.hidden = false;
    });
  }

  // ---- timeline ----
  function seqsOf(form) { return form.dataset.seqs ? form.dataset.seqs.split(",").map(Number) : []; }

  function markRows(root, shown) {
    root.querySelectorAll("#timeline .ev").forEach(function (li) {
      var s = +li.dataset.seq;
      li.classList.toggle("current", s === shown);
      li.classList.toggle("future", s > shown);
    });
  }

  var atSeq = 0;
  function loadAt(root, seq, push) {
    var at = root.querySelector("#at");
    if (!at) return;
    atSeq = seq;
    var id = root.dataset.session;
    at.setAttribute("aria-busy", "true");
    return get("/ui/s/" + encodeURIComponent(id) + "/at?seq=" + seq).then(function (r) {
      return r.text().then(function (html) {
        if (seq !== atSeq) return; // a later point was asked meanwhile
        at.innerHTML = html;
        at.removeAttribute("aria-busy");
        tabs(at);
        var v = at.querySelector("#atview");
        markRows(root, v ? +v.dataset.shown : 0);
        if (push) {
          var u = new URL(location.href);
          u.searchParams.set("seq", seq);
          history.replaceState(null, "", u.toString());
        }
        document.dispatchEvent(new CustomEvent("inspector:updated"));
      });
    }).catch(function (e) { notice("The context could not be read: " + e.message); });
  }

  function travel(root) {
    var form = root.querySelector("#travel");
    if (!form) return;
    var slider = form.querySelector("#seq-slider"), input = form.querySelector("#seq-input"), timer = null;
    // Arrow keys step the slider; the context is read once they pause,
    // and the slider keeps its focus (only the context panel is swapped).
    function moved(delay) {
      var seqs = seqsOf(form), seq = seqs[+slider.value];
      input.value = seq;
      markRows(root, seq);
      clearTimeout(timer);
      timer = setTimeout(function () { loadAt(root, seq, true); }, delay);
    }
    slider.addEventListener("input", function () { moved(350); });
    slider.addEventListener("change", function () { moved(350); });
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var n = +input.value;
      if (!(n > 0)) { notice("seq: want a whole number > 0"); return; }
      var seqs = seqsOf(form), i = 0;
      while (i + 1 < seqs.length && seqs[i + 1] <= n) i++;
      slider.value = i;
      loadAt(root, n, true);
    });
    var lazy = root.querySelector("#atview[data-lazy]");
    if (lazy) loadAt(root, +lazy.dataset.asked, false);
  }

  // A live change on the timeline: append the new rows (no reload).
  var fetching = false, pending = false;
  function timelineChange(root) {
    if (fetching) { pending = true; return; }
    fetching = true;
    var list = root.querySelector("#timeline"), form = root.querySelector("#travel");
    var kind = list.dataset.kind || "", after = +root.dataset.last;
    get("/ui/s/" + encodeURIComponent(root.dataset.session) + "/timeline/rows?after=" + after + "&kind=" + encodeURIComponent(kind))
      .then(function (r) { return r.text().then(function (html) { return { r: r, html: html }; }); })
      .then(function (x) {
        if (!x.r.ok) { notice(errorText(x.r.status, x.html)); return; }
        var doc = new DOMParser().parseFromString(x.html, "text/html"), ol = doc.querySelector("ol");
        if (!ol) return;
        var slider = form.querySelector("#seq-slider");
        var following = !new URL(location.href).searchParams.has("seq") && +slider.value === +slider.max;
        var added = ol.dataset.seqs ? ol.dataset.seqs.split(",") : [];
        if (added.length) {
          form.dataset.seqs = (form.dataset.seqs ? form.dataset.seqs + "," : "") + added.join(",");
          slider.max = seqsOf(form).length - 1;
        }
        root.dataset.last = ol.dataset.last;
        if (ol.dataset.toomany || !list.dataset.lastpage) {
          root.querySelector("#newrows").hidden = false;
        } else {
          var empty = list.querySelector(".empty");
          if (empty && ol.children.length) empty.remove();
          while (ol.firstElementChild) list.appendChild(ol.firstElementChild);
          if (following) list.scrollTop = list.scrollHeight;
        }
        if (following && added.length) {
          slider.value = slider.max;
          form.querySelector("#seq-input").value = ol.dataset.last;
          loadAt(root, +ol.dataset.last, false);
        }
      })
      .catch(function (e) { notice("Live rows could not be read: " + e.message); })
      .then(function () { fetching = false; if (pending) { pending = false; timelineChange(root); } });
  }

  function tabs(root) {
    root.querySelectorAll("[data-tabs]").forEach(function (bar) {
      bar.addEventListener("click", function (e) {
        var b = e.target.closest("button[data-tab]");
        if (!b) return;
        bar.querySelectorAll("button").forEach(function (x) { x.classList.toggle("on", x === b); x.setAttribute("aria-pressed", x === b); });
        bar.parentElement.querySelectorAll("[data-pane]").forEach(function (p) { p.hidden = p.dataset.pane !== b.dataset.tab; });
      });
    });
  }

  // "Show all": the rest of a long message, or a stored tool result; the
  // whole context at a point in the timeline's panel.
  function more(root) {
    root.addEventListener("click", function (e) {
      var all = e.target.closest("a.allat"), at = document.getElementById("at");
      if (all && at) {
        e.preventDefault();
        get(all.href).then(function (r) { return r.text(); }).then(function (html) { at.innerHTML = html; tabs(at); })
          .catch(function (err) { notice("Could not read it: " + err.message); });
        return;
      }
      var a = e.target.closest("a.more");
      if (!a) return;
      e.preventDefault();
      get(a.href).then(function (r) {
        return r.text().then(function (t) {
          if (!r.ok) { notice(errorText(r.status, t)); return; }
          var li = a.closest("li"), pre = li.querySelector(":scope > pre.content");
          if (!pre) { pre = document.createElement("pre"); pre.className = "content"; a.parentElement.before(pre); }
          pre.textContent = t;
          a.parentElement.remove();
        });
      }).catch(function (err) { notice("Could not read it: " + err.message); });
    });
  }

  // Keep the timeline's current batch in view (inside its own scroll box).
  function center(root) {
    var box = root.querySelector("#timeline"), cur = box && (box.querySelector(".ev.current") || box.lastElementChild);
    if (cur) box.scrollTop = cur.offsetTop - box.offsetTop - box.clientHeight / 2;
  }

  function init(root) {
    center(root);
    tabs(root);
    travel(root);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var root = document.getElementById("live") || document.body;
    more(document.body);
    init(root);
    startLive(root);
  });
})();
