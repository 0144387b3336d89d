// The ask page's script: posts the question (stream: true), follows the answer's events,
// and renders them. Text from the model or a document only ever enters the page through
// textContent / createTextNode, except the answer's text: its Markdown, rendered by
// AnswerMarkdown (static/answers/markdown.js, DOMPurify-sanitized) while it streams, and the
// `html` of `done`, which the server rendered and sanitized. Without this script the form posts
// to /ask/ instead.
//
// While the answer streams, the page shows each delta's `display` (the text as it will read
// once finalized: its markers already carry their final numbers), the sources cited so far
// in their final numbers (each announced by a `cite` event before its number shows), and,
// apart and unnumbered, the retrieved sources not cited yet. At `done` the finalized pair
// replaces them; a number once shown never changes (docs/reference/events.md).
//
// A declined answer (no source reached the relevance threshold: `done` with `declined`) shows its
// text, no Sources list and no retrieved list, marks the container `data-answer-declined`, and
// offers the example questions again.
//
// In a conversation the page is a thread (docs/reference/page-hooks.md, data-turn): each turn its own
// answer block, its ids and source anchors unique to the turn (turn T > 1: `turn-T-source-N`,
// answers/rendering.py source_anchor). The first answer moves the address to the conversation's
// permalink (history API); a follow-up adds a turn built from the thread's data-turn-template.
(function () {
  "use strict";

  const STATUS_TEXT = {
    streaming: "Writing the answer…",
    done: "",
    failed: "", // the error element says what went wrong: one message, not two
  };

  function safeLink(url) {
    // Only http(s) and site-relative URLs become links ("//host" and "/\host" are not site-relative);
    // the same rule as the server's link_url: no control or bidi control characters.
    if (typeof url !== "string" || url !== url.trim() || /[\u0000-\u001f\u007f\u202a-\u202e\u2066-\u2069]/.test(url)) {
      return null;
    }
    if (/^\/(?![\/\\])/.test(url)) {
      return url;
    }
    if (/^https?:\/\//i.test(url)) {
      try {
        const parsed = new URL(url);
        return parsed.protocol === "http:" || parsed.protocol === "https:" ? url : null;
      } catch (error) {
        return null;
      }
    }
    return null;
  }

  // While the answer streams, the display text so far is rendered as Markdown by AnswerMarkdown
  // (static/answers/markdown.js: the server's rendering, markers linked once their source is
  // cited), at most one render per RENDER_INTERVAL_MS. Each render is patched into the page
  // (AnswerMarkdown.patch): nodes that did not change stay, text that grew is appended to, so the
  // reader's selection and scroll position hold. At `done` the server's `html` is patched in the same way.
  const RENDER_INTERVAL_MS = 150;

  function showHtml(element, html) {
    // `html` is sanitized (the server's nh3 or the page's DOMPurify). AnswerMarkdown patches it in,
    // keeping what did not change; without it (its script did not load), it replaces the content.
    if (window.AnswerMarkdown) {
      window.AnswerMarkdown.patch(element, html);
    } else {
      element.innerHTML = html;
    }
  }

  function parse(event) {
    try {
      return JSON.parse(event.data);
    } catch (error) {
      return null;
    }
  }

  function anchorOf(number, turn) {
    if (window.AnswerMarkdown && window.AnswerMarkdown.sourceAnchor) {
      return window.AnswerMarkdown.sourceAnchor(number, turn);
    }
    return turn > 1 ? "turn-" + turn + "-source-" + number : "source-" + number;
  }

  function AnswerView(container) {
    this.container = container;
    this.turnElement = container.closest("[data-turn]");
    this.turn = (this.turnElement && Number(this.turnElement.dataset.turn)) || 1;
    this.text = container.querySelector("[data-answer-text]");
    this.sources = container.querySelector("[data-answer-sources]");
    this.sourcesHeading = container.querySelector("[data-answer-sources-heading]");
    this.retrieved = container.querySelector("[data-answer-retrieved]");
    this.retrievedBlock = container.querySelector("[data-answer-retrieved-block]");
    this.retrievedItems = new Map(); // original number -> its li in the retrieved list
    this.cited = 0; // how many sources are cited so far (their numbers are 1..cited)
    this.display = ""; // the display text so far
    this.renderTimer = null;
    this.renderedAt = 0;
    this.state = container.querySelector("[data-answer-state]");
    this.error = container.querySelector("[data-answer-error]");
    this.fallback = container.querySelector("[data-answer-fallback]");
    this.truncated = container.querySelector("[data-answer-truncated]");
    this.permalink = container.querySelector("[data-answer-permalink]"); // "Copy link" (static/answers/copy.js)
    this.stream = null;
  }

  AnswerView.prototype.setStatus = function (status) {
    this.container.dataset.answerStatus = status;
    this.text.setAttribute("aria-busy", status === "streaming" ? "true" : "false");
    this.state.textContent = STATUS_TEXT[status] || "";
  };

  AnswerView.prototype.reset = function () {
    this.close();
    this.cancelRender();
    removeFeedback(this.container); // reader feedback (section below)
    this.container.hidden = false;
    if (this.turnElement) {
      this.turnElement.hidden = false;
    }
    this.text.replaceChildren();
    this.sources.replaceChildren();
    this.setRetrieved([]);
    this.error.textContent = "";
    this.error.hidden = true;
    this.fallback.hidden = true;
    this.truncated.hidden = true;
    this.permalink.removeAttribute("href");
    this.setDeclined(false);
    this.setStatus("streaming");
  };

  // Declined: no Sources list, and the example questions (questions the site answers) offered again,
  // under the question box (which follows the thread): the question asked stays first.
  AnswerView.prototype.setDeclined = function (declined) {
    if (declined) {
      this.container.dataset.answerDeclined = "";
    } else {
      delete this.container.dataset.answerDeclined;
    }
    this.sources.hidden = declined;
    if (this.sourcesHeading) {
      this.sourcesHeading.hidden = declined;
    }
    const examples = document.querySelector("[data-examples]");
    if (examples && declined) {
      const followUp = document.querySelector("[data-follow-up]");
      if (followUp && (followUp.compareDocumentPosition(examples) & Node.DOCUMENT_POSITION_PRECEDING)) {
        followUp.after(examples);
      }
      examples.hidden = false;
    }
  };

  AnswerView.prototype.showPermalink = function (href) {
    this.permalink.setAttribute("href", href);
  };

  // One source's li: numbered (the Sources list) or not (the retrieved list); `quotes` and
  // `passages` (at `done`) are what of its excerpt to mark (static/answers/excerpts.js).
  function sourceItem(ref, number, quotes, passages, turn) {
    const li = document.createElement("li");
    if (number !== null) {
      li.id = anchorOf(number, turn || 1);
      li.value = number;
      li.dataset.number = String(number);
      const label = document.createElement("span");
      label.className = "source-number";
      label.textContent = "[" + number + "]";
      li.append(label, " ");
    }
    if (ref.withheld) {
      // A source this reader may no longer read: its number only (docs/reference/access.md, "Site content and document access").
      li.dataset.withheld = "";
      const withheld = document.createElement("span");
      withheld.className = "source-title source-withheld";
      withheld.textContent = "This source is no longer available to you.";
      li.append(withheld);
      return li;
    }
    const href = safeLink(ref.url);
    const title = document.createElement(href ? "a" : "span");
    title.className = "source-title";
    title.textContent = String(ref.title || ref.url || "Untitled");
    if (href) {
      title.setAttribute("href", href);
    }
    li.append(title);
    if (ref.excerpt) {
      li.append(window.sourceExcerpt(ref.excerpt, quotes, passages));
    }
    return li;
  }

  function numberOf(ref) {
    const number = ref ? Number(ref.number) : NaN;
    return Number.isInteger(number) && number >= 1 ? number : null;
  }

  AnswerView.prototype.renderSources = function (references, quotes, passages, samePassage) {
    const items = [];
    for (const ref of Array.isArray(references) ? references : []) {
      const number = numberOf(ref);
      if (number !== null) {
        items.push(sourceItem(ref, number, quotes && quotes[String(number)], passages && passages[String(number)], this.turn));
      }
    }
    this.sources.replaceChildren(...items);
    window.showSamePassages(this.sources, samePassage);
  };

  AnswerView.prototype.setRetrieved = function (references) {
    this.retrievedItems = new Map();
    const items = [];
    for (const ref of references) {
      const number = numberOf(ref);
      if (number !== null) {
        const li = sourceItem(ref, null);
        this.retrievedItems.set(number, li);
        items.push(li);
      }
    }
    this.retrieved.replaceChildren(...items);
    this.retrievedBlock.hidden = items.length === 0;
  };

  // `references`: nothing is cited yet; every retrieved source waits, unnumbered.
  AnswerView.prototype.startSources = function (references) {
    this.cited = 0;
    this.cancelRender();
    this.display = "";
    this.text.replaceChildren();
    this.sources.replaceChildren();
    this.setRetrieved(Array.isArray(references) ? references : []);
  };

  // `cite`: the k-th source cited joins the Sources list with its final number k.
  AnswerView.prototype.cite = function (data) {
    const number = numberOf(data);
    if (number !== this.cited + 1 || !data.reference) {
      // The server announces each cited source once, numbers 1, 2, ... in order, before the text
      // shows its number (docs/reference/events.md): anything else is its bug. Dropped, so the
      // page never shows a number the final text does not give, but never silently.
      console.error(
        "answer.js: a cite event dropped: expected number " + (this.cited + 1) + " with its reference, got " +
          JSON.stringify({ number: data.number, original: data.original, reference: Boolean(data.reference) }),
      );
      return;
    }
    this.cited = number;
    const waiting = this.retrievedItems.get(Number(data.original));
    if (waiting) {
      waiting.remove();
      this.retrievedItems.delete(Number(data.original));
    }
    this.retrievedBlock.hidden = this.retrievedItems.size === 0;
    this.sources.append(sourceItem(data.reference, number, null, null, this.turn));
  };

  AnswerView.prototype.appendDisplay = function (display) {
    if (typeof display === "string" && display) {
      this.display += display;
      this.scheduleRender();
    }
  };

  AnswerView.prototype.scheduleRender = function () {
    if (this.renderTimer !== null) {
      return; // the render already planned will show this delta too
    }
    const view = this;
    const wait = Math.max(0, this.renderedAt + RENDER_INTERVAL_MS - performance.now());
    this.renderTimer = setTimeout(function () {
      view.renderTimer = null;
      view.renderDisplay();
    }, wait);
  };

  AnswerView.prototype.cancelRender = function () {
    if (this.renderTimer !== null) {
      clearTimeout(this.renderTimer);
      this.renderTimer = null;
    }
  };

  AnswerView.prototype.renderDisplay = function () {
    this.renderedAt = performance.now();
    if (window.AnswerMarkdown) {
      showHtml(this.text, window.AnswerMarkdown.render(this.display, this.cited, this.turn));
    } else {
      this.text.textContent = this.display; // the renderer's script did not load: the text as it is
    }
  };

  AnswerView.prototype.finish = function (payload) {
    this.close();
    this.cancelRender();
    if (typeof payload.html === "string") {
      // Server-rendered and sanitized (answers/rendering.py): markers link to the Sources list.
      showHtml(this.text, payload.html);
    } else {
      this.text.textContent = String(payload.text || "");
    }
    this.renderSources(payload.references, payload.quotes, payload.passages, payload.same_passage);
    this.setRetrieved([]);
    this.setDeclined(payload.declined === true);
    this.fallback.hidden = !payload.fallback;
    this.truncated.hidden = payload.truncated !== true;
    this.setStatus("done");
    showFeedback(this.container); // reader feedback (section below)
  };

  AnswerView.prototype.fail = function (message) {
    this.close();
    this.error.textContent = message;
    this.error.hidden = false;
    this.setStatus("failed");
  };

  AnswerView.prototype.close = function () {
    if (this.stream) {
      this.stream.close();
      this.stream = null;
    }
  };

  AnswerView.prototype.follow = function (eventsUrl) {
    const view = this;
    const stream = new EventSource(eventsUrl);
    const seen = new Set();
    this.stream = stream;

    // django-eventstream can send a stored event twice under the same id: handle each id once.
    function handler(callback) {
      return function (event) {
        if (view.stream !== stream) {
          return;
        }
        if (event.lastEventId) {
          if (seen.has(event.lastEventId)) {
            return;
          }
          seen.add(event.lastEventId);
        }
        const data = parse(event);
        if (data !== null) {
          callback(data);
        }
      };
    }

    stream.addEventListener("references", handler(function (data) {
      view.startSources(data.references);
    }));
    stream.addEventListener("cite", handler(function (data) {
      view.cite(data);
    }));
    stream.addEventListener("delta", handler(function (data) {
      view.appendDisplay(data.display);
    }));
    stream.addEventListener("done", handler(function (data) {
      view.finish(data);
    }));
    stream.addEventListener("stream-error", function () {
      if (view.stream === stream) {
        view.fail("This answer's stream could not be read.");
      }
    });
    stream.addEventListener("error", function (event) {
      if (view.stream !== stream) {
        return;
      }
      if (typeof event.data === "string" && event.data !== "") {
        // The app's own `error` event: the answer failed.
        if (event.lastEventId) {
          if (seen.has(event.lastEventId)) {
            return;
          }
          seen.add(event.lastEventId);
        }
        const data = parse(event);
        view.fail((data && data.detail) || "The answer could not be finished.");
        return;
      }
      // EventSource's connection error (no data): it reconnects by itself, resuming after the
      // last id it saw; only a closed stream is final.
      if (stream.readyState === EventSource.CLOSED) {
        view.fail("The connection to the server was lost. Reload the page to see the answer.");
      }
    });
  };

  // --- Reader feedback: static/answers/feedback.js (window.AnswerFeedback) -------------------

  function showFeedback(container) {
    if (window.AnswerFeedback) {
      window.AnswerFeedback.show(container);
    }
  }

  function removeFeedback(container) {
    if (window.AnswerFeedback) {
      window.AnswerFeedback.remove(container);
    }
  }

  function setUpFeedback(container) {
    if (window.AnswerFeedback) {
      window.AnswerFeedback.setUp(container);
    }
  }

  // --- Asking ---------------------------------------------------------------------------------

  function csrfToken(form) {
    const input = form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  // In the page's own words, the status code kept (for a report); the API's own text is meant for
  // programs ("Request was throttled. Expected available in 41 seconds.").
  function errorMessage(status, body, retryAfter) {
    if (status === 429) {
      const seconds = Number.parseInt(retryAfter || "", 10);
      const wait = Number.isInteger(seconds) && seconds > 0
        ? "You can ask again in " + seconds + " second" + (seconds === 1 ? "" : "s") + "."
        : "Please wait a minute and try again.";
      return "Too many questions in a short time. " + wait + " (429)";
    }
    if (status === 400 && body && Array.isArray(body.question) && body.question.length) {
      return String(body.question[0]);
    }
    if (status === 504) {
      return "The answer took too long to start. Please try again. (504)";
    }
    if (status >= 500) {
      return "The server could not answer this question. Please try again in a moment. (" + status + ")";
    }
    return "The question could not be sent. Please try again. (" + status + ")";
  }

  // --- The thread: turns, the conversation's address ----------------------------------------

  const ID_PLACEHOLDER = "00000000-0000-0000-0000-000000000000";

  function renumberTurn(element, turn) {
    // A turn cloned from the template (or predicted wrongly) takes its number: its ids, the labels
    // pointing at them, and its anchor.
    const prefix = turn > 1 ? "turn-" + turn + "-" : "";
    element.dataset.turn = String(turn);
    for (const node of [element, ...element.querySelectorAll("[id], [for], [aria-labelledby]")]) {
      for (const name of ["id", "for", "aria-labelledby"]) {
        const value = node === element && name === "id" ? null : node.getAttribute(name);
        const match = value && /^turn-\d+-/.exec(value);
        if (match) {
          node.setAttribute(name, prefix + value.slice(match[0].length));
        }
      }
    }
    element.id = "turn-" + turn;
    const label = element.querySelector(".question-label");
    if (label) {
      label.textContent = turn > 1 ? "Question " + turn : "Question";
    }
  }

  function setUp() {
    const thread = document.querySelector("[data-thread]");
    if (thread && thread.dataset.pagePath && thread.dataset.pagePath !== window.location.pathname) {
      // Back or forward moved the address before this script could listen (popstate below): the
      // page shows what another address names, so load the one in the address bar.
      window.location.reload();
      return;
    }
    const template = document.querySelector("template[data-turn-template]");
    const views = [];
    for (const container of document.querySelectorAll("[data-answer]")) {
      const view = new AnswerView(container);
      setUpFeedback(container); // reader feedback (section below)
      // A permalink opened while its answer is still being written joins the stream (replayed from the start).
      if (container.dataset.eventsUrl) {
        view.text.replaceChildren();
        view.follow(container.dataset.eventsUrl);
      }
      views.push(view);
    }
    if (views.length === 0) {
      return;
    }
    // Back and forward between the first screen and a conversation: the address decides what shows.
    // A move within the page (a fragment: the skip link, a source's anchor) is no other page.
    let shownPath = window.location.pathname;
    window.addEventListener("popstate", function () {
      if (window.location.pathname !== shownPath) {
        window.location.reload();
      }
    });
    const form = document.querySelector("[data-ask-form]");
    if (!form) {
      return;
    }
    const field = form.elements.namedItem("question");
    const button = form.querySelector("[data-ask-submit]");
    const formError = form.querySelector("[data-ask-error]");
    const conversationField = form.querySelector("[data-ask-conversation]");
    const label = form.querySelector("[data-ask-label]");
    const followUp = document.querySelector("[data-follow-up]");
    const question = document.querySelector("[data-question]");

    function showFormError(message) {
      formError.textContent = message;
      formError.hidden = false;
      field.setAttribute("aria-invalid", "true");
      field.focus();
    }

    function conversationId() {
      return thread && conversationField ? conversationField.value : "";
    }

    function lastTurn() {
      let last = 0;
      for (const element of thread.querySelectorAll(":scope > [data-turn]")) {
        last = Math.max(last, Number(element.dataset.turn) || 0);
      }
      return last;
    }

    // The view the next question is shown in: on a single answer's page its block, on the ask page
    // the thread's first (hidden) turn, in a conversation a new turn from the template.
    function nextView() {
      if (!thread || !template) {
        return { view: views[views.length - 1], added: false };
      }
      if (!conversationId()) {
        const first = views.find(function (view) { return thread.contains(view.container); });
        return { view: first || views[views.length - 1], added: false };
      }
      const element = template.content.firstElementChild.cloneNode(true);
      renumberTurn(element, lastTurn() + 1);
      thread.append(element);
      const container = element.querySelector("[data-answer]");
      setUpFeedback(container);
      const view = new AnswerView(container);
      views.push(view);
      return { view: view, added: true };
    }

    function setQuestion(view, text) {
      const own = view.turnElement && view.turnElement.querySelector("[data-turn-question]");
      if (own) {
        own.textContent = text;
      } else if (question) {
        question.textContent = text;
      }
    }

    // The answer exists: the address becomes its conversation's permalink (a reload shows the
    // thread), the form asks follow-ups under the last answer, and "Ask another" leads back.
    function enterConversation(id) {
      const url = form.dataset.conversationUrl.replace(ID_PLACEHOLDER, encodeURIComponent(String(id)));
      if (window.location.pathname !== url) {
        window.history.pushState({ conversation: String(id) }, "", url);
      }
      shownPath = window.location.pathname;
      if (!thread || !conversationField) {
        return;
      }
      conversationField.value = String(id);
      thread.dataset.conversationId = String(id);
      if (label) {
        label.textContent = "Ask a follow-up";
      }
      if (followUp && followUp.previousElementSibling !== thread) {
        thread.after(followUp);
      }
      const another = document.querySelector("[data-ask-another-block]");
      if (another) {
        another.hidden = false;
      }
    }

    // Enter asks, as in a search box; Shift+Enter still starts a new line.
    field.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        form.requestSubmit();
      }
    });

    form.addEventListener("submit", async function (event) {
      event.preventDefault();
      const text = field.value.trim();
      if (!text) {
        showFormError("Please type a question.");
        return;
      }
      formError.hidden = true;
      formError.textContent = "";
      field.removeAttribute("aria-invalid");
      button.disabled = true;
      const conversation = conversationId();
      const next = nextView();
      const view = next.view;
      view.reset();
      setQuestion(view, text);
      function withdraw(message) {
        // A question refused as such (400, or a follow-up this conversation cannot take): no turn.
        view.close();
        if (next.added) {
          view.turnElement.remove();
          views.splice(views.indexOf(view), 1);
        } else {
          view.container.hidden = true;
          if (view.turnElement) {
            view.turnElement.hidden = true;
          }
        }
        showFormError(message);
      }
      try {
        const response = await fetch(form.dataset.apiUrl, {
          method: "POST",
          credentials: "same-origin",
          headers: {
            "Content-Type": "application/json",
            Accept: "application/json",
            "X-CSRFToken": csrfToken(form),
          },
          body: JSON.stringify({ question: text, stream: true, conversation: conversation || null }),
        });
        let body = null;
        try {
          body = await response.json();
        } catch (error) {
          body = null;
        }
        if (response.status !== 202 || !body || !body.events_url) {
          const message = errorMessage(response.status, body, response.headers.get("Retry-After"));
          if ([400, 403, 404, 409].includes(response.status)) {
            withdraw(message);
          } else {
            view.fail(message);
          }
          return;
        }
        const permalink = form.dataset.permalinkUrl.replace(ID_PLACEHOLDER, encodeURIComponent(String(body.id)));
        view.container.dataset.answerId = String(body.id);
        const turn = Number(body.turn);
        if (view.turnElement && Number.isInteger(turn) && turn >= 1 && turn !== view.turn) {
          renumberTurn(view.turnElement, turn);
          view.turn = turn;
        }
        view.showPermalink(permalink);
        if (body.conversation) {
          enterConversation(body.conversation);
        }
        field.value = ""; // asked: the box is ready for the next question (Enter must not ask it twice)
        view.follow(body.events_url);
      } catch (error) {
        view.fail("The server could not be reached. Please try again.");
      } finally {
        button.disabled = false;
      }
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUp);
  } else {
    setUp();
  }
})();
