/* cmd_pull.c - `g4v pull REPO[@REVISION]`: a model fetched from the Hugging Face Hub
 * (common/hub.h): by default only the vision tower of a safetensors checkpoint, into g4v's
 * own cache; --whole every file (of --quant, for a GGUF repo) into the Hugging Face cache. A
 * progress bar on a terminal (stderr), nothing on a pipe, --json progress lines on stdout for
 * programs, --quiet for nothing but errors. The last line says where the model is and how much
 * was fetched against the whole repository. */
#include "cli.h"
#include "hub.h"
#include "options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontend.h"

typedef struct pull_args {
    const char *repo;
    const char *revision;
    const char *quant;
    int whole, json, quiet;
} pull_args;

#define O(member) FE_FIELD(pull_args, member)

static const fe_opt rows[] = {
    {.name = "repo", .kind = FE_OPT_STRING, .flags = FE_OPT_POSITIONAL | FE_OPT_REQUIRED,
     O(repo), .arg = "REPO[@REVISION]",
     .help = "the Hub repository (google/gemma-4-E4B-it, or hf:google/gemma-4-E4B-it), "
             "optionally at a branch, tag or commit"},
    {.name = "revision", .kind = FE_OPT_STRING, O(revision), .arg = "REV",
     .help = "the branch, tag or commit (default main; REPO@REV says the same)"},
    {.name = "whole", .kind = FE_OPT_FLAG, O(whole), .lo = 1,
     .help = "every file, into the Hugging Face cache (default for a checkpoint: only the "
             "vision tower, into g4v's cache)"},
    {.name = "quant", .kind = FE_OPT_STRING, O(quant), .arg = "QUANT",
     .help = "a GGUF repository: only the .gguf files of this quantization (Q4_K_M) and the "
             "mmproj"},
    {.name = "json", .kind = FE_OPT_FLAG, O(json), .lo = 1,
     .help = "progress as JSON lines on stdout, then one result object"},
    {.name = "quiet", .shortopt = 'q', .kind = FE_OPT_FLAG, O(quiet), .lo = 1,
     .help = "print nothing but errors (and the model's folder)"},
};

static const fe_cmd pull_cmd = {
    .name = "pull",
    .usage = "pull REPO[@REVISION] [--whole] [--quant Q] [--json | --quiet]",
    .about =
        "Fetches a model from the Hugging Face Hub (docs/GUIDE.md \"Models by name\").\n"
        "A safetensors checkpoint: its config files and only the vision tensors' bytes (HTTP\n"
        "Range), as a vision-only checkpoint in $G4V_HUB_CACHE (else\n"
        "$XDG_CACHE_HOME/g4v/hub, ~/.cache/g4v/hub). --whole, or a repo of other files (GGUF):\n"
        "the files whole into the Hugging Face cache ($HF_HUB_CACHE, else $HF_HOME/hub, else\n"
        "~/.cache/huggingface/hub), which transformers and `g4v models` read too; files\n"
        "already there are not fetched again, an interrupted pull resumes.\n"
        "Environment: HF_ENDPOINT, HF_TOKEN (else the token of `hf auth login`),\n"
        "HF_HUB_OFFLINE=1 (refuse the network). Gated models (Gemma): accept the licence on\n"
        "the model's page, then give a token. --model hf:REPO[@REV] in encode, info, serve\n"
        "and chat pulls the same way when the model is not on disk yet.\n",
    .heading = "options:",
    FE_OPTS(rows),
    .epilog = "exit codes: 0 ok, 1 usage error, 3 model error (not found, gated, refused\n"
              "answers, network), 4 cannot write the cache (disk full)\n",
};

#undef O

typedef struct view {
    int bar, json;
    double t0;
    char line[256];
} view;

