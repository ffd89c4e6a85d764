/* service.h - the HTTP service (docs/SERVICE.md), as its front ends see it: `g4v serve`
 * (tools/g4v/cmd_serve.c) runs it, fuzz/fuzz_serve.c embeds it and feeds it connections.
 *
 * The service lives in tools/service/ as the static library g4v_service: a core (core/) and two
 * wings, encode (encode/) and chat (chat/), that register their routes and job kinds with it
 * (docs/SERVICE.md, "Where the code lives"); it uses libg4v through g4v.h and links GNU
 * libmicrohttpd, which libg4v never does. Everything else about it is in core/core.h.
 */
#ifndef G4V_SERVICE_H
#define G4V_SERVICE_H

#include "g4v.h"
#include "options.h"

/* What `g4v serve`'s options set (g4v_service_options_init gives the defaults of --help). */
typedef struct g4v_service_options {
    const char *model; /* --model: checkpoint directory or mmproj .gguf (required) */
    const char *host;  /* --host: address to listen on (default 127.0.0.1) */
    const char *cache; /* --cache: feature cache directory, or NULL */
    int port;          /* 0: a free one */
    int contexts;      /* encodes at once, one g4v_ctx each */
    int threads;       /* compute threads per context; 0: CPUs / contexts, at least 1 */
    int http_threads;  /* libmicrohttpd's threads */
    int queue;         /* complete requests that may wait for a context before 429 */
    int batch;         /* waiting requests a context encodes together (1: one at a time) */
    int timeout_s;     /* idle connections are closed after this */
    int drain_s;       /* on SIGTERM, how long bodies still arriving may take */
    int tokens;        /* default budget, one of G4V_BUDGETS */
    g4v_math_mode math; /* --math (or --precise, --int8, --int8=blocks): the math mode */
    const char *math_opt; /* the option that set math, for messages (NULL: none) */
    int no_exif;       /* ignore EXIF orientation by default */
    int in_place_weights; /* 1: BF16 weights read in the checkpoint, not packed at load */
    int resize;        /* the default G4V_RESIZE_* */
    unsigned long long max_body;        /* largest body accepted, else 413 */
    unsigned long long cache_max_bytes; /* 0: the cache's default */
    /* Access control (core/auth.c): the key from --api-key, or from the first line of
     * --api-key-file, or else from the environment variable G4V_API_KEY; none: no key needed,
     * and then a non-loopback --host is refused unless insecure_no_auth. */
    const char *api_key;
    const char *api_key_file;
    int insecure_no_auth;
    /* Browsers (core/doors.c): pages of these origins may call the API ("*": any), and requests
     * naming these hosts are answered besides the bound address and localhost ("*": any) */
    fe_opt_list allowed_origins;
    fe_opt_list allowed_hosts;
    /* HTTP limits (core/listen.c): bytes of request line and headers, open connections */
    int max_header_bytes;
    int max_connections;
    /* the chat endpoint (docs/CHAT_API.md): only with --lm */
    const char *lm;          /* --lm: Gemma 4 text model GGUF, or NULL */
    const char *ollama;      /* --ollama TAG: --lm (and --model) from Ollama's store, or NULL */
    const char *revision;    /* --revision: of a Hugging Face repo id, or NULL (main) */
    const char *allow_files; /* --allow-files: image paths allowed under this directory */
    int allow_image_urls;    /* --allow-image-urls: http(s) image_url fetched (chat_fetch.c) */
    fe_opt_list image_url_hosts; /* --image-url-host: only from these hosts (none: any public) */
    unsigned long long image_url_max_bytes; /* --image-url-max-bytes */
    int image_url_timeout_s; /* --image-url-timeout: seconds for a whole fetch, redirects too */
    int lm_slots;            /* conversations at once, one libllama context each */
    int lm_threads;          /* threads of the text model, shared by the slots; 0: one per CPU */
    int lm_ctx;              /* context tokens per slot */
    int lm_step_tokens;      /* prompt tokens per decode call, the slots together */
    int lm_no_batching;      /* 1: one slot's tokens per decode call */
    int max_queue;           /* chat requests that may wait for a slot before 429 */
    int no_prompt_reuse;     /* 1: every chat request decodes its whole prompt (no prefix reuse) */
    int no_webui;            /* 1: no chat page at GET / (tools/service/webui) */
    const char *chat_template; /* --chat-template: a Jinja file or "builtin", or NULL (the model's) */
    unsigned long long prompt_cache_ram;  /* prompt cache, RAM tier bytes (0: none) */
    unsigned long long prompt_cache_disk; /* prompt cache, disk tier bytes under --cache (0: none) */
    int request_timeout_s;   /* a chat request's limit from arrival to its last token */
    int max_messages;        /* messages per chat request */
    int max_images;          /* images per chat request */
} g4v_service_options;

