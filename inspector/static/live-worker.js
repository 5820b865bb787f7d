// agentmem inspector: the live updates of every open page of this browser
// on one Server-Sent Events stream per 16 sessions (/ui/live?s=ID:FROM…),
// shared by the pages (a SharedWorker), so a seventh tab does not wait for
// one of the browser's six connections to the host. Pages post
// {follow, from} and {unfollow}; the worker posts {state}, {change} and
// {failed} back.
"use strict";
var follows = {};   // session id -> {from, ports: []}
var streams = [];   // open EventSources
var timer = null;
var state = "connecting";
var GROUP = 16;

function broadcast(msg) {
  Object.keys(follows).forEach(function (id) {
    follows[id].ports.forEach(function (p) { p.postMessage(msg); });
  });
}

function setState(s) {
  state = s;
  broadcast({ state: s });
}

function schedule(delay) {
  clearTimeout(timer);
  timer = setTimeout(open, delay);
}

function open() {
  streams.forEach(function (es) { es.close(); });
  streams = [];
  var ids = Object.keys(follows);
  for (var i = 0; i < ids.length; i += GROUP) {
    var q = ids.slice(i, i + GROUP).map(function (id) {
      return "s=" + encodeURIComponent(id + ":" + follows[id].from);
    }).join("&");
    streams.push(connect("/ui/live?" + q));
  }
}

function connect(url) {
  var es = new EventSource(url);
  es.onopen = function () { setState("live"); };
  es.onerror = function () {
    // Reopen from the latest sequences seen, not the URL's: nothing is
    // sent twice, and a 503 (the inspector's live budget is full) is
    // retried too, which EventSource by itself does not.
    setState("reconnecting");
    es.close();
    schedule(2000);
  };
  es.addEventListener("change", function (ev) {
    var d = JSON.parse(ev.data), f = follows[d.session];
    if (!f) return;
    f.from = Math.max(f.from, d.seq);
    f.ports.forEach(function (p) { p.postMessage({ change: d }); });
  });
  es.addEventListener("failed", function (ev) {
    var d = JSON.parse(ev.data), f = follows[d.session];
    if (!f) return;
    f.ports.forEach(function (p) { p.postMessage({ failed: d }); });
    delete follows[d.session];
  });
  return es;
}

self.onconnect = function (e) {
  var port = e.ports[0];
  port.onmessage = function (m) {
    var d = m.data || {};
    if (d.follow) {
      var f = follows[d.follow];
      if (!f) {
        follows[d.follow] = { from: d.from, ports: [port] };
        schedule(20);
      } else {
        if (f.ports.indexOf(port) < 0) f.ports.push(port);
        // This page shows less than the stream has seen: tell it now.
        if (d.from < f.from) port.postMessage({ change: { session: d.follow, seq: f.from, changes: 1 } });
      }
      port.postMessage({ state: state });
    }
    if (d.unfollow) {
      Object.keys(follows).forEach(function (id) {
        var f = follows[id];
        f.ports = f.ports.filter(function (p) { return p !== port; });
        if (!f.ports.length) { delete follows[id]; schedule(20); }
      });
    }
  };
  port.start();
};
