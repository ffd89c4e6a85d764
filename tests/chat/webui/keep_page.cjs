// keep_page.cjs SPEC_JSON - the chat page's conversations and turns (tools/service/webui/page/:
// store.js, post.js, code.js, app.js) in headless Chromium, run by tests/chat/test_chat_webui.py
// after chat_page.cjs, against the same main server (--lm-slots 1 --max-queue 0 --max-images 4).
// Checks: the sampling settings (top_p, top_k, min_p, stop) in the request and accepted; a
// setting out of range refused naming it; a reload mid-answer keeps what was written
// (IndexedDB); Continue after an interrupted or `length` answer; Regenerate; Edit and resend;
// the list of conversations: open, rename, delete, kept across a reload; export and import as
// JSON with the image; the server's limits (images per request, context) refused before
// sending naming the file, the context meter; progress while a big body is read and sent; an
// error shown once, in the page's words (no flag of another command); code coloured by Prism
// as DOM nodes (markup inside stays text).
// Prints one JSON line per check ({check, what}) and {done: N} at the end.
"use strict";

const fs = require("fs");
const os = require("os");
const path = require("path");
const h = require("./harness.cjs");
const { check } = h;

const spec = JSON.parse(process.argv[2]);
const FX = spec.fx;
const shot = h.shooter(spec.shots);

function lastChat(page) { return page.chats[page.chats.length - 1]; }
function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }

async function newChat(page) {
  await page.click("#new-chat");
  await page.waitForFunction(() => document.querySelectorAll("#log > .msg").length === 0);
}

async function settings(page, values) {
  for (const [id, v] of Object.entries(values)) await h.setField(page, id, v);
}

async function metric(name) {
  const t = await (await fetch(spec.main + "/metrics")).text();
  const m = t.match(new RegExp("^" + name + " (\\S+)$", "m"));
  return m ? parseFloat(m[1]) : NaN;
}

// How many times text shows in the page (an error is said once: in the conversation).
async function times(page, text) {
  return page.evaluate((t) => document.body.innerText.split(t).length - 1, text);
}

async function openList(page) {
  if (await page.$eval("#chats-panel", (p) => p.hidden)) await page.click("#chats-toggle");
  await page.waitForFunction(() => !document.getElementById("chats-panel").hidden);
  await h.sleep(300);
}

async function listTitles(page) {
  await h.sleep(300); // the list is read back from IndexedDB
  return page.$$eval("#chats .chat-item .title", (l) => l.map((e) => e.textContent));
}

async function clickButton(page, scope, label) {
  const ok = await page.evaluate((scope, label) => {
    const root = scope ? document.querySelector(scope) : document;
    const b = Array.from(root.querySelectorAll("button")).reverse()
      .find((x) => x.getAttribute("aria-label") === label || x.textContent === label);
    if (b) b.click();
    return !!b;
  }, scope, label);
  if (!ok) throw new Error("no button " + label);
}

async function sampling(page) {
  await settings(page, { "max-tokens": 6, seed: 3, temperature: 1, "top-p": 0.9, "top-k": 40,
                         "min-p": 0.05, "stop-strings": "END\nSTOP" });
  await page.type("#prompt", "Hello there.");
  await h.sendAndWait(page);
  const s = lastChat(page) || {};
  const e = await h.lastEntry(page);
  check(s.top_p === 0.9 && s.top_k === 40 && s.min_p === 0.05 && same(s.stop, ["END", "STOP"]) &&
        /assistant/.test(e.cls) && e.figures.finish_reason,
        "Top P, Top K, Min P and stop strings reach the request and the server answers " +
        `(${JSON.stringify({ top_p: s.top_p, top_k: s.top_k, min_p: s.min_p, stop: s.stop })} ${e.cls})`);
  const sent = page.chats.length;
  await settings(page, { "top-k": "2.5" });
  await page.type("#prompt", "Again.");
  await h.sendAndWait(page);
  const e2 = await h.lastEntry(page);
  check(/error/.test(e2.cls) && /^Settings, Top K: /.test(e2.text) && page.chats.length === sent &&
        await times(page, e2.text) === 1,
        `a setting out of range: refused before sending, naming it, said once (${e2.text})`);
  await settings(page, { "top-p": "", "top-k": "", "min-p": "", "stop-strings": "" });
  await page.$eval("#prompt", (p) => { p.value = ""; });
}

