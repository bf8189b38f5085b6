// ageval view: the grid's filters, sorting and comparison. Plain DOM, no library.
// It reads only the data-* attributes the server wrote and writes only textContent and
// classes, so nothing from the results is ever parsed as HTML here.
"use strict";

(function () {
  const grid = document.getElementById("grid");
  if (!grid) {
    return;
  }
  const body = grid.tBodies[0];
  const rows = Array.from(body.rows);
  const search = document.getElementById("search");
  const statusBoxes = Array.from(document.querySelectorAll('input[name="status"]'));
  const compareA = document.getElementById("compare-a");
  const compareB = document.getElementById("compare-b");
  const onlyFlipped = document.getElementById("only-flipped");
  const flips = document.getElementById("flips");

  function cellOf(row, column) {
    return row.querySelector('td[data-col="' + column + '"]');
  }

  function verdictOf(row, column) {
    const cell = cellOf(row, column);
    return cell ? cell.dataset.verdict || "" : "";
  }

  function numberOf(row, column, name) {
    const cell = cellOf(row, column);
    const value = cell ? parseFloat(cell.dataset[name]) : NaN;
    return Number.isNaN(value) ? -1 : value;
  }

  // Comparing two columns: a task flipped when its verdict (PASS, FAIL, MIXED, DONE) differs.
  function compare() {
    const a = compareA ? compareA.value : "";
    const b = compareB ? compareB.value : "";
    const flipped = [];
    for (const row of rows) {
      for (const cell of row.cells) {
        cell.classList.remove("compared");
      }
      const before = a && b ? verdictOf(row, a) : "";
      const after = a && b ? verdictOf(row, b) : "";
      const changed = before !== "" && after !== "" && before !== after;
      row.classList.toggle("flipped", changed);
      if (changed) {
        flipped.push(row.dataset.task + " (" + before + " → " + after + ")");
        cellOf(row, a).classList.add("compared");
        cellOf(row, b).classList.add("compared");
      }
    }
    if (!flips) {
      return;
    }
    if (!(a && b)) {
      flips.textContent = "";
    } else if (flipped.length === 0) {
      flips.textContent = "no task flipped";
    } else {
      const shown = flipped.slice(0, 50).join(", ");
      const more = flipped.length > 50 ? ", …" : "";
      flips.textContent = flipped.length + " flipped: " + shown + more;
    }
  }

  function filter() {
    const text = search ? search.value.trim().toLowerCase() : "";
    const wanted = new Set(statusBoxes.filter((box) => box.checked).map((box) => box.value));
    const flippedOnly = onlyFlipped ? onlyFlipped.checked : false;
    for (const row of rows) {
      const statuses = (row.dataset.statuses || "").split(" ").filter(Boolean);
      const byText = !text || row.dataset.task.toLowerCase().includes(text);
      const byStatus = statuses.some((status) => wanted.has(status));
      const byFlip = !flippedOnly || row.classList.contains("flipped");
      row.classList.toggle("hidden", !(byText && byStatus && byFlip));
    }
  }

  // Sorting: by task name, or by a column's pass rate, then its average score.
  let sortedBy = "task";
  let descending = false;
  function sort(key) {
    descending = key === sortedBy ? !descending : key !== "task";
    sortedBy = key;
    const direction = descending ? -1 : 1;
    const byTask = (x, y) => x.dataset.task.localeCompare(y.dataset.task);
    rows.sort((x, y) => {
      if (key === "task") {
        return direction * byTask(x, y);
      }
      const rate = numberOf(x, key, "rate") - numberOf(y, key, "rate");
      const score = numberOf(x, key, "score") - numberOf(y, key, "score");
      return direction * (rate || score) || byTask(x, y);
    });
    for (const row of rows) {
      body.appendChild(row);
    }
    for (const head of grid.querySelectorAll("th.sortable")) {
      head.classList.toggle("sorted-desc", head.dataset.sort === key && descending);
      head.classList.toggle("sorted-asc", head.dataset.sort === key && !descending);
    }
  }

  for (const head of grid.querySelectorAll("th.sortable")) {
    head.addEventListener("click", (event) => {
      if (event.target.closest("a")) {
        return;
      }
      sort(head.dataset.sort);
    });
  }
  if (search) {
    search.addEventListener("input", filter);
  }
  for (const box of statusBoxes) {
    box.addEventListener("change", filter);
  }
  for (const control of [compareA, compareB]) {
    if (control) {
      control.addEventListener("change", () => {
        compare();
        filter();
      });
    }
  }
  if (onlyFlipped) {
    onlyFlipped.addEventListener("change", filter);
  }
  const controls = document.getElementById("controls");
  if (controls) {
    controls.addEventListener("submit", (event) => event.preventDefault());
  }
  filter();
})();
