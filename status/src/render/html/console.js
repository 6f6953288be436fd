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
  window.addEventListener("pagehide", function () {
    if (events) { events.close(); events = null; }
    if (live) { live.hidden = true; }
  });
  window.addEventListener("pageshow", function () { if (!events) { follow(); } });
  follow();
})();