// A reload while the answer streams: what was written is kept, marked interrupted.
async function reloadMidAnswer(page) {
  await newChat(page);
  const cancelled = await metric("g4v_chat_cancelled_total");
  await h.dataTransferEvent(page, "drop", [h.fileSpec(FX, "img1.png", "image/png")]);
  await settings(page, { "max-tokens": 4000, seed: 7 });
  await page.type("#prompt", "Tell me a long story.");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => {
    const c = document.querySelectorAll("#log .msg.assistant .content");
    return c.length && c[c.length - 1].textContent.length > 30;
  }, { timeout: 120000, polling: 100 });
  // Enter while it streams says why nothing happens
  await page.type("#prompt", "x");
  await page.keyboard.press("Enter");
  const busy = await page.$eval("#status", (s) => s.textContent);
  await page.$eval("#prompt", (p) => { p.value = ""; });
  const saved = await page.evaluate(() => window.g4vSaved);
  await page.waitForFunction((n) => window.g4vSaved > n, { timeout: 10000 }, saved);
  const before = await page.evaluate(() => {
    const c = document.querySelectorAll("#log .msg.assistant .content");
    return c[c.length - 1].textContent;
  });
  await page.reload({ waitUntil: "networkidle0" });
  await page.waitForFunction(() => document.querySelectorAll("#log > .msg").length >= 2,
    { timeout: 10000 });
  const r = await page.evaluate(() => {
    const a = document.querySelector("#log .msg.assistant");
    return { content: a.querySelector(".content").textContent, note: a.textContent,
      name: Array.from(document.querySelectorAll("#log .msg.user .name")).map((e) => e.textContent),
      thumb: (document.querySelector("#log .msg.user img.thumb") || {}).src || "",
      user: document.querySelector("#log .msg.user .text").textContent,
      cont: !!Array.from(a.querySelectorAll("button")).find((b) => b.textContent === "Continue") };
  });
  check(r.content.length >= 20 && before.startsWith(r.content.slice(0, 20)) &&
        /Interrupted/.test(r.note) && same(r.name, ["img1.png"]) && r.thumb.startsWith("blob:") &&
        r.user === "Tell me a long story." && r.cont,
        "a reload mid-answer: the conversation is back from IndexedDB with the image and the " +
        `answer as far as it was written, marked interrupted, Continue offered (${r.content.length} ` +
        `of ${before.length} characters; ${JSON.stringify(r).slice(0, 200)})`);
  check(/An answer is being written/.test(busy), `Enter while an answer streams says so (${busy})`);
  let freed = false;
  for (let i = 0; i < 100 && !freed; i++) {
    freed = await metric("g4v_chat_cancelled_total") >= cancelled + 1;
    if (!freed) await h.sleep(100);
  }
  await shot(page, "10-reloaded");
  return r.content;
}

// A thumbnail opens its image large in a dialog; Escape closes it.
async function viewLarge(page) {
  await page.click("#log .msg.user .thumb-button");
  await page.waitForFunction(() => document.getElementById("viewer").open &&
    document.querySelector("#viewer img") && document.querySelector("#viewer img").complete,
    { timeout: 5000 });
  const r = await page.evaluate(() => ({ w: document.querySelector("#viewer img").naturalWidth,
    shown: document.querySelector("#viewer img").getBoundingClientRect().width,
    name: document.getElementById("viewer-name").textContent,
    label: document.querySelector("#log .msg.user .thumb-button").getAttribute("aria-label"),
    focus: document.activeElement.id }));
  await shot(page, "10-viewer-large");
  await page.keyboard.press("Escape");
  await h.sleep(200);
  const open = await page.$eval("#viewer", (d) => d.open);
  check(r.w === 768 && r.shown > 300 && r.name === "img1.png" && r.label === "View img1.png large" &&
        r.focus === "viewer-close" && !open,
        `a thumbnail opens the image large in a dialog, Escape closes it (${JSON.stringify(r)}, open ${open})`);
}

