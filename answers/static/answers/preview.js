// Source previews (docs/reference/page-hooks.md: data-source-preview): hovering or focusing a citation link in an
// answer's text opens a popover with its source's title, its excerpt with the backing passage marked,
// and a link to the source, all taken from the answer's own Sources list (so it works while the answer
// streams, for each source as soon as it is cited). Escape closes it and keeps the focus on the citation;
// Tab from an open citation moves into the popover (its link), Shift+Tab back. On a touch screen the
// first tap on a citation opens its preview, a second follows the link. Following a citation (a click,
// Enter, that second tap) stays on the page: the source's item in the Sources list is scrolled to,
// highlighted and focused, and the address's fragment names it (history.replaceState: no page load, so
// the reader's draft in the question box and the thread stay as they are; no history entry either).
// Without this script the link's href is that same anchor. The citation link describes
// itself by the popover (aria-describedby), so a screen reader reads the source with the link.
// One popover per answer container ([data-answer]), built from text nodes and cloned page nodes only.
//
// The page re-renders the answer's text while it streams and swaps in the final pair at `done`
// (docs/reference/events.md): a citation the popover marks (aria-describedby, aria-expanded) differs
// from the render's own, so the render replaces it, and `done` replaces every source's li. An open
// popover follows: it moves to the new link of the same citation (the same target, the same
// occurrence in the text), rebuilt from the source's new li (at `done`: its backing passage marked),
// and the focus, if it was on the old link or in the popover, goes to the new one. With no such link
// any more it closes.
(function () {
  "use strict";

  let counter = 0;
  const ready = new WeakSet();

  function sourceFor(container, link) {
    // The li the citation points at, in this answer's own Sources list: #source-N, or in a
    // conversation's turn T > 1 #turn-T-source-N (answers/rendering.py source_anchor).
    const href = link.getAttribute("href") || "";
    if (!/^#(?:turn-\d+-)?source-\d+$/.test(href)) {
      return null;
    }
    for (const li of container.querySelectorAll("[data-answer-sources] > li[data-number]")) {
      if (li.id === href.slice(1)) {
        return li;
      }
    }
    return null;
  }

  function citations(container, href) {
    // The answer's citation links to `href`, in text order.
    return Array.from(container.querySelectorAll("[data-answer-text] a.cite")).filter(function (link) {
      return link.getAttribute("href") === href;
    });
  }

  function Preview(container) {
    this.container = container;
    this.link = null;
    this.item = null; // the source's li the popover was built from
    this.href = null; // the open citation's target and its occurrence among the links to it
    this.occurrence = 0;
    this.linkFocused = false; // whether the open citation had the focus when a render removed it
    this.touched = null; // the citation a touch opened (its next tap follows it)
    this.hideTimer = null;
    this.refocusing = false;
    this.element = document.createElement("div");
    this.element.className = "source-preview";
    this.element.dataset.sourcePreview = "";
    this.element.id = "source-preview-" + ++counter;
    this.element.setAttribute("role", "group");
    this.element.hidden = true;
    container.append(this.element);
  }

  Preview.prototype.open = function (link) {
    const item = sourceFor(this.container, link);
    if (!item) {
      return;
    }
    this.cancelHide();
    if (this.link && this.link !== link) {
      this.close(false);
    }
    this.build(item);
    this.element.hidden = false;
    this.anchor(link, item);
  };

  Preview.prototype.build = function (item) {
    const number = item.dataset.number;
    const title = item.querySelector(".source-title");
    const heading = document.createElement("p");
    heading.className = "source-preview-title";
    heading.textContent = "[" + number + "] " + (title ? title.textContent : "");
    const parts = [heading];
    const excerpt = item.querySelector(".source-excerpt");
    if (excerpt) {
      const passage = excerpt.cloneNode(true);
      passage.className = "source-preview-passage";
      parts.push(passage);
    }
    const same = item.querySelector(".source-same");
    if (same) {
      parts.push(same.cloneNode(true));
    }
    const href = title && title.tagName === "A" ? title.getAttribute("href") : null;
    if (href) {
      const open = document.createElement("a");
      open.className = "source-preview-link";
      open.setAttribute("href", href);
      open.textContent = "Open the source";
      parts.push(open);
    }
    this.element.replaceChildren(...parts);
    this.element.setAttribute("aria-label", "Source " + number);
  };

  Preview.prototype.anchor = function (link, item) {
    this.link = link;
    this.item = item;
    this.href = link.getAttribute("href");
    this.occurrence = Math.max(0, citations(this.container, this.href).indexOf(link));
    this.linkFocused = false;
    link.setAttribute("aria-describedby", this.element.id);
    link.setAttribute("aria-expanded", "true");
    this.place(link);
  };

  Preview.prototype.follow = function () {
    // After the answer's text or Sources list changed: the open popover moves to the citation's
    // new link and the source's new li, or closes when the citation is gone.
    if (!this.link) {
      return;
    }
    const old = this.link;
    const link = old.isConnected ? old : citations(this.container, this.href)[this.occurrence] || null;
    const item = link ? sourceFor(this.container, link) : null;
    if (link === old && item === this.item) {
      return;
    }
    const focusWasOnLink = this.linkFocused || document.activeElement === old;
    const focusWasInside = this.element.contains(document.activeElement);
    if (this.touched === old) {
      this.touched = link;
    }
    if (!link || !item) {
      // Nothing to point at any more: closed, and the focus is not left on nothing.
      this.element.hidden = true;
      this.element.replaceChildren();
      this.link = null;
      this.item = null;
      this.touched = null;
      this.linkFocused = false;
      if (link && (focusWasOnLink || focusWasInside)) {
        this.refocus(link);
      }
      return;
    }
    if (item !== this.item) {
      this.build(item);
    }
    this.anchor(link, item);
    if (focusWasOnLink || (focusWasInside && !this.element.contains(document.activeElement))) {
      this.refocus(focusWasInside ? this.element.querySelector("a") || link : link);
    }
  };

  Preview.prototype.refocus = function (element) {
    this.refocusing = true; // the focus going back is not a reader opening it again
    element.focus();
    this.refocusing = false;
  };

  Preview.prototype.place = function (link) {
    // Fixed below the citation (above it when there is no room), kept inside the viewport.
    const box = link.getBoundingClientRect();
    const width = Math.min(352, window.innerWidth - 16);
    this.element.style.width = width + "px";
    const left = Math.max(8, Math.min(box.left, window.innerWidth - width - 8));
    this.element.style.left = left + "px";
    const height = this.element.offsetHeight;
    const below = box.bottom + 6;
    const top = below + height > window.innerHeight && box.top - 6 - height > 0 ? box.top - 6 - height : below;
    this.element.style.top = top + "px";
  };

  Preview.prototype.close = function (refocus) {
    this.cancelHide();
    if (!this.link) {
      return;
    }
    const link = this.link;
    const hadFocus = this.element.contains(document.activeElement);
    this.element.hidden = true;
    this.element.replaceChildren();
    link.setAttribute("aria-expanded", "false");
    this.link = null;
    this.item = null;
    this.touched = null;
    this.linkFocused = false;
    if (refocus || hadFocus) {
      this.refocus(link);
    }
  };

  Preview.prototype.hideSoon = function () {
    // Leaving the citation for the popover (to use its link) must not close it: a short grace.
    const preview = this;
    this.cancelHide();
    this.hideTimer = setTimeout(function () {
      preview.hideTimer = null;
      if (!preview.element.matches(":hover") && !preview.element.contains(document.activeElement)) {
        preview.close(false);
      }
    }, 300);
  };

  Preview.prototype.cancelHide = function () {
    if (this.hideTimer !== null) {
      clearTimeout(this.hideTimer);
      this.hideTimer = null;
    }
  };

  // A citation followed: its source's item scrolled into view, highlighted (the one highlighted on the
  // page) and focused, and named in the address without a page load.
  function showSource(item) {
    for (const other of document.querySelectorAll("[data-source-shown]")) {
      delete other.dataset.sourceShown;
    }
    item.dataset.sourceShown = "";
    const address = new URL(window.location.href);
    address.hash = item.id;
    window.history.replaceState(window.history.state, "", address.href);
    item.setAttribute("tabindex", "-1");
    item.focus({ preventScroll: true });
    item.scrollIntoView({ block: "nearest" });
  }

  function citation(container, target) {
    const link = target instanceof Element ? target.closest("[data-answer-text] a.cite") : null;
    return link && container.contains(link) ? link : null;
  }

  function setUp(container) {
    if (ready.has(container) || !container.querySelector("[data-answer-text]")) {
      return;
    }
    ready.add(container);
    const preview = new Preview(container);
    let pointer = "mouse";

    container.addEventListener("pointerover", function (event) {
      const link = citation(container, event.target);
      if (link && event.pointerType === "mouse") {
        preview.open(link);
      } else if (preview.element.contains(event.target)) {
        preview.cancelHide();
      }
    });
    container.addEventListener("pointerout", function (event) {
      if (event.pointerType !== "mouse" || !preview.link) {
        return;
      }
      const into = event.relatedTarget;
      if (into instanceof Node && (preview.element.contains(into) || preview.link.contains(into))) {
        return;
      }
      if (citation(container, event.target) || preview.element.contains(event.target)) {
        preview.hideSoon();
      }
    });
    container.addEventListener("pointerdown", function (event) {
      pointer = event.pointerType || "mouse";
    });
    container.addEventListener("focusin", function (event) {
      const link = citation(container, event.target);
      if (link && pointer !== "touch" && !preview.refocusing) {
        preview.open(link);
      }
    });
    container.addEventListener("focusout", function (event) {
      const into = event.relatedTarget;
      if (!preview.link || (into instanceof Node && (preview.element.contains(into) || into === preview.link))) {
        return;
      }
      const link = preview.link;
      const target = event.target;
      if (target !== link && !preview.element.contains(target)) {
        return;
      }
      if (into === null) {
        // Focus going nowhere may be Chrome blurring a focused node a render is about to remove
        // (the citation, or the popover's link as it is rebuilt): decided once the render is done,
        // when follow has moved the popover and the focus to the replacements.
        if (target === link) {
          preview.linkFocused = true;
        }
        queueMicrotask(function () {
          if (preview.link === link && target.isConnected) {
            preview.close(false);
          }
        });
        return;
      }
      preview.close(false);
    });
    container.addEventListener("click", function (event) {
      const link = citation(container, event.target);
      if (!link) {
        return;
      }
      const touch = pointer === "touch";
      pointer = "mouse";
      if (touch && preview.touched !== link) {
        event.preventDefault(); // the first tap previews; the second follows the link
        preview.open(link);
        preview.touched = link;
        return;
      }
      const item = sourceFor(container, link);
      if (!item || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) {
        return; // a new tab or window: the browser's own
      }
      event.preventDefault();
      preview.close(false);
      showSource(item);
    });
    container.addEventListener("keydown", function (event) {
      if (!preview.link) {
        return;
      }
      if (event.key === "Escape") {
        event.preventDefault();
        preview.close(true);
        return;
      }
      if (event.key === "Tab" && !event.shiftKey && event.target === preview.link) {
        const inside = preview.element.querySelector("a");
        if (inside) {
          event.preventDefault();
          inside.focus();
        }
      } else if (event.key === "Tab" && event.shiftKey && preview.element.contains(event.target)) {
        event.preventDefault();
        preview.link.focus();
      }
    });
    document.addEventListener("pointerdown", function (event) {
      if (preview.link && !preview.element.contains(event.target) && !citation(container, event.target)) {
        preview.close(false);
      }
    });
    new MutationObserver(function () {
      preview.follow();
    }).observe(container, { childList: true, subtree: true });
    window.addEventListener("scroll", function () {
      if (preview.link) {
        preview.place(preview.link);
      }
    }, { passive: true });
  }

  window.AnswerContainers.each(setUp);
})();
