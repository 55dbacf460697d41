/* The memory list's selection: "select all" ticks every row of the page, and reads as
   mixed when only some are ticked. Without this file the server still reads "select all"
   as every memory the page showed (memories.forms.BulkActionForm). No inline scripts. */
(function () {
  "use strict";

  /* The boxes belong to their form by its id (form="..."), not by nesting: htmx swaps the
     results under a form that stays. */
  function rows(form) {
    return document.querySelectorAll('[data-select-row][form="' + form.id + '"]');
  }

  document.addEventListener("change", function (event) {
    var box = event.target;
    var form = box.form;
    if (!form || !form.id) return;
    var all = document.querySelector('[data-select-all][form="' + form.id + '"]');
    if (!all) return;
    var boxes = rows(form);
    var i;
    if (box === all) {
      for (i = 0; i < boxes.length; i++) boxes[i].checked = all.checked;
      all.indeterminate = false;
      return;
    }
    if (!box.matches("[data-select-row]")) return;
    var ticked = 0;
    for (i = 0; i < boxes.length; i++) if (boxes[i].checked) ticked++;
    all.checked = ticked === boxes.length;
    all.indeterminate = ticked > 0 && ticked < boxes.length;
  });
})();