static void human(uint64_t b, char *out, size_t cap) {
    if (b >= (1ull << 30)) snprintf(out, cap, "%.2f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20)) snprintf(out, cap, "%.1f MiB", (double)b / (1ull << 20));
    else if (b >= (1ull << 10)) snprintf(out, cap, "%.1f KiB", (double)b / (1ull << 10));
    else snprintf(out, cap, "%llu B", (unsigned long long)b);
}

static void on_progress(void *user, const hub_progress *p) {
    view *v = user;
    double dt = fe_now_s() - v->t0;
    double rate = dt > 0 ? (double)p->done / dt : 0;
    if (v->json) {
        static const char *ev[] = {"progress", "start", "done", "present"};
        printf("{\"event\":\"%s\",\"file\":\"", ev[p->event & 3]);
        for (const char *c = p->file ? p->file : ""; *c; c++)
            if (*c == '"' || *c == '\\') printf("\\%c", *c);
            else if ((unsigned char)*c >= 0x20) putchar(*c);
        printf("\",\"file_bytes\":%llu,\"file_total\":%llu,\"bytes\":%llu,\"total\":%llu,"
               "\"rate\":%.0f}\n", (unsigned long long)p->file_done,
               (unsigned long long)p->file_total, (unsigned long long)p->done,
               (unsigned long long)p->total, rate);
        fflush(stdout);
        return;
    }
    if (!v->bar) return;
    char a[32], b[32], c[32], f[32], eta[32] = "--:--";
    human(p->done, a, sizeof a);
    human(p->total, b, sizeof b);
    human((uint64_t)rate, c, sizeof c);
    human(p->file_done, f, sizeof f);
    if (rate > 0 && p->total > p->done) {
        double s = (double)(p->total - p->done) / rate;
        snprintf(eta, sizeof eta, "%02d:%02d", (int)(s / 60), (int)s % 60);
    }
    int pct = p->total ? (int)(100.0 * (double)p->done / (double)p->total) : 100;
    char bar[21];
    for (int i = 0; i < 20; i++) bar[i] = i < pct / 5 ? '#' : '.';
    bar[20] = 0;
    const char *name = p->file ? p->file : "";
    size_t L = strlen(name);
    fprintf(stderr, "\r[%s] %3d%% %s / %s  %s/s  ETA %s  %s%.28s (%s)\033[K", bar, pct, a, b, c,
            eta, L > 28 ? "..." : "", L > 28 ? name + L - 28 : name, f);
    if (p->event == 2 || p->event == 3) fputc('\n', stderr);
    fflush(stderr);
}

int cmd_pull(int argc, char **argv) {
    pull_args a = {0};
    int rc = fe_opt_run(&pull_cmd, argc, argv, &a);
    if (rc) return rc == FE_OPT_HELP ? G4V_EXIT_OK : G4V_EXIT_USAGE;
    char spec[600], repo[300], rev[300], quant[128], err[4096];
    const char *s = a.repo;
    snprintf(spec, sizeof spec, "%s%s", strncmp(s, "hf:", 3) ? "hf:" : "", s);
    int p = hub_parse_name(spec, repo, sizeof repo, rev, sizeof rev, quant, sizeof quant, err,
                           sizeof err);
    if (p <= 0) {
        fprintf(stderr, "g4v pull: %s\n", err);
        return G4V_EXIT_USAGE;
    }
    if (a.revision) {
        if (strchr(s, '@')) {
            fprintf(stderr, "g4v pull: a revision both in REPO@REV and --revision\n");
            return G4V_EXIT_USAGE;
        }
        snprintf(rev, sizeof rev, "%s", a.revision);
    }
    if (quant[0] && a.quant) {
        fprintf(stderr, "g4v pull: a quantization both in REPO:QUANT and --quant\n");
        return G4V_EXIT_USAGE;
    }
    if (a.json && a.quiet) {
        fprintf(stderr, "g4v pull: --json and --quiet exclude each other\n");
        return G4V_EXIT_USAGE;
    }
    view v = {.bar = !a.quiet && !a.json && isatty(2), .json = a.json, .t0 = fe_now_s()};
    hub_opts o = {.repo = repo, .revision = rev,
                  .mode = (a.whole || quant[0] || a.quant) ? HUB_WHOLE : HUB_AUTO,
                  .quant = a.quant ? a.quant : quant[0] ? quant : NULL,
                  .progress = (v.bar || v.json) ? on_progress : NULL, .user = &v};
    hub_result r;
    rc = hub_pull(&o, &r, err, sizeof err);
    if (v.bar) fprintf(stderr, "\r\033[K");
    if (rc) {
        if (a.json) {
            printf("{\"event\":\"error\",\"message\":\"");
            for (const char *c = err; *c; c++)
                if (*c == '"' || *c == '\\') printf("\\%c", *c);
                else if ((unsigned char)*c >= 0x20) putchar(*c);
            printf("\"}\n");
        }
        fprintf(stderr, "g4v pull: %s\n", err);
        return rc == HUB_ERR_USAGE ? G4V_EXIT_USAGE
               : rc == HUB_ERR_DISK ? G4V_EXIT_OUTPUT
                                    : G4V_EXIT_MODEL;
    }
    char f[32], w[32], t[32];
    human(r.fetched, f, sizeof f);
    human(r.wanted, w, sizeof w);
    human(r.whole, t, sizeof t);
    if (a.json) {
        printf("{\"event\":\"result\",\"path\":\"");
        for (const char *c = r.path; *c; c++)
            if (*c == '"' || *c == '\\') printf("\\%c", *c);
            else if ((unsigned char)*c >= 0x20) putchar(*c);
        printf("\",\"commit\":\"%s\",\"vision_only\":%s,\"fetched\":%llu,\"model_bytes\":%llu,"
               "\"whole_bytes\":%llu,\"files\":%d,\"files_present\":%d}\n", r.commit,
               r.vision_only ? "true" : "false", (unsigned long long)r.fetched,
               (unsigned long long)r.wanted, (unsigned long long)r.whole, r.files,
               r.files_reused);
    } else if (a.quiet) {
        printf("%s\n", r.path);
    } else {
        if (r.vision_only)
            printf("%s@%.12s: vision tower only, %s fetched of %s for the whole checkpoint%s\n",
                   repo, r.commit, f, t, r.files_reused && !r.fetched ? " (already there)" : "");
        else
            printf("%s@%.12s: %d file(s), %s (%s fetched now, %d already there; the repository "
                   "is %s)\n", repo, r.commit, r.files, w, f, r.files_reused, t);
        printf("%s\n", r.path);
    }
    if (fflush(stdout)) return G4V_EXIT_OUTPUT;
    return G4V_EXIT_OK;
}
