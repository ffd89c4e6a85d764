// chat_page.cjs SPEC_JSON - the chat page of g4v serve --lm (tools/service/webui/page/) in a
// real browser (Debian's chromium, headless, driven by puppeteer-core). Run by
// tests/chat/test_chat_webui.py, which starts the servers, makes the reference answer through
// the API and passes:
//   {chromium, main, auth, key, fx, shots, question, ref: {body, content, usage, g4v}}
// main: a server with --lm-slots 1 --max-queue 0; auth: one with --api-key KEY and a small
// --max-body-bytes. Prints one JSON line per check ({check, what}) and {done: N} at the end.
"use strict";

const h = require("./harness.cjs");
const { check } = h;

const spec = JSON.parse(process.argv[2]);
const FX = spec.fx;
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; " +
  "media-src 'self' blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; " +
  "frame-ancestors 'none'";
const shot = h.shooter(spec.shots);
const XSS = ["<script>window.__pwned=1</script>", "<img src=x onerror=\"window.__pwned=1\">",
  "[x](javascript:window.__pwned=1)",
  "<b>raw</b> <iframe src=\"javascript:window.__pwned=1\"></iframe>",
  // what markdown-it's syntax adds: autolinks, data: and vbscript: links, images, references
  "<javascript:window.__pwned=1>", "[d](data:text/html,<script>window.__pwned=1</script>)",
  "[v](vbscript:msgbox(1))", "![i](javascript:window.__pwned=1)", "[r][evil]",
  "<a href=\"javascript:window.__pwned=1\">a</a>", "<svg onload=window.__pwned=1>"];
const EVIL_NAME = "<img src=x onerror=window.__pwned=1>.png";

function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }
function lastChat(page) { return page.chats[page.chats.length - 1]; }

async function newChat(page) {
  await page.click("#new-chat");
  await page.waitForFunction(() => document.querySelectorAll("#log > .msg").length === 0);
}

async function settings(page, values) {
  for (const [id, v] of Object.entries(values)) await h.setField(page, id, v);
}

async function attach(page, ...names) {
  const input = await page.$("#file-input");
  await input.uploadFile(...names.map((n) => FX + "/" + n));
  await page.waitForFunction((n) => document.querySelectorAll("#attachments li").length >= n,
    {}, names.length);
}

async function loadAndLook(page) {
  const res = await page.goto(spec.main + "/", { waitUntil: "networkidle0" });
  const hd = res.headers();
  check(res.status() === 200 && hd["content-security-policy"] === CSP &&
        hd["x-content-type-options"] === "nosniff" && hd["referrer-policy"] === "no-referrer" &&
        hd["cache-control"] === "no-cache",
        `GET / is the page with its CSP and headers (${res.status()}, ${hd["content-security-policy"]})`);
  await page.waitForFunction(() => /lm-e2b\.gguf/.test(document.getElementById("model").textContent),
    { timeout: 20000 });
  check(true, "the header names the model from GET /v1/models");
  check(page.errors.length === 0 && page.violations.length === 0,
        `the page loads without console errors or CSP violations (${page.errors} ${page.violations})`);
  await h.sleep(200);
  await shot(page, "1-empty");
  // keyboard only: Tab from the top reaches the composer and the send button, focus visible
  // start from the top of the document (the page puts the focus in the message box)
  await page.evaluate(() => {
    document.body.tabIndex = -1;
    document.body.focus();
    document.body.removeAttribute("tabindex");
  });
  const seen = [];
  let sendOutline = "";
  for (let i = 0; i < 30; i++) {
    await page.keyboard.press("Tab");
    const id = await page.evaluate(() => document.activeElement.id);
    seen.push(id);
    if (id === "send") {
      sendOutline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
      break;
    }
  }
  check(seen.includes("prompt") && seen.includes("send") &&
        seen.indexOf("prompt") < seen.indexOf("send") && sendOutline !== "none",
        "Tab reaches the message box, then Send, with a visible focus " +
        `(${seen.join(" ")}; outline ${sendOutline})`);
}

