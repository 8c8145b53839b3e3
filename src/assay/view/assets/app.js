// assay view: draw each chart from its inline Vega-Lite spec (the vendored Vega-Lite; no
// network), and keep a page of a run in progress (or a diff whose indexes fill) up to date:
// when the progress URL reports a new version, the page is fetched again and only its parts
// marked data-live are swapped in. What the reader typed in a form (outside those parts), the
// scroll position and each panel (details) opened or closed stay as they were.
(function () {
  "use strict";
  function drawCharts(root) {
    if (typeof vegaEmbed !== "function") return;
    root.querySelectorAll("script.vl-spec").forEach(function (node) {
      var target = document.getElementById(node.dataset.target);
      if (!target) return;
      var spec = JSON.parse(node.textContent);
      vegaEmbed(target, spec, {
        renderer: "svg",
        actions: { export: true, source: false, compiled: false, editor: false },
      }).then(function () {
        target.dataset.drawn = "true";
      }).catch(function (error) {
        target.dataset.drawn = "error";
        target.textContent = "This chart could not be drawn (" + error + "); its numbers are below.";
      });
    });
  }
  function keepPanels(old, next) {
    old.querySelectorAll("details[id]").forEach(function (panel) {
      var twin = next.querySelector("details#" + CSS.escape(panel.id));
      if (twin) twin.open = panel.open;
    });
  }
  function swapLive(fresh) {
    document.querySelectorAll("[data-live]").forEach(function (old) {
      var next = fresh.getElementById(old.id);
      if (!next) return;
      var adopted = document.importNode(next, true);
      keepPanels(old, adopted);
      old.replaceWith(adopted);
      drawCharts(adopted);
    });
    document.dispatchEvent(new CustomEvent("assay:updated"));
  }
  function followProgress() {
    var body = document.body;
    if (!body.dataset.progress) return;
    var busy = false;
    var timer = setInterval(function () {
      if (busy) return;
      busy = true;
      fetch(body.dataset.progress, { cache: "no-store" }).then(function (r) { return r.json(); }).then(function (p) {
        if (String(p.version) === body.dataset.version) return null;
        return fetch(window.location.href, { cache: "no-store" }).then(function (r) { return r.text(); }).then(function (text) {
          var fresh = new DOMParser().parseFromString(text, "text/html");
          swapLive(fresh);
          body.dataset.version = fresh.body.dataset.version || "";
          body.dataset.progress = fresh.body.dataset.progress || "";
          if (!body.dataset.progress) clearInterval(timer);
        });
      }).catch(function () { /* the viewer stopped: keep the page as it is */ }).then(function () {
        busy = false;
      });
    }, 2000);
  }
  drawCharts(document);
  followProgress();
})();
