/* chat_engine.c - one text model, one context, the conversations' steps batched (chat_engine.h).
 *
 * Every computation of the context runs on the engine's own thread, the steps and the calls
 * (chat_engine_call) alike: llama.cpp's CPU backend computes in OpenMP teams, one per thread
 * that calls it, and libgomp stops spinning at its barriers (sleeps and wakes in the kernel at
 * each) once its teams together have more threads than the machine has CPUs, which slows
 * every decode; one calling thread keeps one team (bench/RESULTS.md has the numbers).
 *
 * A step: the engine thread waits until every answering sequence has asked for its next token
 * (for one that is late, until it is due, but never longer than a decode takes: gather_due),
 * takes the waiting requests -- one token of each answering sequence first,
 * then prompt tokens in arrival order up to step_tokens (n_batch when no sequence is
 * answering) --, decodes them in one llama_decode without the lock, copies each finished
 * request's logits out, and wakes the requesters. A request for more tokens than the step holds
 * stays waiting with what is left of it. Calls and steps take turns when both wait, so that the
 * pieces of an image leave room for the others' streams. Sequences are put in the batch in
 * increasing order: llama.cpp cuts a batch over several streams into micro-batches of
 * consecutive sequences. */
#include "chat_engine.h"
#include "chat_backend.h"
#include "chat_error.h"
#include "chat_fatal.h"
#include "chat_llama_probe.h"
#include "cpu_gate.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The least a step waits for an answering sequence's next token: sampling one takes a
 * millisecond or two; how long a sequence takes to ask again is measured (gather_due). */
enum { GATHER_MS = 4 };

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* ---- llama.cpp's log ------------------------------------------------------------------------- */

/* Quiet unless verbose, but its last error lines are kept for our messages. The callback is
 * process-wide and runs on whichever thread decodes, so the kept text is under a lock. */
static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_last_log[512];
static atomic_int g_verbose;

static void log_cb(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (atomic_load(&g_verbose)) fputs(text, stderr);
    if (level == GGML_LOG_LEVEL_ERROR && text && *text) { /* "first; second; ..." */
        pthread_mutex_lock(&g_log_lock);
        size_t n = strlen(g_last_log);
        snprintf(g_last_log + n, sizeof g_last_log - n, "%s%s", n ? "; " : "", text);
        n = strlen(g_last_log);
        while (n && (g_last_log[n - 1] == '\n' || g_last_log[n - 1] == ' ')) g_last_log[--n] = 0;
        pthread_mutex_unlock(&g_log_lock);
    }
}

void chat_engine_clear_log(void) {
    pthread_mutex_lock(&g_log_lock);
    g_last_log[0] = 0;
    pthread_mutex_unlock(&g_log_lock);
}

const char *chat_engine_last_log(void) {
    static _Thread_local char copy[sizeof g_last_log + 2];
    pthread_mutex_lock(&g_log_lock);
    snprintf(copy, sizeof copy, "%s%s", g_last_log[0] ? ": " : "", g_last_log);
    pthread_mutex_unlock(&g_log_lock);
    return copy;
}

/* ---- the engine -------------------------------------------------------------------------------- */

/* One thread's request: n tokens of a sequence, done of them decoded. */
typedef struct request {
    llama_seq_id seq;
    const llama_token *tokens;
    int n, done, taking; /* taking: tokens in the step being decoded */
    llama_pos pos0;
    float *logits;       /* the last token's logits go here, or NULL */
    int status;          /* 0 waiting, 1 done, -1 failed */
    int rc;              /* llama_decode's code when failed */
    struct request *next;
} request;

/* A call to run on the engine thread (chat_engine_call). */
typedef struct call {
    int (*fn)(void *arg);
    void *arg;
    int rc, done;
    struct call *next;
} call;

