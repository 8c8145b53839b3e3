// assay view: draw each chart from its inline Vega-Lite spec (the vendored Vega-Lite; no
// network), and reload a page of a run in progress when rows finish.
(function () {
  "use strict";
  function drawCharts() {
    if (typeof vegaEmbed !== "function") return;
    document.querySelectorAll("script.vl-spec").forEach(function (node) {
      var target = document.getElementById(node.dataset.target);
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
  function followProgress() {
    var url = document.body.dataset.progress;
    if (!url) return;
    var version = document.body.dataset.version;
    setInterval(function () {
      fetch(url, { cache: "no-store" }).then(function (r) { return r.json(); }).then(function (p) {
        if (String(p.version) !== version) window.location.reload();
      }).catch(function () { /* the viewer stopped: keep the page as it is */ });
    }, 2000);
  }
  drawCharts();
  followProgress();
})();