async function firstAnswer(page) {
  await attach(page, "img1.png");
  const c = await h.composer(page);
  check(same(c.names, ["img1.png"]) && same(c.budgets, ["280"]),
        `the chosen image shows with its name and the default budget 280 (${JSON.stringify(c)})`);
  await shot(page, "2-attachment");
  const ref = spec.ref;
  await settings(page, { temperature: ref.body.temperature, seed: ref.body.seed,
                         "max-tokens": ref.body.max_tokens });
  await page.type("#prompt", spec.question);
  await h.sendAndWait(page);
  const sent = lastChat(page);
  const { stream, stream_options: so, ...rest } = sent || {};
  check(stream === true && so && so.include_usage === true && same(rest, ref.body),
        "the page's request is the reference request, streamed with the usage " +
        `(${JSON.stringify(rest).slice(0, 300)})`);
  const e = await h.lastEntry(page);
  const want = await page.evaluate((t) => window.renderMarkdown(t).textContent, ref.content);
  check(e && /assistant/.test(e.cls) && e.content === want && ref.content.length > 0,
        `the streamed answer shown is the API's non-streamed answer (${JSON.stringify(e && e.content)} ` +
        `vs ${JSON.stringify(ref.content)})`);
  const f = (e && e.figures) || {};
  check(f.prompt_tokens === ref.usage.prompt_tokens + " tok" &&
        f.completion_tokens === ref.usage.completion_tokens + " tok" &&
        (f.image_tokens || "").startsWith(ref.g4v.image_tokens + " tok") &&
        /^\d+ tok$/.test(f.cached_tokens || "") && /^\d+\.\d\d s$/.test(f.ttft || "") &&
        /^\d+(\.\d)? tok\/s$/.test(f.tokens_per_s || "") && f.finish_reason === "length",
        "the answer's figures: prompt, cached and image tokens, TTFT, tok/s, finish " +
        `(${JSON.stringify(f)})`);
  const c2 = await h.composer(page);
  check(c2.text === "" && c2.names.length === 0, "the composer is empty after the answer");
  await shot(page, "3-answer");
  // the second turn replays the first: the image, its budget, the answer as it came
  await page.type("#prompt", "And what else?");
  await h.sendAndWait(page);
  const s2 = lastChat(page);
  const m = (s2 && s2.messages) || [];
  check(m.length === 3 && same(m[0], ref.body.messages[0]) &&
        m[1].role === "assistant" && m[1].content === ref.content &&
        same(m[2], { role: "user", content: [{ type: "text", text: "And what else?" }] }),
        "the second turn sends the whole conversation, the answer as the API gave it " +
        `(${JSON.stringify(m).slice(0, 200)})`);
  const e2 = await h.lastEntry(page);
  const cached = parseInt((e2 && e2.figures.cached_tokens) || "0", 10);
  check(cached > 0 && e2.figures.finish_reason,
        `the second turn continues the cached conversation (cached ${cached} tok)`);
}

async function pasteDropAndBudgets(page) {
  await newChat(page);
  const n = await h.logCount(page);
  const c0 = await h.composer(page);
  check(n === 0 && c0.text === "" && await page.$eval("#empty", (e) => !e.hidden),
        "New chat clears the conversation");
  await h.dataTransferEvent(page, "paste", [h.fileSpec(FX, "img2.png", "image/png")]);
  await h.dataTransferEvent(page, "drop", [h.fileSpec(FX, "img1.png", "", "dropped.png")]);
  let c = await h.composer(page);
  check(same(c.names, ["img2.png", "dropped.png"]),
        `a pasted and a dropped image become attachments (${c.names})`);
  await page.select("#attachments li:nth-child(2) select", "70");
  await page.type("#prompt", "Two images?");
  const named = await h.unnamedControls(page);
  check(named.unnamed.length === 0,
        "every control has an accessible name, attachments shown " +
        `(${named.count} controls; unnamed: ${named.unnamed})`);
  await shot(page, "4-attachments-budgets");
  await page.click("#attachments li:nth-child(1) button.remove");
  c = await h.composer(page);
  check(same(c.names, ["dropped.png"]) && same(c.budgets, ["70"]),
        `Remove drops one attachment (${c.names})`);
  // the budget reaches the API: img1.png (dropped.png) at 70 gives fewer image tokens than
  // the first answer's img1.png at 280
  await settings(page, { "max-tokens": 4 });
  await h.sendAndWait(page);
  const part = lastChat(page).messages[0].content[0];
  const e = await h.lastEntry(page);
  const tok = parseInt(e.figures.image_tokens || "0", 10);
  check(part.g4v && part.g4v.tokens === 70 && tok > 0 && tok < spec.ref.g4v.image_tokens,
        `the image's budget 70 reaches the server: ${tok} image tokens ` +
        `(280: ${spec.ref.g4v.image_tokens})`);
}

