// openai_zod.cjs SPEC - the official OpenAI client for Node (npm `openai`) with its zod helpers
// (npm `zod`; both pinned in tests/service/node/package-lock.json) against `g4v serve --lm`, for
// tests/chat/test_chat_structured.py. SPEC (JSON in argv[2]) names the server, an image (a data:
// URI) and the seeds; one JSON object per result on stdout.
//   {"op": "parse"}  chat.completions.parse with zodResponseFormat, for each seed: message.parsed
//                    validated by zod; then chat.completions.stream with the same format: the
//                    streamed content equals the non-streamed one and its final parse passes
//   {"op": "tools"}  a zodFunction tool, tool_choice "required": the calls streamed (deltas
//                    joined by the client's stream helper) equal the non-streamed ones, and
//                    their parsed_arguments pass zod
// A failure of the client is printed as {"error": name, "status": HTTP status, "message"}.
'use strict';
const OpenAI = require('openai');
const {zodResponseFormat, zodFunction} = require('openai/helpers/zod');
const {z} = require('zod');

const Invoice = z.object({
    vendor: z.string().max(24),
    currency: z.enum(['EUR', 'USD', 'GBP']),
    total_cents: z.number().int().min(0).max(1000000),
    lines: z.array(z.object({sku: z.string().max(12), qty: z.number().int().min(1).max(99)})).max(3),
});
const Lookup = z.object({
    product: z.enum(['camera', 'lens', 'tripod']),
    max_results: z.number().int().min(1).max(5),
});

function messages(spec, text) {
    return [{role: 'user', content: [{type: 'image_url', image_url: {url: spec.image}},
                                     {type: 'text', text}]}];
}

async function parse(c, spec) {
    for (const seed of spec.seeds) {
        const req = {model: 'g4v', messages: messages(spec, 'Read this invoice.'), seed,
                     max_tokens: spec.max_tokens ?? 600,
                     response_format: zodResponseFormat(Invoice, 'invoice')};
        const r = await c.chat.completions.parse(req);
        const m = r.choices[0].message;
        const s = c.chat.completions.stream(req);
        const f = await s.finalChatCompletion();
        const sm = f.choices[0].message;
        out({seed, content: m.content, parsed: Invoice.safeParse(m.parsed).success,
             finish_reason: r.choices[0].finish_reason, stream_content: sm.content,
             stream_parsed: Invoice.safeParse(sm.parsed).success});
    }
}

async function tools(c, spec) {
    const tool = zodFunction({name: 'lookup_product', parameters: Lookup,
                              description: 'Finds the product in the photo in the catalogue.'});
    for (const seed of spec.seeds) {
        const req = {model: 'g4v', messages: messages(spec, 'Find this in the catalogue.'), seed,
                     max_tokens: 300, tools: [tool], tool_choice: 'required'};
        const r = await c.chat.completions.parse(req);
        const calls = r.choices[0].message.tool_calls ?? [];
        const f = await c.chat.completions.stream(req).finalChatCompletion();
        const scalls = f.choices[0].message.tool_calls ?? [];
        out({seed, finish_reason: r.choices[0].finish_reason,
             stream_finish_reason: f.choices[0].finish_reason,
             calls: calls.map((t) => [t.function.name, t.function.arguments]),
             stream_calls: scalls.map((t) => [t.function.name, t.function.arguments]),
             parsed: calls.map((t) => Lookup.safeParse(t.function.parsed_arguments).success)});
    }
}

function out(o) {
    process.stdout.write(JSON.stringify(o) + '\n');
}

async function main() {
    const spec = JSON.parse(process.argv[2]);
    const c = new OpenAI({apiKey: spec.key ?? 'none', baseURL: spec.url + '/v1', maxRetries: 0,
                          timeout: 600000});
    try {
        await {parse, tools}[spec.op](c, spec);
    } catch (e) {
        out({error: e.constructor.name, status: e.status ?? null, message: String(e.message)});
    }
}

main();
