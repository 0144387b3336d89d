// The QA lists' export page (templates/admin/answers/export.html): "Select all" ticks or clears every
// field box. django-import-export wires it inline (onchange), which the Content Security Policy refuses.
"use strict";
document.querySelectorAll(".select-toggle").forEach((toggle) => {
  toggle.addEventListener("change", () => {
    document.querySelectorAll('.selectable-field-export-row input[type="checkbox"]').forEach((box) => {
      box.checked = toggle.checked;
    });
  });
});
