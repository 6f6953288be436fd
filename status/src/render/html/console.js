// mesh console: follows this page's events and puts each fragment the
// console sends in place of <main>. Without it the page is whole; with it
// the page stays current without a reload.
(function () {
  "use strict";
  if (!window.EventSource) { return; }
  var page = document.body.getAttribute("data-page");
  var main = document.getElementById("main");
  var live = document.getElementById("live");
  if (!page || !main) { return; }
  var events = new EventSource("/events?page=" + encodeURIComponent(page));
  events.addEventListener("main", function (e) {
    main.innerHTML = e.data;
    document.body.setAttribute("data-event", e.lastEventId);
  });
  events.onopen = function () { if (live) { live.hidden = false; } };
  events.onerror = function () { if (live) { live.hidden = true; } };
})();
