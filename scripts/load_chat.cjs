// load_chat.cjs - `make load-chat`'s client: C concurrent streaming chats through the official
// OpenAI client for Node for S seconds against a `g4v serve --lm`, each with one image as a data:
// URI, then one line: requests/s, time to first token p50/p99, generated tokens/s, errors.
//   node load_chat.cjs URL KEY MODEL IMAGE.bmp CONCURRENCY SECONDS MAX_TOKENS same|distinct
// distinct: each request changes one pixel of the BMP, so every image is encoded (no cache hit);
// same: after the first request the server takes the image's soft tokens from its cache.
// Exit 1 if any request failed. NODE_PATH names scripts/install-node-client.sh's node_modules.
'use strict';
const fs = require('fs');
const OpenAI = require('openai');

const [url, key, model, imagePath, conc, secs, maxTok, mode] = process.argv.slice(2);
const bmp = fs.readFileSync(imagePath);
const pixels = bmp.readUInt32LE(10); // BMP: offset of the pixel array
const client = new OpenAI({apiKey: key, baseURL: url + '/v1', maxRetries: 0, timeout: 600000});

function image(n) {
    const b = Buffer.from(bmp);
    if (mode === 'distinct') b.writeUInt32LE(n, pixels); // the first pixel (and a bit): a new image
    return 'data:image/bmp;base64,' + b.toString('base64');
}

const ttft = [], errors = {};
let done = 0, tokens = 0, next = 0;

async function one() {
    const t0 = performance.now();
    let first = null;
    const s = await client.chat.completions.create({
        model, stream: true, max_tokens: Number(maxTok), temperature: 0.8, seed: next,
        stream_options: {include_usage: true},
        messages: [{role: 'user', content: [{type: 'image_url', image_url: {url: image(next++)}},
                                            {type: 'text', text: 'Describe the image.'}]}],
    });
    for await (const ch of s) {
        if (first === null && ch.choices?.[0]?.delta?.content) first = performance.now() - t0;
        if (ch.usage) tokens += ch.usage.completion_tokens;
    }
    ttft.push(first ?? performance.now() - t0);
    done++;
}

async function worker(until) {
    while (performance.now() < until) {
        try {
            await one();
        } catch (e) {
            const k = e.status ? String(e.status) : e.constructor.name;
            errors[k] = (errors[k] || 0) + 1;
        }
    }
}

async function main() {
    const t0 = performance.now(), until = t0 + Number(secs) * 1000;
    await Promise.all(Array.from({length: Number(conc)}, () => worker(until)));
    const dt = (performance.now() - t0) / 1000;
    ttft.sort((a, b) => a - b);
    const pct = (p) => ttft.length ? ttft[Math.min(ttft.length - 1, Math.floor(ttft.length * p))] : NaN;
    const nerr = Object.values(errors).reduce((a, b) => a + b, 0);
    console.log(`load-chat: ${conc} streams, images ${mode}: ${done} chats in ${dt.toFixed(1)} s = ` +
                `${(done / dt).toFixed(2)} req/s; time to first token p50 ${pct(0.5).toFixed(0)} ms, ` +
                `p99 ${pct(0.99).toFixed(0)} ms; ${(tokens / dt).toFixed(1)} generated tokens/s; ` +
                `errors ${nerr}${nerr ? ' ' + JSON.stringify(errors) : ''}`);
    process.exit(nerr ? 1 : 0);
}

main();
