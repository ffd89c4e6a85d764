// app.js - the chat page of g4v serve --lm (docs/WEBUI.md): attachments, the composer, the
// streamed answer, settings, the API key, errors. Plain JS, no build step, no dependency: the
// page is embedded in the g4v binary and must work offline.
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
  };

  const state = {
    history: [],       // {role: "user", text, attachments} | {role: "assistant", content, reasoning}
    pending: [],       // attachments in the composer: {file, name, kind, type, url, tokens}
    controller: null,  // the AbortController of the answer being streamed
    preparing: false,  // the attachments of a message being read into data: URIs
    stopped: false,    // the person pressed Stop (an abort that is not an error)
    defaultTokens: 280,
    maxBody: 0, // the server's --max-body-bytes (GET /v1/info), 0 until known
    retryAfterKey: false,
    epoch: 0,          // bumped by New chat: an answer of the old chat must not land in the new

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
    } else if (s === 400) {
      text = "The server refused the request: " + (message || "HTTP 400");
    } else {
      text = "The server answered HTTP " + s + (message ? ": " + message : ".");
    }
    return { status: s, code: code, text: text, message: message };
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
    li.appendChild(thumb);
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
      sel.addEventListener("change", () => { a.tokens = parseInt(sel.value, 10); });
      info.appendChild(sel);
      const rm = el("button", "remove secondary", "Remove");
      rm.type = "button";
      rm.setAttribute("aria-label", "Remove " + a.name);
      rm.addEventListener("click", () => {
        URL.revokeObjectURL(a.url);
        state.pending.splice(index, 1);
        renderPending();
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

  async function userMessage(turn) {
    const parts = [];
    for (const a of turn.attachments) {
      if (!a.uri) a.uri = await dataUri(a);
      const kind = a.kind === "video" ? "video_url" : "image_url";
      parts.push({ type: kind, [kind]: { url: a.uri }, g4v: { tokens: a.tokens } });
    }
    if (turn.text) parts.push({ type: "text", text: turn.text });
    return { role: "user", content: parts };
  }

  async function requestBody(turns) {
    const messages = [];
    const system = ui.system.value.trim();
    if (system) messages.push({ role: "system", content: system });
    for (const t of turns) {
      if (t.role === "user") {
        messages.push(await userMessage(t));
      } else {
        const m = { role: "assistant", content: t.content };
        if (t.reasoning) m.reasoning_content = t.reasoning;
        messages.push(m);
      }
    }
    const body = { messages: messages, stream: true, stream_options: { include_usage: true } };
    const temperature = numberOr(ui.temperature, parseFloat);
    const seed = numberOr(ui.seed, (v) => parseInt(v, 10));
    const maxTokens = numberOr(ui.maxTokens, (v) => parseInt(v, 10));
    if (temperature !== undefined) body.temperature = temperature;
    if (seed !== undefined) body.seed = seed;
    if (maxTokens !== undefined) body.max_tokens = maxTokens;
    if (ui.think.checked) body.chat_template_kwargs = { enable_thinking: true };
    return body;
  }

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

  function userView(turn) {
    const div = el("div", "msg user");
    div.appendChild(el("span", "visually-hidden", "You:"));
    if (turn.attachments.length) {
      const ul = el("ul", "attachments");
      for (const a of turn.attachments) ul.appendChild(attachmentView(a, false));
      div.appendChild(ul);
    }
    if (turn.text) div.appendChild(el("p", "text", turn.text));
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

  function errorView(text) {
    const div = el("div", "msg error");
    div.setAttribute("role", "alert");
    div.appendChild(el("p", "", text));
    return div;
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

  // Send the composer's message: the whole conversation plus this turn.
  async function send() {
    if (state.controller || state.preparing) return; // one answer at a time
    const text = ui.prompt.value.trim();
    if (!text && state.pending.length === 0) { ui.prompt.focus(); return; }
    const turn = { role: "user", text: text, attachments: state.pending.slice() };
    const turns = state.history.concat([turn]);
    // the composer keeps its content until the server takes the message: on an error before
    // that it is still there, to send again
    let body;
    state.preparing = true; // reading the files takes a moment: a second Enter must wait
    try {
      body = await requestBody(turns);
    } catch (e) {
      setStatus("An attachment could not be read: " + e.message);
      return;
    } finally {
      state.preparing = false;
    }
    // the server's --max-body-bytes (GET /v1/info): a body over it is not sent (it would be read
    // to its end, then refused), and the person is told which attachment weighs most
    const json = JSON.stringify(body);
    const limit = state.maxBody;
    if (limit && (json.length > limit ||
                  (json.length * 3 > limit && new TextEncoder().encode(json).length > limit))) {
      const mb = (n) => n < 1048576 ? Math.ceil(n / 1024) + " KB"
        : (n / 1048576).toFixed(n < 10485760 ? 1 : 0) + " MB";
      const all = turns.flatMap((t) => t.attachments || []);
      const big = all.reduce((a, b) => (!a || b.file.size > a.file.size ? b : a), null);
      const text = "The message is too large for this server: with its attachments it would be " +
        mb(json.length) + ", and the server takes at most " + mb(limit) + " (its " +
        "--max-body-bytes)." + (big ? " The largest attachment is \u201c" + big.name + "\u201d (" +
        mb(big.file.size) + "). Remove some or attach smaller files." : "");
      ui.log.appendChild(errorView(text));
      ui.empty.hidden = true;
      setStatus(text);
      scrollToEnd();
      return;
    }
    ui.empty.hidden = true;
    const uview = userView(turn);
    const aview = assistantView();
    ui.log.appendChild(uview);
    aview.div.classList.add("streaming"); // a waiting mark until the first words come
    ui.log.appendChild(aview.div);
    scrollToEnd();
    const controller = new AbortController();
    const epoch = state.epoch;
    state.controller = controller;
    state.stopped = false;
    setBusy(true);
    setStatus("Sending…");

    let content = "", reasoning = "", finish = "", usage = null, g = null;
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
    let drawPending = false, lastCost = 0;
    const draw = () => {
      drawPending = false;
      const t0 = performance.now();
      const follow = atEnd();
      if (content && aview.content.classList.contains("waiting")) {
        aview.content.classList.remove("waiting");
      }
      const u0 = performance.now();
      const more = view.update(content);
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
      uview.classList.add("failed");
      aview.div.classList.add("failed");
      if (!content && !reasoning) aview.div.remove();
      ui.log.appendChild(errorView(text));
      setStatus(text);
      scrollToEnd();
    };
    let accepted = false;
    try {
      const res = await fetch(API, { method: "POST", headers: headers(),
        body: json, signal: controller.signal });
      if (!res.ok) {
        const err = await errorOf(res);
        err.text = nameAttachment(err, turns);
        uview.remove();
        aview.div.remove();
        ui.log.appendChild(errorView(err.text));
        setStatus(err.status === 401 ? "API key needed." : err.text);
        if (err.status === 401) {
          state.retryAfterKey = true;
          showKeyForm(apiKey() ? "The key given was not accepted." : "The server needs a key.");
        }
        return;
      }
      accepted = true;
      // the message is the server's now: clear the composer (the next one can be typed)
      ui.prompt.value = "";
      state.pending = [];
      renderPending();
      setStatus("Answering…");
      const complete = await readStream(res, (chunk) => {
        if (chunk.error) throw new Error(typeof chunk.error === "object"
          ? chunk.error.message : String(chunk.error));
        const ch = (chunk.choices || [])[0];
        if (ch) {
          const d = ch.delta || {};
          if (d.content) content += d.content;
          if (d.reasoning_content) reasoning += d.reasoning_content;
          if (ch.finish_reason) finish = ch.finish_reason;
          schedule();
        }
        if (chunk.usage) { usage = chunk.usage; g = chunk.g4v || null; }
      });
      draw();
      if (!complete) {
        fail("The answer ended early: the server closed the connection before it finished.");
        restoreComposer(turn);
        return;
      }
      showFigures(aview, usage, g, finish);
      aview.summary.textContent = "Thought (" + reasoning.length + " characters)";
      state.history.push(turn, { role: "assistant", content: content, reasoning: reasoning });
      setStatus("Answered" + (finish ? " (" + finish + ")." : "."));
    } catch (e) {
      draw();
      if (epoch !== state.epoch) {
        // New chat stopped it: the old conversation is gone
      } else if (state.stopped && !accepted) {
        uview.remove();
        aview.div.remove();
        setStatus("Stopped before the server answered.");
      } else if (state.stopped) {
        // a stopped answer stays in the conversation as far as it got
        aview.div.classList.add("stopped");
        aview.div.appendChild(el("p", "note", "Stopped."));
        state.history.push(turn, { role: "assistant", content: content, reasoning: reasoning });
        setStatus("Stopped.");
      } else if (e instanceof TypeError && !accepted) {
        fail("The server cannot be reached. Check that g4v serve is running, then send again.");
      } else if (e instanceof TypeError || e.name === "AbortError") {
        fail("The answer ended early: the connection to the server was lost.");
        restoreComposer(turn);
      } else {
        fail("The answer ended early: " + e.message);
        restoreComposer(turn);
      }
    } finally {
      state.controller = null;
      aview.div.classList.remove("streaming");
      setBusy(false);
      if (document.activeElement === ui.stop || document.activeElement === document.body) {
        ui.prompt.focus();
      }
    }
  }

  // After a failure mid-answer the composer gets the message back, unless a new one was begun.
  function restoreComposer(turn) {
    if (ui.prompt.value.trim() || state.pending.length) return;
    ui.prompt.value = turn.text;
    state.pending = turn.attachments.slice();
    renderPending();
  }

  function stop() {
    if (!state.controller) return;
    state.stopped = true;
    state.controller.abort(); // the server sees the hang-up and frees the slot
  }

  function newChat() {
    stop();
    state.epoch++;
    for (const t of state.history) {
      for (const a of t.attachments || []) URL.revokeObjectURL(a.url);
    }
    for (const a of state.pending) URL.revokeObjectURL(a.url);
    state.history = [];
    state.pending = [];
    renderPending();
    ui.log.replaceChildren();
    ui.empty.hidden = false;
    ui.prompt.value = "";
    setStatus("New chat.");
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
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && state.controller) {
      ev.preventDefault();
      stop();
    }
  });
  ui.stop.addEventListener("click", stop);
  ui.newChat.addEventListener("click", newChat);

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
      ui.model.textContent = (m.id || "unknown model") +
        (g.vision ? " · vision " + String(g.vision).split("/").pop() : "") +
        " · " + state.defaultTokens + " image tokens by default";
      ui.model.title = ui.model.textContent;
      // the service's limits, checked before sending (docs/WEBUI.md "Errors")
      const info = await fetch("/v1/info", { headers: headers() });
      if (info.ok) {
        const sv = (await info.json()).service || {};
        if (sv.max_body_bytes > 0) state.maxBody = sv.max_body_bytes;
      }
    } catch (e) {
      ui.model.textContent = "the server cannot be reached";
    }
  }

  showKeyState();
  renderPending();
  loadModel();
  // ready to type; not on a touch screen, where focus would pop up the keyboard over the page
  if (window.matchMedia("(pointer: fine)").matches) ui.prompt.focus();
})();
