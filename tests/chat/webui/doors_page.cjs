// doors_page.cjs SPEC_JSON - the doors of g4v serve (tools/service/core/doors.c) against real web
// pages of other origins in Chromium (headless, puppeteer-core). Run by
// tests/chat/test_chat_doors.py, which starts the servers and a second site, and passes:
//   {chromium, g, a, key, other, other2, gport}
// g: a keyless server (the default); a: one with --api-key KEY --allowed-origin OTHER;
// other: the origin of a page the test serves (http://127.0.0.1:PORT2), other2 the same server
// under another name (http://localhost:PORT2: another origin). evil.example is mapped to
// 127.0.0.1 in the browser, as a DNS-rebinding attacker's name resolves.
// Prints one JSON line per check ({check, what}) and {done: N} at the end.
"use strict";

const http = require("http");
const h = require("./harness.cjs");
const { check } = h;

const spec = JSON.parse(process.argv[2]);
const CHAT = { messages: [{ role: "user", content: "Say hi." }], max_tokens: 3, seed: 1 };

// The server's /metrics read from node (no Origin header: not a browser), with the key for a.
function metrics(url) {
  const headers = url === spec.a ? { Authorization: "Bearer " + spec.key } : {};
  return new Promise((resolve, reject) => {
    http.get(url + "/metrics", { headers: headers }, (res) => {
      let t = "";
      res.on("data", (d) => { t += d; });
      res.on("end", () => {
        const out = {};
        for (const line of t.split("\n")) {
          const m = line.match(/^(\S+) (\S+)$/);
          if (m) out[m[1]] = parseFloat(m[2]);
        }
        resolve(out);
      });
    }).on("error", reject);
  });
}
const code = (m, c) => m[`g4v_http_requests_total{code="${c}"}`] || 0;
const chats = (m) => m.g4v_chat_requests_total || 0;

// What happened to the server since `before`: chats answered, 403s, 415s. An answer is counted
// just after it is sent, and a form's answer loads in its frame unseen: so this waits (up to 10 s)
// for the 403s expected, then a moment more for anything else to show.
async function delta(url, before, want403) {
  const end = Date.now() + 10000;
  let d;
  for (;;) {
    const now = await metrics(url);
    d = { chats: chats(now) - chats(before), f403: code(now, 403) - code(before, 403),
          f415: code(now, 415) - code(before, 415), now: now };
    if (d.f403 >= want403 || Date.now() > end) break;
    await h.sleep(50);
  }
  await h.sleep(200);
  const now = await metrics(url);
  return { chats: chats(now) - chats(before), f403: code(now, 403) - code(before, 403),
           f415: code(now, 415) - code(before, 415), now: now };
}

// A form on the page, submitted into a hidden iframe (a form's POST is a navigation: the page
// cannot read its answer, the server would still act on it; delta() waits for it).
async function submitForm(page, action, enctype) {
  await page.evaluate((action, enctype) => new Promise((resolve) => {
    const f = document.createElement("iframe");
    f.name = "sink" + Math.random();
    document.body.appendChild(f);
    const form = document.createElement("form");
    form.method = "POST";
    form.action = action;
    form.enctype = enctype;
    form.target = f.name;
    const i = document.createElement("input");
    i.name = '{"messages":[{"role":"user","content":"hi"}],"x":"';
    i.value = '"}';
    form.appendChild(i);
    document.body.appendChild(form);
    form.submit();
    resolve();
  }), action, enctype);
}

