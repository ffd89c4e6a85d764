/* service_options.c - `g4v serve`'s options: their defaults, --help, and the parsing of argv
 * into a g4v_service_options. Kept with the service (not the CLI) because the options are the
 * service's settings: whoever runs it (the CLI, a future front end) parses the same way. */
#include "frontend.h"
#include "math_option.h"
#include "service_internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: g4v serve --model DIR [options]\n"
        "\n"
        "Serves Gemma 4 vision encoding over HTTP (docs/SERVICE.md):\n"
        "  POST /v1/encode[?tokens=N&dtype=f32|bf16&exif=0|1&resize=pillow|torchvision\n"
        "                  &format=json|npy|safetensors]\n"
        "       body: the image bytes (JPEG/PNG/WebP/GIF/BMP); answer: the soft tokens in the\n"
        "       format Accept asks for (application/json with base64 features, the default;\n"
        "       application/x-npy; application/x-safetensors), with prompt ids, grid and sizes\n"
        "  GET  /v1/info     the model, its fingerprint, budgets and the service's limits\n"
        "  GET  /health      200 \"ok\" while serving (the one endpoint open without the key)\n"
        "  GET  /metrics     Prometheus text: requests by status, latency, queue, cache\n"
        "\n"
        "  --model DIR          checkpoint directory or mmproj .gguf file (required)\n"
        "  --host ADDR          address to listen on (default 127.0.0.1: this machine only);\n"
        "                       one other machines can reach needs an API key (no TLS: put a\n"
        "                       TLS proxy in front)\n"
        "  --port N             TCP port (default 8080; 0 picks a free one, printed at start)\n"
        "  --contexts K         encodes run at once, one g4v context each (default 1)\n"
        "  --threads N          compute threads per context (default: CPUs / K, at least 1)\n"
        "  --queue Q            complete requests that may wait for a context; more are\n"
        "                       answered 429 at once (default 16)\n"
        "  --http-threads N     threads parsing HTTP (default 2)\n"
        "  --max-body-bytes N   largest request body accepted, else 413 (default 67108864)\n"
        "  --max-header-bytes N request line and headers: memory per connection for them,\n"
        "                       else 431 (default 32768)\n"
        "  --max-connections N  connections open at once; more wait until one closes\n"
        "                       (default 1000)\n"
        "  --timeout S          close a connection idle for S seconds, e.g. a client that\n"
        "                       stalls mid-request (default 30)\n"
        "  --drain-seconds S    on SIGTERM, wait at most S seconds for request bodies still\n"
        "                       arriving; received requests are always finished (default 30)\n"
        "  --tokens N           default budget, one of " SVC_BUDGETS " (default %d)\n"
        "  --math MODE          fast (default: bf16 GEMM inputs), precise (f32 GEMM\n"
        "                       inputs), int8 (int8 linear layers; docs/NUMERICS.md §12) or\n"
        "                       int8-blocks (int8 with per-32-block scales, §12.4)\n"
        "  --precise, --int8, --int8=blocks  the same as --math precise, int8, int8-blocks\n"
        "  --no-exif            ignore EXIF orientation by default\n"
        "  --resize pillow|torchvision  default resize (pillow: Pillow's BICUBIC, the\n"
        "                       default; torchvision: torch's antialiased bicubic, as\n"
        "                       transformers' torchvision backend); ?resize= overrides it\n"
        "  --cache DIR          feature cache shared with `g4v encode --cache` and other\n"
        "                       servers (identical bytes on a hit)\n"
        "  --cache-max-bytes N  cache size bound, LRU eviction (default 1073741824)\n"
        "\n"
        "Chat (docs/CHAT_API.md), with --lm: the OpenAI-compatible API\n"
        "  POST /v1/chat/completions  messages with text, image_url and video_url parts\n"
        "                       (data: URIs; file paths only under --allow-files), stream,\n"
        "                       max_tokens, temperature, top_p, seed, stop;\n"
        "                       \"g4v\": {\"tokens\": N}\n"
        "  GET  /v1/models      the language model's name\n"
        "  --lm FILE            Gemma 4 text model (GGUF) run by libllama; --model is its\n"
        "                       vision model\n"
        "  --lm-slots K         conversations answered at once, one libllama context each\n"
        "                       (default 1)\n"
        "  --lm-threads N       threads per slot (default: CPUs / K, at least 1)\n"
        "  --lm-ctx N           context tokens per slot: the longest conversation, prompt\n"
        "                       and answer (default 8192)\n"
        "  --max-queue Q        chat requests that may wait for a slot; more get 429 with\n"
        "                       Retry-After (default 8)\n"
        "  --request-timeout S  a chat request's limit from arrival to its last token; the\n"
        "                       answer ends there (default 600)\n"
        "  --max-messages N     messages per chat request (default 64)\n"
        "  --max-images N       images per chat request (default 16)\n"
        "  --allow-files DIR    image_url may name files (file:// or a plain path) whose real\n"
        "                       path is inside DIR; without it, paths are refused (403)\n"
        "\n"
        "Access (docs/SERVICE.md, \"Security\"): with a key, every endpoint but /health needs\n"
        "`Authorization: Bearer KEY`, else 401.\n"
        "  --api-key-file FILE  the key: the file's one line (keep it chmod 600)\n"
        "  --api-key KEY        the key itself (visible to other users in `ps`: prefer the\n"
        "                       file, or the environment variable " SVC_API_KEY_ENV ", read when\n"
        "                       neither option is given)\n"
        "  --insecure-no-auth   allow a --host other machines can reach without a key\n"
        "\n"
        "  -h, --help           this help\n"
        "\n"
        "SIGTERM or SIGINT: stop accepting, finish the requests in flight, exit 0.\n"
        "exit codes: 0 ok, 1 usage (also: a reachable --host without a key), 3 model,\n"
        "4 cannot listen or open the cache, 5 internal\n",
        G4V_DEFAULT_BUDGET);
}

