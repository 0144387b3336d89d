// An answer's text as the page shows it: Markdown to sanitized HTML with citation links, the
// same rendering as the server's (answers/rendering.py), so a streamed answer reads at every
// moment as it will once `done` brings the server's `html`. markdown-it (static/vendor/
// markdown-it, the JavaScript original of markdown-it-py, same version) parses; the plugin below
// links citation markers exactly where the server's does; DOMPurify (static/vendor/dompurify)
// keeps the server's nh3 allow-list. tests/fixtures/markdown_cases.json pins both renderers to
// the same output. Exposes window.AnswerMarkdown = { render, sanitize, patch, scanMarkers, linkUrl, ALLOWED_* }.
(function () {
  "use strict";

  // --- The one link rule (answers/rendering.py link_url) ---------------------------------------

  // What Python's str.strip() removes: a URL starting or ending with one of these is refused.
  const PY_SPACE = /^[\t\n\u000b\u000c\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]|[\t\n\u000b\u000c\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$/;
  // Controls, DEL, backslash, and the bidi embedding, override and isolate controls.
  const REFUSED_IN_URLS = /[\u0000-\u001f\u007f\\\u202a-\u202e\u2066-\u2069]/;

  function linkUrl(url) {
    // `url` when it may become a link (http, https with a host, or site-relative), else null.
    if (typeof url !== "string" || PY_SPACE.test(url) || REFUSED_IN_URLS.test(url)) {
      return null;
    }
    const scheme = /^https?:\/\//i.exec(url);
    if (scheme) {
      // The host part as urllib's urlsplit reads it: up to the first "/", "?" or "#".
      const rest = url.slice(scheme[0].length);
      const cut = rest.search(/[\/?#]/);
      const host = cut < 0 ? rest : rest.slice(0, cut);
      if (host === "" || host.includes("[") !== host.includes("]")) {
        return null;
      }
      return url;
    }
    if (url.startsWith("/") && !url.startsWith("//")) {
      return url;
    }
    return null;
  }

  // --- The citation grammar (docs/citations.md; answers/citations/scan.py scan_markers) --------

  const SEP = "[ \\t]*,[ \\t]*";
  const RANGE = "[0-9]+(?:[-\\u2013][0-9]+)?";
  const MARKER = new RegExp(
    "\\[(?=[ \\t0-9])(?<!\\\\\\[)" + // an escaped bracket is text
      "(?!(?<![^\\n]\\[)[0-9 \\t,\\-\\u2013]*\\]:)" + // so is a link reference definition at a line start
      "[ \\t]*(?:[0-9]+(?:" + SEP + "[0-9]+)*" + // numbers
      "|(" + RANGE + "(?:" + SEP + RANGE + ")*))" + // numbers and ranges: bounds to check
      "[ \\t]*\\](?!\\()", // and a link or image is text
    "g",
  );
  const MAX_RANGE_SPAN = 50n;

  // --- Where the text is code (answers/citations/code.py, the same rules) ----------------------
  // markdown-it's own block parse (the renderer's options, blocks only) says where fenced blocks,
  // paragraphs, headings and table cells are; code spans are paired inside each of those by
  // markdown-it's rules (escapes, a run of N backticks closed by the next run of exactly N); the
  // cells of a table row past its header's columns, which markdown-it drops, count as code.

  const INLINE = /\\[!-\/:-@\[-`{-~\n]|`+/g;
  const TICKS = /`+/g;
  const ROW_PREFIX = /^(?:[ \t]*>)*[ \t]*/;
  const DELIMITER_ROW = /^[ \t>]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/m;
  let blockMarkdown = null;

  function blockParser() {
    if (blockMarkdown === null) {
      blockMarkdown = window.markdownit("commonmark", { html: false, breaks: true, linkify: false, typographer: false });
      blockMarkdown.enable("table");
      blockMarkdown.disable(["code", "reference", "html_block", "html_inline"]);
      blockMarkdown.disable(["inline", "text_join"], true); // blocks only: code spans are paired below
    }
    return blockMarkdown;
  }

  function pairSpans(text, start, end) {
    // The code spans of text[start:end] and the first run left without a partner (end if none).
    const runs = new Map();
    TICKS.lastIndex = start;
    let run;
    while ((run = TICKS.exec(text)) !== null && run.index < end) {
      const size = Math.min(run[0].length, end - run.index);
      if (!runs.has(size)) {
        runs.set(size, []);
      }
      runs.get(size).push(run.index);
    }
    const spans = [];
    let unpaired = end;
    let position = start;
    for (;;) {
      INLINE.lastIndex = position;
      const found = INLINE.exec(text);
      if (found === null || found.index >= end) {
        return [spans, unpaired];
      }
      const opener = found.index;
      const after = Math.min(opener + found[0].length, end);
      if (text[opener] === "\\") {
        position = after;
        continue;
      }
      const size = after - opener;
      const starts = runs.get(size) || [];
      const k = starts.findIndex(function (s) { return s >= after; });
      if (k >= 0) {
        spans.push([opener, starts[k] + size]);
        position = starts[k] + size;
      } else {
        unpaired = Math.min(unpaired, opener);
        position = after;
      }
    }
  }

  function codeRegions(text) {
    // Where `text` is code, as [start, end] pairs in order.
    if (!text.includes("`") && !text.includes("~~~") && !(text.includes("|") && DELIMITER_ROW.test(text))) {
      return [];
    }
    const src = text.replace(/\r\n/g, " \n").replace(/\r/g, "\n").replace(/\0/g, "\ufffd");
    const tokens = blockParser().parse(src, {});
    const lines = src.split("\n");
    const starts = [];
    let at = 0;
    for (const line of lines) {
      starts.push(at);
      at += line.length + 1;
    }
    const lineEnd = function (i) { return starts[i] + lines[i].length; };
    const cellsOf = function (row) {
      const source = lines[row];
      const start = ROW_PREFIX.exec(source)[0].length;
      const end = source.replace(/[ \t]+$/, "").length;
      const cells = [];
      let cell = start;
      for (let i = start; i < end; i += 1) {
        if (source[i] === "|" && (i === 0 || source[i - 1] !== "\\")) {
          cells.push([cell, i]);
          cell = i + 1;
        }
      }
      cells.push([cell, end]);
      const blank = function (c) { return !source.slice(c[0], c[1]).replace(/[ \t]/g, ""); };
      if (cells.length && blank(cells[0])) {
        cells.shift();
      }
      if (cells.length && blank(cells[cells.length - 1])) {
        cells.pop();
      }
      return cells.map(function (c) { return [starts[row] + c[0], starts[row] + c[1]]; });
    };
    let code = [];
    for (const token of tokens) {
      if (token.type === "fence" && token.map) {
        code.push([starts[token.map[0]], lineEnd(token.map[1] - 1)]);
      }
    }
    if (text.includes("|")) {
      let columns = 0;
      for (const token of tokens) {
        if (token.type === "table_open") {
          columns = 0;
        } else if (token.type === "th_open") {
          columns += 1;
        } else if (token.type === "tr_open" && token.map && columns) {
          const cells = cellsOf(token.map[0]);
          if (cells.length > columns) {
            code.push([cells[columns][0], lineEnd(token.map[0])]);
          }
        }
      }
    }
    if (text.includes("`")) {
      let opener = null;
      let row = -1; // the line of the table row being read (a cell's own token may carry no map)
      let cellRow = -1;
      for (const token of tokens) {
        if (token.nesting === 1) {
          opener = token;
          if (token.type === "tr_open" && token.map) {
            row = token.map[0];
          }
          continue;
        }
        if (token.type !== "inline" || !token.content.includes("`") || opener === null) {
          continue;
        }
        if (opener.type === "th_open" || opener.type === "td_open") {
          if (row !== cellRow) {
            cellRow = row;
            for (const [a, b] of cellsOf(cellRow)) {
              code = code.concat(pairSpans(text, a, b)[0]);
            }
          }
          continue;
        }
        if (!token.map) {
          continue;
        }
        // A paragraph's or heading's lines, found in the source, then paired as one text.
        const [first, last] = token.map;
        const contents = token.content.split("\n");
        const pieces = [];
        contents.forEach(function (content, k) {
          const line = first + k;
          if (line >= last) {
            return;
          }
          const source = lines[line];
          const core = content.replace(/^[ \t]+/, "");
          const stop = k === contents.length - 1 ? source.replace(/[ \t]+$/, "").length : source.length;
          let found = core ? source.lastIndexOf(core, stop - core.length) : stop;
          if (found < 0) {
            found = stop - core.length;
          }
          pieces.push([starts[line] + found, starts[line] + found + core.length]);
        });
        const joined = pieces.map(function (p) { return text.slice(p[0], p[1]); }).join("\n");
        const offsets = [];
        let offset = 0;
        for (const [a, b] of pieces) {
          offsets.push(offset);
          offset += b - a + 1;
        }
        const toSource = function (i) {
          let k = offsets.length - 1;
          while (k > 0 && offsets[k] > i) {
            k -= 1;
          }
          return pieces[k][0] + Math.min(i - offsets[k], pieces[k][1] - pieces[k][0]);
        };
        for (const [s0, e0] of pairSpans(joined, 0, joined.length)[0]) {
          code.push([toSource(s0), toSource(e0 - 1) + 1]);
        }
      }
    }
    code.sort(function (x, y) { return x[0] - y[0] || x[1] - y[1]; });
    const merged = [];
    for (const [start, end] of code) {
      if (merged.length && start < merged[merged.length - 1][1]) {
        merged[merged.length - 1][1] = Math.max(end, merged[merged.length - 1][1]);
      } else {
        merged.push([start, end]);
      }
    }
    return merged;
  }

  function bounds(listed) {
    return listed.split(",").map(function (member) {
      const parts = member.trim().split(/[-\u2013]/);
      return [BigInt(parts[0]), BigInt(parts[parts.length - 1])];
    });
  }

  function members(inner, ranged) {
    const out = [];
    const seen = new Set();
    const add = function (value) {
      const key = value.toString();
      if (!seen.has(key)) {
        seen.add(key);
        out.push(value);
      }
    };
    if (!ranged) {
      inner.split(",").forEach(function (member) { add(BigInt(member.trim())); });
      return out;
    }
    for (const [low, high] of bounds(inner)) {
      for (let value = low; value <= high; value += 1n) {
        add(value);
      }
    }
    return out;
  }

  function scanMarkers(text) {
    // Every citation marker of `text`: {start, end, members (BigInt, written order, no repeats)}.
    const found = [];
    MARKER.lastIndex = 0;
    let match;
    while ((match = MARKER.exec(text)) !== null) {
      const inner = match[0].slice(1, -1);
      const ranged = /[-\u2013]/.test(inner);
      if (ranged && !bounds(inner).every(function ([low, high]) {
        return low <= high && high - low < MAX_RANGE_SPAN;
      })) {
        continue;
      }
      found.push({ start: match.index, end: match.index + match[0].length, inner: inner, ranged: ranged });
    }
    if (found.length) {
      const code = codeRegions(text);
      let c = 0;
      const outside = [];
      for (const marker of found) {
        while (c < code.length && code[c][1] <= marker.start) {
          c += 1;
        }
        if (!(c < code.length && code[c][0] <= marker.start)) {
          outside.push(marker);
        }
      }
      found.length = 0;
      found.push(...outside);
    }
    return found.map(function (marker) {
      return { start: marker.start, end: marker.end, members: members(marker.inner, marker.ranged) };
    });
  }

  // --- The citation plugin (answers/rendering.py: the same two core rules) --------------------

  let current = null; // the placeholders of the text being rendered

  function restore(text) {
    if (current === null || typeof text !== "string" || !text.includes(current.sentinel)) {
      return text;
    }
    return text.replace(current.pattern, function (whole, index) {
      return current.written[Number(index)];
    });
  }

  function escapeRegExp(text) {
    return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }

  function sourceAnchor(number, turn) {
    // The id of a source's item (answers/rendering.py source_anchor): unique per conversation turn.
    const t = Number(turn) || 1;
    return t <= 1 ? "source-" + number : "turn-" + t + "-source-" + number;
  }

  function citeHtml(found, count, turn) {
    // A marker's links: "[n]" as one link, "[n, m]" as "[" + a link per member + "]"; null unless all cite.
    const numbers = found.members;
    if (!numbers.length || !numbers.every(function (n) { return n >= 1n && n <= BigInt(count); })) {
      return null;
    }
    const link = function (number, label) {
      return '<a class="cite" href="#' + sourceAnchor(number, turn) + '">' + label + "</a>";
    };
    if (numbers.length === 1) {
      return link(numbers[0], "[" + numbers[0] + "]");
    }
    return "[" + numbers.map(function (number) { return link(number, String(number)); }).join(", ") + "]";
  }

  function mark(state) {
    // Before `normalize`: each marker to "[" + sentinel + index + sentinel + "]".
    const src = state.src;
    const found = scanMarkers(src);
    current = null;
    if (!found.length) {
      return;
    }
    let code = 0xe000;
    while (src.includes(String.fromCharCode(code))) {
      code += 1;
    }
    const sentinel = String.fromCharCode(code);
    const count = Number(state.env.referenceCount) || 0;
    const turn = Number(state.env.turn) || 1;
    const parts = [];
    let position = 0;
    found.forEach(function (marker, index) {
      parts.push(src.slice(position, marker.start), "[" + sentinel + index + sentinel + "]");
      position = marker.end;
    });
    parts.push(src.slice(position));
    state.src = parts.join("");
    current = {
      sentinel: sentinel,
      written: found.map(function (marker) { return src.slice(marker.start, marker.end); }),
      links: found.map(function (marker) { return citeHtml(marker, count, turn); }),
      pattern: new RegExp(escapeRegExp("[" + sentinel) + "([0-9]+)" + escapeRegExp(sentinel + "]"), "g"),
      split: new RegExp(escapeRegExp("[" + sentinel) + "([0-9]+)" + escapeRegExp(sentinel + "]")),
    };
  }

  function restoreToken(token) {
    // Every placeholder in `token` (content, info, attributes, children) back to its marker's text.
    token.content = restore(token.content);
    token.info = restore(token.info);
    if (token.attrs) {
      token.attrs = token.attrs.map(function ([name, value]) { return [name, restore(value)]; });
    }
    (token.children || []).forEach(restoreToken);
  }

  function appendText(Token, tokens, text) {
    // Add `text` to the text token at the end of `tokens`, or as a new one (as text_join leaves them).
    const last = tokens[tokens.length - 1];
    if (last && last.type === "text") {
      last.content += text;
    } else {
      const token = new Token("text", "", 0);
      token.content = text;
      tokens.push(token);
    }
  }

  function linkChildren(Token, children) {
    // An inline token's children with placeholders linked (or put back) and `[x]()` as its text.
    const out = [];
    let inLink = false;
    let emptyLink = false;
    for (const child of children) {
      if (child.type === "link_open") {
        inLink = true; // links do not nest in Markdown
        emptyLink = !child.attrGet("href");
        if (emptyLink) {
          continue;
        }
      } else if (child.type === "link_close") {
        inLink = false;
        if (emptyLink) {
          continue;
        }
      }
      if (current === null || (!child.content.includes(current.sentinel) && !child.children && !child.attrs)) {
        out.push(child);
        continue;
      }
      if (child.type !== "text" || inLink) {
        restoreToken(child);
        out.push(child);
        continue;
      }
      const pieces = child.content.split(current.split); // text, index, text, ..., text
      pieces.forEach(function (piece, i) {
        if (i % 2 === 0) {
          if (piece) {
            appendText(Token, out, piece);
          }
          return;
        }
        const link = current.links[Number(piece)];
        if (link === null) {
          appendText(Token, out, current.written[Number(piece)]);
        } else {
          const token = new Token("cite", "", 0);
          token.content = link;
          out.push(token);
        }
      });
    }
    return out;
  }

  const ALIGN = /^text-align:(left|center|right)$/;

  function link(state) {
    // Last: placeholders in running text to citation links, anywhere else back to text; a table
    // cell's alignment to a class (the CSP refuses style attributes); `[x]()` to its text.
    for (const token of state.tokens) {
      if (token.type === "inline") {
        const marked = current !== null && token.content.includes(current.sentinel);
        if (token.children && (marked || token.content.includes("]("))) {
          token.children = linkChildren(state.Token, token.children);
        }
        if (marked) {
          token.content = restore(token.content);
        }
        continue;
      }
      if ((token.type === "th_open" || token.type === "td_open") && token.attrGet("style") !== null) {
        const align = ALIGN.exec(token.attrGet("style"));
        token.attrs = token.attrs.filter(function ([name]) { return name !== "style"; });
        if (align) {
          token.attrSet("class", "align-" + align[1]);
        }
      }
      if (current !== null && (token.content.includes(current.sentinel) || token.info.includes(current.sentinel))) {
        restoreToken(token);
      }
    }
  }

  function makeMarkdown() {
    const md = window.markdownit("commonmark", { html: false, breaks: true, linkify: false, typographer: false });
    md.enable("table");
    md.disable(["code", "reference", "html_block", "html_inline"]);
    md.core.ruler.before("normalize", "cite_mark", mark);
    md.core.ruler.push("cite_link", link);
    const normalizeLink = md.normalizeLink;
    md.normalizeLink = function (url) {
      const written = restore(url);
      return linkUrl(written) === null ? "" : normalizeLink(written);
    };
    md.validateLink = function (url) {
      return url !== "" && linkUrl(url) !== null;
    };
    md.renderer.rules.cite = function (tokens, idx) {
      return tokens[idx].content; // a citation's links, made by citeHtml from the marker's numbers alone
    };
    const escapeHtml = md.utils.escapeHtml;
    md.renderer.rules.image = function (tokens, idx, options, env, self) {
      // An image as a link to it, its alt text (or else its address) as the text: never loaded.
      const token = tokens[idx];
      const src = token.attrGet("src") || "";
      const alt = self.renderInlineAsText(token.children || [], options, env);
      if (!src) {
        return escapeHtml(alt); // `![x]()`: its text
      }
      return '<a class="image-link" href="' + escapeHtml(src) + '">' + escapeHtml(alt || src) + "</a>";
    };
    return md;
  }

  // --- The sanitizer (answers/rendering.py clean_html: the same allow-list) --------------------

  const ALLOWED_TAGS = [
    "p", "br", "a", "em", "strong", "code", "pre", "blockquote", "hr",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td",
  ];
  const ALLOWED_ATTRIBUTES = {
    a: ["href", "class"],
    code: ["class"],
    ol: ["start"],
    th: ["class"],
    td: ["class"],
  };

  function makePurifier() {
    const purifier = window.DOMPurify(window);
    purifier.addHook("uponSanitizeAttribute", function (node, data) {
      const allowed = ALLOWED_ATTRIBUTES[node.nodeName.toLowerCase()] || [];
      if (!allowed.includes(data.attrName)) {
        data.keepAttr = false;
      }
    });
    return purifier;
  }

  const PURIFY_CONFIG = {
    ALLOWED_TAGS: ALLOWED_TAGS,
    ALLOWED_ATTR: ["href", "class", "start"],
    ALLOWED_URI_REGEXP: /^(?:https?:|\/|#)/i,
    ADD_URI_SAFE_ATTR: ["start"], // not an address: kept whatever its value, as nh3 keeps it
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
  };

  let md = null;
  let purifier = null;

  function sanitize(html) {
    // `html` with anything outside the allow-list removed (the server's clean_html keeps the same).
    if (purifier === null) {
      purifier = makePurifier();
    }
    return purifier.sanitize(html, PURIFY_CONFIG);
  }

  // Each top-level block's HTML as the last render sanitized it: a growing answer changes only
  // its last blocks, so the others are not sanitized again. (A block renders alone as it does
  // among the others, and sanitizing blocks one by one gives what sanitizing them together does.)
  let sanitizedBlocks = new Map();

  function render(text, referenceCount, turn) {
    // `text` (the display or final text) as sanitized HTML; markers within 1..referenceCount
    // link to their source (#source-N; a conversation's turn T > 1: #turn-T-source-N), as the
    // server's render_answer_html does.
    if (md === null) {
      md = makeMarkdown();
    }
    const env = { referenceCount: referenceCount, turn: Number(turn) || 1 };
    let tokens;
    try {
      tokens = md.parse(String(text), env);
    } finally {
      current = null;
    }
    const blocks = [];
    let start = 0;
    tokens.forEach(function (token, i) {
      if (token.level === 0 && token.nesting !== 1) {
        blocks.push(md.renderer.render(tokens.slice(start, i + 1), md.options, env));
        start = i + 1;
      }
    });
    const previous = sanitizedBlocks;
    sanitizedBlocks = new Map();
    return blocks.map(function (html) {
      const clean = previous.has(html) ? previous.get(html) : sanitize(html);
      sanitizedBlocks.set(html, clean);
      return clean;
    }).join("");
  }

  // --- Showing it (the page re-renders a streaming answer a few times a second) --------------

  function sameShell(a, b) {
    // Whether node `a` can stay for `b`: same kind, same tag, same attributes.
    if (a.nodeType !== b.nodeType || a.nodeName !== b.nodeName) {
      return false;
    }
    if (a.nodeType !== Node.ELEMENT_NODE) {
      return true;
    }
    if (a.attributes.length !== b.attributes.length) {
      return false;
    }
    for (const attribute of b.attributes) {
      if (a.getAttribute(attribute.name) !== attribute.value) {
        return false;
      }
    }
    return true;
  }

  function morph(target, source) {
    // Make target's children equal source's, keeping every node that can stay.
    let kept = target.firstChild;
    let next = source.firstChild;
    while (next) {
      const following = next.nextSibling;
      if (kept && kept.isEqualNode(next)) {
        kept = kept.nextSibling; // unchanged (most of a growing answer): nothing to do
      } else if (kept && sameShell(kept, next)) {
        if (kept.nodeType === Node.ELEMENT_NODE) {
          morph(kept, next);
        } else if (kept.nodeValue !== next.nodeValue) {
          if (kept.nodeType === Node.TEXT_NODE && next.nodeValue.startsWith(kept.nodeValue)) {
            kept.appendData(next.nodeValue.slice(kept.nodeValue.length));
          } else {
            kept.nodeValue = next.nodeValue;
          }
        }
        kept = kept.nextSibling;
      } else if (kept) {
        const replaced = kept;
        kept = kept.nextSibling;
        target.replaceChild(next, replaced);
      } else {
        target.appendChild(next);
      }
      next = following;
    }
    while (kept) {
      const following = kept.nextSibling;
      kept.remove();
      kept = following;
    }
  }

  function patch(element, html) {
    // Show sanitized `html` in `element`: parsed inert (a template), then patched in by morph.
    const template = document.createElement("template");
    template.innerHTML = html;
    morph(element, template.content);
  }

  window.AnswerMarkdown = {
    patch: patch,
    render: render,
    sourceAnchor: sourceAnchor,
    sanitize: sanitize,
    scanMarkers: scanMarkers,
    linkUrl: linkUrl,
    ALLOWED_TAGS: ALLOWED_TAGS,
    ALLOWED_ATTRIBUTES: ALLOWED_ATTRIBUTES,
  };
})();