async function attacks(browser) {
  const page = await h.openPage(browser);
  await page.goto(spec.other + "/", { waitUntil: "load" });
  const g = spec.g;
  // the attack of issue 49: a no-cors POST of a chat as text/plain
  let before = await metrics(g);
  const r1 = await page.evaluate(async (g, body) => {
    const r = await fetch(g + "/v1/chat/completions", { method: "POST", mode: "no-cors",
      headers: { "Content-Type": "text/plain" }, body: JSON.stringify(body) });
    return r.type;
  }, g, CHAT);
  let d = await delta(g, before, 1);
  check(r1 === "opaque" && d.chats === 0 && d.f403 === 1,
        "a page of another site: its no-cors text/plain POST of a chat is refused, nothing " +
        `answered (${r1}; chats +${d.chats}, 403 +${d.f403})`);
  // reading the API: refused, and the browser does not hand over anything
  before = d.now;
  const r2 = await page.evaluate(async (g) => {
    try { await fetch(g + "/v1/models"); return "read"; } catch (e) { return e.name; }
  }, g);
  d = await delta(g, before, 1);
  check(r2 === "TypeError" && d.f403 === 1,
        `a page of another site cannot read /v1/models (${r2}; 403 +${d.f403})`);
  // a JSON POST: its preflight is refused, the POST never sent
  before = d.now;
  const r3 = await page.evaluate(async (g, body) => {
    try {
      await fetch(g + "/v1/chat/completions", { method: "POST",
        headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      return "sent";
    } catch (e) { return e.name; }
  }, g, CHAT);
  d = await delta(g, before, 1);
  check(r3 === "TypeError" && d.chats === 0 && d.f403 === 1,
        `a JSON POST from another site: the preflight is refused (${r3}; chats +${d.chats}, ` +
        `403 +${d.f403})`);
  // forms, as text/plain and as the default type
  before = d.now;
  await submitForm(page, g + "/v1/chat/completions", "text/plain");
  await submitForm(page, g + "/v1/chat/completions", "application/x-www-form-urlencoded");
  await submitForm(page, g + "/v1/encode", "multipart/form-data");
  d = await delta(g, before, 3);
  check(d.chats === 0 && d.f403 === 3,
        `three form POSTs from another site: refused (chats +${d.chats}, 403 +${d.f403})`);
  check(h.unexpectedErrors(page).every((t) => /CORS|Failed to fetch|ERR_FAILED|403/.test(t)),
        `the attacker page saw only refusals (${h.unexpectedErrors(page)})`);
  await page.close();
}

async function rebinding(browser) {
  const page = await h.openPage(browser);
  const base = "http://evil.example:" + spec.gport;
  let res = await page.goto(base + "/", { waitUntil: "load" });
  const text = await page.evaluate(() => document.body.textContent);
  check(res.status() === 421 && !/g4v chat/.test(text),
        `a page under a rebound name (${base}/): 421, no chat page (${res.status()})`);
  res = await page.goto(base + "/v1/models", { waitUntil: "load" });
  const body = await res.text();
  check(res.status() === 421 && !/lm-e2b|vision/.test(body),
        `${base}/v1/models: 421, nothing about the models (${res.status()} ${body.slice(0, 80)})`);
  const r = await page.evaluate(async () => {
    const x = await fetch("/v1/models");
    return x.status;
  });
  check(r === 421, `the rebound page's own fetch of /v1/models: 421 (${r})`);
  await page.close();
}

async function ownPage(browser) {
  // the chat page itself, under localhost (its Origin then names localhost)
  const page = await h.openPage(browser);
  const url = "http://localhost:" + spec.gport + "/";
  const res = await page.goto(url, { waitUntil: "networkidle0" });
  await page.waitForFunction(() => /lm-e2b\.gguf/.test(document.getElementById("model").textContent),
    { timeout: 20000 });
  check(res.status() === 200, `the chat page at ${url} loads and names the model`);
  const before = await metrics(spec.g);
  await h.setField(page, "max-tokens", 4);
  await h.setField(page, "seed", 1);
  await page.type("#prompt", "Hello?");
  await h.sendAndWait(page);
  const e = await h.lastEntry(page);
  const d = await delta(spec.g, before, 0);
  check(/assistant/.test(e.cls) && e.figures.finish_reason && d.chats === 1,
        `the chat page (same origin) still chats (${e.cls} ${JSON.stringify(e.figures)})`);
  check(h.unexpectedErrors(page).length === 0 && page.violations.length === 0,
        `no console errors or CSP violations on the page (${h.unexpectedErrors(page)})`);
  await page.close();
}

async function allowed(browser) {
  const page = await h.openPage(browser);
  await page.goto(spec.other + "/", { waitUntil: "load" });
  const r = await page.evaluate(async (a, key, body) => {
    const auth = { Authorization: "Bearer " + key };
    const out = {};
    let x = await fetch(a + "/v1/models", { headers: auth });
    out.models = x.status + " " + (await x.json()).data[0].id;
    x = await fetch(a + "/v1/models");
    out.nokey = x.status;
    x = await fetch(a + "/v1/chat/completions", { method: "POST",
      headers: { ...auth, "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const j = await x.json();
    out.chat = x.status + " " + (j.choices ? j.choices[0].finish_reason : JSON.stringify(j));
    x = await fetch(a + "/v1/chat/completions", { method: "POST",
      headers: { ...auth, "Content-Type": "application/json" },
      body: JSON.stringify({ ...body, stream: true }) });
    const t = await x.text();
    out.stream = x.status + " " + (t.includes("data: [DONE]") ? "[DONE]" : t.slice(0, 80));
    return out;
  }, spec.a, spec.key, CHAT);
  check(r.models === "200 lm-e2b.gguf" && r.nokey === 401 && r.chat === "200 length" &&
        r.stream === "200 [DONE]",
        "--allowed-origin: that site's page reads /v1/models, gets a readable 401 without the " +
        `key, and chats, streamed and not (${JSON.stringify(r)})`);
  await page.close();
  // the same server from another origin (the same site's server under another name)
  const other = await h.openPage(browser);
  await other.goto(spec.other2 + "/", { waitUntil: "load" });
  const before = await metrics(spec.a);
  const r2 = await other.evaluate(async (a, key) => {
    try {
      await fetch(a + "/v1/models", { headers: { Authorization: "Bearer " + key } });
      return "read";
    } catch (e) { return e.name; }
  }, spec.a, spec.key);
  const d = await delta(spec.a, before, 1);
  check(r2 === "TypeError" && d.f403 === 1,
        `an origin not allowed cannot use that server even with the key (${r2}; 403 +${d.f403})`);
  await other.close();
}

(async () => {
  const browser = await h.launch(spec.chromium, ["--host-resolver-rules=MAP evil.example 127.0.0.1"]);
  try {
    await attacks(browser);
    await rebinding(browser);
    await ownPage(browser);
    await allowed(browser);
  } catch (e) {
    check(false, "the browser session failed: " + (e && e.stack || e));
  } finally {
    await h.close(browser);
  }
  h.done();
})();