async function video(page) {
  await newChat(page);
  await attach(page, "clip.mp4");
  const c = await h.composer(page);
  check(same(c.names, ["clip.mp4"]) && same(c.budgets, ["70"]),
        `a video attaches with a per-frame budget of 70 (${JSON.stringify(c)})`);
  await page.type("#prompt", "What happens?");
  await h.sendAndWait(page);
  const part = lastChat(page).messages[0].content[0];
  const e = await h.lastEntry(page);
  check(part.type === "video_url" && /^data:video\/mp4;base64,/.test(part.video_url.url) &&
        part.g4v.tokens === 70 && /assistant/.test(e.cls) &&
        parseInt(e.figures.image_tokens || "0", 10) > 0,
        "the video is sent as a data: URI and answered " +
        `(${e.cls}: ${JSON.stringify(e.figures)} ${e.text.slice(0, 200)})`);
}

async function keysAndThinking(page) {
  await newChat(page);
  await page.click("#think");
  const before = page.chats.length;
  await page.focus("#prompt");
  await page.keyboard.type("line one");
  await page.keyboard.down("Shift");
  await page.keyboard.press("Enter");
  await page.keyboard.up("Shift");
  await page.keyboard.type("line two");
  const v = await page.$eval("#prompt", (e) => e.value);
  check(v === "line one\nline two" && page.chats.length === before,
        `Shift+Enter is a new line, nothing sent (${JSON.stringify(v)})`);
  await h.sendAndWait(page);
  const s = lastChat(page);
  check(page.chats.length === before + 1 && s.messages[0].content[0].text === "line one\nline two" &&
        s.chat_template_kwargs && s.chat_template_kwargs.enable_thinking === true,
        "Enter sends; thinking on is chat_template_kwargs.enable_thinking");
  await page.click("#think");
}

async function badImage(page) {
  await newChat(page);
  await attach(page, "bad.jpg");
  await page.type("#prompt", "Is this readable?");
  await h.sendAndWait(page);
  const e = await h.lastEntry(page);
  const c = await h.composer(page);
  check(/error/.test(e.cls) && /could not read \u201cbad\.jpg\u201d: JPEG: /.test(e.text) &&
        !/memory buffer|image 1/.test(e.text) &&
        c.text === "Is this readable?" && same(c.names, ["bad.jpg"]),
        `a bad image: the error names the file, the message and attachment kept (${e.text})`);
  await shot(page, "6-error");
  await newChat(page);
}

async function metric(url, name) {
  const t = await (await fetch(url + "/metrics")).text();
  const m = t.match(new RegExp("^" + name + " (\\S+)$", "m"));
  return m ? parseFloat(m[1]) : NaN;
}

async function stopAndBusy(page) {
  await newChat(page);
  const cancelled = await metric(spec.main, "g4v_chat_cancelled_total");
  await settings(page, { "max-tokens": 4000, seed: 7 });
  await page.type("#prompt", "Tell me a long story.");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => {
    const c = document.querySelectorAll("#log .msg.assistant .content");
    return c.length && c[c.length - 1].textContent.length > 5;
  }, { timeout: 120000, polling: 100 });
  await shot(page, "5-streaming");
  const t0 = Date.now();
  await page.keyboard.press("Escape");
  await page.waitForFunction(() => !document.body.classList.contains("busy"), { timeout: 5000 });
  const e = await h.lastEntry(page);
  let freed = false;
  for (let i = 0; i < 50 && !freed; i++) {
    freed = await metric(spec.main, "g4v_chat_cancelled_total") === cancelled + 1;
    if (!freed) await h.sleep(100);
  }
  check(/stopped/.test(e.cls) && freed && Date.now() - t0 < 6000,
        `Escape stops the stream and the server counts the hang-up (${Date.now() - t0} ms)`);
  // the one slot is free: the next answer comes at once, not after 4000 tokens
  await settings(page, { "max-tokens": 4 });
  await page.type("#prompt", "Short, please.");
  const t1 = Date.now();
  await h.sendAndWait(page, 60000);
  const e2 = await h.lastEntry(page);
  const s = lastChat(page).messages;
  check(/assistant/.test(e2.cls) && e2.figures.finish_reason && Date.now() - t1 < 30000 &&
        s.length === 3 && s[1].role === "assistant" && s[1].content.length > 0,
        `after Stop the next request is served promptly (${Date.now() - t1} ms), the stopped ` +
        "answer kept in the conversation");

  // 429: the one slot busy with someone else's long stream, no queue
  await newChat(page);
  const ac = new AbortController();
  const res = await fetch(spec.main + "/v1/chat/completions", {
    method: "POST", headers: { "Content-Type": "application/json" }, signal: ac.signal,
    body: JSON.stringify({ messages: [{ role: "user", content: "Go on and on." }], stream: true,
      max_tokens: 4000, seed: 9 }) });
  const reader = res.body.getReader();
  await reader.read(); // the first chunk: the slot is taken
  await page.type("#prompt", "Anyone there?");
  await h.sendAndWait(page);
  ac.abort();
  const e3 = await h.lastEntry(page);
  const c = await h.composer(page);
  check(/error/.test(e3.cls) && /busy/.test(e3.text) && /again in 1 s/.test(e3.text) &&
        c.text === "Anyone there?",
        `429: the server is busy, try again in 1 s; the message kept (${e3.text})`);
  await newChat(page);
}

