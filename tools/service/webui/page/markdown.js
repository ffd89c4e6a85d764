// markdown.js - the small Markdown subset the chat page shows model answers in.
//
// Why its own: the answer is untrusted text (a model can be asked to write anything), and the
// page runs under a CSP without 'unsafe-inline'. So the renderer never produces HTML text: it
// BUILDS DOM nodes, and every piece of the answer enters the document through
// document.createTextNode. There are no links, no images and no raw HTML by design: `<script>`,
// `<img onerror=...>` or `[x](javascript:...)` in an answer appear as the literal characters.
//
// Blocks: paragraphs (a blank line apart; single line breaks kept as <br>), fenced code blocks
// (``` ... ```, an unclosed fence runs to the end: the answer may still be streaming), bullet
// lists (-, *, +), numbered lists (1. or 1)), headings (# .. ######, shown as bold paragraphs).
// Inline: `code`, **bold**, *italic*, _italic_ (bold and italic may nest; code does not).
"use strict";

(function () {
  const FENCE = /^\s{0,3}(```|~~~)/;
  const BULLET = /^\s{0,3}[-*+]\s+(.*)$/;
  const NUMBERED = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/;
  const HEADING = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/;

  function el(tag, cls) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    return e;
  }

  // Inline spans of one line into parent. Only text nodes and <code>/<strong>/<em> are made.
  function inline(parent, s) {
    let text = "";
    const flush = () => {
      if (text) parent.appendChild(document.createTextNode(text));
      text = "";
    };
    let i = 0;
    while (i < s.length) {
      const c = s[i];
      if (c === "`") {
        // a run of N backticks closes at the next run of exactly N
        let n = 1;
        while (s[i + n] === "`") n++;
        const tick = "`".repeat(n);
        let j = s.indexOf(tick, i + n);
        while (j !== -1 && s[j + n] === "`") j = s.indexOf(tick, j + n + 1);
        if (j !== -1) {
          flush();
          const code = el("code");
          code.appendChild(document.createTextNode(s.slice(i + n, j)));
          parent.appendChild(code);
          i = j + n;
          continue;
        }
        text += tick;
        i += n;
        continue;
      }
      if ((c === "*" || c === "_") && s[i + 1] === c && s[i + 2] && s[i + 2] !== " ") {
        const close = s.indexOf(c + c, i + 2);
        if (close > i + 2 && s[close - 1] !== " ") {
          flush();
          const b = el("strong");
          inline(b, s.slice(i + 2, close));
          parent.appendChild(b);
          i = close + 2;
          continue;
        }
      }
      if ((c === "*" || c === "_") && s[i + 1] && s[i + 1] !== " " && s[i + 1] !== c &&
          // _ inside a word (snake_case) is not emphasis
          !(c === "_" && i > 0 && /\w/.test(s[i - 1]))) {
        let close = i + 1;
        for (;;) {
          close = s.indexOf(c, close + 1);
          if (close === -1 || s[close + 1] !== c) break;
          close++; // skip a doubled marker inside
        }
        if (close > i + 1 && s[close - 1] !== " " &&
            !(c === "_" && /\w/.test(s[close + 1] || ""))) {
          flush();
          const em = el("em");
          inline(em, s.slice(i + 1, close));
          parent.appendChild(em);
          i = close + 1;
          continue;
        }
      }
      text += c;
      i++;
    }
    flush();
  }

  // A list: consecutive items of one kind; an indented or plain line right after an item
  // continues it (a model's wrapped item), a blank line followed by another item keeps the list.
  function list(lines, i, ordered) {
    const re = ordered ? NUMBERED : BULLET;
    const first = lines[i].match(re);
    const l = el(ordered ? "ol" : "ul");
    if (ordered && first[1] !== "1") l.start = parseInt(first[1], 10);
    let li = null;
    while (i < lines.length) {
      const line = lines[i];
      const m = line.match(re);
      if (m) {
        li = el("li");
        inline(li, ordered ? m[2] : m[1]);
        l.appendChild(li);
        i++;
      } else if (line.trim() === "") {
        if (i + 1 < lines.length && re.test(lines[i + 1])) { i++; continue; }
        break;
      } else if (/^\s+\S/.test(line) && li) {
        li.appendChild(el("br"));
        inline(li, line.trim());
        i++;
      } else {
        break;
      }
    }
    return [l, i];
  }

  // renderMarkdown(text) -> a DocumentFragment of the subset above.
  function renderMarkdown(text) {
    const out = document.createDocumentFragment();
    const lines = String(text).replace(/\r\n?/g, "\n").split("\n");
    let i = 0;
    let para = null;
    const endPara = () => { para = null; };
    while (i < lines.length) {
      const line = lines[i];
      const fence = line.match(FENCE);
      if (fence) {
        endPara();
        const lang = line.replace(FENCE, "").trim();
        const body = [];
        i++;
        while (i < lines.length && !(lines[i].trim().startsWith(fence[1]) &&
                                      lines[i].trim().replace(/[`~]/g, "") === "")) {
          body.push(lines[i]);
          i++;
        }
        i++; // the closing fence (or past the end)
        const pre = el("pre");
        const code = el("code");
        if (lang) pre.dataset.lang = lang.split(/\s/)[0];
        code.appendChild(document.createTextNode(body.join("\n")));
        pre.appendChild(code);
        out.appendChild(pre);
        continue;
      }
      if (line.trim() === "") { endPara(); i++; continue; }
      if (BULLET.test(line) || NUMBERED.test(line)) {
        endPara();
        const [l, next] = list(lines, i, !BULLET.test(line));
        out.appendChild(l);
        i = next;
        continue;
      }
      const h = line.match(HEADING);
      if (h) {
        endPara();
        const p = el("p", "heading");
        const b = el("strong");
        inline(b, h[1]);
        p.appendChild(b);
        out.appendChild(p);
        i++;
        continue;
      }
      if (para) {
        para.appendChild(el("br"));
      } else {
        para = el("p");
        out.appendChild(para);
      }
      inline(para, line);
      i++;
    }
    return out;
  }

  window.renderMarkdown = renderMarkdown;
})();
