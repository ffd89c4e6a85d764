// markdown.js - the model's answers as Markdown, parsed by markdown-it (npm, pinned by
// tools/service/webui/lib/package-lock.json, embedded at build time as
// /webui/markdown-it.min.js), drawn as DOM nodes built here (docs/WEBUI.md "Markdown").
//
// Safety: the answer is untrusted text (a model can be made to write anything, an image can carry
// a prompt injection), and the page runs under a CSP without 'unsafe-inline'. markdown-it runs
// with raw HTML off and only parses; its tokens are turned into elements of a fixed list by this
// file, every piece of text entering the document through createTextNode, so no HTML string is
// ever parsed. Links are kept only for http(s) URLs, open in a new tab with rel="noopener
// noreferrer" and show the host they go to; images are not loaded (their text stays). Every
// block has dir="auto" (an isolate: an override character cannot reach past its block), and the
// bidi embedding, override and isolate controls themselves are shown as visible marks.
//
// Cost: an answer is drawn incrementally (MarkdownView). Blocks that are complete (a later
// top-level block has begun) are built once and never touched again, so a selection in them
// survives the stream; an update parses the last, open block again plus CHUNK new characters at a
// time, until CHUNK characters of blocks are finished or BUDGET_MS has passed (the rest waits for
// the next frame: laying out what was added costs the browser more than parsing it), and
// finished blocks are kept in chunks the browser skips while they are out of view. An open block larger than BIG
// (BIG_FENCE for a code block), or one whose parse took more than SLOW_MS (a degenerate answer:
// thousands of unclosed brackets or emphasis markers), is shown as plain text from there on. So
// no update parses more than about BIG + CHUNK characters, whatever the answer's length.
// Code blocks are coloured (code.js, Prism's tokenizer) once finished: in blocks kept as finished,
// and in the last block when the answer has ended (update's `final`); a block with bidi controls
// stays plain, its marks shown.
// Without markdown-it (a build that could not install it) answers are plain text.
"use strict";