// Crafted answers through request interception: markup in the answer, the thought, an error
// message and a file name must stay text; and the failures no server of ours makes on demand.
async function crafted(page) {
  await newChat(page);
  let reply = null;
  await page.setRequestInterception(true);
  const onRequest = (r) => {
    if (r.method() === "POST" && r.url().endsWith("/v1/chat/completions") && reply) {
      if (reply === "refuse") r.abort("connectionrefused");
      else r.respond(reply);
    } else {
      r.continue();
    }
  };
  page.on("request", onRequest);
  const sse = (events) => events.map((e) =>
    "data: " + (typeof e === "string" ? e : JSON.stringify(e)) + "\n\n").join("");
  const chunk = (delta, finish) => ({ object: "chat.completion.chunk",
    choices: [{ index: 0, delta: delta, finish_reason: finish || null }] });
  // markup, the Markdown subset, and a long word that must wrap (phone() looks at the width)
  const evil = XSS.join("\n\n") + "\n\n[evil]: javascript:window.__pwned=1\n\n" +
    "**bold** and `code` and *it*\n\n- one\n- two\n\n1. first\n2. second\n\n" +
    "```html\n<script>window.__pwned=1</script>\n```\n\n" + "y".repeat(150);
  reply = { status: 200, contentType: "text/event-stream", body: sse([
    chunk({ role: "assistant", content: "" }),
    chunk({ reasoning_content: "Thinking about " + XSS[0] + " and " + XSS[1] }),
    ...evil.match(/[\s\S]{1,7}/g).map((p) => chunk({ content: p })),
    chunk({}, "stop"),
    { object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 10, completion_tokens: 5,
      total_tokens: 15, prompt_tokens_details: { cached_tokens: 0 } },
    g4v: { image_tokens: 256, images_encoded: 1, images_cached: 0, time_to_first_token_s: 0.5,
      generate_s: 0.25 } },
    "[DONE]"]) };
  await h.dataTransferEvent(page, "drop", [h.fileSpec(FX, "img1.png", "image/png", EVIL_NAME)]);
  const c = await h.composer(page);
  check(same(c.names, [EVIL_NAME]), "a file name with markup shows as text in the composer");
  await page.type("#prompt", "Say something nasty.");
  await h.sendAndWait(page);
  const r = await page.evaluate((name) => {
    const log = document.getElementById("log");
    const m = log.querySelector(".msg.assistant:last-of-type");
    return {
      pwned: window.__pwned,
      bad: log.querySelectorAll("script, iframe, a, [onerror], [onload], img:not(.thumb), b, svg")
        .length,
      thumbs: Array.from(log.querySelectorAll("img")).every((i) => i.src.startsWith("blob:")),
      content: m.querySelector(".content").textContent,
      thought: m.querySelector(".thought-body").textContent,
      thoughtShown: !m.querySelector(".thought").hidden,
      strong: m.querySelector(".content strong") && m.querySelector(".content strong").textContent,
      code: m.querySelector(".content p code") && m.querySelector(".content p code").textContent,
      em: m.querySelector(".content em") && m.querySelector(".content em").textContent,
      bullets: m.querySelectorAll(".content ul > li").length,
      numbered: m.querySelectorAll(".content ol > li").length,
      pre: m.querySelector(".content pre code") && m.querySelector(".content pre code").textContent,
      name: Array.from(log.querySelectorAll(".name")).map((e) => e.textContent),
    };
  }, EVIL_NAME);
  await h.sleep(300); // an injected <img onerror> would have fired by now
  const pwned = await page.evaluate(() => window.__pwned);
  check(r.pwned === undefined && pwned === undefined && r.bad === 0 && r.thumbs,
        `markup in an answer creates no element and runs nothing (pwned ${pwned}, elements ${r.bad})`);
  check(XSS.every((x) => r.content.includes(x)) && r.thought.includes(XSS[0]) &&
        r.thought.includes(XSS[1]) && r.thoughtShown && same(r.name, [EVIL_NAME]),
        "the markup shows literally in the answer, the thought and the file name " +
        `(${JSON.stringify(r.content).slice(0, 160)})`);
  check(r.strong === "bold" && r.code === "code" && r.em === "it" && r.bullets === 2 &&
        r.numbered === 2 && r.pre === "<script>window.__pwned=1</script>",
        "the Markdown subset renders: bold, code, italic, lists, a code block as text " +
        `(${JSON.stringify(r).slice(0, 300)})`);
  await shot(page, "7-thinking");
  if (spec.shots) { // the same in the dark colour scheme
    await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "dark" }]);
    await shot(page, "7-thinking-dark");
    await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "light" }]);
  }
  // an error message with markup, in the chat API's form
  reply = { status: 400, contentType: "application/json", body: JSON.stringify({ error: {
    message: "bad " + XSS[1], type: "invalid_request_error", code: "invalid_content" } }) };
  await page.type("#prompt", "Again.");
  await h.sendAndWait(page);
  let e = await h.lastEntry(page);
  const bad = await page.$$eval("#log [onerror], #log script", (l) => l.length);
  check(/error/.test(e.cls) && e.text.includes("refused the request: bad " + XSS[1]) && bad === 0,
        `an error message with markup shows as text (${e.text})`);
  // the core's form, {"error": "...", "status": "..."}
  reply = { status: 404, contentType: "application/json",
            body: JSON.stringify({ error: "no such endpoint: /v1/chat/completions",
                                   status: "G4V_ERR_ARG" }) };
  await h.sendAndWait(page);
  e = await h.lastEntry(page);
  check(/error/.test(e.cls) && /HTTP 404: no such endpoint/.test(e.text),
        `a core error's form (${e.text})`);
  // not JSON
  reply = { status: 502, contentType: "text/html",
            body: "<html><body><h1>Bad Gateway</h1></body></html>" };
  await h.sendAndWait(page);
  e = await h.lastEntry(page);
  check(/error/.test(e.cls) && /HTTP 502: Bad Gateway/.test(e.text), `a non-JSON error (${e.text})`);
  // a stream cut before [DONE]
  reply = { status: 200, contentType: "text/event-stream",
            body: sse([chunk({ role: "assistant", content: "" }), chunk({ content: "half an ans" })]) };
  await h.sendAndWait(page);
  e = await h.lastEntry(page);
  let cm = await h.composer(page);
  check(/error/.test(e.cls) && /ended early/.test(e.text) && cm.text === "Again.",
        "a stream without [DONE]: the answer ended early, the message back in the composer " +
        `(${e.text})`);
  // the network
  reply = "refuse";
  await h.sendAndWait(page);
  e = await h.lastEntry(page);
  cm = await h.composer(page);
  check(/error/.test(e.cls) && /cannot be reached/.test(e.text) && cm.text === "Again.",
        `a network error: the server cannot be reached (${e.text})`);
  page.off("request", onRequest);
  await page.setRequestInterception(false);
}

