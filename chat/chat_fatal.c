/* chat_fatal.c - the one line a fatal signal leaves before the process dies of it (chat_fatal.h,
 * docs/CHAT.md §6). */
#define _GNU_SOURCE /* dl_iterate_phdr, REG_RIP */
#include "chat_fatal.h"

#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

enum { MAX_RANGES = 32 };

/* the executable segments of the libraries a crash is told apart by */
typedef struct code_range {
    uintptr_t lo, hi;
    char name[96]; /* the file's base name */
    int kind;      /* 0 llama.cpp's CPU module, 1 libggml/libllama/libmtmd */
} code_range;

static code_range g_ranges[MAX_RANGES];
static volatile sig_atomic_t g_n_ranges;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_installed;

static const int g_signals[] = {SIGILL, SIGSEGV, SIGBUS, SIGFPE};

static int segments(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    const char *path = info->dlpi_name ? info->dlpi_name : "";
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    int kind;
    if (!strncmp(base, "libggml-cpu", 11))
        kind = 0;
    else if (!strncmp(base, "libggml", 7) || !strncmp(base, "libllama", 8) ||
             !strncmp(base, "libmtmd", 7))
        kind = 1;
    else
        return 0;
    for (int i = 0; i < info->dlpi_phnum && g_n_ranges < MAX_RANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        code_range *r = &g_ranges[g_n_ranges];
        r->lo = (uintptr_t)(info->dlpi_addr + ph->p_vaddr);
        r->hi = r->lo + ph->p_memsz;
        size_t n = strlen(base);
        if (n >= sizeof r->name) n = sizeof r->name - 1;
        memcpy(r->name, base, n);
        r->name[n] = 0;
        r->kind = kind;
        g_n_ranges++;
    }
    return 0;
}

/* ---- inside the handler: async-signal-safe only ---------------------------------------------- */

static void put(char *buf, size_t *len, size_t cap, const char *s) {
    while (*s && *len + 1 < cap) buf[(*len)++] = *s++;
}

static void put_hex(char *buf, size_t *len, size_t cap, uintptr_t v) {
    char t[2 + 2 * sizeof v + 1];
    int n = 0;
    t[n++] = '0';
    t[n++] = 'x';
    int started = 0;
    for (int sh = (int)(8 * sizeof v) - 4; sh >= 0; sh -= 4) {
        int d = (int)((v >> sh) & 15);
        if (d || started || sh == 0) {
            t[n++] = "0123456789abcdef"[d];
            started = 1;
        }
    }
    t[n] = 0;
    put(buf, len, cap, t);
}

static void put_dec(char *buf, size_t *len, size_t cap, unsigned long v) {
    char t[24];
    int n = (int)sizeof t - 1;
    t[n] = 0;
    do {
        t[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v && n > 0);
    put(buf, len, cap, t + n);
}

/* what a fault at a code range means, and what to do */
static void put_where(char *b, size_t *n, size_t cap, const code_range *at) {
    if (at && at->kind == 0) {
        put(b, n, cap, " in ");
        put(b, n, cap, at->name);
        put(b, n, cap,
            ", llama.cpp's CPU backend: its kernels for the text model do not run on this "
            "machine. Try G4V_LLAMA_EXTRA_BUFFERS=0 (no AMX or repacked weights); if it still "
            "dies, rebuild llama.cpp with scripts/build-llama.sh and report it with the output "
            "of `g4v info --json` (docs/CHAT.md §6)\n");
    } else if (at) {
        put(b, n, cap, " in ");
        put(b, n, cap, at->name);
        put(b, n, cap,
            ", part of llama.cpp: report it with the command line, the model files and the "
            "output of `g4v info --json` (docs/CHAT.md §6)\n");
    } else {
        put(b, n, cap,
            " in g4v or another library: a bug; report it with the command line and the output "
            "of `g4v info --json`\n");
    }
}

static const char *signal_text(int sig) {
    switch (sig) {
    case SIGILL: return "SIGILL (illegal instruction)";
    case SIGSEGV: return "SIGSEGV (invalid memory access)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGFPE: return "SIGFPE (arithmetic exception)";
    default: return "a fatal signal";
    }
}

static uintptr_t fault_pc(const void *uc_) {
    const ucontext_t *uc = uc_;
    if (!uc) return 0;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
    return 0;
#endif
}

static void on_fatal(int sig, siginfo_t *si, void *uc) {
    uintptr_t pc = fault_pc(uc);
    if (!pc && si && sig == SIGILL) pc = (uintptr_t)si->si_addr;
    const code_range *at = NULL;
    for (int i = 0; i < g_n_ranges; i++)
        if (pc >= g_ranges[i].lo && pc < g_ranges[i].hi) at = &g_ranges[i];
    char b[900];
    size_t n = 0;
    put(b, &n, sizeof b, "g4v: fatal signal ");
    put(b, &n, sizeof b, signal_text(sig));
    if (si && (si->si_code == SI_USER || si->si_code == SI_TKILL || si->si_code == SI_QUEUE)) {
        /* sent, not raised by an instruction: where the thread stood says nothing */
        put(b, &n, sizeof b, ", sent by process ");
        put_dec(b, &n, sizeof b, (unsigned long)si->si_pid);
        put(b, &n, sizeof b, ", not raised by the code running here\n");
    } else {
        put(b, &n, sizeof b, " at ");
        put_hex(b, &n, sizeof b, pc);
        put_where(b, &n, sizeof b, at);
    }
    ssize_t w = write(STDERR_FILENO, b, n);
    (void)w;
    /* die of the same signal: the default action once the handler returns (a fault re-runs the
     * instruction; a sent signal stays pending until then) */
    signal(sig, SIG_DFL);
    raise(sig);
}

/* ---- installing ------------------------------------------------------------------------------ */

void chat_fatal_install(void) {
    pthread_mutex_lock(&g_lock);
    g_n_ranges = 0;
    dl_iterate_phdr(segments, NULL);
    if (!g_installed) {
        g_installed = 1;
        for (size_t i = 0; i < sizeof g_signals / sizeof g_signals[0]; i++) {
            struct sigaction old;
            if (sigaction(g_signals[i], NULL, &old)) continue;
            int has_own = (old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != NULL
                                                      : old.sa_handler != SIG_DFL;
            if (has_own) continue; /* a sanitizer's, or the program's own */
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_sigaction = on_fatal;
            sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
            sigemptyset(&sa.sa_mask);
            sigaction(g_signals[i], &sa, NULL);
        }
    }
    pthread_mutex_unlock(&g_lock);
}
