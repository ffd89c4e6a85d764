/* service_options.c - `g4v serve`'s options: their defaults and their option table
 * (common/options.h), from which argv is parsed into a g4v_service_options and --help is
 * printed; then the rules between options. Kept with the service (not the CLI) because the
 * options are the service's settings: whoever runs it (the CLI, a future front end) parses the
 * same way. */
#include "math_option.h"
#include "model_store.h"
#include "options.h"
#include "core/core.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define O(member) FE_FIELD(g4v_service_options, member)

static const fe_opt rows[] = {
    {.name = "model", .kind = FE_OPT_STRING, O(model), .arg = "DIR",
     .help = "checkpoint directory or mmproj .gguf file, or a repo id in the Hugging Face cache "
             "(google/gemma-4-E4B-it; `g4v models` lists them) (required, unless --ollama "
             "gives it)"},
    MS_OPT_REVISION(g4v_service_options, revision),
    {.name = "host", .kind = FE_OPT_STRING, O(host), .arg = "ADDR",
     .help = "address to listen on (default 127.0.0.1: this machine only); one other machines "
             "can reach needs an API key (no TLS: put a TLS proxy in front)"},
    {.name = "port", .kind = FE_OPT_INT, O(port), .lo = 0, .hi = 65535, .arg = "N",
     .help = "TCP port (default 8080; 0 picks a free one, printed at start)"},
    {.name = "contexts", .kind = FE_OPT_INT, O(contexts), .lo = 1, .hi = 256, .arg = "K",
     .help = "encodes run at once, one g4v context each (default 1)"},
    FE_OPT_THREADS(g4v_service_options, threads, 1,
                   "compute threads per context (default: CPUs / K, at least 1)"),
    {.name = "queue", .kind = FE_OPT_INT, O(queue), .lo = 0, .hi = 100000, .arg = "Q",
     .help = "complete requests that may wait for a context; more are answered 429 at once "
             "(default 16)"},
    {.name = "batch", .kind = FE_OPT_INT, O(batch), .lo = 1, .hi = SVC_MAX_BATCH, .arg = "B",
     .help = "a free context takes up to B waiting requests and encodes them together "
             "(g4v_encode_batch: the same bytes as one at a time) (default 1)"},
    {.name = "http-threads", .kind = FE_OPT_INT, O(http_threads), .lo = 1, .hi = 256, .arg = "N",
     .help = "threads parsing HTTP (default 2)"},
    {.name = "max-body-bytes", .kind = FE_OPT_UINT, O(max_body), .lo = 1, .hi = 1ll << 40,
     .arg = "N", .help = "largest request body accepted, else 413 (default 67108864)"},
    {.name = "max-header-bytes", .kind = FE_OPT_INT, O(max_header_bytes), .lo = 4096,
     .hi = 1 << 24, .arg = "N",
     .help = "request line and headers: memory per connection for them, else 431 (default "
             "32768)"},
    {.name = "max-connections", .kind = FE_OPT_INT, O(max_connections), .lo = 1, .hi = 100000,
     .arg = "N",
     .help = "connections open at once; more wait until one closes (default 1000)"},
    {.name = "timeout", .kind = FE_OPT_INT, O(timeout_s), .lo = 1, .hi = 86400, .arg = "S",
     .help = "close a connection idle for S seconds, e.g. a client that stalls mid-request "
             "(default 30)"},
    {.name = "drain-seconds", .kind = FE_OPT_INT, O(drain_s), .lo = 0, .hi = 86400, .arg = "S",
     .help = "on SIGTERM, wait at most S seconds for request bodies still arriving; received "
             "requests are always finished (default 30)"},
    FE_OPT_TOKENS(g4v_service_options, tokens,
                  "default budget, one of " SVC_BUDGETS " (default "
                  FE_STR(G4V_DEFAULT_BUDGET) ")"),
    FE_OPT_MATH_ROWS(g4v_service_options, math, math_opt),
    {.name = "no-exif", .kind = FE_OPT_FLAG, O(no_exif), .lo = 1,
     .help = "ignore EXIF orientation by default"},
    {.name = "in-place-weights", .kind = FE_OPT_FLAG, O(in_place_weights), .lo = 1,
     .help = "read the BF16 weights where they lie in the checkpoint instead of packing them at "
             "load, as a server does by default (the same bits either way; packed encodes "
             "faster and costs the weights' size in memory; /v1/info says which)"},
    FE_OPT_RESIZE(g4v_service_options, resize,
                  "default resize (pillow: Pillow's BICUBIC, the default; torchvision: torch's "
                  "antialiased bicubic, as transformers' torchvision backend); ?resize= "
                  "overrides it"),
    {.name = "cache", .kind = FE_OPT_STRING, O(cache), .arg = "DIR",
     .help = "feature cache shared with `g4v encode --cache` and other servers (identical bytes "
             "on a hit)"},
    {.name = "cache-max-bytes", .kind = FE_OPT_UINT, O(cache_max_bytes), .lo = 1,
     .hi = 1ll << 62, .arg = "N",
     .help = "cache size bound, LRU eviction (default 1073741824)"},
    {.kind = FE_OPT_TEXT,
     .help = "\n"
             "Chat (docs/CHAT_API.md), with --lm: the OpenAI-compatible API\n"
             "  POST /v1/chat/completions  messages with text, image_url and video_url parts\n"
             "                        (data: URIs; file paths only under --allow-files), stream,\n"
             "                        max_tokens, temperature, top_p, top_k, min_p, seed,\n"
             "                        stop;\n"
             "                        \"g4v\": {\"tokens\": N}\n"
             "  GET  /v1/models       the language model's name\n"
             "  GET  /                the chat page (docs/WEBUI.md)\n"},
    {.name = "lm", .kind = FE_OPT_STRING, O(lm), .arg = "FILE",
     .help = "Gemma 4 text model (GGUF, or a GGUF repo id in the Hugging Face cache or LM "
             "Studio) run by libllama; --model is its vision model"},
    MS_OPT_OLLAMA(g4v_service_options, ollama),
    {.name = "lm-slots", .kind = FE_OPT_INT, O(lm_slots), .lo = 1, .hi = 64, .arg = "K",
     .help = "conversations answered at once, a sequence each of one libllama context whose "
             "decode calls carry all of their next tokens together (default 1)"},
    {.name = "lm-threads", .kind = FE_OPT_INT, O(lm_threads), .lo = 1, .hi = FE_OPT_THREADS_MAX,
     .arg = "N",
     .help = "threads of the text model's decode calls, shared by the slots (default: one per "
             "CPU)"},
    {.name = "lm-ctx", .kind = FE_OPT_INT, O(lm_ctx), .lo = 256, .hi = 1 << 20, .arg = "N",
     .help = "context tokens per slot: the longest conversation, prompt and answer (default "
             "8192)"},
    {.name = "lm-step-tokens", .kind = FE_OPT_INT, O(lm_step_tokens), .lo = 16, .hi = 8192,
     .arg = "N",
     .help = "prompt tokens (or image rows) per decode call while other slots answer, beside "
             "their next tokens: smaller keeps their streams smooth while a long prompt is read, "
             "larger reads it faster (default 64; with no slot answering, a call takes up to "
             "1120)"},
    {.name = "chat-template", .kind = FE_OPT_STRING, O(chat_template), .arg = "FILE",
     .help = "a Jinja chat template instead of the model's own (the text GGUF's "
             "tokenizer.chat_template, else chat_template.jinja beside a checkpoint "
             "directory); 'builtin': g4v's own Gemma 4 format"},
    {.name = "lm-no-batching", .kind = FE_OPT_FLAG, O(lm_no_batching), .lo = 1,
     .help = "one slot's tokens per decode call: each answer then is what the slot alone "
             "answers, bit for bit, whatever the others do, at a lower total speed (default: "
             "every slot's next step in one call, docs/CHAT_API.md §3)"},
    {.name = "no-prompt-reuse", .kind = FE_OPT_FLAG, O(no_prompt_reuse), .lo = 1,
     .help = "decode every request's whole prompt: a slot forgets its conversation after each "
             "request (default: the prefix a slot holds is reused, docs/CHAT.md \"Prompt "
             "reuse\")"},
    {.name = "no-webui", .kind = FE_OPT_FLAG, O(no_webui), .lo = 1,
     .help = "no chat page at GET / (default: with --lm, GET / is a page to chat about images "
             "and videos in a browser, docs/WEBUI.md)"},
    {.name = "prompt-cache-ram", .kind = FE_OPT_UINT, O(prompt_cache_ram), .lo = 0,
     .hi = 1ll << 50, .arg = "BYTES",
     .help = "prompt cache in RAM: the states of conversations a slot had to let go, resumed "
             "without prefill when they come back; 0 turns it off (default 2147483648)"},
    {.name = "prompt-cache-disk", .kind = FE_OPT_UINT, O(prompt_cache_disk), .lo = 0,
     .hi = 1ll << 60, .arg = "BYTES",
     .help = "with --cache: the prompt cache on disk too (CACHE/prompts/), kept across restarts; "
             "0 turns it off (default 8589934592)"},
    {.name = "max-queue", .kind = FE_OPT_INT, O(max_queue), .lo = 0, .hi = 100000, .arg = "Q",
     .help = "chat requests that may wait for a slot; more get 429 with Retry-After (default 8)"},
    {.name = "request-timeout", .kind = FE_OPT_INT, O(request_timeout_s), .lo = 1, .hi = 86400,
     .arg = "S",
     .help = "a chat request's limit from arrival to its last token; the answer ends there "
             "(default 600)"},
    {.name = "max-messages", .kind = FE_OPT_INT, O(max_messages), .lo = 1, .hi = 100000,
     .arg = "N", .help = "messages per chat request (default: what the context holds, --lm-ctx / "
                         "4: a message renders at least 4 tokens)"},
    {.name = "max-images", .kind = FE_OPT_INT, O(max_images), .lo = 0, .hi = 1000, .arg = "N",
     .help = "images per chat request (default 16)"},
    {.name = "allow-image-urls", .kind = FE_OPT_FLAG, O(allow_image_urls), .lo = 1,
     .help = "image_url may be an http(s) URL, fetched by the server (never from loopback, "
             "private, link-local or reserved addresses, checked after resolving and on every "
             "redirect); without it such URLs are refused (400)"},
    {.name = "image-url-host", .kind = FE_OPT_LIST, O(image_url_hosts), .arg = "NAME",
     .help = "with --allow-image-urls: fetch only from host NAME (repeatable; default any "
             "public host)"},
    {.name = "image-url-max-bytes", .kind = FE_OPT_UINT, O(image_url_max_bytes), .lo = 1,
     .hi = 1ll << 32, .arg = "BYTES", .help = "largest image fetched by URL (default 20971520)"},
    {.name = "image-url-timeout", .kind = FE_OPT_INT, O(image_url_timeout_s), .lo = 1,
     .hi = 600, .arg = "S", .help = "seconds for a whole fetch by URL, redirects included "
                                   "(default 10)"},
    {.name = "allow-files", .kind = FE_OPT_STRING, O(allow_files), .arg = "DIR",
     .help = "image_url may name files (file:// or a plain path) whose real path is inside DIR; "
             "without it, paths are refused (403)"},
    {.kind = FE_OPT_TEXT,
     .help = "\n"
             "Access (docs/SERVICE.md, \"Security\"): with a key, every endpoint but /health "
             "needs\n"
             "`Authorization: Bearer KEY`, else 401.\n"},
    {.name = "api-key-file", .kind = FE_OPT_STRING, O(api_key_file), .arg = "FILE",
     .help = "the key: the file's one line (keep it chmod 600)"},
    {.name = "api-key", .kind = FE_OPT_STRING, O(api_key), .arg = "KEY",
     .help = "the key itself (visible to other users in `ps`: prefer the file, or the "
             "environment variable " SVC_API_KEY_ENV ", read when neither option is given)"},
    {.name = "insecure-no-auth", .kind = FE_OPT_FLAG, O(insecure_no_auth), .lo = 1,
     .help = "allow a --host other machines can reach without a key"},
    {.kind = FE_OPT_TEXT,
     .help = "\n"
             "Browsers (docs/SERVICE.md, \"Security\"): a request whose Host header names another\n"
             "host than the bound address or localhost is refused 421 (DNS rebinding); one a page\n"
             "of another origin sends (its Origin header) 403; a POST whose Content-Type is not\n"
             "its endpoint's (application/json; images or application/octet-stream for\n"
             "/v1/encode) 415. Requests without an Origin (curl, the SDKs) are not affected.\n"},
    {.name = "allowed-origin", .kind = FE_OPT_LIST, O(allowed_origins), .arg = "ORIGIN",
     .help = "let the pages of ORIGIN (http://HOST[:PORT] or https://..., as the browser sends "
             "it) call the API and read its answers (CORS); repeatable; '*' lets every web "
             "site's pages do so (warned: only behind a key you never give a page)"},
    {.name = "allowed-host", .kind = FE_OPT_LIST, O(allowed_hosts), .arg = "NAME",
     .help = "answer requests for host name NAME too (the name clients or a proxy use for this "
             "server, e.g. g4v.example.com); repeatable; '*' answers any (warned)"},
    {.kind = FE_OPT_TEXT, .help = "\n"},
};