// An answer given through request interception, as crafted() does: its text in pieces of `piece`
// characters, one event each.
async function answerWith(page, text, piece) {
  const sse = (events) => events.map((e) =>
    "data: " + (typeof e === "string" ? e : JSON.stringify(e)) + "\n\n").join("");
  const chunk = (delta, finish) => ({ object: "chat.completion.chunk",
    choices: [{ index: 0, delta: delta, finish_reason: finish || null }] });
  const pieces = [];
  for (let i = 0; i < text.length; i += piece) pieces.push(chunk({ content: text.slice(i, i + piece) }));
  const body = sse([chunk({ role: "assistant", content: "" }), ...pieces, chunk({}, "stop"), "[DONE]"]);
  const onRequest = (r) => {
    if (r.method() === "POST" && r.url().endsWith("/v1/chat/completions")) {
      r.respond({ status: 200, contentType: "text/event-stream", body: body });
    } else {
      r.continue();
    }
  };
  await page.setRequestInterception(true);
  page.on("request", onRequest);
  await newChat(page);
  // the main thread's long tasks (50 ms and more) while it is sent, streamed and drawn
  await page.evaluate(() => {
    window.__long = [];
    if (!window.__longObserver) {
      window.__longObserver = new PerformanceObserver((l) => {
        for (const e of l.getEntries()) window.__long.push(e.duration);
      });
      window.__longObserver.observe({ entryTypes: ["longtask"] });
    }
  });
  const t0 = Date.now();
  await page.type("#prompt", "Go.");
  await h.sendAndWait(page);
  await page.waitForFunction(() => !document.querySelector("#log .msg.drawing"),
    { timeout: 120000, polling: 50 });
  const wall = Date.now() - t0;
  await h.sleep(100); // the observer's last entries
  const long = await page.evaluate(() => window.__long.slice());
  const draw = await page.evaluate(() => window.g4vDrawStats);
  page.off("request", onRequest);
  await page.setRequestInterception(false);
  return { stall: long.length ? Math.max(...long) : 0, long: long.length, wall: wall,
           draw: Math.round(draw.max), frames: draw.frames };
}

