// harness.cjs - what tests/chat/webui/chat_page.cjs needs around puppeteer-core: Debian's
// chromium launched headless with a throw-away profile, checks reported as JSON lines for
// tests/chat/test_chat_webui.py, the page's console and CSP violations collected, accessible
// names as Chromium computes them, and waits on the chat page's state.
"use strict";

const fs = require("fs");
const os = require("os");
const path = require("path");
const puppeteer = require("puppeteer-core");

// One JSON line per check; the Python side turns each into a pyutil.check.
let checks = 0;
function check(ok, what) {
  checks++;
  process.stdout.write(JSON.stringify({ check: !!ok, what: String(what) }) + "\n");
  return !!ok;
}
function done() {
  process.stdout.write(JSON.stringify({ done: checks }) + "\n");
}

// extraArgs: more command-line switches (test_chat_doors.py maps a made-up domain to 127.0.0.1
// with --host-resolver-rules, as a DNS-rebinding attacker's name would resolve)
async function launch(chromium, extraArgs) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "g4v-webui-chromium-"));
  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    // root in a container has no user namespace for the sandbox; nothing here may phone home
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      "--user-data-dir=" + profile, ...(extraArgs || [])],
  });
  browser.profile = profile;
  return browser;
}

async function close(browser) {
  await browser.close();
  fs.rmSync(browser.profile, { recursive: true, force: true });
}

// A page with everything it reports collected: console messages of type error, uncaught
// exceptions, CSP violations (an event the page's own code would not see: registered before any
// page script runs), and the chat requests it sends (their JSON bodies).
async function openPage(browser, width, height) {
  const page = await browser.newPage();
  await page.setViewport({ width: width || 1100, height: height || 800 });
  page.errors = [];
  page.violations = [];
  page.chats = [];
  page.on("console", (m) => {
    if (m.type() === "error") page.errors.push(m.text());
  });
  page.on("pageerror", (e) => page.errors.push("uncaught: " + e.message));
  await page.exposeFunction("__g4vViolation", (v) => page.violations.push(v));
  await page.evaluateOnNewDocument(() => {
    document.addEventListener("securitypolicyviolation", (e) =>
      window.__g4vViolation(e.violatedDirective + " " + (e.blockedURI || "inline")));
  });
  page.on("request", (r) => {
    if (r.method() === "POST" && r.url().endsWith("/v1/chat/completions")) {
      let body = null;
      try { body = JSON.parse(r.postData() || "null"); } catch (e) { body = null; }
      page.chats.push(body);
    }
  });
  return page;
}

// The errors that are not the browser's log of an HTTP error status the test asked for.
function unexpectedErrors(page) {
  return page.errors.filter((t) =>
    !/Failed to load resource: the server responded with a status/.test(t) &&
    !/Failed to load resource: net::ERR_CONNECTION_REFUSED/.test(t));
}

// Chromium's accessible name of every visible control (and of the hidden file input), from its
// accessibility tree: a <label>, aria-label or the text of a button, as a screen reader gets it.
async function unnamedControls(page) {
  const handles = await page.$$("button, input, select, textarea, summary");
  const unnamed = [];
  let count = 0;
  for (const h of handles) {
    const info = await h.evaluate((e) => ({
      id: e.id || e.className || e.tagName,
      // checkVisibility: not display:none, not inside a closed <details>
      visible: e.checkVisibility() || e.type === "file",
    }));
    if (!info.visible) continue;
    count++;
    const node = await page.accessibility.snapshot({ root: h, interestingOnly: false });
    if (!node || !String(node.name || "").trim()) unnamed.push(info.id);
  }
  return { count: count, unnamed: unnamed };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The number of entries in the conversation (user, answer, error messages).
async function logCount(page) {
  return page.$$eval("#log > .msg", (l) => l.length);
}

// Wait until the page has added entries past `before` and is no longer answering.
async function settled(page, before, timeoutMs) {
  await page.waitForFunction((n) => document.querySelectorAll("#log > .msg").length > n &&
    !document.body.classList.contains("busy"), { timeout: timeoutMs || 120000, polling: 100 }, before);
}

// Send what the composer holds by pressing Enter in it; wait for the answer or the error.
async function sendAndWait(page, timeoutMs) {
  const before = await logCount(page);
  await page.focus("#prompt");
  await page.keyboard.press("Enter");
  await settled(page, before, timeoutMs);
}

// The last entry of the conversation: kind, text, figures.
async function lastEntry(page) {
  return page.evaluate(() => {
    const all = document.querySelectorAll("#log > .msg");
    const m = all[all.length - 1];
    if (!m) return null;
    const fig = {};
    for (const li of m.querySelectorAll(".figures li")) {
      fig[li.dataset.figure] = li.querySelector(".v").textContent;
    }
    const c = m.querySelector(".content");
    const t = m.querySelector(".thought-body");
    return { cls: m.className, text: m.textContent, content: c ? c.textContent : null,
             thought: t ? t.textContent : null, figures: fig };
  });
}

async function composer(page) {
  return page.evaluate(() => ({
    text: document.getElementById("prompt").value,
    names: Array.from(document.querySelectorAll("#attachments .name")).map((e) => e.textContent),
    budgets: Array.from(document.querySelectorAll("#attachments select")).map((e) => e.value),
  }));
}

async function setField(page, id, value) {
  await page.$eval("#" + id, (e, v) => { e.value = v; }, String(value));
}

// Files into the page as a paste or a drop would bring them (a DataTransfer with File objects).
async function dataTransferEvent(page, kind, files) {
  await page.evaluate((kind, files) => {
    const dt = new DataTransfer();
    for (const f of files) {
      const bytes = Uint8Array.from(atob(f.b64), (c) => c.charCodeAt(0));
      dt.items.add(new File([bytes], f.name, { type: f.type }));
    }
    if (kind === "paste") {
      document.getElementById("prompt").dispatchEvent(
        new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
    } else {
      const main = document.getElementById("main");
      const init = { dataTransfer: dt, bubbles: true, cancelable: true };
      main.dispatchEvent(new DragEvent("dragover", init));
      main.dispatchEvent(new DragEvent("drop", init));
    }
  }, kind, files);
}

function fileSpec(dir, name, type, as) {
  return { b64: fs.readFileSync(path.join(dir, name)).toString("base64"), name: as || name,
           type: type };
}

function shooter(dir) {
  return async (page, name) => {
    if (dir) await page.screenshot({ path: path.join(dir, name + ".png") });
  };
}

module.exports = { check, done, launch, close, openPage, unexpectedErrors, unnamedControls,
  sleep, logCount, settled, sendAndWait, lastEntry, composer, setField, dataTransferEvent,
  fileSpec, shooter };