static const fe_cmd serve_cmd = {
    .name = "serve",
    .usage = "serve --model DIR [options]",
    .about = "Serves Gemma 4 vision encoding over HTTP (docs/SERVICE.md):\n"
             "  POST /v1/encode[?tokens=N&dtype=f32|bf16&exif=0|1&resize=pillow|torchvision\n"
             "                  &format=json|npy|safetensors]\n"
             "       body: the image bytes (JPEG/PNG/WebP/GIF/BMP), Content-Type image/... or\n"
             "       application/octet-stream; answer: the soft tokens in the format Accept asks\n"
             "       for (application/json with base64 features, the default; application/x-npy;\n"
             "       application/x-safetensors), with prompt ids, grid and sizes\n"
             "  GET  /v1/info     the model, its fingerprint, budgets and the service's limits\n"
             "  GET  /health      200 \"ok\" while serving (the one endpoint open without the\n"
             "                    key)\n"
             "  GET  /metrics     Prometheus text: requests by status, latency, queue, cache\n",
    FE_OPTS(rows),
    .epilog = "SIGTERM or SIGINT: stop accepting, finish the requests in flight, exit 0.\n"
              "exit codes: 0 ok, 1 usage (also: a reachable --host without a key), 3 model,\n"
              "4 cannot listen or open the cache, 5 internal\n",
};

