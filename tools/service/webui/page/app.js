// app.js - the chat page of g4v serve --lm (docs/WEBUI.md): attachments, the composer, the
// streamed answer, edit / regenerate / continue, the conversations kept in the browser
// (store.js), the server's limits checked before sending, settings, the API key, errors. Plain
// JS, no build step: the page is embedded in the g4v binary and must work offline.
//
// Two rules run through the file:
// - Untrusted text (model output, thoughts, error messages, file names) reaches the DOM only as
//   text: textContent, createTextNode, or renderMarkdown (markdown.js), which builds nodes.
//   Never innerHTML.
// - The API is stateless: every request replays the whole conversation, images and videos
//   included as data: URIs with their budgets (docs/CHAT_API.md §1).
"use strict";

(function () {
  const API = "/v1/chat/completions";
  const KEY_STORE = "g4v.apiKey"; // sessionStorage only: the key dies with the tab
  const BUDGETS = [70, 140, 280, 560, 1120];
  const IMAGE_EXT = /\.(png|jpe?g|webp|gif|bmp|tiff?)$/i;
  const VIDEO_EXT = /\.(mp4|m4v|webm|mov|mkv|avi)$/i;
  const EXT_TYPE = { png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", webp: "image/webp",
    gif: "image/gif", bmp: "image/bmp", tif: "image/tiff", tiff: "image/tiff", mp4: "video/mp4",
    m4v: "video/mp4", webm: "video/webm", mov: "video/quicktime", mkv: "video/x-matroska",
    avi: "video/x-msvideo" };

  const $ = (id) => document.getElementById(id);
  const ui = {
    log: $("log"), empty: $("empty"), status: $("status"), model: $("model"),
    composer: $("composer"), prompt: $("prompt"), attachments: $("attachments"),
    fileInput: $("file-input"), attach: $("attach"), think: $("think"),
    send: $("send"), stop: $("stop"), newChat: $("new-chat"), settings: $("settings"),
    temperature: $("temperature"), seed: $("seed"), maxTokens: $("max-tokens"),
    system: $("system"), keyForm: $("key-form"), keyInput: $("key-input"),
    keyHelp: $("key-help"), keyForget: $("key-forget"), keyClose: $("key-close"),
    keyState: $("key-state"), keyChange: $("key-change"),
    topP: $("top-p"), topK: $("top-k"), minP: $("min-p"), stopStrings: $("stop-strings"),
    progressRow: $("progress-row"), progress: $("progress"), progressText: $("progress-text"),
    meter: $("context-meter"), meterText: $("context-text"),
    editing: $("editing"), editCancel: $("edit-cancel"),
    chatsToggle: $("chats-toggle"), chatsPanel: $("chats-panel"), chatsClose: $("chats-close"),
    chats: $("chats"), chatsNote: $("chats-note"), exportAll: $("export-all"),
    importBtn: $("import"), importInput: $("import-input"),
    viewer: $("viewer"), viewerMedia: $("viewer-media"), viewerName: $("viewer-name"),
    viewerClose: $("viewer-close"),
  };

  const state = {
    // {role: "user", text, attachments} | {role: "assistant", content, reasoning, finish, usage,
    // g4v, stopped, partial} (store.js keeps them)
    history: [],
    pending: [],       // attachments in the composer: {file, name, kind, type, url, tokens}
    controller: null,  // the AbortController of the answer being streamed
    preparing: false,  // the attachments of a message being read into data: URIs
    stopped: false,    // the person pressed Stop (an abort that is not an error)
    defaultTokens: 280,
    maxBody: 0, // the server's --max-body-bytes (GET /v1/info), 0 until known
    maxImages: 0, // images and videos per request (GET /v1/info), 0 until known
    context: 0, // the text model's context in tokens (GET /v1/models), 0 until known
    retryAfterKey: false,
    epoch: 0,          // bumped by New chat: an answer of the old chat must not land in the new
    conv: null,        // the conversation kept in IndexedDB: {id, title, created, updated}
    editAt: -1,        // editing the user turn history[editAt]: sending replaces it and the rest
    live: null,        // the answer being streamed, kept as it grows: {turn, answer}
  };

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function setStatus(text) { ui.status.textContent = text || ""; }

  // ---- the API key -------------------------------------------------------------------------
  function apiKey() {
    try { return sessionStorage.getItem(KEY_STORE) || ""; } catch (e) { return ""; }
  }
  function headers() {
    const h = { "Content-Type": "application/json" };
    const k = apiKey();
    if (k) h.Authorization = "Bearer " + k;
    return h;
  }
  function showKeyState() {
    ui.keyState.textContent = apiKey() ? "set (this tab only)" : "none";
  }
  function showKeyForm(help) {
    ui.keyHelp.textContent = help + " It is kept in this tab only (sessionStorage) and sent " +
      "with every request.";
    ui.keyForm.hidden = false;
    ui.keyInput.value = "";
    ui.keyInput.focus();
  }
  // What is wrong with a key as typed, or "" (the server takes 1 to 511 visible ASCII
  // characters; a header cannot carry others, and fetch would fail as if the server were gone).
  function keyProblem(k) {
    if (!k) return "Enter the key.";
    if (k.length > 511) return "This is not a key: it is longer than 511 characters.";
    for (let i = 0; i < k.length; i++) {
      const c = k.charCodeAt(i);
      if (c < 0x21 || c > 0x7e) {
        const ch = String.fromCodePoint(k.codePointAt(i));
        return "An API key holds only letters, digits and punctuation of plain ASCII (no " +
          "spaces, accents or other characters): character " + (i + 1) + " (" +
          (c <= 0x20 ? "a space" : "\u201c" + ch + "\u201d") + ") is not one. Copy the key " +
          "the server was started with.";
      }
    }
    return "";
  }
  ui.keyForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const k = ui.keyInput.value.trim();
    const problem = keyProblem(k);
    if (problem) {
      ui.keyHelp.textContent = problem;
      ui.keyInput.focus();
      return;
    }
    // checked against the server before anything is sent with it
    ui.keyHelp.textContent = "Checking the key…";
    let st = 0;
    try {
      st = (await fetch("/v1/models", { headers: { Authorization: "Bearer " + k } })).status;
    } catch (e) {
      ui.keyHelp.textContent = "The server cannot be reached to check the key. Check that g4v " +
        "serve is running, then try again.";
      return;
    }
    if (st === 401) {
      ui.keyHelp.textContent = "The server did not accept this key. Check it (the server's " +
        "--api-key-file) and try again.";
      ui.keyInput.select();
      return;
    }
    try { sessionStorage.setItem(KEY_STORE, k); } catch (e) { /* private mode: not kept */ }
    ui.keyInput.value = "";
    ui.keyForm.hidden = true;
    showKeyState();
    loadModel();
    if (state.retryAfterKey) {
      state.retryAfterKey = false;
      send();
    } else {
      ui.prompt.focus();
    }
  });
  ui.keyForget.addEventListener("click", () => {
    try { sessionStorage.removeItem(KEY_STORE); } catch (e) { /* nothing kept */ }
    ui.keyInput.value = "";
    showKeyState();
    setStatus("The API key is forgotten.");
  });
  ui.keyClose.addEventListener("click", () => { ui.keyForm.hidden = true; ui.prompt.focus(); });
  ui.keyChange.addEventListener("click", () => showKeyForm("Enter the server's API key."));

  // ---- errors: both JSON forms the server answers, and anything else -----------------------
  // The chat API answers {"error": {"message", "type", "code"}}; the service's core (401, 404,
  // 405) answers {"error": "message", "status": "NAME"}; a proxy may answer HTML.
  async function errorOf(res) {
    let raw = "";
    try { raw = await res.text(); } catch (e) { /* the body is lost: the status says enough */ }
    let message = "", code = "";
    try {
      const j = JSON.parse(raw);
      if (j && typeof j.error === "object" && j.error) {
        message = String(j.error.message || "");
        code = String(j.error.code || j.error.type || "");
      } else if (j && typeof j.error === "string") {
        message = j.error;
        code = String(j.status || "");
      }
    } catch (e) {
      message = raw.replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim().slice(0, 200);
    }
    const s = res.status;
    let text;
    if (s === 401) {
      text = apiKey() ? "The server did not accept the API key. Enter the right key below."
                      : "This server needs an API key. Enter it below.";
    } else if (s === 413) {
      // the server's --max-body-bytes; its message gives the numbers
      text = "The attachments are too large for this server: remove some or attach smaller " +
             "files." + (message ? " The server says: " + message : "");
    } else if (s === 429) {
      const n = parseInt(res.headers.get("Retry-After") || "1", 10) || 1;
      text = "The server is busy answering others. Try again in " + n + " s.";
    } else if (s === 503) {
      text = "The server cannot answer now" + (message ? ": " + message : ".") +
             " Try again later.";
    } else if (code === "invalid_image" || code === "invalid_image_url" ||
               code === "invalid_video_url") {
      text = "The server could not read an attachment: " + (message || "HTTP " + s);
    } else if (code === "context_length_exceeded") {
      // the server's words name token counts and a flag of the server; the person needs what
      // to do about it
      text = contextFullText();
    } else if (code === "too_many_images") {
      text = "This message, with the images and videos sent earlier in this conversation, " +
        "holds more than this server takes in one request" +
        (state.maxImages ? " (" + state.maxImages + ")" : "") + ". Start a new chat, or " +
        "remove some attachments.";
    } else if (s === 400) {
      text = "The server refused the request: " + (message || "HTTP 400");
    } else {
      text = "The server answered HTTP " + s + (message ? ": " + message : ".");
    }
    return { status: s, code: code, text: text, message: message };
  }

  function contextFullText() {
    return "The conversation no longer fits in what the model can read at once" +
      (state.context ? " (" + state.context + " tokens)" : "") + ". Start a new chat, or " +
      "remove attachments or give them a smaller budget, or edit an earlier message.";
  }

  // ---- attachments -------------------------------------------------------------------------
  function kindOf(file) {
    if (/^image\//.test(file.type) || (!file.type && IMAGE_EXT.test(file.name))) return "image";
    if (/^video\//.test(file.type) || (!file.type && VIDEO_EXT.test(file.name))) return "video";
    return "";
  }

  function addFiles(files) {
    const refused = [];
    for (const file of files) {
      const kind = kindOf(file);
      if (!kind) { refused.push(file.name || "(unnamed)"); continue; }
      const ext = (file.name.match(/\.([a-z0-9]+)$/i) || ["", ""])[1].toLowerCase();
      const type = file.type || EXT_TYPE[ext] || (kind === "image" ? "image/png" : "video/mp4");
      state.pending.push({
        file: file, name: file.name || (kind + "." + (type.split("/")[1] || "bin")), kind: kind,
        type: type, url: URL.createObjectURL(file),
        // images: the server's default budget; videos: a budget per frame, 70 by default
        tokens: kind === "video" ? 70 : state.defaultTokens,
      });
    }
    renderPending();
    updateMeter();
    if (refused.length) {
      setStatus("Not an image or a video, left out: " + refused.join(", "));
    } else if (files.length) {
      setStatus(files.length === 1 ? "1 file attached." : files.length + " files attached.");
    }
  }

  // A thumbnail with its name as text; in the composer also the budget and a remove button.
  function attachmentView(a, editable, index) {
    const li = el("li", "attachment " + a.kind);
    let thumb;
    if (a.kind === "image") {
      thumb = el("img", "thumb");
      thumb.alt = "";
      thumb.src = a.url;
    } else {
      thumb = el("video", "thumb");
      thumb.muted = true;
      thumb.preload = "metadata";
      thumb.src = a.url;
      thumb.setAttribute("aria-hidden", "true");
    }
    // the thumbnail opens the file large (a button: reachable with the keyboard too)
    const open = el("button", "thumb-button");
    open.type = "button";
    open.setAttribute("aria-label", "View " + a.name + " large");
    open.appendChild(thumb);
    open.addEventListener("click", () => viewLarge(a));
    li.appendChild(open);
    const info = el("div", "info");
    info.appendChild(el("span", "name", a.name));
    if (editable) {
      const sel = el("select", "budget");
      const what = a.kind === "video" ? "Tokens per frame for " : "Image tokens for ";
      sel.setAttribute("aria-label", what + a.name);
      for (const b of BUDGETS) {
        const o = el("option", "", a.kind === "video" ? b + " / frame" : b + " tokens");
        o.value = String(b);
        sel.appendChild(o);
      }
      sel.value = String(a.tokens);
      sel.addEventListener("change", () => { a.tokens = parseInt(sel.value, 10); updateMeter(); });
      info.appendChild(sel);
      const rm = el("button", "remove secondary", "Remove");
      rm.type = "button";
      rm.setAttribute("aria-label", "Remove " + a.name);
      rm.addEventListener("click", () => {
        URL.revokeObjectURL(a.url);
        state.pending.splice(index, 1);
        renderPending();
        updateMeter();
        ui.prompt.focus();
      });
      info.appendChild(rm);
    } else {
      info.appendChild(el("span", "budget-note",
                          a.kind === "video" ? a.tokens + " tokens / frame" : a.tokens + " tokens"));
    }
    li.appendChild(info);
    return li;
  }

  // The image or video in a dialog, as large as the window allows; Escape or Close ends it.
  function viewLarge(a) {
    let m;
    if (a.kind === "image") {
      m = el("img");
      m.alt = a.name;
    } else {
      m = el("video");
      m.controls = true;
    }
    m.src = a.url;
    ui.viewerMedia.replaceChildren(m);
    ui.viewerName.textContent = a.name;
    ui.viewer.showModal();
    ui.viewerClose.focus();
  }
  ui.viewerClose.addEventListener("click", () => ui.viewer.close());
  ui.viewer.addEventListener("close", () => ui.viewerMedia.replaceChildren());
  // a click on the backdrop (outside the dialog's box) closes it too
  ui.viewer.addEventListener("click", (ev) => { if (ev.target === ui.viewer) ui.viewer.close(); });

  function renderPending() {
    ui.attachments.replaceChildren(...state.pending.map((a, i) => attachmentView(a, true, i)));
    ui.attachments.hidden = state.pending.length === 0;
  }

  function dataUri(a) {
    return new Promise((resolve, reject) => {
      const r = new FileReader();
      // the server reads the type from the URI: use ours (a pasted file may have none)
      r.onload = () => resolve("data:" + a.type + ";base64," + String(r.result).split(",")[1]);
      r.onerror = () => reject(new Error("cannot read " + a.name));
      r.readAsDataURL(a.file);
    });
  }

  ui.attach.addEventListener("click", () => ui.fileInput.click());
  ui.fileInput.addEventListener("change", () => {
    addFiles(Array.from(ui.fileInput.files || []));
    ui.fileInput.value = ""; // the same file may be chosen again
    ui.prompt.focus();
  });
  // Paste: files from the clipboard become attachments; text pastes as usual. An office program
  // puts a picture of copied text beside the text itself: with text there, the text wins.
  document.addEventListener("paste", (ev) => {
    const cd = ev.clipboardData;
    const files = Array.from((cd && cd.files) || []);
    if (files.length && !Array.from(cd.types || []).includes("text/plain")) {
      ev.preventDefault();
      addFiles(files);
    }
  });
  // Drop anywhere on the page.
  document.addEventListener("dragover", (ev) => {
    if (ev.dataTransfer && Array.from(ev.dataTransfer.types || []).includes("Files")) {
      ev.preventDefault();
      document.body.classList.add("dropping");
    }
  });
  document.addEventListener("dragleave", (ev) => {
    if (!ev.relatedTarget) document.body.classList.remove("dropping");
  });
  document.addEventListener("drop", (ev) => {
    document.body.classList.remove("dropping");
    const files = Array.from((ev.dataTransfer && ev.dataTransfer.files) || []);
    if (files.length) {
      ev.preventDefault();
      addFiles(files);
    }
  });

  // ---- the conversation as the API takes it ------------------------------------------------
  function numberOr(input, parse) {
    const v = input.value.trim();
    if (v === "") return undefined;
    const n = parse(v);
    return Number.isFinite(n) ? n : undefined;
  }

  // A setting the browser's own checks refuse (out of range, not a whole number), in the words
  // of its label; or "".
  function settingProblem() {
    for (const input of [ui.temperature, ui.seed, ui.maxTokens, ui.topP, ui.topK, ui.minP]) {
      if (!input.checkValidity()) {
        const label = input.labels && input.labels[0] ? input.labels[0].textContent : input.id;
        return "Settings, " + label + ": " + input.validationMessage;
      }
    }
    const n = stopStrings().length;
    if (n > 4) return "Settings, Stop strings: at most 4 (one a line); there are " + n + ".";
    return "";
  }
  function stopStrings() {
    return ui.stopStrings.value.split("\n").filter((l) => l.length > 0);
  }

  async function userMessage(turn, onRead) {
    const parts = [];
    for (const a of turn.attachments) {
      if (!a.uri) {
        if (onRead) onRead(a);
        a.uri = await dataUri(a);
      }
      const kind = a.kind === "video" ? "video_url" : "image_url";
      parts.push({ type: kind, [kind]: { url: a.uri }, g4v: { tokens: a.tokens } });
    }
    if (turn.text) parts.push({ type: "text", text: turn.text });
    return { role: "user", content: parts };
  }

  // onRead(attachment, i, n) before each attachment is read into a data: URI
  async function requestBody(turns, onRead) {
    const messages = [];
    const system = ui.system.value.trim();
    if (system) messages.push({ role: "system", content: system });
    const toRead = turns.flatMap((t) => (t.attachments || []).filter((a) => !a.uri));
    let read = 0;
    for (const t of turns) {
      if (t.role === "user") {
        messages.push(await userMessage(t, (a) => onRead && onRead(a, ++read, toRead.length)));
      } else {
        const m = { role: "assistant", content: t.content };
        if (t.reasoning) m.reasoning_content = t.reasoning;
        messages.push(m);
      }
    }
    const body = { messages: messages, stream: true, stream_options: { include_usage: true } };
    const fields = { temperature: numberOr(ui.temperature, parseFloat),
      seed: numberOr(ui.seed, (v) => parseInt(v, 10)),
      max_tokens: numberOr(ui.maxTokens, (v) => parseInt(v, 10)),
      top_p: numberOr(ui.topP, parseFloat), top_k: numberOr(ui.topK, (v) => parseInt(v, 10)),
      min_p: numberOr(ui.minP, parseFloat) };
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) body[k] = v;
    const stop = stopStrings();
    if (stop.length) body.stop = stop;
    if (ui.think.checked) body.chat_template_kwargs = { enable_thinking: true };
    return body;
  }

  // ---- the server's limits, before sending (GET /v1/info, GET /v1/models) ------------------
  const mb = (n) => n < 1048576 ? Math.ceil(n / 1024) + " KB"
    : (n / 1048576).toFixed(n < 10485760 ? 1 : 0) + " MB";
  const quote = (s) => "\u201c" + s + "\u201d";

  // The prompt's tokens, estimated: the last answer's usage counts the conversation up to it
  // exactly; what came after is guessed (4 characters a token, an image its budget plus its
  // markers, a video one frame at least).
  function estimateTokens(turns) {
    let n = 0, from = 0;
    for (let i = turns.length - 1; i >= 0; i--) {
      const u = turns[i].role === "assistant" && turns[i].usage;
      if (u && u.prompt_tokens >= 0) {
        n = u.prompt_tokens + (u.completion_tokens || 0);
        from = i + 1;
        break;
      }
    }
    const system = ui.system.value.trim();
    if (from === 0 && system) n += Math.ceil(system.length / 4) + 4;
    for (const t of turns.slice(from)) {
      n += 4 + Math.ceil(((t.role === "user" ? t.text : t.content) || "").length / 4);
      for (const a of t.attachments || []) n += a.tokens + 4;
    }
    return n;
  }

  // What in turns goes past a limit of the server, said with the files' names; or "".
  function limitProblem(turns, json) {
    const last = turns[turns.length - 1];
    const all = turns.flatMap((t) => t.attachments || []);
    if (state.maxImages && all.length > state.maxImages) {
      const over = all.slice(state.maxImages).map((a) => quote(a.name));
      const earlier = all.length - (last.attachments || []).length;
      return "This server takes at most " + state.maxImages + " images and videos in one " +
        "request, and this message would send " + all.length +
        (earlier ? " (" + earlier + " of them attached earlier in this conversation)" : "") +
        ". Remove " + over.join(", ") + (earlier ? ", or start a new chat" : "") + ".";
    }
    if (state.context) {
      const n = estimateTokens(turns);
      if (n >= state.context) {
        const big = all.reduce((a, b) => (!a || b.tokens > a.tokens ? b : a), null);
        return "This message would not fit in what the model can read at once: about " + n +
          " tokens with the conversation, and the model reads " + state.context + ". " +
          (big ? "The largest attachment is " + quote(big.name) + " (" + big.tokens +
                 " tokens). " : "") +
          "Shorten the message, remove attachments or give them a smaller budget, or start a " +
          "new chat.";
      }
    }
    // the server's --max-body-bytes: a body over it would be read to its end, then refused
    const limit = state.maxBody;
    if (limit && (json.length > limit ||
                  (json.length * 3 > limit && new TextEncoder().encode(json).length > limit))) {
      const big = all.reduce((a, b) => (!a || b.file.size > a.file.size ? b : a), null);
      return "The message is too large for this server: with its attachments it would be " +
        mb(json.length) + ", and the server takes at most " + mb(limit) + " (its " +
        "--max-body-bytes)." + (big ? " The largest attachment is " + quote(big.name) + " (" +
        mb(big.file.size) + "). Remove some or attach smaller files." : "");
    }
    return "";
  }

  // The context meter under the composer: the conversation and what the composer holds.
  function updateMeter() {
    if (!state.context) { ui.meter.parentElement.hidden = true; return; }
    const base = state.editAt >= 0 ? state.history.slice(0, state.editAt) : state.history;
    const n = estimateTokens(base.concat([{ role: "user", text: ui.prompt.value,
                                            attachments: state.pending }]));
    ui.meter.parentElement.hidden = false;
    ui.meter.max = state.context;
    ui.meter.value = Math.min(n, state.context);
    ui.meter.high = Math.round(state.context * 0.8);
    ui.meter.optimum = 0;
    ui.meterText.textContent = "Context: about " + n.toLocaleString("en") + " of " +
      state.context.toLocaleString("en") + " tokens";
    ui.meter.parentElement.classList.toggle("full", n >= state.context);
  }

  // ---- progress while a message is read and sent --------------------------------------------
  // (window.g4vProgressLog: what was shown, for the browser test)
  const progressLog = window.g4vProgressLog = [];
  function showProgress(text, frac) {
    ui.progressRow.hidden = false;
    ui.progressText.textContent = text;
    if (frac === undefined) ui.progress.removeAttribute("value");
    else ui.progress.value = Math.max(0, Math.min(1, frac));
    progressLog.push({ text: text, frac: frac });
  }
  function hideProgress() { ui.progressRow.hidden = true; }

  // ---- the log -----------------------------------------------------------------------------
  function scrollToEnd() {
    const m = document.scrollingElement || document.documentElement;
    m.scrollTop = m.scrollHeight;
  }
  // Whether the view is at the end: a streaming answer follows it only then, so that a person
  // who scrolled up to read is not pulled down by every new word.
  function atEnd() {
    const m = document.scrollingElement || document.documentElement;
    return m.scrollHeight - m.scrollTop - m.clientHeight < 80;
  }

  function actionButton(label, aria, onClick) {
    const b = el("button", "secondary small", label);
    b.type = "button";
    b.setAttribute("aria-label", aria);
    b.addEventListener("click", onClick);
    return b;
  }

  // index: the turn's place in the history (its Edit button), or -1 (none)
  function userView(turn, index) {
    const div = el("div", "msg user");
    div.appendChild(el("span", "visually-hidden", "You:"));
    if (turn.attachments.length) {
      const ul = el("ul", "attachments");
      for (const a of turn.attachments) ul.appendChild(attachmentView(a, false));
      div.appendChild(ul);
    }
    if (turn.text) div.appendChild(el("p", "text", turn.text));
    if (index >= 0) {
      const acts = el("div", "msg-actions");
      acts.appendChild(actionButton("Edit", "Edit this message and send it again",
                                    () => startEdit(index)));
      div.appendChild(acts);
    }
    return div;
  }

  function assistantView() {
    const div = el("div", "msg assistant");
    div.appendChild(el("span", "visually-hidden", "Answer:"));
    const thought = el("details", "thought");
    thought.hidden = true;
    const summary = el("summary", "", "Thought");
    thought.appendChild(summary);
    const thoughtBody = el("div", "thought-body");
    thought.appendChild(thoughtBody);
    div.appendChild(thought);
    const content = el("div", "content waiting");
    div.appendChild(content);
    const figures = el("ul", "figures");
    figures.hidden = true;
    div.appendChild(figures);
    return { div, thought, summary, thoughtBody, content, figures };
  }

  function notes(view, t) {
    if (t.stopped) view.div.appendChild(el("p", "note", "Stopped."));
    if (t.partial) {
      view.div.appendChild(el("p", "note", "Interrupted: the page was closed or reloaded while " +
                              "this answer was being written. What came is kept."));
    }
    if (t.finish === "length") {
      view.div.appendChild(el("p", "note", "Cut at the answer's length limit (Max tokens)."));
    }
  }

  // An answer of the history, drawn whole.
  function answerView(t) {
    const v = assistantView();
    v.content.classList.remove("waiting");
    // drawn as a stream is (markdown.js): at once for 50 ms, the rest a frame at a time, so that
    // a conversation with a long answer opens without freezing the tab
    const view = new window.MarkdownView(v.content);
    const t0 = performance.now();
    let more = true;
    while (more && performance.now() - t0 < 50) more = view.update(t.content, true);
    const step = () => { if (v.div.isConnected && view.update(t.content, true)) requestAnimationFrame(step); };
    if (more) requestAnimationFrame(step);
    if (t.reasoning) {
      v.thought.hidden = false;
      v.thoughtBody.dir = "auto";
      v.thoughtBody.textContent = t.reasoning;
      v.summary.textContent = "Thought (" + t.reasoning.length + " characters)";
    }
    showFigures(v, t.usage, t.g4v, t.finish);
    notes(v, t);
    return v;
  }

  // Under each answer: Copy (its Markdown as written); under the last also Regenerate, and
  // Continue when it was cut short.
  function answerActions() {
    for (const old of ui.log.querySelectorAll(".answer-actions")) old.remove();
    const lastAt = state.history.length - 1;
    for (const div of ui.log.querySelectorAll(".msg.assistant[data-index]")) {
      const i = parseInt(div.dataset.index, 10);
      const t = state.history[i];
      if (!t || t.role !== "assistant") continue;
      const acts = el("div", "msg-actions answer-actions");
      const copy = actionButton("Copy", "Copy this answer", () => {
        const done = () => {
          copy.textContent = "Copied";
          setTimeout(() => { copy.textContent = "Copy"; }, 1500);
        };
        if (navigator.clipboard) {
          navigator.clipboard.writeText(t.content).then(done,
            () => setStatus("The browser did not let the page copy (it needs the page in focus)."));
        }
      });
      acts.appendChild(copy);
      if (i === lastAt) {
        acts.appendChild(actionButton("Regenerate", "Regenerate this answer", () => send("regen")));
        if (t.finish === "length" || t.stopped || t.partial) {
          acts.appendChild(actionButton("Continue", "Continue this answer", () => send("continue")));
        }
      }
      div.appendChild(acts);
    }
  }

  // The log drawn again from turns (a conversation opened, a message edited, an answer redone).
  function renderLog(turns) {
    const frag = document.createDocumentFragment();
    turns.forEach((t, i) => {
      if (t.role === "user") {
        frag.appendChild(userView(t, i));
      } else {
        const v = answerView(t);
        v.div.dataset.index = String(i);
        frag.appendChild(v.div);
      }
    });
    ui.log.replaceChildren(frag);
    ui.empty.hidden = turns.length > 0;
    if (turns === state.history) answerActions();
  }

  function errorView(text) {
    const div = el("div", "msg error");
    div.setAttribute("role", "alert");
    div.appendChild(el("p", "", text));
    return div;
  }

  // An error in the conversation, once: the log says it (role=alert), the status line does not
  // repeat it.
  function showError(text, status) {
    ui.log.appendChild(errorView(text));
    ui.empty.hidden = true;
    setStatus(status || "");
    scrollToEnd();
  }

  function figure(list, key, label, value) {
    const li = el("li");
    li.dataset.figure = key;
    li.appendChild(el("span", "k", label + " "));
    li.appendChild(el("span", "v", String(value)));
    list.appendChild(li);
  }

  // The answer's figures from the usage chunk (docs/CHAT_API.md §2).
  function showFigures(view, usage, g, finish) {
    const f = view.figures;
    f.replaceChildren();
    if (usage) {
      figure(f, "prompt_tokens", "prompt", usage.prompt_tokens + " tok");
      const cached = (usage.prompt_tokens_details || {}).cached_tokens;
      if (cached !== undefined) figure(f, "cached_tokens", "cached", cached + " tok");
      figure(f, "completion_tokens", "answer", usage.completion_tokens + " tok");
    }
    if (g) {
      if (g.image_tokens !== undefined) {
        figure(f, "image_tokens", "images", g.image_tokens + " tok (" +
               (g.images_encoded || 0) + " encoded, " + (g.images_cached || 0) + " cached)");
      }
      if (g.time_to_first_token_s !== undefined) {
        figure(f, "ttft", "first token", Number(g.time_to_first_token_s).toFixed(2) + " s");
      }
      if (usage && g.generate_s > 0) {
        figure(f, "tokens_per_s", "speed", (usage.completion_tokens / g.generate_s).toFixed(1) +
               " tok/s");
      }
    }
    if (finish) figure(f, "finish_reason", "finish", finish);
    f.hidden = f.childElementCount === 0;
  }

  // ---- the conversations kept in this browser (store.js) ------------------------------------
  const CURRENT = "g4v.conversation"; // sessionStorage: the one this tab shows, across a reload
  const store = window.ChatStore;
  let saving = Promise.resolve(), saveTimer = null, storeWarned = false;
  window.g4vSaved = 0; // saves done, for the browser test

  function titleOf(turns) {
    const u = turns.find((t) => t.role === "user");
    if (!u) return "Conversation";
    const line = (u.text || "").split("\n")[0].trim();
    if (line) return line.length > 60 ? line.slice(0, 59) + "\u2026" : line;
    return u.attachments.length ? u.attachments[0].name : "Conversation";
  }

  // The conversation as it is now into IndexedDB (saves run one after the other).
  function persist() {
    if (saveTimer) { clearTimeout(saveTimer); saveTimer = null; }
    if (!store || !state.history.length) return saving;
    if (!state.conv) {
      const now = Date.now();
      state.conv = { id: store.newId(), title: titleOf(state.history), created: now };
    }
    const conv = state.conv;
    const rec = Object.assign({}, conv, { updated: Date.now(), turns: state.history.slice() });
    try { sessionStorage.setItem(CURRENT, rec.id); } catch (e) { /* not kept across reloads */ }
    saving = saving.then(() => store.put(rec)).then(() => {
      window.g4vSaved++;
      // a new conversation joins the open list; later saves (twice a second while an answer
      // streams) leave the list alone: a rename being typed there, or the focus, would be lost
      if (!conv.listed && !ui.chatsPanel.hidden && !ui.chats.querySelector(".rename-form")) {
        refreshList();
      }
      conv.listed = true;
    }, (e) => {
      if (!storeWarned) {
        storeWarned = true;
        setStatus("This browser does not keep the conversation (" + (e && e.message || e) +
                  "): it is lost when the page closes.");
      }
    });
    return saving;
  }
  // while an answer streams: at most every half second
  function persistSoon() {
    if (!saveTimer) saveTimer = setTimeout(persist, 500);
  }

  function forgetViews() {
    for (const t of state.history) {
      for (const a of t.attachments || []) URL.revokeObjectURL(a.url);
    }
  }

  async function openConversation(id) {
    const rec = await store.get(id);
    if (!rec) return false;
    abandon();
    forgetViews();
    state.history = rec.turns.map((t) => t.role !== "user" ? Object.assign({}, t) :
      Object.assign({}, t, { attachments: t.attachments.map((a) => ({ name: a.name, kind: a.kind,
        type: a.type, tokens: a.tokens, file: a.blob, url: URL.createObjectURL(a.blob) })) }));
    state.conv = { id: rec.id, title: rec.title, created: rec.created };
    try { sessionStorage.setItem(CURRENT, rec.id); } catch (e) { /* no matter */ }
    cancelEdit();
    renderLog(state.history);
    updateMeter();
    scrollToEnd();
    return true;
  }

  function when(t) {
    const d = new Date(t);
    return d.toLocaleDateString("en-CA") + " " + d.toTimeString().slice(0, 5);
  }

  async function refreshList() {
    if (!store) return;
    let all;
    try { all = await store.list(); } catch (e) {
      ui.chatsNote.textContent = "This browser keeps no conversations here (" + e.message + ").";
      return;
    }
    ui.chats.replaceChildren(...all.map(listItem));
    ui.chatsNote.textContent = all.length
      ? "Kept in this browser only (IndexedDB), with their images."
      : "No conversation kept yet. Each one is kept in this browser (IndexedDB) once sent.";
  }

  function listItem(c) {
    const li = el("li", "chat-item");
    li.dataset.id = c.id;
    const open = el("button", "open");
    open.type = "button";
    open.appendChild(el("span", "title", c.title));
    open.appendChild(el("span", "when", when(c.updated)));
    if (state.conv && state.conv.id === c.id) open.setAttribute("aria-current", "true");
    open.addEventListener("click", async () => {
      if (await openConversation(c.id)) {
        setStatus("Opened " + quote(c.title) + ".");
        refreshList();
      }
    });
    li.appendChild(open);
    const rename = actionButton("Rename", "Rename " + c.title, () => renameForm(li, c));
    const del = actionButton("Delete", "Delete " + c.title, async () => {
      // a second click within 4 s deletes: one slip of the mouse does not
      if (!del.classList.contains("confirm")) {
        del.classList.add("confirm", "danger");
        del.textContent = "Delete for good?";
        setTimeout(() => {
          del.classList.remove("confirm", "danger");
          del.textContent = "Delete";
        }, 4000);
        return;
      }
      if (state.conv && state.conv.id === c.id) newChat();
      // after the saves already queued, so that none brings it back
      const removed = saving.then(() => store.remove(c.id));
      saving = removed.catch(() => {});
      try {
        await removed;
      } catch (e) {
        setStatus(quote(c.title) + " could not be deleted: " + (e && e.message || e) + ".");
        return;
      }
      setStatus("Deleted " + quote(c.title) + ".");
      refreshList();
    });
    const acts = el("div", "row");
    acts.append(rename, del);
    li.appendChild(acts);
    return li;
  }

  function renameForm(li, c) {
    const form = el("form", "rename-form");
    const input = el("input");
    input.type = "text";
    input.value = c.title;
    input.maxLength = 200;
    input.setAttribute("aria-label", "New name for " + c.title);
    const save = el("button", "small", "Save");
    save.type = "submit";
    const cancel = actionButton("Cancel", "Cancel renaming", () => refreshList());
    form.append(input, save, cancel);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const title = input.value.trim() || c.title;
      const rec = await store.get(c.id);
      if (rec) {
        rec.title = title;
        await store.put(rec);
        if (state.conv && state.conv.id === c.id) state.conv.title = title;
      }
      setStatus("Renamed to " + quote(title) + ".");
      refreshList();
    });
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") { ev.stopPropagation(); refreshList(); }
    });
    li.replaceChildren(form);
    input.focus();
    input.select();
  }

  function closeList() {
    ui.chatsPanel.hidden = true;
    ui.chatsToggle.setAttribute("aria-expanded", "false");
    ui.chatsToggle.focus();
  }
  ui.chatsToggle.addEventListener("click", async () => {
    if (!ui.chatsPanel.hidden) { closeList(); return; }
    ui.chatsPanel.hidden = false;
    ui.chatsToggle.setAttribute("aria-expanded", "true");
    await refreshList();
    // the keyboard goes where the list is: its first conversation, or Close
    (ui.chats.querySelector("button.open") || ui.chatsClose).focus();
  });
  ui.chatsClose.addEventListener("click", closeList);
  ui.exportAll.addEventListener("click", async () => {
    try {
      await saving;
      const text = await store.exportAll();
      const a = el("a");
      a.href = URL.createObjectURL(new Blob([text], { type: "application/json" }));
      a.download = "g4v-conversations-" + new Date().toISOString().slice(0, 10) + ".json";
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
      setStatus("Exported " + a.download + ".");
    } catch (e) {
      setStatus("The conversations could not be exported: " + e.message);
    }
  });
  ui.importBtn.addEventListener("click", () => ui.importInput.click());
  ui.importInput.addEventListener("change", async () => {
    const f = (ui.importInput.files || [])[0];
    ui.importInput.value = "";
    if (!f) return;
    try {
      const n = await store.importText(await f.text());
      setStatus("Imported " + n + (n === 1 ? " conversation" : " conversations") + " from " +
                quote(f.name) + ".");
    } catch (e) {
      setStatus("Nothing was imported from " + quote(f.name) + ": " + e.message + ".");
    }
    refreshList();
  });

  // ---- edit a message ----------------------------------------------------------------------
  function startEdit(index) {
    if (state.controller || state.preparing) {
      setStatus("An answer is being written: wait for it, or Stop it (Escape), then edit.");
      return;
    }
    const t = state.history[index];
    for (const a of state.pending) URL.revokeObjectURL(a.url);
    state.editAt = index;
    ui.prompt.value = t.text;
    // copies: the composer's Remove must not take the picture away from the message above
    state.pending = t.attachments.map((a) => Object.assign({}, a,
      { url: URL.createObjectURL(a.file) }));
    renderPending();
    ui.editing.hidden = false;
    updateMeter();
    ui.prompt.focus();
    setStatus("Editing message " + (state.history.slice(0, index + 1)
      .filter((x) => x.role === "user").length) + ": sending replaces it and what follows.");
  }
  function cancelEdit() {
    if (state.editAt < 0) return;
    state.editAt = -1;
    ui.editing.hidden = true;
  }
  ui.editCancel.addEventListener("click", () => {
    cancelEdit();
    for (const a of state.pending) URL.revokeObjectURL(a.url);
    state.pending = [];
    ui.prompt.value = "";
    renderPending();
    updateMeter();
    setStatus("Edit cancelled.");
    ui.prompt.focus();
  });

  // ---- streaming ---------------------------------------------------------------------------
  // Server-sent events from a fetch body: events are separated by a blank line, each "data:"
  // line holds one JSON chunk, "data: [DONE]" ends the answer.
  // A large piece of the body (a proxy that buffers, a long answer already there) holds many
  // events: after ~8 ms of them the loop yields, so that the answer is drawn meanwhile and the
  // tab stays responsive.
  async function readStream(res, onChunk) {
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let cut, at = 0, t0 = performance.now();
      while ((cut = buf.indexOf("\n\n", at)) !== -1) {
        const event = buf.slice(at, cut);
        at = cut + 2;
        const data = event.split("\n").filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
        if (!data) continue;
        if (data === "[DONE]") return true;
        onChunk(JSON.parse(data));
        if (performance.now() - t0 > 8) {
          await new Promise((r) => setTimeout(r, 0));
          t0 = performance.now();
        }
      }
      buf = buf.slice(at);
    }
    return false;
  }

  function setBusy(busy) {
    ui.send.hidden = busy;
    ui.stop.hidden = !busy;
    document.body.classList.toggle("busy", busy);
  }

  // The server names a media part by its place in the request ("image 2: memory buffer: JPEG:
  // ..."): the person gets the file's name instead, and the decoder's words without the plumbing.
  function nameAttachment(err, turns) {
    if (!/^invalid_(image|video)/.test(err.code || "")) return err.text;
    const m = /^(image|video) (\d+): (?:memory buffer: )?([\s\S]*)$/.exec(err.message || "");
    const all = turns.flatMap((t) => t.attachments || []);
    const a = m && all[parseInt(m[2], 10) - 1];
    if (!a) return err.text;
    const earlier = !(turns[turns.length - 1].attachments || []).includes(a);
    return "The server could not read \u201c" + a.name + "\u201d" +
      (earlier ? " (attached earlier in this conversation)" : "") + ": " + m[3];
  }

  // Send: "new" the composer's message (after the history, or replacing the message being
  // edited and what followed it); "regen" the last answer again; "continue" the last answer,
  // cut short, further.
  async function send(mode) {
    mode = mode || "new";
    if (state.controller || state.preparing) {
      // one answer at a time; say so rather than ignore the key
      setStatus("An answer is being written: wait for it, or Stop it (Escape) first.");
      return;
    }
    const prevHistory = state.history;
    let base, turn, carried = null;
    if (mode === "new") {
      const text = ui.prompt.value.trim();
      if (!text && state.pending.length === 0) { ui.prompt.focus(); return; }
      turn = { role: "user", text: text, attachments: state.pending.slice() };
      base = state.editAt >= 0 ? prevHistory.slice(0, state.editAt) : prevHistory;
    } else {
      const last = prevHistory[prevHistory.length - 1];
      if (!last || last.role !== "assistant") return;
      if (mode === "regen") {
        turn = prevHistory[prevHistory.length - 2];
        base = prevHistory.slice(0, -2);
      } else {
        // Continue: the conversation ends with the answer as it is, which the server continues
        // (a final assistant message is the start of the answer, docs/CHAT_API.md §1); what
        // comes is joined to it
        turn = null;
        base = prevHistory;
        carried = last;
      }
    }
    const redraw = base !== prevHistory || carried; // the log is drawn again from base
    const turns = turn ? base.concat([turn]) : base;
    const problem = settingProblem();
    if (problem) { showError(problem); return; }
    // the composer keeps its content until the server takes the message: on an error before
    // that it is still there, to send again
    let body;
    state.preparing = true; // reading the files takes a moment: a second Enter must wait
    try {
      body = await requestBody(turns, (a, i, n) =>
        showProgress("Reading " + quote(a.name) + " (" + i + " of " + n + ")\u2026", (i - 1) / n));
    } catch (e) {
      hideProgress();
      showError("An attachment could not be read: " + e.message + ". Attach it again.");
      return;
    } finally {
      state.preparing = false;
    }
    const json = JSON.stringify(body);
    const limit = limitProblem(turns, json);
    if (limit) {
      hideProgress();
      showError(limit);
      return;
    }
    ui.empty.hidden = true;
    if (redraw) renderLog(carried ? base.slice(0, -1) : base);
    let uview = mode === "continue" ? null : userView(turn, -1);
    const aview = assistantView();
    if (uview) ui.log.appendChild(uview);
    aview.div.classList.add("streaming"); // a waiting mark until the first words come
    ui.log.appendChild(aview.div);
    scrollToEnd();
    const controller = new AbortController();
    const epoch = state.epoch;
    state.controller = controller;
    state.stopped = false;
    setBusy(true);
    const big = json.length > 262144; // a body worth a progress bar
    showProgress(big ? "Sending " + mb(json.length) + "\u2026" : "Sending\u2026", big ? 0 : undefined);

    let content = carried ? carried.content : "", reasoning = carried ? carried.reasoning : "";
    let finish = "", usage = null, g = null;
    // The answer is drawn incrementally (markdown.js: finished blocks are built once, a frame
    // parses only the open block and a bounded amount of new text) and at most once per frame;
    // when a draw costs more than a few milliseconds the next one waits twice as long, so that
    // drawing never takes the tab from the person.
    const view = new window.MarkdownView(aview.content);
    // the longest Markdown update of a frame, for the browser test (docs/WEBUI.md "Markdown")
    const drawStats = window.g4vDrawStats = { max: 0, frames: 0 };
    const thoughtText = document.createTextNode("");
    aview.thoughtBody.appendChild(thoughtText);
    aview.thoughtBody.dir = "auto";
    let drawPending = false, lastCost = 0, ended = false;
    if (carried) requestAnimationFrame(() => draw()); // the part already there, at once
    const draw = () => {
      drawPending = false;
      const t0 = performance.now();
      const follow = atEnd();
      if (content && aview.content.classList.contains("waiting")) {
        aview.content.classList.remove("waiting");
      }
      const u0 = performance.now();
      const more = view.update(content, ended);
      drawStats.max = Math.max(drawStats.max, performance.now() - u0);
      if (reasoning.length > thoughtText.length) {
        if (aview.thought.hidden) aview.thought.open = true; // watch it think; it can fold
        aview.thought.hidden = false;
        thoughtText.appendData(reasoning.slice(thoughtText.length));
      }
      if (follow) scrollToEnd();
      lastCost = performance.now() - t0;
      drawStats.frames++;
      if (aview.div.classList.contains("drawing") !== more) aview.div.classList.toggle("drawing", more);
      if (more) schedule();
    };
    const schedule = () => {
      if (drawPending) return;
      drawPending = true;
      if (lastCost > 8) setTimeout(() => requestAnimationFrame(draw), 2 * lastCost);
      else requestAnimationFrame(draw);
    };
    const fail = (text) => {
      if (redraw) {
        renderLog(state.history); // the conversation as it was, the error under it
      } else {
        if (uview) uview.classList.add("failed");
        aview.div.classList.add("failed");
        if (!content && !reasoning) aview.div.remove();
      }
      showError(text);
    };
    let accepted = false, answer = null;
    const kept = { conv: null, turns: null }; // where the answer is kept, should the page move on
    try {
      const res = await window.postWatched(API, headers(), json, controller.signal,
        (sent, total) => {
          if (!big || !total) return;
          showProgress(sent < total ? "Sending: " + mb(sent) + " of " + mb(total)
            : "Sent " + mb(total) + "; the server reads the attachments\u2026", sent / total);
        });
      if (!res.ok) {
        hideProgress();
        const err = await errorOf(res);
        err.text = nameAttachment(err, turns);
        if (redraw) renderLog(state.history);
        else { if (uview) uview.remove(); aview.div.remove(); }
        showError(err.text, err.status === 401 ? "API key needed." : "");
        if (err.status === 401) {
          state.retryAfterKey = true;
          showKeyForm(apiKey() ? "The key given was not accepted." : "The server needs a key.");
        }
        return;
      }
      accepted = true;
      // the message is the server's now: it is kept, with the answer as it grows
      answer = { role: "assistant", content: content, reasoning: reasoning, partial: true };
      state.history = (carried ? base.slice(0, -1) : base.concat([turn])).concat([answer]);
      if (mode === "new") {
        ui.prompt.value = "";
        state.pending = [];
        renderPending();
        cancelEdit();
      }
      if (uview) { // its Edit button, now that it has a place in the history
        const placed = userView(turn, state.history.length - 2);
        uview.replaceWith(placed);
        uview = placed;
      }
      aview.div.dataset.index = String(state.history.length - 1);
      persist();
      kept.conv = state.conv;
      kept.turns = state.history;
      updateMeter();
      setStatus("Answering\u2026");
      const complete = await readStream(res, (chunk) => {
        if (chunk.error) {
          const e = new Error(typeof chunk.error === "object" ? chunk.error.message
                                                             : String(chunk.error));
          e.code = typeof chunk.error === "object" ? chunk.error.code : "";
          throw e;
        }
        const ch = (chunk.choices || [])[0];
        if (ch) {
          const d = ch.delta || {};
          if (d.content) content += d.content;
          if (d.reasoning_content) reasoning += d.reasoning_content;
          if (ch.finish_reason) finish = ch.finish_reason;
          if (d.content || d.reasoning_content) {
            hideProgress();
            answer.content = content;
            answer.reasoning = reasoning;
            persistSoon();
          }
          schedule();
        }
        if (chunk.usage) { usage = chunk.usage; g = chunk.g4v || null; }
      });
      hideProgress();
      ended = complete;
      draw();
      if (!complete) {
        state.history = prevHistory;
        persist();
        fail("The answer ended early: the server closed the connection before it finished.");
        restoreComposer(turn, mode);
        return;
      }
      showFigures(aview, usage, g, finish);
      aview.summary.textContent = "Thought (" + reasoning.length + " characters)";
      Object.assign(answer, { content: content, reasoning: reasoning, finish: finish,
                              usage: usage, g4v: g });
      delete answer.partial;
      notes(aview, answer);
      persist();
      answerActions();
      updateMeter();
      setStatus("Answered" + (finish === "length" ? ": cut at the length limit (Continue " +
        "goes on)." : "."));
    } catch (e) {
      hideProgress();
      ended = true;
      draw();
      if (epoch !== state.epoch) {
        // New chat (or another conversation) stopped it: this one is gone from view, and kept
        // as far as it got
        if (answer && kept.conv) {
          Object.assign(answer, { content: content, reasoning: reasoning, stopped: true });
          delete answer.partial;
          // unless it was deleted meanwhile (Delete stops its answer too)
          saving = saving.then(() => window.ChatStore.get(kept.conv.id)).then((r) => r &&
            window.ChatStore.put(Object.assign({}, kept.conv, { updated: Date.now(),
                                                                 turns: kept.turns.slice() })))
            .catch(() => {});
        }
      } else if (state.stopped && !accepted) {
        if (redraw) renderLog(state.history);
        else { if (uview) uview.remove(); aview.div.remove(); }
        setStatus("Stopped before the server answered.");
      } else if (state.stopped) {
        // a stopped answer stays in the conversation as far as it got
        Object.assign(answer, { content: content, reasoning: reasoning, stopped: true });
        delete answer.partial;
        aview.div.classList.add("stopped");
        notes(aview, answer);
        persist();
        answerActions();
        setStatus("Stopped.");
      } else {
        if (accepted) {
          state.history = prevHistory;
          persist();
        }
        if (e instanceof TypeError && !accepted) {
          fail("The server cannot be reached. Check that g4v serve is running, then send again.");
        } else if (e instanceof TypeError || e.name === "AbortError") {
          fail("The answer ended early: the connection to the server was lost.");
        } else if (e.code === "context_length_exceeded") {
          fail(contextFullText());
        } else {
          fail("The answer ended early: " + e.message);
        }
        restoreComposer(turn, mode);
      }
    } finally {
      if (state.controller === controller) { // not when the page moved on (abandon())
        state.controller = null;
        setBusy(false);
      }
      aview.div.classList.remove("streaming");
      if (document.activeElement === ui.stop || document.activeElement === document.body) {
        ui.prompt.focus();
      }
    }
  }

  // After a failure the composer gets the message back, unless a new one was begun.
  function restoreComposer(turn, mode) {
    if (mode !== "new" || ui.prompt.value.trim() || state.pending.length) return;
    ui.prompt.value = turn.text;
    state.pending = turn.attachments.slice();
    renderPending();
    updateMeter();
  }

  function stop() {
    if (!state.controller) return;
    state.stopped = true;
    state.controller.abort(); // the server sees the hang-up and frees the slot
  }

  // The answer being written, if any, is stopped and left to its conversation (send() keeps it
  // there, as far as it got): the page shows another one.
  function abandon() {
    stop();
    state.controller = null;
    setBusy(false);
    hideProgress();
    state.epoch++;
  }

  function newChat() {
    abandon();
    forgetViews();
    for (const a of state.pending) URL.revokeObjectURL(a.url);
    state.history = [];
    state.pending = [];
    state.conv = null;
    try { sessionStorage.removeItem(CURRENT); } catch (e) { /* nothing kept */ }
    cancelEdit();
    renderPending();
    ui.log.replaceChildren();
    ui.empty.hidden = false;
    ui.prompt.value = "";
    updateMeter();
    setStatus("New chat.");
    if (!ui.chatsPanel.hidden) refreshList();
    ui.prompt.focus();
  }

  ui.composer.addEventListener("submit", (ev) => { ev.preventDefault(); send(); });
  ui.prompt.addEventListener("keydown", (ev) => {
    // Enter sends; Shift+Enter is a new line; an IME composing text keeps its Enter
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      send();
    }
  });
  ui.prompt.addEventListener("input", updateMeter);
  ui.system.addEventListener("input", updateMeter);
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && ui.viewer.open) {
      return; // the dialog closes itself; the answer goes on
    } else if (ev.key === "Escape" && state.controller) {
      ev.preventDefault();
      stop();
    } else if (ev.key === "Escape" && !ui.chatsPanel.hidden) {
      ev.preventDefault();
      closeList();
    }
  });
  ui.stop.addEventListener("click", stop);
  ui.newChat.addEventListener("click", newChat);
  // the page going away mid-answer: what came is saved now (the last throttled save may be
  // up to half a second old)
  window.addEventListener("pagehide", () => { if (state.controller) persist(); });

  // ---- the model, for the header -----------------------------------------------------------
  async function loadModel() {
    try {
      const res = await fetch("/v1/models", { headers: headers() });
      if (res.status === 401) {
        ui.model.textContent = "API key needed";
        if (ui.keyForm.hidden) showKeyForm("The server needs a key.");
        return;
      }
      if (!res.ok) {
        ui.model.textContent = (await errorOf(res)).text;
        return;
      }
      const j = await res.json();
      const m = (j.data || [])[0] || {};
      const g = m.g4v || {};
      if (BUDGETS.includes(g.default_tokens)) state.defaultTokens = g.default_tokens;
      if (g.context > 0) state.context = g.context;
      ui.model.textContent = (m.id || "unknown model") +
        (g.vision ? " \u00b7 images by " + String(g.vision).split("/").pop() : "") +
        " \u00b7 " + state.defaultTokens + " image tokens by default";
      ui.model.title = ui.model.textContent;
      // the service's limits, checked before sending (docs/WEBUI.md "Errors")
      const info = await fetch("/v1/info", { headers: headers() });
      if (info.ok) {
        const about = await info.json();
        const sv = about.service || {};
        if (sv.max_body_bytes > 0) state.maxBody = sv.max_body_bytes;
        if (sv.max_images > 0) state.maxImages = sv.max_images;
        const tm = about.text_model || {};
        if (tm.context > 0) state.context = tm.context;
      }
      updateMeter();
    } catch (e) {
      ui.model.textContent = "the server cannot be reached";
    }
  }

  // The conversation this tab showed before a reload, if it is kept.
  async function reopen() {
    let id = null;
    try { id = sessionStorage.getItem(CURRENT); } catch (e) { /* none */ }
    if (!id || !store) return;
    try {
      if (await openConversation(id)) {
        const last = state.history[state.history.length - 1];
        setStatus(last && last.partial ? "The page was reloaded while an answer was being " +
          "written: what came is kept (Continue or Regenerate to go on)." : "");
      }
    } catch (e) {
      setStatus("The conversation could not be read back from this browser: " + e.message);
    }
  }

  showKeyState();
  renderPending();
  updateMeter();
  loadModel();
  reopen();
  // ready to type; not on a touch screen, where focus would pop up the keyboard over the page
  if (window.matchMedia("(pointer: fine)").matches) ui.prompt.focus();
})();