async function continueRegenerateEdit(page, kept) {
  await settings(page, { "max-tokens": 6, seed: 5 });
  const n0 = await h.logCount(page);
  await clickButton(page, "#log", "Continue this answer");
  await page.waitForFunction(() => !document.body.classList.contains("busy") &&
    document.querySelector("#log .msg.assistant .figures li"), { timeout: 120000, polling: 100 });
  let s = lastChat(page).messages;
  let e = await h.lastEntry(page);
  const keptText = await page.evaluate((t) => window.renderMarkdown(t).textContent, s[1] && s[1].content || "");
  check(s.length === 2 && s[1].role === "assistant" && keptText === kept &&
        e.content.startsWith(kept.slice(0, -10)) && e.content.length > kept.length &&
        await h.logCount(page) === n0 && e.figures.finish_reason === "length",
        "Continue sends the kept answer as the last message, which the server continues; the " +
        "rest joins the same answer " +
        `(${kept.length} -> ${e.content.length} characters, ${n0} entries)`);
  const cont = await page.evaluate(() => !!Array.from(document.querySelectorAll("#log .answer-actions button"))
    .find((b) => b.textContent === "Continue"));
  const note = await page.evaluate(() => document.querySelector("#log .msg.assistant").textContent);
  check(cont && /Cut at the answer's length limit/.test(note) && !/Interrupted/.test(note),
        "an answer cut by length says so and offers Continue again");
  // Copy: the answer's Markdown as written
  await page.evaluate(() => {
    navigator.clipboard.writeText = (t) => { window.__copied = t; return Promise.resolve(); };
  });
  await clickButton(page, "#log", "Copy this answer");
  await h.sleep(100);
  const copied = await page.evaluate(() => window.__copied);
  const raw = lastChat(page).messages[1].content; // the kept part, as the API got it
  check(typeof copied === "string" && copied.startsWith(raw) && copied.length > raw.length &&
        await page.evaluate((t) => window.renderMarkdown(t).textContent, copied) === e.content,
        `Copy under the answer copies its Markdown as written (${copied && copied.length} characters)`);
  // Regenerate: the last user turn again, the answer replaced
  const was = e.content;
  await settings(page, { seed: 11 });
  await clickButton(page, "#log", "Regenerate this answer");
  await page.waitForFunction(() => !document.body.classList.contains("busy") &&
    document.querySelector("#log .msg.assistant .figures li"), { timeout: 120000, polling: 100 });
  s = lastChat(page).messages;
  e = await h.lastEntry(page);
  check(s.length === 1 && s[0].role === "user" && (s[0].content[1] || {}).text === "Tell me a long story." &&
        s[0].content[0].type === "image_url" && await h.logCount(page) === 2 &&
        /assistant/.test(e.cls) && e.content !== was,
        `Regenerate sends the question again and replaces the answer (${JSON.stringify(e.content)})`);
  await shot(page, "11-regenerated");
  // Edit the question: the composer gets it back with its image; sending replaces it
  await clickButton(page, "#log", "Edit this message and send it again");
  const c = await h.composer(page);
  const editing = await page.$eval("#editing", (d) => !d.hidden);
  check(c.text === "Tell me a long story." && same(c.names, ["img1.png"]) && editing,
        `Edit puts the message and its image back in the composer (${JSON.stringify(c)})`);
  await page.$eval("#prompt", (p) => { p.value = ""; });
  await page.type("#prompt", "A short story, please.");
  await page.keyboard.press("Enter"); // the log is drawn again: as many entries as before
  await page.waitForFunction(() => !document.body.classList.contains("busy") &&
    document.querySelector("#log .msg.assistant .figures li") &&
    document.querySelector("#log .msg.user .text").textContent === "A short story, please.",
    { timeout: 120000, polling: 100 });
  s = lastChat(page).messages;
  const texts = await page.$$eval("#log .msg.user .text", (l) => l.map((x) => x.textContent));
  check(s.length === 1 && (s[0].content[1] || {}).text === "A short story, please." &&
        s[0].content[0].type === "image_url" && same(texts, ["A short story, please."]) &&
        await h.logCount(page) === 2 && await page.$eval("#editing", (d) => d.hidden),
        `the edited message replaces the old one and what followed it (${texts})`);
}

