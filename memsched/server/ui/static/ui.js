// memsched debug UI: open a turn's trace in the side panel without leaving the timeline.
(function () {
  "use strict";
  // "Show all" under a long table (in pages and in panels loaded later).
  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest && ev.target.closest("[data-expand]");
    if (!btn) return;
    var table = document.getElementById(btn.getAttribute("data-expand"));
    if (table) table.classList.remove("collapsed");
    btn.remove();
  });
  var page = document.getElementById("timeline-page");
  var panel = document.getElementById("trace-panel");
  if (!page || !panel) return;
  var user = page.getAttribute("data-user");
  var base = document.querySelector('link[rel="stylesheet"]').getAttribute("href").replace(/\/static\/ui\.css$/, "");

  function segment(id) {  // as memsched.server.paths.segment: "." and ".." are ids, not dot segments
    return id === "." || id === ".." ? id.replace(/\./g, "%2E") : encodeURIComponent(id);
  }

  function open(traceId, turnEl, push) {
    var url = base + "/u/" + segment(user) + "/trace/" + encodeURIComponent(traceId);
    panel.setAttribute("aria-busy", "true");
    fetch(url + "?fragment=1", { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(r.status + " " + r.statusText); return r.text(); })
      .then(function (html) {
        panel.innerHTML = html;
        panel.removeAttribute("aria-busy");
        panel.scrollTop = 0;
        document.querySelectorAll(".turn.active").forEach(function (el) { el.classList.remove("active"); });
        document.querySelectorAll('.turn[data-trace="' + traceId + '"]').forEach(function (el) { el.classList.add("active"); });
        if (push) {
          var u = new URL(window.location.href);
          u.searchParams.set("trace", traceId);
          window.history.replaceState(null, "", u.toString());
        }
      })
      .catch(function (err) { panel.innerHTML = '<div class="alert">' + String(err) + "</div>"; });
  }

  document.querySelectorAll(".turn.traced").forEach(function (el) {
    el.addEventListener("click", function (ev) {
      if (ev.target.closest("a") && (ev.metaKey || ev.ctrlKey || ev.shiftKey)) return;  // let new-tab clicks through
      ev.preventDefault();
      open(el.getAttribute("data-trace"), el, true);
    });
  });
  var first = panel.getAttribute("data-open");
  if (first) open(first, null, false);
})();
