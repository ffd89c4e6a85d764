/* service_options.c - `g4v serve`'s options: their defaults, --help, and the parsing of argv
 * into a g4v_service_options. Kept with the service (not the CLI) because the options are the
 * service's settings: whoever runs it (the CLI, a future front end) parses the same way. */
#include "frontend.h"
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
        "  GET  /health      200 \"ok\" while serving\n"
        "  GET  /metrics     Prometheus text: requests by status, latency, queue, cache\n"
        "\n"
        "  --model DIR          checkpoint directory or mmproj .gguf file (required)\n"
        "  --host ADDR          address to listen on (default 127.0.0.1: this machine only;\n"
        "                       the service has no authentication and no TLS)\n"
        "  --port N             TCP port (default 8080; 0 picks a free one, printed at start)\n"
        "  --contexts K         encodes run at once, one g4v context each (default 1)\n"
        "  --threads N          compute threads per context (default: CPUs / K, at least 1)\n"
        "  --queue Q            complete requests that may wait for a context; more are\n"
        "                       answered 429 at once (default 16)\n"
        "  --http-threads N     threads parsing HTTP (default 2)\n"
        "  --max-body-bytes N   largest image accepted, else 413 (default 67108864)\n"
        "  --timeout S          close a connection idle for S seconds, e.g. a client that\n"
        "                       stalls mid-request (default 30)\n"
        "  --drain-seconds S    on SIGTERM, wait at most S seconds for request bodies still\n"
        "                       arriving; received requests are always finished (default 30)\n"
        "  --tokens N           default budget, one of " SVC_BUDGETS " (default %d)\n"
        "  --precise            f32 GEMM inputs (default: bf16 inputs)\n"
        "  --int8               the INT8 mode (int8 linear layers; docs/NUMERICS.md §12)\n"
        "  --no-exif            ignore EXIF orientation by default\n"
        "  --resize pillow|torchvision  default resize (pillow: Pillow's BICUBIC, the\n"
        "                       default; torchvision: torch's antialiased bicubic, as\n"
        "                       transformers' torchvision backend); ?resize= overrides it\n"
        "  --cache DIR          feature cache shared with `g4v encode --cache` and other\n"
        "                       servers (identical bytes on a hit)\n"
        "  --cache-max-bytes N  cache size bound, LRU eviction (default 1073741824)\n"
        "  -h, --help           this help\n"
        "\n"
        "SIGTERM or SIGINT: stop accepting, finish the requests in flight, exit 0.\n"
        "exit codes: 0 ok, 1 usage, 3 model, 4 cannot listen or open the cache, 5 internal\n",
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
        {"--cache-max-bytes", 1, 1ll << 62, offsetof(g4v_service_options, cache_max_bytes), 1},
    };
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
        else if (!strcmp(s, "--precise"))
            a->precise = 1;
        else if (!strcmp(s, "--int8"))
            a->int8 = 1;
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
    if (a->cache_max_bytes && !a->cache) {
        fprintf(stderr, "g4v serve: --cache-max-bytes needs --cache DIR\n");
        return G4V_SERVICE_ERR_USAGE;
    }
    return G4V_SERVICE_OK;
}