async function list(page) {
  await openList(page);
  let titles = await listTitles(page);
  check(same(titles, ["Tell me a long story.", "Hello there."]),
        `the list of conversations, the latest first, each named by its first message (${titles})`);
  const focus = await page.evaluate(() => document.activeElement.className + "|" +
    document.activeElement.textContent);
  await page.keyboard.press("Escape");
  const closed = await page.evaluate(() => document.getElementById("chats-panel").hidden + "|" +
    document.activeElement.id);
  check(/^open\|Tell me a long story\./.test(focus) && closed === "true|chats-toggle",
        `the list takes the focus when opened; Escape closes it, the focus back on Chats (${focus}; ${closed})`);
  await newChat(page);
  await settings(page, { "max-tokens": 4 });
  await page.type("#prompt", "Second chat here.");
  await h.sendAndWait(page);
  await openList(page);
  titles = await listTitles(page);
  check(same(titles, ["Second chat here.", "Tell me a long story.", "Hello there."]),
        `a second conversation comes first in the list (${titles})`);
  // rename the second
  await clickButton(page, "#chats", "Rename Second chat here.");
  await page.waitForSelector("#chats .rename-form input");
  await page.$eval("#chats .rename-form input", (i) => { i.value = ""; });
  await page.type("#chats .rename-form input", "Renamed chat");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => /^Renamed to/.test(document.getElementById("status").textContent),
    { timeout: 5000 });
  await h.sleep(300);
  await shot(page, "12-conversations");
  // kept across a reload
  await page.reload({ waitUntil: "networkidle0" });
  await openList(page);
  titles = await listTitles(page);
  const shown = await page.$$eval("#log .msg.user .text", (l) => l.map((x) => x.textContent));
  check(same(titles, ["Renamed chat", "Tell me a long story.", "Hello there."]) &&
        same(shown, ["Second chat here."]),
        `renamed, and kept across a reload with the tab's conversation shown (${titles}; ${shown})`);
  // open the first one
  await page.evaluate(() => {
    const li = Array.from(document.querySelectorAll("#chats .chat-item"))
      .find((x) => x.querySelector(".title").textContent === "Tell me a long story.");
    li.querySelector("button.open").click();
  });
  await page.waitForFunction(() => Array.from(document.querySelectorAll("#log .msg.user .text"))
    .some((t) => t.textContent === "A short story, please."), { timeout: 5000 });
  const thumb = await page.$eval("#log .msg.user img.thumb", (i) => i.complete && i.naturalWidth);
  check(thumb === 768 && await h.logCount(page) === 2,
        `a conversation opened from the list shows its turns and its image (${thumb} px)`);
  // delete the renamed one and the first: two clicks each
  await clickButton(page, "#chats", "Delete Renamed chat");
  titles = await listTitles(page);
  const first = titles.length;
  await clickButton(page, "#chats", "Delete Renamed chat");
  await listTitles(page);
  await clickButton(page, "#chats", "Delete Hello there.");
  await clickButton(page, "#chats", "Delete Hello there.");
  titles = await listTitles(page);
  check(first === 3 && same(titles, ["Tell me a long story."]) && await h.logCount(page) === 2,
        `Delete asks once more, then deletes; the open conversation stays (${first} -> ${titles})`);
}

// Delete the conversation whose answer is streaming: it stops, and no save brings it back.
async function deleteWhileStreaming(page) {
  await page.click("#chats-close");
  await newChat(page);
  const cancelled = await metric("g4v_chat_cancelled_total");
  await settings(page, { "max-tokens": 4000, seed: 9 });
  await page.type("#prompt", "Doomed chat.");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => {
    const c = document.querySelectorAll("#log .msg.assistant .content");
    return c.length && c[c.length - 1].textContent.length > 10;
  }, { timeout: 120000, polling: 100 });
  await openList(page);
  await h.sleep(700); // a save or two while it streams
  await clickButton(page, "#chats", "Delete Doomed chat.");
  await clickButton(page, "#chats", "Delete Doomed chat.");
  await h.sleep(1500);
  await page.click("#chats-toggle");
  await openList(page);
  const titles = await listTitles(page);
  let freed = false;
  for (let i = 0; i < 100 && !freed; i++) {
    freed = await metric("g4v_chat_cancelled_total") >= cancelled + 1;
    if (!freed) await h.sleep(100);
  }
  check(same(titles, ["Tell me a long story."]) && freed &&
        !await page.$eval("body", (b) => b.classList.contains("busy")),
        `a conversation deleted while its answer streams: stopped, and gone for good (${titles})`);
}

