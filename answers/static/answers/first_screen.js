// The ask page's first screen: choosing an example question fills the question box
// (docs/reference/page-hooks.md: data-example-question). Without this script each example is a
// button of a GET form that reloads the page with the question in the box (`?q=`).
(function () {
  "use strict";

  function setUp() {
    const examples = document.querySelector("[data-examples]");
    const form = document.querySelector("[data-ask-form]");
    if (!examples || !form) {
      return;
    }
    const field = form.elements.namedItem("question");

    examples.addEventListener("click", function (event) {
      const button = event.target.closest("[data-example-question]");
      if (!button) {
        return;
      }
      event.preventDefault();
      field.value = button.dataset.exampleQuestion;
      field.dispatchEvent(new Event("input", { bubbles: true }));
      field.focus();
      field.setSelectionRange(field.value.length, field.value.length);
    });

    // Once a question is asked the answer takes the screen; the examples make way.
    form.addEventListener("submit", function () {
      if (field.value.trim()) {
        examples.hidden = true;
      }
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUp);
  } else {
    setUp();
  }
})();