void g4v_service_options_init(g4v_service_options *a) {
    memset(a, 0, sizeof *a);
    a->host = "127.0.0.1";
    a->port = 8080;
    a->contexts = 1;
    a->queue = 16;
    a->http_threads = 2;
    a->timeout_s = 30;
    a->drain_s = 30;
    a->tokens = G4V_DEFAULT_BUDGET;
    a->max_body = 64ull << 20;
    a->max_header_bytes = 32768; /* libmicrohttpd's own default */
    a->max_connections = 1000;
    a->lm_slots = 1;
    a->lm_ctx = 8192;
    a->max_queue = 8;
    a->request_timeout_s = 600;
    a->max_messages = 64;
    a->max_images = 16;
}

int g4v_service_parse_args(int argc, char **argv, g4v_service_options *a) {
    static const struct {
        const char *name;
        long long lo, hi;
        size_t off;
        int is_ull;
    } nums[] = {
        {"--port", 0, 65535, offsetof(g4v_service_options, port), 0},
        {"--contexts", 1, 256, offsetof(g4v_service_options, contexts), 0},
        {"--threads", 1, 4096, offsetof(g4v_service_options, threads), 0},
        {"--queue", 0, 100000, offsetof(g4v_service_options, queue), 0},
        {"--http-threads", 1, 256, offsetof(g4v_service_options, http_threads), 0},
        {"--timeout", 1, 86400, offsetof(g4v_service_options, timeout_s), 0},
        {"--drain-seconds", 0, 86400, offsetof(g4v_service_options, drain_s), 0},
        {"--tokens", 1, 1000000, offsetof(g4v_service_options, tokens), 0},
        {"--max-body-bytes", 1, 1ll << 40, offsetof(g4v_service_options, max_body), 1},
        {"--max-header-bytes", 4096, 1 << 24, offsetof(g4v_service_options, max_header_bytes), 0},
        {"--max-connections", 1, 100000, offsetof(g4v_service_options, max_connections), 0},
        {"--cache-max-bytes", 1, 1ll << 62, offsetof(g4v_service_options, cache_max_bytes), 1},
        {"--lm-slots", 1, 64, offsetof(g4v_service_options, lm_slots), 0},
        {"--lm-threads", 1, 4096, offsetof(g4v_service_options, lm_threads), 0},
        {"--lm-ctx", 256, 1 << 20, offsetof(g4v_service_options, lm_ctx), 0},
        {"--max-queue", 0, 100000, offsetof(g4v_service_options, max_queue), 0},
        {"--request-timeout", 1, 86400, offsetof(g4v_service_options, request_timeout_s), 0},
        {"--max-messages", 1, 100000, offsetof(g4v_service_options, max_messages), 0},
        {"--max-images", 0, 1000, offsetof(g4v_service_options, max_images), 0},
    };
    const char *math_opt = NULL; /* the option that set a->math */
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int has_val = i + 1 < argc, done = 0;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            return G4V_SERVICE_HELP;
        }
        for (size_t k = 0; k < sizeof nums / sizeof nums[0] && !done; k++) {
            if (strcmp(s, nums[k].name)) continue;
            long long v;
            if (!has_val || fe_parse_int(argv[++i], nums[k].lo, nums[k].hi, &v)) {
                fprintf(stderr, "g4v serve: %s needs a number from %lld to %lld\n", s, nums[k].lo,
                        nums[k].hi);
                return G4V_SERVICE_ERR_USAGE;
            }
            if (nums[k].is_ull)
                *(unsigned long long *)((char *)a + nums[k].off) = (unsigned long long)v;
            else
                *(int *)((char *)a + nums[k].off) = (int)v;
            done = 1;
        }
        if (done) continue;
        if (!strcmp(s, "--model") && has_val)
            a->model = argv[++i];
        else if (!strcmp(s, "--host") && has_val)
            a->host = argv[++i];
        else if (!strcmp(s, "--cache") && has_val)
            a->cache = argv[++i];
        else if (!strcmp(s, "--api-key") && has_val)
            a->api_key = argv[++i];
        else if (!strcmp(s, "--api-key-file") && has_val)
            a->api_key_file = argv[++i];
        else if (!strcmp(s, "--insecure-no-auth"))
            a->insecure_no_auth = 1;
        else if (!strcmp(s, "--lm") && has_val)
            a->lm = argv[++i];
        else if (!strcmp(s, "--allow-files") && has_val)
            a->allow_files = argv[++i];
        else if (fe_math_alias(s) || (!strcmp(s, "--math") && has_val)) {
            char msg[256];
            const char *name = fe_math_alias(s) ? fe_math_alias(s) : argv[++i];
            if (fe_math_option(s, name, &a->math, &math_opt, msg, sizeof msg)) {
                fprintf(stderr, "g4v serve: %s\n", msg);
                return G4V_SERVICE_ERR_USAGE;
            }
        }
        else if (!strcmp(s, "--no-exif"))
            a->no_exif = 1;
        else if (!strcmp(s, "--resize") && has_val) {
            const char *v = argv[++i];
            if (strcmp(v, "pillow") && strcmp(v, "torchvision")) {
                fprintf(stderr, "g4v serve: --resize: '%s' is not pillow or torchvision\n", v);
                return G4V_SERVICE_ERR_USAGE;
            }
            a->resize = !strcmp(v, "torchvision") ? G4V_RESIZE_TORCHVISION : G4V_RESIZE_PILLOW;
        }
        else {
            fprintf(stderr, "g4v serve: unknown or incomplete option '%s' (see --help)\n", s);
            return G4V_SERVICE_ERR_USAGE;
        }
    }
    if (!a->model) {
        fprintf(stderr, "g4v serve: --model DIR is required (see --help)\n");
        return G4V_SERVICE_ERR_USAGE;
    }
    char msg[128];
    if (g4v_budget_check(a->tokens, msg, sizeof msg)) {
        fprintf(stderr, "g4v serve: --tokens: %s\n", msg);
        return G4V_SERVICE_ERR_USAGE;
    }
    if (a->api_key && a->api_key_file) {
        fprintf(stderr, "g4v serve: give the key once: --api-key or --api-key-file, not both\n");
        return G4V_SERVICE_ERR_USAGE;
    }
    if (a->allow_files && !a->lm) {
        fprintf(stderr, "g4v serve: --allow-files is for the chat endpoint: it needs --lm\n");
        return G4V_SERVICE_ERR_USAGE;
    }
    if (a->cache_max_bytes && !a->cache) {
        fprintf(stderr, "g4v serve: --cache-max-bytes needs --cache DIR\n");
        return G4V_SERVICE_ERR_USAGE;
    }
    return G4V_SERVICE_OK;
}