(function () {
  const CHUNK = 1024; // new characters parsed at a time
  const BIG = 16384; // an open block larger than this is shown as plain text (a code block:
  const BIG_FENCE = 524288; // this), and so is one whose parse takes more than SLOW_MS
  const SLOW_MS = 25;
  const BUDGET_MS = 4; // an update stops parsing new text after this (the rest: next frame)
  const CHUNK_BLOCKS = 64; // finished blocks per chunk (see keep)
  const md = typeof window.markdownit === "function"
    ? window.markdownit({ html: false, linkify: true, breaks: true, typographer: false })
    : null;
  if (md) {
    md.disable(["image"]); // nothing is loaded from elsewhere (and the CSP would block it)
    md.validateLink = (url) => /^https?:\/\//i.test(url); // http(s) only: no javascript:, data:
  }
  const BLOCK_TAGS = new Set(["p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li",
    "blockquote", "table", "thead", "tbody", "tr", "th", "td"]);
  const INLINE_TAGS = { strong_open: "strong", em_open: "em", s_open: "s" };
  // embedding, override and isolate controls (LRE RLE PDF LRO RLO, LRI RLI FSI PDI)
  const BIDI = /[\u202a-\u202e\u2066-\u2069]/;

  function el(tag, cls) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    return e;
  }

  // Text into parent, each bidi control shown as a mark ("⟨U+202E⟩") instead of acting.
  function text(parent, s) {
    if (!BIDI.test(s)) {
      parent.appendChild(document.createTextNode(s));
      return;
    }
    let run = "";
    for (const c of s) {
      if (BIDI.test(c)) {
        if (run) parent.appendChild(document.createTextNode(run));
        run = "";
        const mark = el("span", "bidi");
        mark.textContent = "\u27e8U+" + c.codePointAt(0).toString(16).toUpperCase() + "\u27e9";
        mark.title = "a bidirectional-text control character, shown instead of applied";
        parent.appendChild(mark);
      } else {
        run += c;
      }
    }
    if (run) parent.appendChild(document.createTextNode(run));
  }

  function safeHref(href) {
    try {
      const u = new URL(href);
      return u.protocol === "http:" || u.protocol === "https:" ? u : null;
    } catch (e) {
      return null;
    }
  }

  // The children of an inline token into parent.
  function inline(children, parent) {
    const stack = [parent];
    const links = [];
    for (const t of children) {
      const top = stack[stack.length - 1];
      if (INLINE_TAGS[t.type]) {
        const e = el(INLINE_TAGS[t.type]);
        top.appendChild(e);
        stack.push(e);
      } else if (/_close$/.test(t.type) && t.type !== "link_close") {
        if (stack.length > 1) stack.pop();
      } else if (t.type === "link_open") {
        const u = safeHref(t.attrGet("href") || "");
        const a = el(u ? "a" : "span");
        if (u) {
          a.href = u.href;
          a.rel = "noopener noreferrer";
          a.target = "_blank";
          a.title = u.href;
        }
        top.appendChild(a);
        stack.push(a);
        links.push({ a: a, u: u });
      } else if (t.type === "link_close") {
        const l = links.pop();
        if (stack.length > 1) stack.pop();
        // the target shown beside a link whose text is not its own address
        if (l && l.u && l.a.textContent.trim() !== l.u.href &&
            l.a.textContent.trim() !== l.u.href.replace(/\/$/, "") &&
            l.a.textContent.trim() !== l.u.host) {
          const host = el("span", "link-host");
          host.textContent = " (" + l.u.host + ")";
          stack[stack.length - 1].appendChild(host);
        }
      } else if (t.type === "code_inline") {
        const c = el("code");
        text(c, t.content);
        top.appendChild(c);
      } else if (t.type === "softbreak" || t.type === "hardbreak") {
        top.appendChild(el("br"));
      } else {
        text(top, t.content); // text, and anything else as its literal text
      }
    }
  }

  function codeBlock(t, colour) {
    const wrap = el("div", "code-block");
    const pre = el("pre");
    pre.dir = "ltr";
    const code = el("code");
    const lang = (t.info || "").trim().split(/\s/)[0];
    if (lang) pre.dataset.lang = lang;
    const body = t.content.replace(/\n$/, "");
    if (!(colour && lang && !BIDI.test(body) && window.colourCode &&
          window.colourCode(code, body, lang))) {
      text(code, body);
    }
    pre.appendChild(code);
    const copy = el("button", "copy");
    copy.type = "button";
    copy.setAttribute("aria-label", "Copy the code");
    copy.addEventListener("click", () => {
      const done = () => { copy.classList.add("copied"); setTimeout(() => copy.classList.remove("copied"), 1500); };
      if (navigator.clipboard) navigator.clipboard.writeText(code.textContent).then(done, () => {});
    });
    wrap.appendChild(copy);
    wrap.appendChild(pre);
    return wrap;
  }

  // Block tokens (balanced, or the start of a stream of them) into parent; colour: code blocks
  // among them are finished (coloured).
  function build(tokens, parent, colour) {
    const stack = [parent];
    for (const t of tokens) {
      const top = stack[stack.length - 1];
      if (t.type === "inline") {
        inline(t.children || [], top);
      } else if (t.nesting === 1) {
        if (t.hidden) { // a tight list's paragraph: its text goes into the item itself
          stack.push(top);
          continue;
        }
        let e;
        if (t.type === "table_open") {
          e = el("table");
          const scroll = el("div", "table-scroll"); // a wide table scrolls, not the page
          scroll.appendChild(e);
          top.appendChild(scroll);
        } else {
          e = el(BLOCK_TAGS.has(t.tag) ? t.tag : "div");
          top.appendChild(e);
        }
        if (t.type === "ordered_list_open" && t.attrGet("start")) e.start = +t.attrGet("start");
        const align = /text-align:(left|right|center)/.exec(t.attrGet("style") || "");
        if (align) e.className = "align-" + align[1]; // not a style attribute: the CSP forbids it
        if (!/^(ul|ol|table|thead|tbody|tr)$/.test(e.tagName.toLowerCase())) e.dir = "auto";
        stack.push(e);
      } else if (t.nesting === -1) {
        if (stack.length > 1) stack.pop();
      } else if (t.type === "fence" || t.type === "code_block") {
        top.appendChild(codeBlock(t, colour));
      } else if (t.type === "hr") {
        top.appendChild(el("hr"));
      } else if (t.content) {
        const p = el("p");
        p.dir = "auto";
        text(p, t.content);
        top.appendChild(p);
      }
    }
  }

  // Where line `line` of s starts (markdown-it counts \n, \r\n and \r as line ends).
  function lineStart(s, line) {
    const re = /\r\n?|\n/g;
    let at = 0;
    for (let i = 0; i < line; i++) {
      const m = re.exec(s);
      if (!m) return s.length;
      at = m.index + m[0].length;
    }
    return at;
  }

  // An answer drawn into container as it grows: update(text) after each change; it returns true
  // while part of text is still to be drawn (call it again on the next frame). update(text, true):
  // text is the whole answer (its last block is finished too).
  class MarkdownView {
    constructor(container) {
      this.container = container;
      this.done = 0; // characters of the text in finished blocks
      this.liveLen = 0; // characters of the open block (as last parsed)
      this.live = el("div", "live"); // the open block, redrawn on each update
      this.plain = null; // a text node: plain text from `done` on (no markdown-it, or BIG)
      this.chunk = null; // the chunk finished blocks go into now, and its count of blocks
      this.chunkBlocks = 0;
      container.appendChild(this.live);
    }

    update(s, final) {
      if (!md || this.plain) return this.appendPlain(s);
      const t0 = performance.now();
      const from = this.done;
      for (;;) {
        const avail = s.length - this.done;
        const n = Math.min(avail, this.liveLen + CHUNK); // the open block again, and new text
        const tail = s.slice(this.done, this.done + n);
        const p0 = performance.now();
        let tokens = md.parse(tail, {});
        const cost = performance.now() - p0;
        let starts = [];
        tokens.forEach((t, i) => { if (t.level === 0 && t.nesting >= 0 && t.map) starts.push(i); });
        const finished = starts.length >= 2;
        if (finished) { // every block but the last is finished: built once, kept
          const last = starts[starts.length - 1];
          const frag = document.createDocumentFragment();
          build(tokens.slice(0, last), frag, true);
          this.keep(frag, starts.length - 1);
          const at = lineStart(tail, tokens[last].map[0]);
          this.done += at;
          this.liveLen = n - at;
          tokens = tokens.slice(last);
        } else {
          this.liveLen = n;
        }
        // one block too large (or too slow) to parse again on every frame: plain text from here
        const fence = tokens.length > 0 && tokens[0].type === "fence";
        if (this.liveLen > (fence ? BIG_FENCE : BIG) || (!finished && cost > SLOW_MS)) {
          this.live.replaceChildren();
          return this.appendPlain(s);
        }
        // the browser lays out what was added after each frame: about CHUNK characters a frame
        if (n === avail || this.done - from >= CHUNK || performance.now() - t0 > BUDGET_MS) {
          const frag = document.createDocumentFragment();
          build(tokens, frag, !!final && n === avail);
          this.live.replaceChildren(frag);
          return n < avail;
        }
      }
    }

    // Finished blocks go into chunks of about CHUNK_BLOCKS blocks: a chunk once full is sealed
    // (CSS content-visibility: auto), so the browser lays out and paints only the chunks in
    // view and the open one, not a container with tens of thousands of children on every frame.
    keep(frag, blocks) {
      if (!this.chunk || this.chunkBlocks >= CHUNK_BLOCKS) {
        if (this.chunk) this.chunk.classList.add("sealed");
        this.chunk = el("div", "md-chunk");
        this.chunkBlocks = 0;
        this.container.insertBefore(this.chunk, this.live);
      }
      this.chunk.appendChild(frag);
      this.chunkBlocks += blocks;
    }

    appendPlain(s) {
      if (!this.plain) {
        const p = el("p", "plain");
        p.dir = "auto";
        this.plain = document.createTextNode("");
        p.appendChild(this.plain);
        this.container.insertBefore(p, this.live);
      }
      const have = this.done + this.plain.length;
      if (s.length > have) this.plain.appendData(s.slice(have));
      return false;
    }
  }

  // renderMarkdown(text) -> a DocumentFragment: the whole text drawn at once (as MarkdownView
  // draws it in the end).
  function renderMarkdown(s) {
    const box = el("div");
    const view = new MarkdownView(box);
    while (view.update(String(s), true)) { /* drawn a budget at a time */ }
    const out = document.createDocumentFragment();
    view.live.replaceWith(...view.live.childNodes);
    for (const c of Array.from(box.querySelectorAll(".md-chunk"))) c.replaceWith(...c.childNodes);
    out.append(...box.childNodes);
    return out;
  }

  window.MarkdownView = MarkdownView;
  window.renderMarkdown = renderMarkdown;
  window.markdownLibrary = md ? "markdown-it" : null;
})();