struct chat_engine {
    chat_engine_options o;
    struct llama_model *lm;
    struct llama_context *lctx;
    char arch[32];
    int n_vocab;
    struct llama_batch batch; /* n_batch tokens */
    int batch_cap;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    request *waiting;  /* in arrival order */
    call *calls;       /* in arrival order */
    pthread_t thread;  /* the engine thread: every step and call */
    int started, stop;
    int decoding;      /* a step or a call is running */
    int held;          /* chat_engine_lock holds the context */
    int want_hold;     /* threads waiting in chat_engine_lock: they go before the next step */
    unsigned char *answering; /* [n_seq] */
    int n_answering;
    /* [n_seq]: when its last request was settled, and how long it then took to ask again (a
     * running mean, ms; 0 until measured): when its next one is due */
    double *settled_ms, *think_ms;
    double decode_ms; /* how long the last step's decode took */
    chat_engine_stats st;
};

/* general.architecture of a GGUF file if it is the first key (as every writer puts it), read
 * before llama.cpp sees the file so that a wrong file gets a clear message. "" if unknown. */
static void gguf_arch(const char *path, char *arch, size_t cap) {
    arch[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    unsigned char h[24];
    uint64_t klen = 0, vlen = 0;
    uint32_t type = 0;
    char key[32];
    if (fread(h, 1, 24, f) == 24 && !memcmp(h, "GGUF", 4) && fread(&klen, 8, 1, f) == 1 &&
        klen == strlen("general.architecture") && fread(key, 1, klen, f) == klen &&
        !memcmp(key, "general.architecture", klen) && fread(&type, 4, 1, f) == 1 &&
        type == 8 /* string */ && fread(&vlen, 8, 1, f) == 1 && vlen < cap &&
        fread(arch, 1, vlen, f) == vlen)
        arch[vlen] = 0;
    else
        arch[0] = 0;
    fclose(f);
}

/* "…is not a Gemma 4 text model": the architecture is known and is not gemma4. */
static int not_gemma4(const char *arch, const char *path, char *err, size_t errsz) {
    if (!arch[0] || !strcmp(arch, "gemma4")) return 0;
    seterr(err, errsz,
           "%s is not a Gemma 4 text model (general.architecture is '%s', not 'gemma4')", path,
           arch);
    return 1;
}

/* llama.cpp's backends, then the text model. */
static int load_model(chat_engine *e, char *err, size_t errsz) {
    const chat_engine_options *o = &e->o;
    atomic_store(&g_verbose, o->verbose);
    llama_log_set(log_cb, NULL);
    if (chat_backend_load(err, errsz)) return -1; /* no CPU backend for it */
    /* llama.cpp's AMX / repacked weights only where a child ran them first (chat_llama_probe.h) */
    chat_llama_probe probe;
    if (chat_llama_probe_get(&probe, err, errsz)) return -1;
    chat_fatal_install(); /* a crash in llama.cpp's kernels says where and what to do */
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.use_extra_bufts = probe.use_extra_buffers != 0;
    chat_engine_clear_log();
    gguf_arch(o->lm_path, e->arch, sizeof e->arch);
    if (!strcmp(e->arch, "clip")) {
        seterr(err, errsz,
               "%s is a llama.cpp mmproj (vision projector) file, not a Gemma 4 text model: give "
               "it as --model and the text model's GGUF as --lm", o->lm_path);
        return -1;
    }
    if (not_gemma4(e->arch, o->lm_path, err, errsz)) return -1;
    e->lm = llama_model_load_from_file(o->lm_path, mp);
    if (!e->lm) {
        seterr(err, errsz, "cannot load the language model %s%s", o->lm_path,
               chat_engine_last_log());
        return -1;
    }
    if (llama_model_meta_val_str(e->lm, "general.architecture", e->arch, sizeof e->arch) < 0)
        e->arch[0] = 0;
    if (!e->arch[0]) snprintf(e->arch, sizeof e->arch, "%s", "(none)");
    if (not_gemma4(e->arch, o->lm_path, err, errsz)) return -1;
    e->n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(e->lm));
    return 0;
}