async function exportImport(page) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "g4v-webui-export-"));
  try {
    const cdp = await page.createCDPSession();
    await cdp.send("Browser.setDownloadBehavior", { behavior: "allow", downloadPath: dir });
    await page.click("#export-all");
    let file = null;
    for (let i = 0; i < 100 && !file; i++) {
      file = fs.readdirSync(dir).find((f) => f.endsWith(".json"));
      if (!file) await h.sleep(100);
    }
    const j = file ? JSON.parse(fs.readFileSync(path.join(dir, file), "utf8")) : {};
    const conv = (j.conversations || [])[0] || { turns: [] };
    const img = "data:image/png;base64," + fs.readFileSync(path.join(FX, "img1.png")).toString("base64");
    const att = ((conv.turns[0] || {}).attachments || [])[0] || {};
    check(j.format === "g4v-chat-conversations" && j.conversations.length === 1 &&
          conv.title === "Tell me a long story." && conv.turns.length === 2 &&
          att.name === "img1.png" && att.data === img && conv.turns[1].role === "assistant" &&
          conv.turns[1].usage && conv.turns[1].finish,
          `Export all: one JSON file with the turns, figures and the image as a data: URI (${file})`);
    // delete it, then import the file
    await openList(page);
    await clickButton(page, "#chats", "Delete Tell me a long story.");
    await clickButton(page, "#chats", "Delete Tell me a long story.");
    const empty = await listTitles(page);
    const input = await page.$("#import-input");
    await input.uploadFile(path.join(dir, file));
    await page.waitForFunction(() => /mported/.test(document.getElementById("status").textContent),
      { timeout: 5000 });
    const imported = await page.$eval("#status", (st) => st.textContent);
    await h.sleep(300);
    if (await page.$("#chats .chat-item button.open")) {
      await page.click("#chats .chat-item button.open");
      await page.waitForFunction(() => document.querySelectorAll("#log > .msg").length === 2,
        { timeout: 5000 });
      await h.sleep(200);
    }
    const r = await page.evaluate(() => {
      const u = document.querySelector("#log .msg.user");
      return { text: u ? u.querySelector(".text").textContent : "",
               w: u ? (u.querySelector("img.thumb") || {}).naturalWidth || 0 : 0 };
    });
    // a file that is not one: said, nothing imported
    const bad = path.join(dir, "notes.json");
    fs.writeFileSync(bad, JSON.stringify({ hello: 1 }));
    await input.uploadFile(bad);
    await page.waitForFunction(() => /Nothing was imported/.test(document.getElementById("status").textContent),
      { timeout: 5000 });
    const st = await page.$eval("#status", (s) => s.textContent);
    // an imported file is untrusted: markup in any of its texts stays text
    const XSS = "<img src=x onerror=window.__pwned=1><script>window.__pwned=1</script>";
    const evil = path.join(dir, "evil.json");
    fs.writeFileSync(evil, JSON.stringify({ format: "g4v-chat-conversations", version: 1,
      conversations: [{ title: "T " + XSS, turns: [
        { role: "user", text: "Q " + XSS, attachments: [{ name: XSS + ".png", kind: "image",
          type: "image/png", tokens: 70, data: img }] },
        { role: "assistant", content: "A " + XSS + "\n\n[x](javascript:window.__pwned=1)",
          reasoning: "R " + XSS, finish: "stop" }] }] }));
    await input.uploadFile(evil);
    await page.waitForFunction(() => /Imported 1 conversation from \u201cevil/.test(
      document.getElementById("status").textContent), { timeout: 5000 });
    await h.sleep(300);
    await page.evaluate(() => Array.from(document.querySelectorAll("#chats .chat-item"))
      .find((x) => x.querySelector(".title").textContent.startsWith("T <img"))
      .querySelector("button.open").click());
    await page.waitForFunction(() => /^Q </.test((document.querySelector("#log .msg.user .text") || {}).textContent || ""),
      { timeout: 5000 });
    await h.sleep(300);
    const x = await page.evaluate((xss) => ({
      pwned: window.__pwned,
      bad: document.querySelectorAll("#log script, #log img:not(.thumb), #log a, #chats img, #chats script, [onerror]").length,
      shown: [document.querySelector("#chats .title").textContent,
              document.querySelector("#log .msg.user .text").textContent,
              document.querySelector("#log .msg.user .name").textContent,
              document.querySelector("#log .msg.assistant .content").textContent,
              document.querySelector("#log .thought-body").textContent].every((t) => t.includes(xss)) }), XSS);
    check(x.pwned === undefined && x.bad === 0 && x.shown,
          `an imported file with markup in its title, texts and file name: all shown as text (${JSON.stringify(x)})`);
    await clickButton(page, "#chats", "Delete T " + XSS);
    await clickButton(page, "#chats", "Delete T " + XSS);
    await h.sleep(300);
    check(empty.length === 0 && r.text === "A short story, please." && r.w === 768 &&
          /^Imported 1 conversation from/.test(imported) &&
          (await listTitles(page)).length === 1 && /\u201cnotes\.json\u201d/.test(st),
          "Import brings it back with its image; a file of another kind is refused by name " +
          `(${imported}; ${st})`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  await page.click("#chats-close");
}

// The server's limits, checked before sending; the context meter; progress; errors once.
async function limits(page) {
  await newChat(page);
  const files = [1, 2, 3, 4, 5].map((i) => h.fileSpec(FX, "img1.png", "image/png", "photo" + i + ".png"));
  await h.dataTransferEvent(page, "drop", files);
  await page.type("#prompt", "Five?");
  const sent = page.chats.length;
  await h.sendAndWait(page);
  let e = await h.lastEntry(page);
  check(/error/.test(e.cls) && /at most 4 images and videos/.test(e.text) &&
        /Remove \u201cphoto5\.png\u201d\./.test(e.text) && page.chats.length === sent &&
        await times(page, e.text) === 1,
        `over --max-images (read from /v1/info): refused before sending, naming the file, once (${e.text})`);
  // the context meter: the composer's images and text counted before sending
  const meter = await page.$eval("#context-text", (t) => t.textContent);
  const m = /^Context: about ([\d,]+) of 8,192 tokens$/.exec(meter);
  const n = m ? parseInt(m[1].replace(/,/g, ""), 10) : 0;
  check(n >= 5 * 284 && n < 5 * 284 + 40, `the context meter counts the attachments' budgets (${meter})`);
  await shot(page, "13-limits");
  await newChat(page);
  await page.$eval("#prompt", (p) => { p.value = "word ".repeat(8000); p.dispatchEvent(new Event("input")); });
  const full = await page.$eval(".context", (c) => c.className + "|" + c.textContent.trim());
  await h.sendAndWait(page);
  e = await h.lastEntry(page);
  check(/error/.test(e.cls) && /would not fit in what the model can read at once/.test(e.text) &&
        /the model reads 8192/.test(e.text) && page.chats.length === sent && /full/.test(full),
        `a message over the context: refused before sending, the meter full (${e.text}; ${full})`);
  await newChat(page);
  // a big attachment: read, then sent, with progress; the server's refusal names the file, once
  await page.evaluate(() => {
    window.g4vProgressLog.length = 0;
    const bytes = new Uint8Array(6 << 20);
    for (let i = 0; i < bytes.length; i += 4096) bytes[i] = i & 255;
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], "big.png", { type: "image/png" }));
    const init = { dataTransfer: dt, bubbles: true, cancelable: true };
    document.getElementById("main").dispatchEvent(new DragEvent("dragover", init));
    document.getElementById("main").dispatchEvent(new DragEvent("drop", init));
  });
  await page.type("#prompt", "What is this?");
  await h.sendAndWait(page);
  e = await h.lastEntry(page);
  const log = await page.evaluate(() => window.g4vProgressLog.map((p) => p.text + "|" + p.frac));
  check(log.some((p) => /^Reading \u201cbig\.png\u201d \(1 of 1\)/.test(p)) &&
        log.some((p) => /^Sending 8\.\d MB/.test(p)) &&
        log.some((p) => /^Sent 8\.\d MB; the server reads the attachments\u2026\|1$/.test(p)) &&
        await page.$eval("#progress-row", (r) => r.hidden),
        `a big body: progress while it is read and sent, gone after (${log.join("; ").slice(0, 300)})`);
  check(/error/.test(e.cls) && /could not read \u201cbig\.png\u201d/.test(e.text) &&
        await times(page, e.text) === 1 && await page.$eval("#status", (s) => s.textContent) === "",
        `the server's refusal names the file and is shown once (${e.text})`);
  await newChat(page);
}