#undef O

void g4v_service_options_init(g4v_service_options *a) {
    memset(a, 0, sizeof *a);
    a->host = "127.0.0.1";
    a->port = 8080;
    a->contexts = 1;
    a->queue = 16;
    a->batch = 1;
    a->http_threads = 2;
    a->timeout_s = 30;
    a->drain_s = 30;
    a->tokens = G4V_DEFAULT_BUDGET;
    a->max_body = 64ull << 20;
    a->max_header_bytes = 32768; /* libmicrohttpd's own default */
    a->max_connections = 1000;
    a->lm_slots = 1;
    a->lm_ctx = 8192;
    a->lm_step_tokens = 64;
    a->max_queue = 8;
    a->prompt_cache_ram = 2ull << 30;
    a->prompt_cache_disk = 8ull << 30;
    a->request_timeout_s = 600;
    a->max_messages = 0; /* what the context allows: set once --lm-ctx is known */
    a->max_images = 16;
    a->image_url_max_bytes = 20ull << 20;
    a->image_url_timeout_s = 10;
}

void g4v_service_options_free(g4v_service_options *a) {
    fe_opt_list_free(&a->allowed_origins);
    fe_opt_list_free(&a->allowed_hosts);
    fe_opt_list_free(&a->image_url_hosts);
}

