// Sorts the findings overview by the clicked column; a second click reverses the order.
(function () {
  var table = document.getElementById("overview");
  if (!table) return;
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, col) {
    th.tabIndex = 0;
    function sort() {
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var numeric = th.dataset.type === "num";
      var rows = Array.prototype.slice.call(table.tBodies[0].rows);
      rows.sort(function (a, b) {
        var x = a.cells[col].dataset.value || a.cells[col].textContent;
        var y = b.cells[col].dataset.value || b.cells[col].textContent;
        var d = numeric ? Number(x) - Number(y) : x.localeCompare(y);
        return ascending ? d : -d;
      });
      rows.forEach(function (r) { table.tBodies[0].appendChild(r); });
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") sort(); });
  });
})();
