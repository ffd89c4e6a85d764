// code.js - colours for the code blocks of an answer (docs/WEBUI.md "Markdown"): Prism's
// tokenizer (npm prismjs, pinned by tools/service/webui/lib/package-lock.json, its core and a few
// grammars joined into /webui/prism.min.js at build time, loaded with data-manual so that it
// never touches the page by itself). Prism.tokenize gives the tokens as data; the spans are built
// here with createTextNode, never from an HTML string (Prism.highlight's output is not used).
// Code over MAX_CHARS, or in a language without a grammar here, stays plain text; so does code
// of a block still being written (markdown.js colours a block once it is finished).
"use strict";

(function () {
  const MAX_CHARS = 32768; // a grammar's regexes over more would cost a visible pause

  function grammarOf(lang) {
    const P = window.Prism;
    if (!P || !P.languages || !lang) return null;
    const g = P.languages[String(lang).toLowerCase()];
    return g && typeof g === "object" ? g : null;
  }

  // Prism's tokens (strings and Prism.Token, content nested) into parent.
  function emit(parent, tokens) {
    for (const t of tokens) {
      if (typeof t === "string") {
        parent.appendChild(document.createTextNode(t));
        continue;
      }
      const span = document.createElement("span");
      // the token's type and its aliases as classes: letters, digits and dashes only
      const names = [t.type].concat(t.alias || []).map((n) => String(n).replace(/[^a-z0-9-]/gi, ""));
      span.className = names.filter(Boolean).map((n) => "tok-" + n).join(" ");
      emit(span, Array.isArray(t.content) ? t.content : [t.content]);
      parent.appendChild(span);
    }
  }

  // Colour `code` (an element holding `text`) as `lang`; true when it was coloured.
  function colourCode(code, text, lang) {
    const g = grammarOf(lang);
    if (!g || text.length > MAX_CHARS) return false;
    let tokens;
    try {
      tokens = window.Prism.tokenize(text, g);
    } catch (e) {
      return false;
    }
    const frag = document.createDocumentFragment();
    emit(frag, tokens);
    code.replaceChildren(frag);
    code.classList.add("coloured");
    return true;
  }

  window.colourCode = colourCode;
})();
