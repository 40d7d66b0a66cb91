"use strict";
// The run explorer: a grid of cases x runs, filters, and one case's runs side by side with a diff. It reads the
// runs that data/run-N.js appended to window.EVALKIT_RUNS and writes report text only through textContent and
// setAttribute (never innerHTML), so a model's output that looks like markup stays text. Only the rows in view
// are drawn (a pool of row elements reused as the grid scrolls), so 10,000 cases x 20 runs never freeze the page.
// Review: a reviewer labels the checks of one run's cases (the review run); the labels stay in localStorage under
// that run's report SHA-256 and export as a labels file (JSON Lines: a header, then one label per line), which
// `evalkit review --labels` and `evalkit calibrate --labels` read. The queue puts the cases the judge was least
// sure of first (each case's margin `u`, computed by evalkit.programs.labelling).
(function () {
  var ROW = 24;  // px, as --row in explorer.css
  var DIFF_CELLS = 4000000;  // tokens x tokens a diff may compare; longer texts are diffed by line, or not at all
  var MARK = { passed: "\u2713", failed: "\u2717", unscored: "?", absent: "\u00b7" };
  var runs = (window.EVALKIT_RUNS || []).slice().sort(function (a, b) { return a.index - b.index; });
  var timing = window.EVALKIT_TIMING = { firstPaint: null, applied: 0 };
  var root = document.getElementById("explorer");
  if (!root || runs.length === 0) { return; }
  document.getElementById("needs-script").hidden = true;
  root.hidden = false;

  // one row per case id, in the order the runs first name them; row[j] is run j's entry or undefined
  var ids = [], rows = [], where = new Map();
  runs.forEach(function (run, j) {
    run.cases.forEach(function (entry) {
      var i = where.get(entry.id);
      if (i === undefined) { i = ids.length; where.set(entry.id, i); ids.push(entry.id); rows.push(new Array(runs.length)); }
      rows[i][j] = entry;
    });
  });

  var state = { reference: clampIndex(Number(document.body.getAttribute("data-reference")) || 0), flags: {},
                slice: "", check: "", search: "", open: -1 };
  var regressed = new Uint8Array(ids.length), fixed = new Uint8Array(ids.length);
  var critical = new Uint8Array(ids.length), checkFailed = new Uint8Array(ids.length);
  var lowered = null, shown = [];
  var STORE = "evalkit-labels/", REVIEWER = "evalkit-reviewer", LABELS_FORMAT = "evalkit-labels/1";
  var review = { run: runs.length - 1, labels: new Map(), queue: false, stored: true };
  var labelled = new Set();  // the ids of the review run's cases that carry a label

  function clampIndex(n) { return n >= 0 && n < runs.length ? n : 0; }
  function outcome(entry) {
    if (!entry) { return "absent"; }
    if (!state.check) { return entry.o; }
    var value = entry.c[state.check];
    return value === undefined ? "absent" : value === "passed" || value === "failed" ? value : "unscored";
  }
  function text(tag, value, className) {
    var node = document.createElement(tag);
    node.textContent = value;
    if (className) { node.className = className; }
    return node;
  }
  function option(select, value, label) {
    var node = text("option", label);
    node.value = value;
    select.appendChild(node);
  }

  // --- what the filters read: flags per case, recomputed when the reference run or the check changes
  function computeFlags() {
    var ref = state.reference;
    for (var i = 0; i < rows.length; i += 1) {
      var row = rows[i], base = outcome(row[ref]), down = 0, up = 0, crit = 0, failedCheck = 0;
      for (var j = 0; j < row.length; j += 1) {
        var entry = row[j];
        if (!entry) { continue; }
        if (entry.crit) { crit = 1; }
        var now = outcome(entry);
        if (now === "failed") { failedCheck = 1; }
        if (j !== ref) {
          if (base === "passed" && now === "failed") { down = 1; }
          if (base === "failed" && now === "passed") { up = 1; }
        }
      }
      regressed[i] = down; fixed[i] = up; critical[i] = crit; checkFailed[i] = failedCheck;
    }
  }
  function hasSlice(row, slice) {
    for (var j = 0; j < row.length; j += 1) {
      if (row[j] && row[j].s && row[j].s.indexOf(slice) >= 0) { return true; }
    }
    return false;
  }
  function searchText(i) {
    if (lowered === null) { lowered = new Array(rows.length); }
    if (lowered[i] === undefined) {
      var parts = [ids[i]];
      rows[i].forEach(function (entry) { if (entry) { parts.push(entry.out); } });
      lowered[i] = parts.join("\n").toLowerCase();
    }
    return lowered[i];
  }
  // --- review: the labels of the review run, kept in this browser under its report's SHA-256
  function storage() {
    try { return window.localStorage; } catch (error) { return null; }  // storage may be off for file pages
  }
  function caseKey(entry) { return entry.k !== undefined ? entry.k : entry.id; }  // the id as the report has it
  function labelKey(caseId, check) { return JSON.stringify([caseId, check]); }
  function status(message) { document.getElementById("review-status").textContent = message; }
  function loadLabels() {
    var store = storage(), saved = null;
    review.labels = new Map();
    try {
      saved = store ? JSON.parse(store.getItem(STORE + runs[review.run].sha256) || "null") : null;
    } catch (error) { saved = null; }  // a stored value this page did not write is ignored, never shown
    if (saved && Array.isArray(saved.labels)) {
      saved.labels.forEach(function (l) {
        if (l && typeof l.case_id === "string" && typeof l.check_id === "string" && typeof l.note === "string" &&
            (typeof l.label === "string" || typeof l.label === "number") && typeof l.time === "string") {
          review.labels.set(labelKey(l.case_id, l.check_id),
                            { case_id: l.case_id, check_id: l.check_id, label: l.label, note: l.note, time: l.time });
        }
      });
    }
    countLabels();
  }
  function saveLabels() {
    var store = storage();
    try {
      store.setItem(STORE + runs[review.run].sha256, JSON.stringify({ labels: Array.from(review.labels.values()) }));
      review.stored = true;
    } catch (error) { review.stored = false; }
    countLabels();
  }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }
  function countLabels() {
    labelled = new Set();
    review.labels.forEach(function (l) { labelled.add(l.case_id); });
    document.getElementById("label-count").textContent = plural(review.labels.size, "label") + " on " +
      plural(labelled.size, "case") + " of #" + runs[review.run].index + (review.stored ? "" : " (kept in this page only: this browser's storage is off; export before closing it)");
    document.body.setAttribute("data-labels", String(review.labels.size));
  }
  // least sure first: the review run's margin (0 a coin toss), cases without one after, each in grid order
  function queueOrder(list) {
    var j = review.run;
    function margin(i) { var entry = rows[i][j]; return entry && entry.u !== undefined ? entry.u : 2; }
    return list.map(function (i, at) { return [margin(i), at, i]; })
      .sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; })
      .map(function (item) { return item[2]; });
  }
  function exportLabels() {
    var name = reviewer.value.trim(), run = runs[review.run];
    if (!name) { status("Name the reviewer before exporting: the labels file says who labelled."); reviewer.focus(); return; }
    if (review.labels.size === 0) { status("No labels on #" + run.index + " yet: open a case and label its checks."); return; }
    var header = { format: LABELS_FORMAT, report_sha256: run.sha256, reviewer: name, tool: "evalkit",
                   tool_version: document.body.getAttribute("data-version") || "unknown", report: run.path };
    var lines = [JSON.stringify(header)];
    review.labels.forEach(function (l) {
      lines.push(JSON.stringify({ case_id: l.case_id, check_id: l.check_id, label: l.label, note: l.note, time: l.time }));
    });
    var url = URL.createObjectURL(new Blob([lines.join("\n") + "\n"], { type: "application/x-ndjson" }));
    var link = document.createElement("a");  // a download of the page's own data: nothing is fetched
    link.href = url;
    link.download = "labels-" + run.sha256.slice(0, 12) + ".jsonl";
    document.body.appendChild(link);
    link.click();
    link.remove();
    window.setTimeout(function () { URL.revokeObjectURL(url); }, 60000);
    status("Exported " + review.labels.size + " labels on #" + run.index + " as " + link.download +
           ": record them with evalkit review --report REPORT --labels " + link.download + " --out REVIEWED.json");
  }
  function labelForm(entry) {
    var box = document.createElement("div"), id = caseKey(entry);
    box.className = "labels";
    box.appendChild(text("h4", "labels (review run)"));
    if (entry.uw !== undefined) { box.appendChild(text("p", "the judge's doubt: " + entry.uw, "doubt")); }
    var targets = Object.keys(entry.c).map(function (name) { return [name, ["pass", "fail"]]; });
    if (entry.lv) { Object.keys(entry.lv).forEach(function (name) { targets.push([name, entry.lv[name]]); }); }
    if (targets.length === 0) { box.appendChild(text("p", "nothing to label: no check ran on this case", "note")); }
    targets.forEach(function (target) {
      var name = target[0], choices = target[1], key = labelKey(id, name), saved = review.labels.get(key);
      var levels = typeof choices[0] === "number";
      var row = document.createElement("div");
      row.className = "label-row";
      row.setAttribute("data-check", name);
      row.appendChild(text("span", name + (levels ? " (levels)" : "")));
      var select = document.createElement("select");
      select.setAttribute("aria-label", "label of " + name);
      option(select, "", "not labelled");
      choices.forEach(function (choice) { option(select, String(choice), (levels ? "level " : "") + choice); });
      select.value = saved ? String(saved.label) : "";
      var note = document.createElement("textarea");
      note.setAttribute("aria-label", "note on " + name);
      note.placeholder = "note: why (kept with the label)";
      note.maxLength = 10000;  // as the labels file allows (evalkit.records.labels)
      note.value = saved ? saved.note : "";
      function save() {
        if (select.value === "") {
          review.labels.delete(key);
        } else {
          review.labels.set(key, { case_id: id, check_id: name, label: levels ? Number(select.value) : select.value,
                                   note: note.value, time: new Date().toISOString() });
        }
        saveLabels();
        draw();
      }
      select.addEventListener("change", save);
      note.addEventListener("input", function () { if (select.value !== "") { save(); } });
      row.appendChild(select);
      row.appendChild(note);
      box.appendChild(row);
    });
    return box;
  }

  function applyFilters() {
    var query = state.search.toLowerCase(), flags = state.flags;
    shown = [];
    for (var i = 0; i < rows.length; i += 1) {
      if (flags.regressed && !regressed[i]) { continue; }
      if (flags.fixed && !fixed[i]) { continue; }
      if (flags.critical && !critical[i]) { continue; }
      if (state.check && !checkFailed[i]) { continue; }
      if (state.slice && !hasSlice(rows[i], state.slice)) { continue; }
      if (query && searchText(i).indexOf(query) < 0) { continue; }
      shown.push(i);
    }
    if (review.queue) { shown = queueOrder(shown); }
    document.getElementById("count").textContent = shown.length + " of " + rows.length + " cases";
    spacer.style.height = (shown.length * ROW) + "px";
    draw();
    timing.applied += 1;
    document.body.setAttribute("data-shown", String(shown.length));
  }

  // --- the grid: a header, and a pool of rows moved and refilled as the body scrolls
  var head = document.getElementById("grid-head"), body = document.getElementById("grid-body");
  var spacer = document.getElementById("grid-spacer"), pool = document.getElementById("grid-rows");
  function drawHead() {
    head.textContent = "";
    head.appendChild(text("span", "case", "id"));
    runs.forEach(function (run, j) {
      var cell = text("span", "#" + run.index, j === state.reference ? "ref" : "");
      cell.setAttribute("title", run.path + " \u2014 decision: " + (run.decision || "none saved"));
      head.appendChild(cell);
    });
  }
  function rowElement() {
    var row = document.createElement("div");
    row.className = "grid-row";
    row.appendChild(text("span", "", "id"));
    for (var j = 0; j < runs.length; j += 1) { row.appendChild(document.createElement("span")); }
    return row;
  }
  function draw() {
    var first = Math.floor(body.scrollTop / ROW);
    var count = Math.min(shown.length - first, Math.ceil(body.clientHeight / ROW) + 2);
    while (pool.children.length < Math.max(count, 0)) { pool.appendChild(rowElement()); }
    pool.style.transform = "translateY(" + (first * ROW) + "px)";
    for (var k = 0; k < pool.children.length; k += 1) {
      var element = pool.children[k];
      if (k >= count) { element.hidden = true; continue; }
      var i = shown[first + k], cells = element.children;
      element.hidden = false;
      element.setAttribute("data-case", String(i));
      element.classList.toggle("open", i === state.open);
      var mine = rows[i][review.run];
      element.classList.toggle("labelled", mine !== undefined && labelled.has(caseKey(mine)));
      cells[0].textContent = ids[i];
      cells[0].setAttribute("title", review.queue && mine && mine.uw !== undefined ? ids[i] + " \u2014 " + mine.uw : ids[i]);
      for (var j = 0; j < runs.length; j += 1) {
        var value = outcome(rows[i][j]);
        cells[j + 1].textContent = MARK[value];
        cells[j + 1].className = value;
        cells[j + 1].setAttribute("title", "#" + runs[j].index + ": " + value);
      }
    }
  }
  var queued = false;
  body.addEventListener("scroll", function () {
    if (queued) { return; }
    queued = true;
    window.requestAnimationFrame(function () { queued = false; draw(); });
  });
  pool.addEventListener("click", function (event) {
    var row = event.target.closest(".grid-row");
    if (row) { openCase(Number(row.getAttribute("data-case"))); }
  });

  // --- one case: every run's output (and trajectory or transcript) side by side, diffed against the reference
  function openCase(i) {
    state.open = i;
    var panel = document.getElementById("case"), box = document.getElementById("case-runs");
    panel.hidden = false;
    document.getElementById("case-title").textContent = ids[i];
    box.textContent = "";
    var reference = rows[i][state.reference];
    // by index, not forEach: a run without the case is a hole in the row, and it gets its column too
    for (var j = 0; j < runs.length; j += 1) { box.appendChild(caseRun(runs[j], rows[i][j], j, reference)); }
    draw();
  }
  function caseRun(run, entry, j, reference) {
    var column = document.createElement("div");
    column.className = "case-run" + (j === state.reference ? " reference" : "");
    column.setAttribute("data-run", String(run.index));
    column.appendChild(text("h3", "#" + run.index + (j === state.reference ? " (reference)" : "") +
                            (j === review.run ? " (review)" : "")));
    column.appendChild(text("p", run.path, "note"));
    if (!entry) { column.appendChild(text("p", "not in this run", "note")); return column; }
    var facts = document.createElement("p");
    facts.appendChild(text("span", entry.o, "tag " + entry.o));
    if (entry.crit) { facts.appendChild(text("span", " critical check failed", "tag failed")); }
    column.appendChild(facts);
    var list = document.createElement("ul");
    Object.keys(entry.c).forEach(function (name) { list.appendChild(text("li", name + ": " + entry.c[name])); });
    column.appendChild(list);
    if (entry.s) { column.appendChild(text("p", entry.s.join(" \u00b7 "), "note")); }
    if (j === review.run) { column.appendChild(labelForm(entry)); }
    block(column, "output", entry.out, entry.outCut, "output");
    ["trajectory", "transcript"].forEach(function (name) {
      if (entry[name] !== undefined) { block(column, name, entry[name], entry[name + "Cut"], name); }
    });
    if (j !== state.reference && reference) {
      column.appendChild(text("h4", "output against #" + runs[state.reference].index));
      column.appendChild(diff(reference.out, entry.out));
    }
    return column;
  }
  function block(column, title, value, cut, className) {
    column.appendChild(text("h4", title));
    column.appendChild(text("pre", value, className));
    if (cut) { column.appendChild(text("p", "cut here: " + cut + " more characters are in the run's report.json", "note")); }
  }

  // A word diff (longest common subsequence), by line when the texts are long, and none past DIFF_CELLS.
  function diff(before, after) {
    var out = document.createElement("pre");
    out.className = "diff";
    var a = before.match(/\s+|\S+/g) || [], b = after.match(/\s+|\S+/g) || [];
    if (a.length * b.length > DIFF_CELLS) {
      a = before.split(/(?<=\n)/); b = after.split(/(?<=\n)/);
    }
    var start = 0;
    while (start < a.length && start < b.length && a[start] === b[start]) { start += 1; }
    var endA = a.length, endB = b.length;
    while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA -= 1; endB -= 1; }
    var n = endA - start, m = endB - start;
    if (n * m > DIFF_CELLS) { return text("p", "too long to diff here; both outputs are shown above", "note"); }
    out.appendChild(document.createTextNode(a.slice(0, start).join("")));
    var table = new Uint32Array((n + 1) * (m + 1));
    for (var x = n - 1; x >= 0; x -= 1) {
      for (var y = m - 1; y >= 0; y -= 1) {
        table[x * (m + 1) + y] = a[start + x] === b[start + y] ? table[(x + 1) * (m + 1) + y + 1] + 1
          : Math.max(table[(x + 1) * (m + 1) + y], table[x * (m + 1) + y + 1]);
      }
    }
    var i = 0, k = 0;
    while (i < n || k < m) {
      if (i < n && k < m && a[start + i] === b[start + k]) {
        out.appendChild(document.createTextNode(a[start + i])); i += 1; k += 1;
      } else if (i < n && (k === m || table[(i + 1) * (m + 1) + k] >= table[i * (m + 1) + k + 1])) {
        out.appendChild(text("del", a[start + i])); i += 1;  // what went, then what came, as diffs read
      } else {
        out.appendChild(text("ins", b[start + k])); k += 1;
      }
    }
    out.appendChild(document.createTextNode(a.slice(endA).join("")));
    return out;
  }

  // --- the controls
  var referenceSelect = document.getElementById("reference");
  runs.forEach(function (run, j) { option(referenceSelect, String(j), "#" + run.index + " " + run.path); });
  referenceSelect.value = String(state.reference);
  var slices = new Set(), checks = new Set();
  rows.forEach(function (row) {
    row.forEach(function (entry) {
      if (!entry) { return; }
      if (entry.s) { entry.s.forEach(function (s) { slices.add(s); }); }
      Object.keys(entry.c).forEach(function (c) { checks.add(c); });
    });
  });
  Array.from(slices).sort().forEach(function (s) { option(document.getElementById("slice"), s, s); });
  Array.from(checks).sort().forEach(function (c) { option(document.getElementById("check"), c, c); });

  document.getElementById("filters").addEventListener("click", function (event) {
    var button = event.target.closest("button[data-flag]");
    if (!button) { return; }
    var name = button.getAttribute("data-flag");
    state.flags[name] = !state.flags[name];
    button.setAttribute("aria-pressed", String(state.flags[name]));
    applyFilters();
  });
  referenceSelect.addEventListener("change", function () {
    state.reference = clampIndex(Number(referenceSelect.value));
    drawHead(); computeFlags(); applyFilters();
    if (state.open >= 0) { openCase(state.open); }
  });
  document.getElementById("slice").addEventListener("change", function (event) {
    state.slice = event.target.value; applyFilters();
  });
  document.getElementById("check").addEventListener("change", function (event) {
    state.check = event.target.value; computeFlags(); applyFilters();
  });
  document.getElementById("search").addEventListener("input", function (event) {
    state.search = event.target.value; applyFilters();
  });
  window.addEventListener("resize", draw);

  var reviewSelect = document.getElementById("review-run"), reviewer = document.getElementById("reviewer");
  runs.forEach(function (run, j) { option(reviewSelect, String(j), "#" + run.index + " " + run.path); });
  reviewSelect.value = String(review.run);
  reviewSelect.addEventListener("change", function () {
    review.run = Number(reviewSelect.value);
    loadLabels(); applyFilters();
    if (state.open >= 0) { openCase(state.open); }
  });
  try { reviewer.value = (storage() && storage().getItem(REVIEWER)) || ""; } catch (error) { reviewer.value = ""; }
  reviewer.addEventListener("input", function () {
    try { storage().setItem(REVIEWER, reviewer.value); } catch (error) { /* kept in the page only */ }
  });
  document.getElementById("queue").addEventListener("click", function (event) {
    review.queue = !review.queue;
    event.target.setAttribute("aria-pressed", String(review.queue));
    body.scrollTop = 0;
    applyFilters();
  });
  document.getElementById("export").addEventListener("click", exportLabels);
  loadLabels();

  drawHead();
  computeFlags();
  applyFilters();
  window.requestAnimationFrame(function () {
    window.setTimeout(function () {  // after the frame that drew the grid
      timing.firstPaint = window.performance.now();
      document.body.setAttribute("data-ready", "1");
    }, 0);
  });
}());
