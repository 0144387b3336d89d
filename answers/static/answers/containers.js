// Each answer on the page ([data-answer]: the first screen's, a permalink's, every turn of a
// conversation) set up once by a script that works per answer (copy.js, preview.js): those there at
// load, and those added later (a conversation's next turn).
(function () {
  "use strict";

  function each(setUp) {
    function start() {
      for (const container of document.querySelectorAll("[data-answer]")) {
        setUp(container);
      }
      new MutationObserver(function (records) {
        for (const record of records) {
          for (const node of record.addedNodes) {
            if (node.nodeType === 1) {
              for (const container of node.matches("[data-answer]") ? [node] : node.querySelectorAll("[data-answer]")) {
                setUp(container);
              }
            }
          }
        }
      }).observe(document.body, { childList: true, subtree: true });
    }
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", start);
    } else {
      start();
    }
  }

  window.AnswerContainers = { each: each };
})();