int g4v_service_parse_args(int argc, char **argv, g4v_service_options *a) {
    int rc = fe_opt_run(&serve_cmd, argc, argv, a);
    if (rc == FE_OPT_HELP) return G4V_SERVICE_HELP;
    if (rc) return G4V_SERVICE_ERR_USAGE;
    if (a->api_key && a->api_key_file) {
        fprintf(stderr, "g4v serve: give the key once: --api-key or --api-key-file, not both\n");
        return G4V_SERVICE_ERR_USAGE;
    }
    if (a->allow_files && !a->lm && !a->ollama) {
        fprintf(stderr, "g4v serve: --allow-files is for the chat endpoint: it needs --lm\n");
        return G4V_SERVICE_ERR_USAGE;
    }
    if ((a->allow_image_urls || a->image_url_hosts.count) && !a->lm && !a->ollama) {
        fprintf(stderr, "g4v serve: --allow-image-urls is for the chat endpoint: it needs --lm\n");
        return G4V_SERVICE_ERR_USAGE;
    }
    if (a->image_url_hosts.count) a->allow_image_urls = 1;
#ifndef G4V_HAVE_CURL
    if (a->allow_image_urls) {
        fprintf(stderr, "g4v serve: --allow-image-urls: this g4v was built without libcurl "
                        "(libcurl4-openssl-dev, scripts/install-deps.sh)\n");
        return G4V_SERVICE_ERR_USAGE;
    }
#endif
    if (a->cache_max_bytes && !a->cache) {
        fprintf(stderr, "g4v serve: --cache-max-bytes needs --cache DIR\n");
        return G4V_SERVICE_ERR_USAGE;
    }
    if (svc_doors_setup(a)) return G4V_SERVICE_ERR_USAGE;
    /* every message renders at least 4 tokens (<|turn>, its role, a newline, <turn|>): more
     * than --lm-ctx / 4 never fit */
    if (!a->max_messages) a->max_messages = a->lm_ctx / 4 > 0 ? a->lm_ctx / 4 : 1;
    return G4V_SERVICE_OK;
}
