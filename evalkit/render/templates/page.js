"use strict";
// Filtering and sorting only: the page is complete without this script. It reads report data from the DOM's
// text and attributes and never writes markup (no innerHTML), so it cannot turn report text into code.
(function () {
  function applyFilter(group, name) {
    var table = document.getElementById(group.getAttribute("data-table"));
    if (!table) { return; }
    var shown = 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      var tags = (row.getAttribute("data-tags") || "").split(" ");
      var show = name === "all" || tags.indexOf(name) >= 0;
      row.classList.toggle("hidden", !show);
      if (show) { shown += 1; }
    });
    Array.prototype.forEach.call(group.querySelectorAll("button[data-filter]"), function (button) {
      button.setAttribute("aria-pressed", String(button.getAttribute("data-filter") === name));
    });
    var count = group.querySelector(".count");
    if (count) { count.textContent = shown + " shown"; }
  }
  Array.prototype.forEach.call(document.querySelectorAll(".filters[data-table]"), function (group) {
    group.hidden = false;
    // the page opens on what matters (the regressed tests, else the failing ones); all are one click away
    applyFilter(group, group.getAttribute("data-initial") || "all");
    group.addEventListener("click", function (event) {
      var button = event.target.closest("button[data-filter]");
      if (button) { applyFilter(group, button.getAttribute("data-filter")); }
    });
  });

  function key(cell) {
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
    var number = raw === "" ? NaN : Number(raw);
    return isNaN(number) ? { n: false, v: raw.toLowerCase() } : { n: true, v: number };
  }
  function compare(a, b) {
    if (a.n && b.n) { return a.v - b.v; }
    if (a.n !== b.n) { return a.n ? -1 : 1; }  // numbers before text (e.g. "not measured")
    return a.v < b.v ? -1 : a.v > b.v ? 1 : 0;
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      var label = th.textContent;
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = label;
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(table.tHead.rows[0].cells, function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r1, r2) {
          var order = compare(key(r1.cells[index]), key(r2.cells[index]));
          return ascending ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
})();
