// Reader feedback under a done answer (docs/reference/page-hooks.md): the verdict buttons (data-verdict) after an
// optional comment (data-feedback-comment), and in each source, behind its "Report a source" disclosure
// (data-flag), a flag (data-flag-source) with its own note (data-flag-note), posted to
// POST /api/answers/<id>/feedback/. One verdict per reader per answer:
// a later one replaces the earlier, so the verdict sent shows as a pressed button and the other stays,
// to change it; a flag sent stays pressed, its note editable (sending again replaces it). The permalink
// page renders the controls with what the reader sent (templates/answers/_feedback.html,
// _flag_source.html); after a streamed answer's `done`, `show` clones the same markup from the answer's
// <template> elements and asks GET /api/answers/<id>/feedback/ for the reader's current feedback.
// Works per answer container ([data-answer]), so several answers on one page each have their own.
(function () {
  "use strict";

  const PLACEHOLDER = "00000000-0000-0000-0000-000000000000";
  const SAID = {
    helpful: "You said: helpful. Choose again to change it.",
    unhelpful: "You said: not helpful. Choose again to change it.",
  };
  const THANKS = "Thanks, your feedback was sent.";
  const FLAGGED = "Flagged: does not back the answer";
  const NOT_FLAGGED = "Does not back the answer";
  const REPORTED = "Reported: does not back the answer";
  const REPORT = "Report a source";

  function feedbackUrl(container) {
    return container.dataset.feedbackUrl.replace(PLACEHOLDER, encodeURIComponent(container.dataset.answerId || ""));
  }

  function clone(container, selector) {
    const template = container.querySelector(selector);
    return template ? template.content.firstElementChild.cloneNode(true) : null;
  }

  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) {
      return input.value;
    }
    const cookie = document.cookie.split("; ").find(function (c) {
      return c.startsWith("csrftoken=");
    });
    return cookie ? decodeURIComponent(cookie.slice("csrftoken=".length)) : "";
  }

  function showVerdict(block, verdict) {
    block.dataset.feedbackSent = verdict;
    for (const button of block.querySelectorAll("[data-verdict]")) {
      button.setAttribute("aria-pressed", button.dataset.verdict === verdict ? "true" : "false");
    }
  }

  function showFlag(button, flagged) {
    button.setAttribute("aria-pressed", flagged ? "true" : "false");
    button.textContent = flagged ? FLAGGED : NOT_FLAGGED;
    const flag = button.closest("[data-flag]");
    if (flag) {
      flag.toggleAttribute("data-flag-sent", flagged);
      const summary = flag.querySelector("[data-flag-summary]");
      if (summary) {
        summary.textContent = flagged ? REPORTED : REPORT; // what was sent, read with the disclosure closed
      }
    }
  }

  function remove(container) {
    for (const element of container.querySelectorAll("[data-answer-sources] [data-flag], [data-answer-feedback]")) {
      if (!element.closest("template")) {
        element.remove();
      }
    }
  }

  // The reader's current feedback (a streamed answer: usually none; the thread's older turns: theirs).
  async function load(container, block) {
    let current = null;
    try {
      const response = await fetch(feedbackUrl(container), {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      current = response.ok ? await response.json() : null;
    } catch (error) {
      current = null;
    }
    if (!current || !block.isConnected) {
      return;
    }
    if (current.verdict && SAID[current.verdict.verdict]) {
      showVerdict(block, current.verdict.verdict);
      block.querySelector("[data-feedback-comment]").value = String(current.verdict.comment || "");
      block.querySelector("[data-feedback-status]").textContent = SAID[current.verdict.verdict];
    }
    for (const flag of Array.isArray(current.flags) ? current.flags : []) {
      const button = container.querySelector('[data-flag-source="' + Number(flag.source) + '"]');
      if (button) {
        showFlag(button, true);
        button.closest("[data-flag]").querySelector("[data-flag-note]").value = String(flag.comment || "");
      }
    }
  }

  function show(container) {
    remove(container);
    if (!container.dataset.answerId) {
      return;
    }
    for (const li of container.querySelectorAll("[data-answer-sources] > li")) {
      const number = Number(li.dataset.number);
      const flag = clone(container, "template[data-flag-template]");
      if (!flag || !Number.isInteger(number) || number < 1) {
        continue;
      }
      const button = flag.querySelector("[data-flag-source]");
      button.dataset.flagSource = String(number);
      button.setAttribute("aria-label", "Source " + number + " does not back the answer");
      li.append(flag);
    }
    const block = clone(container, "template[data-feedback-template]");
    if (!block) {
      return;
    }
    const anchor = container.querySelector("[data-answer-retrieved-block]") || container.querySelector("[data-answer-sources]");
    anchor.after(block);
    load(container, block);
  }

  function problem(status, body) {
    if (status === 429) {
      return "Too much feedback in a short time. Please try again in a minute. (429)";
    }
    if (body && typeof body === "object") {
      for (const key of ["comment", "source", "verdict"]) {
        const value = body[key];
        if (Array.isArray(value) && value.length) {
          return String(value[0]) + " (" + status + ")";
        }
      }
    }
    if (status === 409) {
      return "Feedback is taken once the answer is finished. (409)";
    }
    return "Your feedback could not be sent (" + status + "). Please try again.";
  }

  async function send(container, button) {
    const block = container.querySelector("[data-answer-feedback]");
    const status = block ? block.querySelector("[data-feedback-status]") : null;
    const flagged = button.dataset.flagSource;
    if (button.disabled) {
      return;
    }
    let body;
    if (flagged) {
      const note = button.closest("[data-flag]").querySelector("[data-flag-note]");
      body = { verdict: "unhelpful", source: Number(flagged), comment: note ? note.value : "" };
    } else {
      const comment = block.querySelector("[data-feedback-comment]");
      body = { verdict: button.dataset.verdict, comment: comment ? comment.value : "" };
    }
    function say(message) {
      if (status) {
        status.textContent = message;
      }
    }
    button.disabled = true;
    say("Sending…");
    let response = null;
    let reply = null;
    try {
      response = await fetch(feedbackUrl(container), {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() },
        body: JSON.stringify(body),
      });
      try {
        reply = await response.json();
      } catch (error) {
        reply = null;
      }
    } catch (error) {
      button.disabled = false;
      say("The server could not be reached. Please try again.");
      return;
    }
    button.disabled = false;
    if (response.status !== 201) {
      say(problem(response.status, reply));
      return;
    }
    if (flagged) {
      showFlag(button, true);
      say(THANKS + " Source " + flagged + " flagged: it does not back the answer.");
      button.focus();
      return;
    }
    showVerdict(block, body.verdict);
    say(THANKS + " " + SAID[body.verdict]);
    if (status) {
      status.focus();
    }
  }

  function setUp(container) {
    // One listener for the controls, whether the server rendered them or `show` cloned them.
    container.addEventListener("click", function (event) {
      const button = event.target.closest("[data-answer-feedback] [data-verdict], [data-flag-source]");
      if (button && container.contains(button) && !button.closest("template")) {
        send(container, button);
      }
    });
  }

  window.AnswerFeedback = { show: show, remove: remove, setUp: setUp };
})();
