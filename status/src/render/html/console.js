// mesh console: follows this page's events and puts each fragment the
// console sends in place of <main>. Without it the page is whole; with it
// the page stays current without a reload. The stream is closed when the
// page is left (a browser holds few connections to one host) and opened
// again when the page is shown from the back-forward cache.
(function () {
  "use strict";
  if (!window.EventSource) { return; }
  var page = document.body.getAttribute("data-page");
  var main = document.getElementById("main");
  var live = document.getElementById("live");
  var events = null;
  if (!page || !main) { return; }
  function follow() {
    events = new EventSource("/events?page=" + encodeURIComponent(page));
    events.addEventListener("main", function (e) {
      main.innerHTML = e.data;
      times();
      document.body.setAttribute("data-event", e.lastEventId);
      var titled = main.querySelector("[data-title]");
      if (titled) { document.title = titled.getAttribute("data-title") + " · mesh console"; }
    });
    events.onopen = function () {
      if (live) { live.hidden = false; live.textContent = "live"; live.className = "live"; }
    };
    // The stream dropped (the console restarted, the network): say since
    // when the page is not live, until the browser has it back.
    events.onerror = function () {
      if (!live || live.className === "live stale") { return; }
      var at = new Date();
      var hh = ("0" + at.getHours()).slice(-2), mm = ("0" + at.getMinutes()).slice(-2);
      live.hidden = false;
      live.className = "live stale";
      live.textContent = "not live since " + hh + ":" + mm + ", reconnecting";
    };
  }
  // Times say how long ago they are (the page wrote it when rendered):
  // kept true while the page stays open, the local time beside UTC on hover.
  // To the minute as the page wrote them: down for a time past, up for one
  // to come.
  function span(seconds) {
    var d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600),
      m = Math.floor(seconds % 3600 / 60);
    function two(a, ua, b, ub) { return b === 0 ? a + " " + ua : a + " " + ua + " " + b + " " + ub; }
    if (d > 0) { return two(d, "d", h, "h"); }
    if (h > 0) { return two(h, "h", m, "min"); }
    return m + " min";
  }
  function times() {
    var now = Date.now();
    var all = document.querySelectorAll("time[datetime]");
    for (var i = 0; i < all.length; i++) {
      var at = Date.parse(all[i].getAttribute("datetime"));
      if (isNaN(at)) { continue; }
      var ago = Math.round((now - at) / 1000), past = ago >= 0, s = Math.abs(ago);
      all[i].textContent = s < 60 ? (past ? "under a minute ago" : "in under a minute")
        : (past ? span(s) + " ago" : "in " + span(Math.ceil(s / 60) * 60));
      var utc = all[i].getAttribute("data-utc") || all[i].title;
      all[i].setAttribute("data-utc", utc);
      all[i].title = new Date(at).toLocaleString() + " (" + utc + ")";
    }
  }
  times();
  setInterval(times, 30000);
  window.addEventListener("pagehide", function () {
    if (events) { events.close(); events = null; }
    if (live) { live.hidden = true; }
  });
  window.addEventListener("pageshow", function () { if (!events) { follow(); } });
  follow();
})();
