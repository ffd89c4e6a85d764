// openai_client.cjs - the official OpenAI client for Node (npm `openai`) against `g4v serve`, for
// tests/service/test_serve_openai.py and test_serve_chat.py. One JSON spec in argv[2] says what
// to do; one JSON object per result is printed on stdout, one line each.
//   {"op": "info", "url", "key"}      GET /v1/info through the client (the encode server)
//   {"op": "models", "url", "key"}    client.models.list()
//   {"op": "chat", "url", "key", "request": {...}}          chat.completions.create
//   {"op": "stream", "url", "key", "request": {...}}        the same with stream: true
//   {"op": "abort", "url", "key", "request": {...}, "after": N}  a stream aborted with an
//       AbortController after N chunks, then the same request again without stream
// A failure of the client is printed as {"error": name, "status": HTTP status, "message"}.
// NODE_PATH names the node_modules scripts/install-node-client.sh installed.
'use strict';
const OpenAI = require('openai');

function client(spec) {
    // no retries: a test must see the first answer, a 429 included
    return new OpenAI({apiKey: spec.key, baseURL: spec.url + '/v1', maxRetries: 0, timeout: 600000});
}

function failure(e) {
    return {error: e.constructor.name, status: e.status ?? null, message: String(e.message)};
}

async function stream(c, req, after, signal) {
    const s = await c.chat.completions.create({...req, stream: true}, {signal});
    let text = '', chunks = 0, finish = null, usage = null, id = null;
    for await (const ch of s) {
        chunks++;
        id = id ?? ch.id;
        for (const choice of ch.choices ?? []) {
            text += choice.delta?.content ?? '';
            finish = choice.finish_reason ?? finish;
        }
        if (ch.usage) usage = ch.usage;
        if (after && chunks >= after) return {text, chunks, aborted: true};
    }
    return {text, chunks, finish_reason: finish, usage, id};
}

async function main() {
    const spec = JSON.parse(process.argv[2]);
    const c = client(spec);
    const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
    try {
        if (spec.op === 'info') {
            out({info: await c.get('/info')});
        } else if (spec.op === 'models') {
            const ids = [];
            for await (const m of c.models.list()) ids.push(m);
            out({models: ids});
        } else if (spec.op === 'chat') {
            const r = await c.chat.completions.create({...spec.request, stream: false});
            out({text: r.choices[0].message.content, finish_reason: r.choices[0].finish_reason,
                 usage: r.usage, object: r.object, id: r.id, model: r.model});
        } else if (spec.op === 'stream') {
            out(await stream(c, spec.request, 0));
        } else if (spec.op === 'abort') {
            const ac = new AbortController();
            const r = await stream(c, spec.request, spec.after || 1, ac.signal);
            ac.abort(); // the client hangs up mid-stream
            out(r);
            const again = await c.chat.completions.create({...spec.request, stream: false});
            out({text: again.choices[0].message.content, after_abort: true});
        } else {
            throw new Error('unknown op ' + spec.op);
        }
    } catch (e) {
        out(failure(e));
    }
}

main();
