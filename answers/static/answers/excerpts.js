// A source's excerpt in the Sources list, with the passages its native-citation quotes name
// marked (<mark>). The same window and pieces as answers/excerpts.py builds on the server
// (keep the two alike; tests/browser/test_source_quotes.py compares them). Text only ever
// enters through text nodes.
(function () {
  "use strict";

  const LIMIT = 200;
  const CONTEXT = 40;
  const ELLIPSIS = "…";
  const BREAKS = " \t\n\r";

  function escapeRegExp(text) {
    return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }

  // Where `quote` is in `excerpt`, any run of whitespace in it matching any run there; or null.
  function quoteSpan(excerpt, quote) {
    const words = String(quote).split(/\s+/).filter(Boolean);
    if (!words.length) {
      return null;
    }
    const found = new RegExp(words.map(escapeRegExp).join("\\s+")).exec(excerpt);
    return found ? [found.index, found.index + found[0].length] : null;
  }

  function merged(spans, length) {
    const clipped = spans
      .map(function (s) { return [Math.max(0, s[0]), Math.min(length, s[1])]; })
      .sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; });
    const out = [];
    for (const [start, end] of clipped) {
      if (end <= start) {
        continue;
      }
      if (out.length && start <= out[out.length - 1][1]) {
        out[out.length - 1][1] = Math.max(out[out.length - 1][1], end);
      } else {
        out.push([start, end]);
      }
    }
    return out;
  }

  function pieces(excerpt, spans) {
    const length = excerpt.length;
    const passages = merged(spans, length);
    if (!passages.length) {
      if (!excerpt) {
        return [];
      }
      return [[length <= LIMIT ? excerpt : excerpt.slice(0, LIMIT - 1) + ELLIPSIS, false]];
    }
    const [firstStart, firstEnd] = passages[0];
    let start = 0;
    if (firstEnd > LIMIT && firstStart > CONTEXT) {
      start = firstStart;
      for (let i = firstStart - CONTEXT; i < firstStart; i++) {
        if (BREAKS.includes(excerpt[i])) {
          start = i + 1;
          break;
        }
      }
    }
    const end = Math.min(length, Math.max(start + LIMIT, Math.min(firstEnd, start + 2 * LIMIT)));
    const out = start > 0 ? [[ELLIPSIS, false]] : [];
    let position = start;
    for (const [passageStart, passageEnd] of passages) {
      if (passageStart >= end) {
        break;
      }
      const a = Math.max(passageStart, start);
      const b = Math.min(passageEnd, end);
      if (a > position) {
        out.push([excerpt.slice(position, a), false]);
      }
      if (b > a) {
        out.push([excerpt.slice(a, b), true]);
      }
      position = Math.max(position, b);
    }
    if (position < end) {
      out.push([excerpt.slice(position, end), false]);
    }
    if (end < length) {
      out.push([ELLIPSIS, false]);
    }
    const joined = [];
    for (const piece of out) {
      const last = joined[joined.length - 1];
      if (last && last[1] === piece[1]) {
        last[0] += piece[0];
      } else {
        joined.push(piece);
      }
    }
    return joined;
  }

  // The excerpt's <p class="source-excerpt">, each quote found in it marked.
  window.sourceExcerpt = function (excerpt, quotes) {
    const text = String(excerpt);
    const spans = (Array.isArray(quotes) ? quotes : [])
      .map(function (quote) { return quoteSpan(text, quote); })
      .filter(Boolean);
    const p = document.createElement("p");
    p.className = "source-excerpt";
    for (const [piece, marked] of pieces(text, spans)) {
      if (marked) {
        const mark = document.createElement("mark");
        mark.textContent = piece;
        p.append(mark);
      } else {
        p.append(piece);
      }
    }
    return p;
  };
})();
