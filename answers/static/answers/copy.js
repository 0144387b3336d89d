// Copy and share a done answer (docs/reference/page-hooks.md): "Copy answer" (data-copy-answer) puts the answer on
// the clipboard as Markdown with its numbered Sources list, "Copy link" (data-copy-link, the link to the
// answer's permalink) its permalink, and "Download as Markdown" is the permalink's /answers/<id>/answer.md.
// The copied Markdown is that download, fetched when the answer is done, so the two never differ. A declined
// answer offers none of them. Works per answer container ([data-answer]): it watches each one's
// data-answer-status, data-answer-declined and data-answer-id.
(function () {
  "use strict";

  const PLACEHOLDER = "00000000-0000-0000-0000-000000000000";
  const markdown = new WeakMap(); // container -> {id, text: Promise<string>}

  function share(container) {
    return container.querySelector("[data-answer-share]");
  }

  function markdownUrl(container) {
    const block = share(container);
    return block.dataset.markdownUrl.replace(PLACEHOLDER, encodeURIComponent(container.dataset.answerId || ""));
  }

  function permalink(container) {
    const link = container.querySelector("[data-answer-permalink]");
    const href = link ? link.getAttribute("href") : "";
    return href ? new URL(href, window.location.href).href : "";
  }

  function fetchMarkdown(container) {
    const id = container.dataset.answerId || "";
    const known = markdown.get(container);
    if (known && known.id === id) {
      return known.text;
    }
    const text = fetch(markdownUrl(container), { credentials: "same-origin" }).then(function (response) {
      if (!response.ok) {
        throw new Error("The answer's Markdown could not be loaded (" + response.status + ").");
      }
      return response.text();
    });
    text.catch(function () {
      markdown.delete(container); // a later copy asks again
    });
    markdown.set(container, { id: id, text: text });
    return text;
  }

  function update(container) {
    const block = share(container);
    if (!block) {
      return;
    }
    const done = container.dataset.answerStatus === "done" && Boolean(container.dataset.answerId);
    block.hidden = !done || "answerDeclined" in container.dataset;
    block.querySelector("[data-share-status]").textContent = "";
    const download = block.querySelector("[data-answer-markdown]");
    if (done) {
      download.setAttribute("href", markdownUrl(container));
      fetchMarkdown(container);
    } else {
      download.removeAttribute("href");
    }
  }

  async function copy(container, button) {
    const status = share(container).querySelector("[data-share-status]");
    const what = button.hasAttribute("data-copy-answer") ? "answer" : "link";
    try {
      const text = what === "answer" ? await fetchMarkdown(container) : permalink(container);
      await navigator.clipboard.writeText(text);
      status.textContent = what === "answer" ? "Answer copied, with its sources." : "Link copied.";
    } catch (error) {
      status.textContent =
        what === "answer"
          ? "The answer could not be copied. Use “Download as Markdown” instead."
          : "The link could not be copied: it is " + permalink(container);
    }
  }

  const ready = new WeakSet();

  function setUp(container) {
    if (ready.has(container)) {
      return;
    }
    ready.add(container);
    new MutationObserver(function () {
      update(container);
    }).observe(container, {
      attributes: true,
      attributeFilter: ["data-answer-status", "data-answer-declined", "data-answer-id"],
    });
    container.addEventListener("click", function (event) {
      const button = event.target.closest("[data-copy-answer], [data-copy-link]");
      if (!button || !container.contains(button)) {
        return;
      }
      if (button.tagName === "A" && (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey)) {
        return; // "Copy link" opened in a new tab or window: it is the permalink's link
      }
      event.preventDefault();
      copy(container, button);
    });
    update(container);
  }

  window.AnswerContainers.each(setUp);
})();