/* The context: a stream per sequence, each n_ctx_seq long. */
static int open_context(chat_engine *e, char *err, size_t errsz) {
    const chat_engine_options *o = &e->o;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)o->n_ctx_seq * (uint32_t)o->n_seq;
    cp.n_batch = (uint32_t)o->n_batch;
    cp.n_ubatch = (uint32_t)o->n_batch; /* a whole image in one ubatch (docs/CHAT.md §3) */
    cp.n_seq_max = (uint32_t)o->n_seq;
    cp.kv_unified = false;
    cp.n_threads = o->threads;
    cp.n_threads_batch = o->threads;
    cp.no_perf = true;
    /* every layer's cache the whole context long, the sliding-window ones too: prompt reuse cuts
     * a context anywhere, and a window layer must still hold the positions before the cut
     * (docs/CHAT.md "Prompt reuse"; libllama's default, set here because reuse relies on it) */
    cp.swa_full = true;
    e->lctx = llama_init_from_model(e->lm, cp);
    if (!e->lctx) {
        seterr(err, errsz, "cannot create a llama.cpp context of %d x %d tokens%s", o->n_seq,
               o->n_ctx_seq, chat_engine_last_log());
        return -1;
    }
    e->o.n_ctx_seq = (int)llama_n_ctx_seq(e->lctx);
    e->batch_cap = o->n_batch;
    e->batch = llama_batch_init(e->batch_cap, 0, 1);
    if (!e->batch.token) {
        seterr(err, errsz, "out of memory");
        return -1;
    }
    return 0;
}

static void *engine_main(void *arg);

int chat_engine_open(const chat_engine_options *o, chat_engine **out, char *err, size_t errsz) {
    *out = NULL;
    chat_engine *e = calloc(1, sizeof *e);
    if (!e) {
        seterr(err, errsz, "out of memory");
        return -1;
    }
    e->o = *o;
    if (e->o.n_seq <= 0) e->o.n_seq = 1;
    if (e->o.n_ctx_seq <= 0) e->o.n_ctx_seq = 8192;
    if (e->o.n_batch <= 0) e->o.n_batch = 512;
    if (e->o.step_tokens <= 0 || e->o.step_tokens > e->o.n_batch) e->o.step_tokens = e->o.n_batch;
    if (e->o.threads <= 0) e->o.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (e->o.threads < 1) e->o.threads = 1;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->answering = calloc((size_t)e->o.n_seq, 1);
    e->settled_ms = calloc((size_t)e->o.n_seq, sizeof *e->settled_ms);
    e->think_ms = calloc((size_t)e->o.n_seq, sizeof *e->think_ms);
    if (!e->answering || !e->settled_ms || !e->think_ms) {
        seterr(err, errsz, "out of memory");
        chat_engine_close(e);
        return -1;
    }
    if (load_model(e, err, errsz) || open_context(e, err, errsz)) {
        chat_engine_close(e);
        return -1;
    }
    if (pthread_create(&e->thread, NULL, engine_main, e)) {
        seterr(err, errsz, "cannot start the engine's thread");
        chat_engine_close(e);
        return -1;
    }
    e->started = 1;
    *out = e;
    return 0;
}

void chat_engine_close(chat_engine *e) {
    if (!e) return;
    if (e->started) { /* no request or call is left: their threads are done with the engine */
        pthread_mutex_lock(&e->mu);
        e->stop = 1;
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->thread, NULL);
    }
    if (e->batch.token) llama_batch_free(e->batch);
    if (e->lctx) llama_free(e->lctx);
    if (e->lm) llama_model_free(e->lm);
    free(e->answering);
    free(e->settled_ms);
    free(e->think_ms);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

