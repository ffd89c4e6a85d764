// store.js - the conversations kept in this browser (docs/WEBUI.md "Conversations"): IndexedDB,
// one record per conversation with its turns, the thoughts and figures of each answer, and the
// attachments themselves as Blobs (IndexedDB keeps files; nothing goes to the server). Export and
// import as one JSON file, the attachments in it as data: URIs.
//
// A record: {id, title, created, updated, turns}; a turn is
//   {role: "user", text, attachments: [{name, kind, type, tokens, blob}]} or
//   {role: "assistant", content, reasoning, finish, usage, g4v, stopped, partial}
// (partial: the page went away while the answer was being written; what came is kept).
"use strict";

(function () {
  const DB = "g4v-chat";
  const STORE = "conversations";
  const FORMAT = "g4v-chat-conversations";
  let dbPromise = null;

  function open() {
    if (!dbPromise) {
      dbPromise = new Promise((resolve, reject) => {
        if (!window.indexedDB) { reject(new Error("this browser keeps no IndexedDB")); return; }
        const r = indexedDB.open(DB, 1);
        r.onupgradeneeded = () => {
          const s = r.result.createObjectStore(STORE, { keyPath: "id" });
          s.createIndex("updated", "updated");
        };
        r.onsuccess = () => resolve(r.result);
        r.onerror = () => reject(r.error || new Error("IndexedDB cannot be opened"));
      });
      dbPromise.catch(() => { dbPromise = null; });
    }
    return dbPromise;
  }

  async function tx(mode, fn) {
    const db = await open();
    return new Promise((resolve, reject) => {
      const t = db.transaction(STORE, mode);
      let out;
      const req = fn(t.objectStore(STORE));
      if (req) req.onsuccess = () => { out = req.result; };
      t.oncomplete = () => resolve(out);
      t.onerror = () => reject(t.error);
      t.onabort = () => reject(t.error || new Error("aborted"));
    });
  }

  function newId() {
    const b = crypto.getRandomValues(new Uint8Array(9));
    return "c" + Date.now().toString(36) + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  }

  // What is kept of a turn: no object URLs, no data: URIs (made again from the blob when sent).
  function keepTurn(t) {
    if (t.role === "user") {
      return { role: "user", text: t.text || "", attachments: (t.attachments || []).map((a) => ({
        name: a.name, kind: a.kind, type: a.type, tokens: a.tokens, blob: a.blob || a.file })) };
    }
    const o = { role: "assistant", content: t.content || "", reasoning: t.reasoning || "" };
    for (const k of ["finish", "usage", "g4v", "stopped", "partial", "interrupted"]) {
      if (t[k] !== undefined && t[k] !== null && t[k] !== false) o[k] = t[k];
    }
    return o;
  }

  const put = (c) => tx("readwrite", (s) => s.put({ id: c.id, title: c.title, created: c.created,
    updated: c.updated, turns: c.turns.map(keepTurn) }));
  const get = (id) => tx("readonly", (s) => s.get(id));
  const remove = (id) => tx("readwrite", (s) => s.delete(id));
  // id, title and dates of every conversation, the latest first (the turns stay on disk)
  async function list() {
    const all = [];
    await tx("readonly", (s) => {
      const r = s.index("updated").openCursor(null, "prev");
      r.onsuccess = () => {
        const c = r.result;
        if (!c) return;
        all.push({ id: c.value.id, title: c.value.title, updated: c.value.updated,
                   turns: c.value.turns.length });
        c.continue();
      };
      return null;
    });
    return all;
  }

  function blobToDataUri(blob) {
    return new Promise((resolve, reject) => {
      const r = new FileReader();
      r.onload = () => resolve(String(r.result));
      r.onerror = () => reject(r.error);
      r.readAsDataURL(blob);
    });
  }

  // Every conversation as one JSON text.
  async function exportAll() {
    const ids = (await list()).map((c) => c.id);
    const out = [];
    for (const id of ids) {
      const c = await get(id);
      if (!c) continue;
      const turns = [];
      for (const t of c.turns) {
        if (t.role !== "user") { turns.push(t); continue; }
        const atts = [];
        for (const a of t.attachments) {
          atts.push({ name: a.name, kind: a.kind, type: a.type, tokens: a.tokens,
                      data: a.blob ? await blobToDataUri(a.blob) : "" });
        }
        turns.push({ role: "user", text: t.text, attachments: atts });
      }
      out.push({ title: c.title, created: c.created, updated: c.updated, turns: turns });
    }
    return JSON.stringify({ format: FORMAT, version: 1, conversations: out });
  }

  function dataUriToBlob(uri, type) {
    const m = /^data:([^;,]*)(;base64)?,(.*)$/s.exec(uri || "");
    if (!m) throw new Error("an attachment without its data");
    const raw = m[2] ? atob(m[3]) : decodeURIComponent(m[3]);
    const bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    return new Blob([bytes], { type: type || m[1] || "application/octet-stream" });
  }

  const str = (v, max) => (typeof v === "string" ? v : "").slice(0, max || 1e8);

  // A JSON text of exportAll's form into new conversations (new ids: nothing kept is replaced).
  // Only the fields of a record are taken, each checked for its type; returns how many.
  async function importText(text) {
    let j;
    try { j = JSON.parse(text); } catch (e) { throw new Error("it is not JSON"); }
    if (!j || j.format !== FORMAT || !Array.isArray(j.conversations)) {
      throw new Error("it is not a file of conversations exported by this page");
    }
    let n = 0;
    for (const c of j.conversations) {
      if (!c || !Array.isArray(c.turns)) throw new Error("conversation " + (n + 1) + " has no turns");
      const turns = c.turns.map((t) => {
        if (t && t.role === "user") {
          return { role: "user", text: str(t.text), attachments: (Array.isArray(t.attachments)
            ? t.attachments : []).map((a) => ({
            name: str(a.name, 300) || "attachment", kind: a.kind === "video" ? "video" : "image",
            type: str(a.type, 100), tokens: Number.isInteger(a.tokens) ? a.tokens : 280,
            blob: dataUriToBlob(a.data, str(a.type, 100)) })) };
        }
        if (t && t.role === "assistant") {
          return { role: "assistant", content: str(t.content), reasoning: str(t.reasoning),
            finish: str(t.finish, 40), stopped: t.stopped === true, partial: t.partial === true,
            usage: t.usage && typeof t.usage === "object" ? t.usage : undefined,
            g4v: t.g4v && typeof t.g4v === "object" ? t.g4v : undefined };
        }
        throw new Error("conversation " + (n + 1) + " has a turn that is neither a user's nor an answer");
      });
      const now = Date.now();
      await put({ id: newId(), title: str(c.title, 200) || "Imported conversation",
                  created: Number(c.created) || now, updated: Number(c.updated) || now,
                  turns: turns });
      n++;
    }
    return n;
  }

  window.ChatStore = { open, put, get, remove, list, newId, exportAll, importText };
})();