/* How the service ends; the values are `g4v serve`'s exit codes (listed in its --help). */
enum {
    G4V_SERVICE_OK = 0,
    G4V_SERVICE_ERR_USAGE = 1,    /* a bad option, or a model load refused as a bad argument */
    G4V_SERVICE_ERR_MODEL = 3,    /* the model cannot be loaded */
    G4V_SERVICE_ERR_LISTEN = 4,   /* cannot listen, or cannot open the cache */
    G4V_SERVICE_ERR_INTERNAL = 5, /* out of memory, a thread or context that did not start */
    G4V_SERVICE_HELP = -2         /* g4v_service_parse_args printed --help */
};

/* The defaults (port 8080, one context, queue 16, ...). */
void g4v_service_options_init(g4v_service_options *o);
/* Frees what parsing allocated (the lists of --allowed-origin and --allowed-host). */
void g4v_service_options_free(g4v_service_options *o);
/* Parses `serve`'s arguments (argv[0] is the command name) over the defaults. Returns
 * G4V_SERVICE_OK, G4V_SERVICE_ERR_USAGE (the reason printed on stderr) or G4V_SERVICE_HELP (the
 * help printed on stdout). */
int g4v_service_parse_args(int argc, char **argv, g4v_service_options *o);

/* Serves until SIGTERM or SIGINT: loads the model, listens on host:port (the address printed on
 * stdout), answers requests; on the signal stops accepting, finishes what was received and
 * returns G4V_SERVICE_OK. Returns a G4V_SERVICE_ERR_* (message printed) if it cannot start.
 * Blocks SIGTERM and SIGINT in the calling thread and ignores SIGPIPE. */
int g4v_service_run(const g4v_service_options *o);

/* ---- embedding: a service without a listening socket (fuzz/fuzz_serve.c) -------------------- */

typedef struct g4v_service g4v_service;

/* Loads the model, opens the cache, starts the contexts and their workers, and starts
 * libmicrohttpd without a listening socket, polling with poll() (which sees a client's
 * half-close at once; g4v_service_run uses epoll). Requests arrive only through
 * g4v_service_add_connection. Returns G4V_SERVICE_OK and *out, or a G4V_SERVICE_ERR_*. */
int g4v_service_open(const g4v_service_options *o, g4v_service **out);
/* Hands the service one connected stream socket (e.g. one end of a socketpair), its peer
 * reported as 127.0.0.1; the service closes it. 0 ok, -1 refused. */
int g4v_service_add_connection(g4v_service *s, int fd);
/* Waits up to seconds for no request in flight, queued or encoding; returns the requests still
 * in flight (begun and not completed) then. */
long g4v_service_wait_idle(g4v_service *s, double seconds);
/* Stops the daemon and the workers and frees everything. */
void g4v_service_close(g4v_service *s);

/* 1 if code is a status the service itself answers with (the codes of
 * g4v_http_requests_total), else 0. */
int g4v_service_answers_with(int code);

#endif