struct llama_model *chat_engine_model(const chat_engine *e) { return e->lm; }
struct llama_context *chat_engine_context(const chat_engine *e) { return e->lctx; }
const char *chat_engine_arch(const chat_engine *e) { return e->arch; }
int chat_engine_n_seq(const chat_engine *e) { return e->o.n_seq; }
int chat_engine_n_ctx_seq(const chat_engine *e) { return e->o.n_ctx_seq; }
int chat_engine_n_batch(const chat_engine *e) { return e->o.n_batch; }
int chat_engine_threads(const chat_engine *e) { return e->o.threads; }

void chat_engine_get_stats(chat_engine *e, chat_engine_stats *st) {
    pthread_mutex_lock(&e->mu);
    *st = e->st;
    pthread_mutex_unlock(&e->mu);
}

void chat_engine_answering(chat_engine *e, llama_seq_id seq, int on) {
    if (seq < 0 || seq >= e->o.n_seq) return;
    pthread_mutex_lock(&e->mu);
    if (e->answering[seq] != (on != 0)) {
        e->answering[seq] = on != 0;
        e->n_answering += on ? 1 : -1;
        pthread_cond_broadcast(&e->cv); /* a step waiting for it leaves without it */
    }
    pthread_mutex_unlock(&e->mu);
}

void chat_engine_lock(chat_engine *e) {
    pthread_mutex_lock(&e->mu);
    e->want_hold++;
    while (e->decoding || e->held)
        pthread_cond_wait(&e->cv, &e->mu);
    e->want_hold--;
    e->held = 1;
    pthread_mutex_unlock(&e->mu);
}

void chat_engine_unlock(chat_engine *e) {
    pthread_mutex_lock(&e->mu);
    e->held = 0;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* Under e->mu. One sequence per step takes what it would take alone: its answer is then bit for
 * bit its answer alone, since the pieces of a prompt change the rounding. */
static int piece(const chat_engine *e) {
    return e->n_answering && !e->o.one_per_step ? e->o.step_tokens : e->o.n_batch;
}

int chat_engine_gate_enter(chat_engine *e) { return fe_cpu_gate_enter(e->o.gate, 1); }
void chat_engine_gate_leave(chat_engine *e, int taken) { fe_cpu_gate_leave(e->o.gate, taken); }

int chat_engine_piece(chat_engine *e) {
    pthread_mutex_lock(&e->mu);
    int n = piece(e);
    pthread_mutex_unlock(&e->mu);
    return n;
}

/* Whether sequence seq has a request waiting. Under e->mu. */
static int seq_waits(const chat_engine *e, llama_seq_id seq) {
    for (const request *r = e->waiting; r; r = r->next)
        if (r->seq == seq) return 1;
    return 0;
}

/* Until when (now_ms) a step that started gathering at start waits for the answering sequences
 * that have not asked yet, or 0 when none is missing. Each is due when it took twice as long as
 * it took to ask last time, and at least GATHER_MS after start: a sequence samples, grammars
 * and stream writes take their time, and a step that leaves without it makes its next token cost
 * a decode of its own (a fixed few milliseconds made two conversations alternate, never batched,
 * where sampling took longer, as under ThreadSanitizer). But never longer than the last decode
 * took: past that, waiting for a late one costs the others more than its own decode would. Under
 * e->mu. */
static double gather_due(const chat_engine *e, double start) {
    double due = 0;
    for (int q = 0; q < e->o.n_seq; q++)
        if (e->answering[q] && !seq_waits(e, q)) {
            double d = e->think_ms[q] > 0 ? e->settled_ms[q] + 2 * e->think_ms[q] + 1 : 0;
            if (d > due) due = d;
            if (due < start + GATHER_MS) due = start + GATHER_MS;
        }
    if (!due) return 0;
    double cap = start + (e->decode_ms > GATHER_MS ? e->decode_ms : GATHER_MS);
    return due < cap ? due : cap;
}

static void deadline_in(struct timespec *t, double ms) {
    clock_gettime(CLOCK_REALTIME, t);
    long ns = (long)(ms * 1e6);
    t->tv_sec += ns / 1000000000L;
    t->tv_nsec += ns % 1000000000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000L;
    }
}