// Crafted answers (request interception): an error with the chat engine's words; code coloured.
async function crafted(page) {
  let reply = null;
  const onRequest = (r) => {
    if (r.method() === "POST" && r.url().endsWith("/v1/chat/completions") && reply) r.respond(reply);
    else r.continue();
  };
  await page.setRequestInterception(true);
  page.on("request", onRequest);
  reply = { status: 400, contentType: "application/json", body: JSON.stringify({ error: {
    message: "the prompt does not fit in the context: 9000 tokens + 1 to answer, 12 of 8192 are left (--ctx)",
    type: "invalid_request_error", code: "context_length_exceeded" } }) };
  await page.type("#prompt", "Too long?");
  await h.sendAndWait(page);
  let e = await h.lastEntry(page);
  check(/error/.test(e.cls) && /no longer fits/.test(e.text) && !/--ctx|tokens \+ 1/.test(e.text) &&
        await times(page, "no longer fits") === 1,
        `the context error in the page's words, no flag of another command, once (${e.text})`);
  const sse = (events) => events.map((x) => "data: " + JSON.stringify(x) + "\n\n").join("") + "data: [DONE]\n\n";
  const chunk = (delta, finish) => ({ object: "chat.completion.chunk",
    choices: [{ index: 0, delta: delta, finish_reason: finish || null }] });
  const text = "Code:\n\n```js\nconst s = \"<img src=x onerror=window.__pwned=1>\"; // note\n" +
    "function f(n) { return n + 1; }\n```\n\n```python\ndef g():\n    return 'x'\n```\n\n" +
    "```nosuchlang\nplain <b>text</b>\n```";
  reply = { status: 200, contentType: "text/event-stream",
            body: sse([...text.match(/[\s\S]{1,5}/g).map((p) => chunk({ content: p })), chunk({}, "stop")]) };
  await newChat(page);
  await page.type("#prompt", "Some code.");
  await h.sendAndWait(page);
  await h.sleep(300);
  const r = await page.evaluate(() => {
    const blocks = Array.from(document.querySelectorAll("#log .msg.assistant .code-block code"));
    const tok = (b, cls) => Array.from(b.querySelectorAll(".tok-" + cls)).map((x) => x.textContent);
    return { n: blocks.length, text: blocks.map((b) => b.textContent),
      jsKw: tok(blocks[0], "keyword"), jsStr: tok(blocks[0], "string"), jsCom: tok(blocks[0], "comment"),
      pyKw: tok(blocks[1], "keyword"), plainSpans: blocks[2].querySelectorAll("span").length,
      bad: document.querySelectorAll("#log img:not(.thumb), #log b, #log [onerror]").length,
      pwned: window.__pwned, lib: typeof window.Prism };
  });
  check(r.n === 3 && r.jsKw.includes("const") && r.jsKw.includes("function") && r.jsKw.includes("return") &&
        same(r.jsStr, ["\"<img src=x onerror=window.__pwned=1>\""]) && same(r.jsCom, ["// note"]) &&
        r.pyKw.includes("def") && r.plainSpans === 0 && r.bad === 0 && r.pwned === undefined &&
        r.text[0].startsWith("const s = \"<img"),
        "code blocks coloured by Prism's tokens as DOM nodes (JS, Python; an unknown language plain), " +
        `markup inside stays text (${JSON.stringify(r).slice(0, 300)})`);
  await shot(page, "14-code");
  page.off("request", onRequest);
  await page.setRequestInterception(false);
}

(async () => {
  const browser = await h.launch(spec.chromium);
  try {
    const page = await h.openPage(browser);
    await page.goto(spec.main + "/", { waitUntil: "networkidle0" });
    await page.waitForFunction(() => /lm-e2b\.gguf/.test(document.getElementById("model").textContent),
      { timeout: 20000 });
    await sampling(page);
    const kept = await reloadMidAnswer(page);
    await viewLarge(page);
    await continueRegenerateEdit(page, kept);
    await list(page);
    await deleteWhileStreaming(page);
    await exportImport(page);
    await limits(page);
    await crafted(page);
    check(h.unexpectedErrors(page).length === 0 && page.violations.length === 0,
          "no console errors or CSP violations through it all " +
          `(${h.unexpectedErrors(page)} ${page.violations})`);
    await page.close();
  } catch (e) {
    check(false, "the browser session failed: " + (e && e.stack || e));
  } finally {
    await h.close(browser);
  }
  h.done();
})();