// markdown-it's rendering (markdown.js): the degenerate answers of issue 49 draw without a stall
// over 100 ms, a 2 MB answer too; links, tables, code, bidi controls.
async function markdown(page) {
  const cases = {
    "a heading of 3000 spaces": ["# a" + " ".repeat(3000) + "x\n\nafter", 50],
    "nested ** markers": ["**".repeat(20000) + "a" + "**".repeat(20000) + "\n\n**b**", 400],
    "unclosed [ brackets": ["[".repeat(30000) + "\n\nafter", 400],
  };
  let big = "";
  for (let i = 0; big.length < 2e6; i++) {
    big += `## Part ${i}\n\nSome **bold** text, \`code\`, a [link](https://example.com/${i}) and ` +
      "*more* words to fill a paragraph of a long answer.\n\n- one\n- two\n\n" +
      "```js\nconst x = " + i + ";\n```\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n";
  }
  cases["a 2 MB answer"] = [big + "The end.", 2000];
  const numbers = {};
  for (const [name, [text, piece]] of Object.entries(cases)) {
    const r = await answerWith(page, text, piece);
    numbers[name] = r;
    const shown = await page.evaluate(() => {
      const all = document.querySelectorAll("#log .msg.assistant .content");
      const c = all[all.length - 1];
      return { text: c.textContent, h1: c.querySelectorAll("h1").length,
               h2: c.querySelectorAll("h2").length, tables: c.querySelectorAll("table").length,
               links: c.querySelectorAll("a").length };
    });
    let drawn;
    if (name === "a 2 MB answer") {
      const parts = (big.match(/^## Part/gm) || []).length;
      drawn = shown.h2 === parts && shown.tables === parts && shown.links === parts &&
        shown.text.endsWith("The end.");
    } else if (name === "a heading of 3000 spaces") {
      drawn = shown.h1 === 1 && /^a\s*x/.test(shown.text) && shown.text.endsWith("after");
    } else {
      // all of it shown (as text from where it became degenerate)
      drawn = shown.text.replace(/\*/g, "").endsWith(name.includes("**") ? "b" : "after");
    }
    // the degenerate answers: no main-thread task of 100 ms (the Long Tasks API). The 2 MB answer:
    // the Markdown update of each frame (markdown.js) under 100 ms; the browser's layout and
    // paint of what was added come on top, and on a loaded 2-core machine reach past it
    // (printed, not held: docs/WEBUI.md "Markdown")
    const held = big.length === text.length - "The end.".length ? r.draw : r.stall;
    check(held < 100 && drawn,
          `${name} (${text.length} characters): drawn; the longest main-thread task ` +
          `${r.stall.toFixed(0)} ms (${r.long} of 50 ms or more), the longest Markdown update ` +
          `${r.draw} ms over ${r.frames} frames, sent to drawn ${r.wall} ms ` +
          `(${JSON.stringify(shown).slice(0, 100)})`);
  }
  process.stdout.write(JSON.stringify({ numbers: numbers }) + "\n");
  // links, a table, code with its copy button, bidi controls
  const text = "See [the site](https://example.com/a?b=1), <https://auto.example/p>, " +
    "www.example.org and [t](https://t.example/ \"x\\\" onmouseover=window.__pwned=1\").\n\n" +
    "| name | n |\n|:--|--:|\n| a | 1 |\n\n" +
    "\u202e0001$ is not $1000\n\n```sh\necho <b>hi</b>\n```\n\n> quoted \u2067isolate\u2069";
  await answerWith(page, text, 9);
  const r = await page.evaluate(() => {
    const all = document.querySelectorAll("#log .msg.assistant .content");
    const c = all[all.length - 1];
    const links = Array.from(c.querySelectorAll("a")).map((a) => ({ href: a.href, rel: a.rel,
      target: a.target, text: a.textContent, attrs: a.getAttributeNames().sort().join(" ") }));
    const blocks = Array.from(c.querySelectorAll("p, h1, h2, li, blockquote, td, th"));
    return { links: links, hosts: Array.from(c.querySelectorAll(".link-host")).map((e) => e.textContent),
      th: Array.from(c.querySelectorAll("th")).map((e) => e.textContent + "|" + e.className),
      td: Array.from(c.querySelectorAll("td")).map((e) => e.textContent + "|" + e.className),
      code: c.querySelector(".code-block pre code").textContent,
      copy: c.querySelector(".code-block button.copy").getAttribute("aria-label"),
      bidi: Array.from(c.querySelectorAll(".bidi")).map((e) => e.textContent),
      controls: /[\u202a-\u202e\u2066-\u2069]/.test(c.textContent),
      auto: blocks.every((b) => b.dir === "auto"), pwned: window.__pwned };
  });
  const hrefs = r.links.map((l) => l.href);
  check(same(hrefs, ["https://example.com/a?b=1", "https://auto.example/p", "http://www.example.org/",
                     "https://t.example/"]) &&
        r.links.every((l) => l.rel === "noopener noreferrer" && l.target === "_blank" &&
                       l.attrs === "href rel target title") &&
        same(r.hosts, [" (example.com)", " (t.example)"]) && r.pwned === undefined,
        "links: http(s) only, rel=noopener noreferrer, a new tab, the host beside a named link, " +
        `no other attribute (${JSON.stringify(r.links)} ${JSON.stringify(r.hosts)})`);
  check(same(r.th, ["name|align-left", "n|align-right"]) && same(r.td, ["a|align-left", "1|align-right"]),
        `a table with its alignment as classes (no style attribute) (${r.th} ${r.td})`);
  check(r.code === "echo <b>hi</b>" && r.copy === "Copy the code",
        `a code block as text, with a copy button (${JSON.stringify(r.code)} ${r.copy})`);
  check(same(r.bidi, ["\u27e8U+202E\u27e9", "\u27e8U+2067\u27e9", "\u27e8U+2069\u27e9"]) &&
        !r.controls && r.auto,
        "bidi controls shown as marks, not applied, every block dir=auto " +
        `(${JSON.stringify(r.bidi)}, controls left ${r.controls}, dir=auto ${r.auto})`);
  // a selection in a finished block survives the stream (its block is never drawn again)
  const sel = await page.evaluate(() => {
    const box = document.createElement("div");
    document.getElementById("log").appendChild(box);
    const view = new window.MarkdownView(box);
    view.update("First paragraph, to select.\n\nSecond, still stre");
    const range = document.createRange();
    range.selectNodeContents(box.querySelector("p"));
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    for (let i = 0; i < 50; i++) view.update("First paragraph, to select.\n\nSecond, still stre" + "am".repeat(i));
    const kept = getSelection().toString();
    box.remove();
    getSelection().removeAllRanges();
    return kept;
  });
  check(sel === "First paragraph, to select.", `a selection in a finished block survives the stream (${JSON.stringify(sel)})`);
}

async function phone(page) {
  await page.setViewport({ width: 360, height: 740 });
  await h.sleep(100);
  const narrow = await page.evaluate(() => document.documentElement.scrollWidth -
                                           document.documentElement.clientWidth);
  check(narrow <= 0, `360 px wide: no sideways scrolling (${narrow} px too wide)`);
  await page.setViewport({ width: 390, height: 844 });
  await attach(page, "img1.png", "clip.mp4");
  await page.type("#prompt", " And a long word: " + "x".repeat(120));
  await h.sleep(200);
  await shot(page, "8-phone");
  await page.$eval("#settings", (d) => { d.open = true; });
  await h.sleep(200);
  const o = await page.evaluate(() => ({ sw: document.documentElement.scrollWidth,
                                         cw: document.documentElement.clientWidth }));
  check(o.sw <= o.cw,
        "390 px wide, attachments and settings open: no sideways scrolling " +
        `(scrollWidth ${o.sw}, width ${o.cw})`);
  const named = await h.unnamedControls(page);
  check(named.unnamed.length === 0,
        "every control has an accessible name, settings open " +
        `(${named.count}; unnamed: ${named.unnamed})`);
  await page.$eval("#settings", (d) => { d.open = false; });
  await page.setViewport({ width: 1100, height: 800 });
}

async function apiKey(browser) {
  const page = await h.openPage(browser);
  await page.goto(spec.auth + "/", { waitUntil: "networkidle0" });
  await page.waitForFunction(() => !document.getElementById("key-form").hidden, { timeout: 20000 });
  check(true, "a server with --api-key: the page opens without a key and asks for one");
  await settings(page, { "max-tokens": 4, seed: 1 });
  await page.type("#prompt", "Hello?");
  await h.sendAndWait(page);
  let e = await h.lastEntry(page);
  const label = await page.$eval("#key-input", (i) => i.labels[0].textContent + "|" + i.type);
  check(/error/.test(e.cls) && /needs an API key/.test(e.text) &&
        await page.$eval("#key-form", (f) => !f.hidden) && label === "API key|password",
        `401: the page says a key is needed and shows a labelled password field (${e.text}; ${label})`);
  await shot(page, "9-api-key");
  // a key the server could not take (not ASCII): refused by the form, nothing sent with it
  const sentBefore = page.chats.length;
  await page.type("#key-input", "cl\u00e9-" + spec.key);
  await page.keyboard.press("Enter");
  await h.sleep(300);
  let k = await page.evaluate(() => ({ help: document.getElementById("key-help").textContent,
    shown: !document.getElementById("key-form").hidden,
    stored: sessionStorage.getItem("g4v.apiKey") }));
  check(k.shown && /plain ASCII/.test(k.help) && /character 3 \(\u201c\u00e9\u201d\)/.test(k.help) &&
        k.stored === null && page.chats.length === sentBefore,
        `a key with a non-ASCII character: the form says which character, keeps nothing (${k.help})`);
  // a wrong key: checked against GET /v1/models before anything is sent with it
  await page.$eval("#key-input", (i) => { i.value = ""; });
  await page.type("#key-input", "wrong-key-0123456789");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => /did not accept/.test(document.getElementById("key-help").textContent),
    { timeout: 10000 });
  k = await page.evaluate(() => ({ shown: !document.getElementById("key-form").hidden,
    stored: sessionStorage.getItem("g4v.apiKey") }));
  check(k.shown && k.stored === null && page.chats.length === sentBefore,
        "a wrong key: checked against /v1/models, refused in the form, no message sent with it");
  await page.$eval("#key-input", (i) => { i.value = ""; });
  const before = await h.logCount(page);
  await page.type("#key-input", spec.key);
  await page.keyboard.press("Enter");
  await h.settled(page, before + 1);
  e = await h.lastEntry(page);
  const store = await page.evaluate((k) => ({
    session: sessionStorage.getItem("g4v.apiKey"),
    local: Object.keys(localStorage).map((x) => localStorage.getItem(x))
      .filter((v) => v.includes(k)).length,
    cookie: document.cookie }), spec.key);
  check(/assistant/.test(e.cls) && e.figures.finish_reason && lastChat(page).messages.length === 1,
        "with the key entered the message is sent again and answered " +
        `(${e.cls} ${JSON.stringify(e.figures)})`);
  check(store.session === spec.key && store.local === 0 && store.cookie === "",
        "the key is in sessionStorage only " +
        `(local ${store.local}, cookie ${JSON.stringify(store.cookie)})`);
  // the same server takes small bodies only (--max-body-bytes 4096, read from GET /v1/info):
  // refused before it is sent, naming the file
  await attach(page, "img1.png");
  await page.type("#prompt", "Too big?");
  const sent = page.chats.length;
  await h.sendAndWait(page);
  e = await h.lastEntry(page);
  const c = await h.composer(page);
  check(/error/.test(e.cls) && /too large for this server/.test(e.text) &&
        /at most 4 KB \(its --max-body-bytes\)/.test(e.text) && /\u201cimg1\.png\u201d/.test(e.text) &&
        c.text === "Too big?" && same(c.names, ["img1.png"]) && page.chats.length === sent,
        `over --max-body-bytes: refused before sending, naming the file, the message kept (${e.text})`);
  await page.click("#settings summary");
  await page.click("#key-change");
  await page.click("#key-forget");
  check(await page.evaluate(() => sessionStorage.getItem("g4v.apiKey")) === null,
        "Forget key removes it");
  check(h.unexpectedErrors(page).length === 0 && page.violations.length === 0,
        "no console errors or CSP violations with the key server " +
        `(${h.unexpectedErrors(page)} ${page.violations})`);
  await page.close();
}

(async () => {
  const browser = await h.launch(spec.chromium);
  try {
    const page = await h.openPage(browser);
    await loadAndLook(page);
    await firstAnswer(page);
    await pasteDropAndBudgets(page);
    await video(page);
    await keysAndThinking(page);
    await badImage(page);
    await stopAndBusy(page);
    await crafted(page);
    await markdown(page);
    await phone(page);
    check(h.unexpectedErrors(page).length === 0 && page.violations.length === 0,
          "no console errors or CSP violations through it all " +
          `(${h.unexpectedErrors(page)} ${page.violations})`);
    await page.close();
    await apiKey(browser);
  } catch (e) {
    check(false, "the browser session failed: " + (e && e.stack || e));
  } finally {
    await h.close(browser);
  }
  h.done();
})();