/* The step's requests: each answering sequence's one token first, then prompt tokens in arrival
 * order while the budget lasts (step_tokens while a stream waits for the step, else n_batch);
 * r->taking says how many of each. The number of sequences, or 0. Under e->mu. */
static int choose(chat_engine *e, request **in, int *n_in) {
    int n = 0, tokens = 0, budget = piece(e);
    for (request *r = e->waiting; r; r = r->next)
        r->taking = 0;
    if (e->o.one_per_step && e->waiting) { /* the first to ask, alone */
        request *r = e->waiting;
        r->taking = r->n - r->done < budget ? r->n - r->done : budget;
        in[0] = r;
        *n_in = r->taking;
        return 1;
    }
    for (request *r = e->waiting; r && n < e->o.n_seq && tokens < e->o.n_batch; r = r->next)
        if (r->n - r->done == 1) { /* a generation step (or a prompt's last token) */
            r->taking = 1;
            tokens++;
            in[n++] = r;
        }
    if (budget > e->o.n_batch - tokens) budget = e->o.n_batch - tokens; /* a call holds n_batch */
    for (request *r = e->waiting; r && budget > 0 && n < e->o.n_seq; r = r->next)
        if (!r->taking) { /* prompt tokens, in arrival order */
            int k = r->n - r->done < budget ? r->n - r->done : budget;
            r->taking = k;
            budget -= k;
            tokens += k;
            in[n++] = r;
        }
    /* increasing sequences (insertion sort: n <= n_seq) */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && in[j]->seq < in[j - 1]->seq; j--) {
            request *t = in[j];
            in[j] = in[j - 1];
            in[j - 1] = t;
        }
    *n_in = tokens;
    return n;
}

/* Makes one step: gathers, decodes without the lock, settles. Called and returns under e->mu,
 * with e->decoding set by the caller. */
static void make_step(chat_engine *e) {
    double start = now_ms(), due;
    while (!e->o.one_per_step && !e->want_hold && (due = gather_due(e, start)) > 0) {
        double left = due - now_ms();
        if (left <= 0) break;
        struct timespec until;
        deadline_in(&until, left);
        pthread_cond_timedwait(&e->cv, &e->mu, &until);
    }
    request **in = malloc((size_t)e->o.n_seq * sizeof *in);
    if (!in) { /* every waiting request fails; nothing was decoded */
        for (request *r = e->waiting; r; r = r->next) {
            r->status = -1;
            r->rc = -1;
        }
        e->waiting = NULL;
        return;
    }
    int n_tokens = 0;
    int n_req = choose(e, in, &n_tokens);
    struct llama_batch *b = &e->batch;
    b->n_tokens = 0;
    for (int i = 0; i < n_req; i++) {
        request *r = in[i];
        for (int k = 0; k < r->taking; k++) {
            int j = b->n_tokens++;
            int t = r->done + k;
            b->token[j] = r->tokens[t];
            b->pos[j] = r->pos0 + t;
            b->n_seq_id[j] = 1;
            b->seq_id[j][0] = r->seq;
            b->logits[j] = r->logits && t == r->n - 1;
        }
    }
    pthread_mutex_unlock(&e->mu);
    int gated = n_tokens ? fe_cpu_gate_enter(e->o.gate, e->o.threads) : 0;
    double t0 = now_ms();
    int rc = n_tokens ? llama_decode(e->lctx, *b) : 0;
    double t1 = now_ms();
    if (n_tokens) fe_cpu_gate_leave(e->o.gate, gated);
    if (!rc) { /* each finished request's logits, at its last token's index in the batch */
        int j = 0;
        for (int i = 0; i < n_req; i++) {
            request *r = in[i];
            j += r->taking;
            if (r->logits && r->done + r->taking == r->n)
                memcpy(r->logits, llama_get_logits_ith(e->lctx, j - 1),
                       (size_t)e->n_vocab * sizeof *r->logits);
        }
    }
    pthread_mutex_lock(&e->mu);
    e->decode_ms = t1 - t0;
    e->st.steps++;
    e->st.step_tokens += (uint64_t)n_tokens;
    e->st.step_seqs += (uint64_t)n_req;
    if (n_req > 1) e->st.shared_steps++;
    for (int i = 0; i < n_req; i++) {
        request *r = in[i];
        if (rc) { /* a failed call: every request in it fails (what it decoded is undone by
                     its session, which cuts its sequence back) */
            r->status = -1;
            r->rc = rc;
        } else {
            r->done += r->taking;
            if (r->done == r->n) r->status = 1;
        }
        if (r->status) e->settled_ms[r->seq] = now_ms();
        r->taking = 0;
    }
    free(in);
    request **p = &e->waiting; /* the settled ones leave the queue */
    while (*p)
        if ((*p)->status) *p = (*p)->next;
        else p = &(*p)->next;
}

