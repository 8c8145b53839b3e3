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
  // Each panel the reader opened or closed is remembered by its id for the page's life, so a
  // panel a fresh copy lacked for a moment (a row being written) comes back as it was left.
  var panels = {};
  document.addEventListener("toggle", function (event) {
    var panel = event.target;
    if (panel.tagName === "DETAILS" && panel.id) panels[panel.id] = panel.open;
  }, true);
  function keepPanels(old, next) {
    old.querySelectorAll("details[id]").forEach(function (panel) {
      panels[panel.id] = panel.open;
    });
    next.querySelectorAll("details[id]").forEach(function (twin) {
      if (Object.prototype.hasOwnProperty.call(panels, twin.id)) twin.open = panels[twin.id];
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
  // A request that fails or hangs (a busy viewer, a page read while a row was being
  // written) is given up after ten seconds and tried again at the next tick: one bad answer
  // never stops a live page from following its run.
  function fetched(url) {
    var control = new AbortController();
    var timeout = setTimeout(function () { control.abort(); }, 10000);
    return fetch(url, { cache: "no-store", signal: control.signal }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r;
    }).finally(function () { clearTimeout(timeout); });
  }
  function followProgress() {
    var body = document.body;
    if (!body.dataset.progress) return;
    var busy = false;
    var timer = setInterval(function () {
      if (busy) return;
      busy = true;
      fetched(body.dataset.progress).then(function (r) { return r.json(); }).then(function (p) {
        if (body.dataset.reload && p.complete) {  // a page waiting for every row: load it whole
          clearInterval(timer);
          window.location.reload();
          return null;
        }
        if (String(p.version) === body.dataset.version) return null;
        return fetched(window.location.href).then(function (r) { return r.text(); }).then(function (text) {
          var fresh = new DOMParser().parseFromString(text, "text/html");
          swapLive(fresh);
          body.dataset.version = fresh.body.dataset.version || "";
          body.dataset.progress = fresh.body.dataset.progress || "";
          if (!body.dataset.progress) clearInterval(timer);  // the run finished
        });
      }).catch(function () { /* the viewer stopped or failed once: try at the next tick */ }).then(function () {
        busy = false;
      });
    }, 2000);
  }
  // Human review: a label panel (#review) saves a label by button or key (p/f, 1..9) to the
  // viewer's POST /api/runs/RUN/labels with this page's token, then goes to the next row of
  // a queue; n/j next, k previous, c writes a comment (Esc leaves it).
  function review() {
    var panel = document.getElementById("review");
    if (!panel) return;
    var reviewer = document.getElementById("reviewer");
    var comment = document.getElementById("comment");
    var shown = document.getElementById("review-status");
    var keys = {};
    var known = null;
    try { known = window.localStorage.getItem("assay-reviewer"); } catch (e) { known = null; }
    if (known) reviewer.value = known;
    reviewer.addEventListener("change", function () {
      try { window.localStorage.setItem("assay-reviewer", reviewer.value.trim()); } catch (e) { /* no storage */ }
    });
    var busy = false;
    // the row's labels as the page lists them: this reviewer's replaced by the one just saved
    function showGiven(label, name, text) {
      var list = document.getElementById("given");
      if (list.tagName !== "UL") {
        var fresh = document.createElement("ul");
        fresh.className = "given";
        fresh.id = "given";
        list.replaceWith(fresh);
        list = fresh;
      }
      var item = list.querySelector('li[data-reviewer="' + CSS.escape(name) + '"]') || document.createElement("li");
      item.dataset.reviewer = name;
      item.textContent = "";
      var strong = document.createElement("strong");
      strong.textContent = String(label);
      item.appendChild(strong);
      item.appendChild(document.createTextNode(" by " + name + (text ? " · " + text : "")));
      list.appendChild(item);
    }
    function save(label) {
      if (busy) return;
      busy = true;
      shown.className = "";
      shown.textContent = "saving " + label + " …";
      var body = { scale: panel.dataset.scale, items: [{ folder: panel.dataset.folder, label: label,
        comment: comment.value, reviewer: reviewer.value.trim() }] };
      fetch(panel.dataset.url, { method: "POST", cache: "no-store", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-Assay-Token": panel.dataset.token },
        body: JSON.stringify(body) }).then(function (r) {
        return r.json().then(function (answer) { return { ok: r.ok, answer: answer }; },
          function () { return { ok: false, answer: { error: "the viewer answered " + r.status + " " + r.statusText } }; });
      }).then(function (result) {
        if (!result.ok) {
          shown.className = "bad";
          shown.textContent = "not saved: " + result.answer.error;
          return;
        }
        shown.className = "ok";
        shown.textContent = "saved " + label + " as " + result.answer.dataset + "@" + result.answer.version;
        showGiven(label, body.items[0].reviewer, body.items[0].comment);
        panel.dataset.saved = String(result.answer.version);
        if (panel.dataset.next && document.querySelector(".review-order")) window.location.href = panel.dataset.next;
      }).catch(function (error) {
        shown.className = "bad";
        shown.textContent = "not saved: " + error;
      }).then(function () { busy = false; });
    }
    panel.querySelectorAll(".label-button").forEach(function (button) {
      var label = JSON.parse(button.dataset.label);
      keys[button.dataset.key] = label;
      button.addEventListener("click", function () { save(label); });
    });
    var score = document.getElementById("score-save");
    if (score) score.addEventListener("click", function () {
      var typed = document.getElementById("score").value.trim();
      if (typed === "" || !isFinite(Number(typed))) {  // Number("") is 0: never saved as a score
        shown.className = "bad";
        shown.textContent = "not saved: type a score first";
        return;
      }
      save(Number(typed));
    });
    document.addEventListener("keydown", function (event) {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      var target = event.target;
      if (target.matches && target.matches("input, textarea, select")) {
        if (event.key === "Escape") target.blur();
        return;
      }
      var key = event.key.toLowerCase();
      if (Object.prototype.hasOwnProperty.call(keys, key)) {
        event.preventDefault();
        save(keys[key]);
      } else if ((key === "n" || key === "j") && panel.dataset.next) {
        window.location.href = panel.dataset.next;
      } else if (key === "k" && panel.dataset.prev) {
        window.location.href = panel.dataset.prev;
      } else if (key === "c") {
        event.preventDefault();
        comment.focus();
      }
    });
  }
  // report.html's row table: every row of the run from the page's own JSON, filtered by a
  // search (row, prompt, response; any case), a status and a suite, 100 rows a page.
  function everyRow() {
    var data = document.getElementById("rows-data");
    if (!data) return;
    var every = JSON.parse(data.textContent);
    var search = document.getElementById("row-search");
    var status = document.getElementById("row-status");
    var suite = document.getElementById("row-suite");
    var body = document.querySelector("#row-table tbody");
    var size = 100;
    var page = 0;
    var chosen = every.rows;
    function cell(row, text, className) {
      var td = document.createElement("td");
      if (className) td.className = className;
      td.textContent = text;
      row.appendChild(td);
      return td;
    }
    function draw() {
      var pages = Math.max(1, Math.ceil(chosen.length / size));
      page = Math.min(page, pages - 1);
      body.textContent = "";
      chosen.slice(page * size, (page + 1) * size).forEach(function (r) {
        var tr = document.createElement("tr");
        tr.dataset.folder = r[0];
        var link = document.createElement("a");
        link.href = r[0] + "/task.json";
        link.textContent = r[0];
        cell(tr, "", "").appendChild(link);
        cell(tr, r[1], "status-cell");
        cell(tr, r[2] === null ? "—" : r[2].toFixed(3), "num");
        cell(tr, r[3], "text-cell");
        cell(tr, r[4], "text-cell");
        body.appendChild(tr);
      });
      document.getElementById("row-count").textContent = chosen.length + " of " + every.rows.length + " rows";
      document.getElementById("row-page").textContent = "page " + (page + 1) + " of " + pages;
    }
    function filter() {
      var words = search.value.trim().toLowerCase();
      chosen = every.rows.filter(function (r) {
        if (status.value && r[1] !== status.value) return false;
        if (suite.value && r[0].split("/")[1] !== suite.value) return false;
        if (!words) return true;
        return (r[0] + "\n" + r[3] + "\n" + r[4]).toLowerCase().indexOf(words) >= 0;
      });
      page = 0;
      draw();
    }
    search.addEventListener("input", filter);
    status.addEventListener("change", filter);
    suite.addEventListener("change", filter);
    document.getElementById("row-prev").addEventListener("click", function () { page = Math.max(0, page - 1); draw(); });
    document.getElementById("row-next").addEventListener("click", function () { page += 1; draw(); });
    draw();
  }
  drawCharts(document);
  followProgress();
  review();
  everyRow();
})();
