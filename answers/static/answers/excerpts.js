// A source's excerpt in the Sources list, made readable (Markdown reduced to its text, table
// rules dropped), with the passages that back the answer (its native-citation quotes, and the
// server's `passages` at `done`) marked (<mark>), cut at words. The same text, window and pieces
// as answers/excerpts.py builds on the server
// (both must give the pieces of one table, tests/fixtures/excerpt_cases.json: tests/unit/test_excerpts.py
// runs it on the server, tests/browser/test_source_quotes.py here). Text only ever
// enters through text nodes.
(function () {
  "use strict";

  const LIMIT = 200;
  const CONTEXT = 40;
  const ELLIPSIS = "…";
  const BREAKS = " \t\n\r";
  // answers/excerpts.py's patterns, the same: what `readable` drops.
  const TABLE_RULE = /^[ \t]*[|+]?[-=:+| \t]*[-=]{3,}[-=:+| \t]*(?:\n|$)/gm;
  const LINE_MARKS = /^[ \t]*(?:#{1,6}[ \t]+|>[ \t]?|[-*+][ \t]+)/gm;
  const LINK = /!?\[([^\]\n]*)\]\([^)\s]*\)/g;
  const PAIRED_MARKS = /(?<!\\)(\*{1,3}|~~|`+)(?=\S)([^\n]*?\S)\1/g;
  const PAIRED_UNDERSCORES = /(?<![\\0-9A-Za-z_])(_{1,3})(?=\S)([^\n]*?\S)\1(?![0-9A-Za-z_])/g;
  const ESCAPE = /\\(?=[\\`*_{}\[\]()#+\-.!|])/g;
  const SPACE = " \t\n\r\f\v|";

  // The excerpt as a reader reads it, and where each of its characters was (plus the length).
  function readable(excerpt) {
    const keep = new Array(excerpt.length).fill(true);
    function drop(start, end) {
      for (let i = start; i < end; i++) {
        keep[i] = false;
      }
    }
    for (const found of excerpt.matchAll(TABLE_RULE)) {
      drop(found.index, found.index + found[0].length);
    }
    for (const found of excerpt.matchAll(LINE_MARKS)) {
      drop(found.index, found.index + found[0].length);
    }
    for (const found of excerpt.matchAll(LINK)) {
      const textStart = found.index + found[0].indexOf("[") + 1;
      drop(found.index, textStart);
      drop(textStart + found[1].length, found.index + found[0].length);
    }
    for (const pattern of [PAIRED_MARKS, PAIRED_UNDERSCORES]) {
      for (const found of excerpt.matchAll(pattern)) {
        const mark = found[1].length;
        drop(found.index, found.index + mark);
        drop(found.index + found[0].length - mark, found.index + found[0].length);
      }
    }
    for (const found of excerpt.matchAll(ESCAPE)) {
      drop(found.index, found.index + found[0].length);
    }
    const chars = [];
    const where = [];
    for (let i = 0; i < excerpt.length; i++) {
      if (!keep[i]) {
        continue;
      }
      const char = excerpt[i];
      if (SPACE.includes(char)) {
        if (chars.length && chars[chars.length - 1] !== " ") {
          chars.push(" ");
          where.push(i);
        }
        continue;
      }
      chars.push(char);
      where.push(i);
    }
    while (chars.length && chars[chars.length - 1] === " ") {
      chars.pop();
      where.pop();
    }
    where.push(excerpt.length);
    return [chars.join(""), where];
  }

  function bisectLeft(list, value) {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid] < value) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  function moved(span, where) {
    const last = where.length - 1;
    return [Math.min(bisectLeft(where, span[0]), last), Math.min(bisectLeft(where, span[1]), last)];
  }

  function wordEnd(text, end, floor) {
    if (end >= text.length || BREAKS.includes(text[end])) {
      return end;
    }
    for (let i = end - 1; i > Math.max(floor, end - CONTEXT); i--) {
      if (BREAKS.includes(text[i])) {
        return i;
      }
    }
    return end;
  }

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

  function pieces(stored, spans) {
    const [excerpt, where] = readable(stored);
    const length = excerpt.length;
    const passages = merged(spans.map(function (span) { return moved(span, where); }), length);
    if (!passages.length) {
      if (!excerpt) {
        return [];
      }
      if (length <= LIMIT) {
        return [[excerpt, false]];
      }
      return [[excerpt.slice(0, wordEnd(excerpt, LIMIT - 1, 0)).replace(/ +$/, "") + ELLIPSIS, false]];
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
    const end = wordEnd(excerpt, Math.min(length, Math.max(start + LIMIT, Math.min(firstEnd, start + 2 * LIMIT))), start);
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
      const last = out[out.length - 1];
      if (last && !last[1]) {
        last[0] = last[0].replace(/ +$/, "");
      }
      out.push([ELLIPSIS, false]);
    }
    const joined = [];
    for (const piece of out) {
      if (!piece[0]) {
        continue;
      }
      const last = joined[joined.length - 1];
      if (last && last[1] === piece[1]) {
        last[0] += piece[0];
      } else {
        joined.push(piece);
      }
    }
    return joined;
  }

  // The excerpt's <p class="source-excerpt">, each quote found in it and each of `passages`
  // ([start, end] offsets into the excerpt, from the server) marked.
  window.sourceExcerpt = function (excerpt, quotes, passages) {
    const text = String(excerpt);
    const spans = (Array.isArray(quotes) ? quotes : [])
      .map(function (quote) { return quoteSpan(text, quote); })
      .filter(Boolean);
    for (const span of Array.isArray(passages) ? passages : []) {
      if (Array.isArray(span) && span.length === 2 && Number.isInteger(span[0]) && Number.isInteger(span[1])) {
        spans.push([span[0], span[1]]);
      }
    }
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

  // Two sources whose excerpts read the same (the same passage under two titles; the `done`
  // event's `same_passage`, by number: the earlier one): the passage is shown once, under the
  // first, which names the other; the other says where it is. templates/answers/_answer.html alike.
  window.showSamePassages = function (list, samePassage) {
    if (!samePassage || typeof samePassage !== "object") {
      return;
    }
    for (const [number, earlier] of Object.entries(samePassage)) {
      const item = list.querySelector('li[data-number="' + Number(number) + '"]');
      const first = list.querySelector('li[data-number="' + Number(earlier) + '"]');
      if (!item || !first) {
        continue;
      }
      const excerpt = item.querySelector(".source-excerpt");
      if (excerpt) {
        excerpt.remove();
      }
      const same = document.createElement("p");
      same.className = "source-same";
      same.textContent = "Same passage as [" + Number(earlier) + "].";
      item.append(same);
      const title = item.querySelector(".source-title");
      const also = document.createElement("p");
      also.className = "source-also";
      also.textContent = "Also in [" + Number(number) + "] " + (title ? title.textContent : "") + ".";
      const firstExcerpt = first.querySelector(".source-excerpt");
      if (firstExcerpt) {
        firstExcerpt.after(also);
      } else {
        first.append(also);
      }
    }
  };
})();