int chat_engine_decode(chat_engine *e, llama_seq_id seq, const llama_token *tokens, int n,
                       llama_pos pos0, float *logits, char *err, size_t errsz) {
    if (n <= 0) return 0;
    if (seq < 0 || seq >= e->o.n_seq) {
        seterr(err, errsz, "sequence %d is not one of the engine's %d", (int)seq, e->o.n_seq);
        return -1;
    }
    request r = {.seq = seq, .tokens = tokens, .n = n, .pos0 = pos0, .logits = logits};
    pthread_mutex_lock(&e->mu);
    if (e->answering[seq] && e->settled_ms[seq] > 0) { /* how long it took to ask again */
        double t = now_ms() - e->settled_ms[seq];
        e->think_ms[seq] = e->think_ms[seq] > 0 ? 0.5 * e->think_ms[seq] + 0.5 * t : t;
    }
    request **tail = &e->waiting;
    while (*tail)
        tail = &(*tail)->next;
    *tail = &r;
    pthread_cond_broadcast(&e->cv); /* the engine thread, idle or gathering a step */
    while (!r.status)
        pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    if (r.status > 0) return 0;
    seterr(err, errsz, "llama_decode failed (%d)%s", r.rc, r.rc == 1 ? ": the context is full" : "");
    return -1;
}

int chat_engine_call(chat_engine *e, int (*fn)(void *arg), void *arg) {
    call c = {.fn = fn, .arg = arg};
    pthread_mutex_lock(&e->mu);
    call **tail = &e->calls;
    while (*tail)
        tail = &(*tail)->next;
    *tail = &c;
    pthread_cond_broadcast(&e->cv);
    while (!c.done)
        pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    return c.rc;
}

/* The engine thread: a step when requests wait, a call when calls wait, in turns when both do;
 * neither while the context is held (chat_engine_lock) or wanted by a holder. */
static void *engine_main(void *arg) {
    chat_engine *e = arg;
    pthread_mutex_lock(&e->mu);
    int call_last = 0;
    for (;;) {
        int free_ = !e->held && !e->want_hold;
        if (free_ && e->calls && !(call_last && e->waiting)) {
            call *c = e->calls;
            e->calls = c->next;
            e->decoding = 1;
            pthread_mutex_unlock(&e->mu);
            int gated = fe_cpu_gate_enter(e->o.gate, e->o.threads);
            c->rc = c->fn(c->arg);
            fe_cpu_gate_leave(e->o.gate, gated);
            pthread_mutex_lock(&e->mu);
            e->decoding = 0;
            c->done = 1;
            call_last = 1;
            pthread_cond_broadcast(&e->cv);
        } else if (free_ && e->waiting) {
            e->decoding = 1;
            make_step(e);
            e->decoding = 0;
            call_last = 0;
            pthread_cond_broadcast(&e->cv);
        } else if (e->stop && !e->waiting && !e->calls) {
            break;
        } else {
            pthread_cond_wait(&e->cv, &e->mu);
        }
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}
