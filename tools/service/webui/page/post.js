// post.js - a POST whose upload can be watched (docs/WEBUI.md "Big attachments"). fetch() says
// nothing while a body of tens of megabytes goes out; XMLHttpRequest reports the bytes sent.
// postWatched() sends with XMLHttpRequest and returns what fetch would: a promise of a Response
// once the headers are in, its body a stream fed as the answer arrives (the page reads the
// server-sent events from it as from fetch's). Failures as fetch gives them: a TypeError when the
// server cannot be reached or the connection is lost, an AbortError when the signal aborts.
"use strict";

(function () {
  function parseHeaders(raw) {
    const h = new Headers();
    for (const line of raw.trim().split(/[\r\n]+/)) {
      const i = line.indexOf(":");
      if (i > 0) {
        try { h.append(line.slice(0, i).trim(), line.slice(i + 1).trim()); } catch (e) { /* skip */ }
      }
    }
    return h;
  }

  // onUpload(sent, total) while the body goes out.
  function postWatched(url, headers, body, signal, onUpload) {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      const enc = new TextEncoder();
      let ctrl = null, seen = 0, answered = false, ended = false;
      const stream = new ReadableStream({ start(c) { ctrl = c; },
                                          cancel() { ended = true; xhr.abort(); } });
      const fail = (err) => {
        if (ended) return;
        ended = true;
        if (answered) ctrl.error(err);
        else reject(err);
      };
      // the new part of the answer into the stream
      const push = () => {
        if (ended) return;
        const t = xhr.responseText;
        if (t.length > seen) {
          ctrl.enqueue(enc.encode(t.slice(seen)));
          seen = t.length;
        }
      };
      xhr.open("POST", url);
      for (const [k, v] of Object.entries(headers)) xhr.setRequestHeader(k, v);
      if (onUpload) {
        xhr.upload.onprogress = (e) => onUpload(e.loaded, e.lengthComputable ? e.total : 0);
      }
      xhr.onreadystatechange = () => {
        if (xhr.readyState >= 2 && !answered && !ended && xhr.status > 0) {
          answered = true;
          const nullBody = [204, 205, 304].includes(xhr.status);
          resolve(new Response(nullBody ? null : stream, { status: xhr.status,
            statusText: xhr.statusText, headers: parseHeaders(xhr.getAllResponseHeaders()) }));
        }
      };
      xhr.onprogress = push;
      xhr.onload = () => {
        push();
        if (!ended) { ended = true; ctrl.close(); }
      };
      xhr.onerror = () => fail(new TypeError("the connection failed"));
      xhr.onabort = () => fail(new DOMException("the request was aborted", "AbortError"));
      if (signal) {
        if (signal.aborted) { fail(new DOMException("the request was aborted", "AbortError")); return; }
        signal.addEventListener("abort", () => xhr.abort(), { once: true });
      }
      xhr.send(body);
    });
  }

  window.postWatched = postWatched;
})();
