/* bench_encoder.c - whole-encoder benchmark: seconds per image, GFLOP/s, fraction of the
 * measured FMA peak, peak RSS and model load time for e4b-shaped checkpoints, side by side with
 * the PyTorch peer (bench/torch_peer.py) measured in the same run.
 *
 * usage: bench_encoder --model DIR [--budgets 70,140,280,560,1120] [--threads 1,2]
 *                      [--reps N] [--reps-large N] [--peer CMD] [--hf-peer CMD] [--peer-reps N]
 *                      [--sharp-model DIR] [--precise | --int8]
 * Each (budget, threads) point runs in a forked child so that its peak RSS (getrusage) and load
 * time are its own: load the model (g4v_model_load, warm page cache after the first point), one
 * warm-up encode (first touch of the workspace), then --reps timed encodes (default 5; 3 for
 * budgets >= 560), median reported. The image is random RGB already at the square target size
 * for the budget, so g4v_encode_rgb's resize is a same-size pass (a few ms at most).
 * FLOPs as docs/NUMERICS.md §7: 2L(4D^2 + 3DI) per layer + 4L^2 Hd attention + 2L(3p^2)D + 2NDT.
 * The peaks (the shared table, bench_peaks.h: best of 5 per thread count, round-robin) are
 * measured once, for all the thread counts, before the first point; each row divides by the peak
 * of its own thread count.
 * --peer CMD is run once per thread count as `CMD --model DIR --threads T --budgets ...
 * --sides ... --reps ...` and its "peer budget=B dtype=X ... median_s=S" lines are joined into
 * the table; "-" where the peer was not run or failed. --hf-peer CMD is a second peer run the
 * same way after it, in the HF columns (bench/hf_peer.py: transformers' own Gemma4VisionModel on
 * PyPI torch, where --peer is bench/torch_peer.py on Debian's).
 * --sharp-model DIR: after each thread count's table, the same points on a second checkpoint (an
 * all-sharp tower: tools/gen_checkpoint.py --qk-scale 2, every layer above the sharpness
 * threshold, so FAST runs every layer as PRECISE, docs/NUMERICS.md §6.5) beside the ordinary
 * one, with how many layers each ran as PRECISE (g4v_model_info.n_precise).
 */
#include "bench_peaks.h"
#include "bench_util.h"

#include "base/pool.h"
#include "g4v.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAXB = 8, MAXT = 4 };

static int parse_list(const char *s, int *out, int max) {
    int n = 0;
    while (*s && n < max) {
        out[n++] = atoi(s);
        const char *c = strchr(s, ',');
        if (!c) break;
        s = c + 1;
    }
    return n;
}

typedef struct {
    double median, load_s, gflop, rss_mb;
    int tokens, L, side, ok;
    int n_sharp, n_precise, layers; /* g4v_model_info: layers run as PRECISE (NUMERICS §6.5) */
} point;

/* Child: load, warm up, time reps encodes; write a point to fd. */
static void child(const char *dir, int budget, int threads, int reps, int precise, int fd) {
    point pt = {0};
    char msg[512];
    g4v_model_options mo;
    g4v_model_options_init(&mo);
    mo.math = (g4v_math_mode)precise; /* `precise` is the mode: 0 FAST, 1 PRECISE, 2 INT8 */
    g4v_model *m = NULL;
    g4v_ctx *ctx = NULL;
    double t0 = bench_now();
    if (g4v_model_load(dir, &mo, &m, msg, sizeof msg)) {
        fprintf(stderr, "bench_encoder: %s\n", msg);
        goto out;
    }
    pt.load_s = bench_now() - t0;
    g4v_model_info info;
    g4v_model_get_info(m, &info, NULL, 0);
    pt.n_sharp = info.n_sharp;
    pt.n_precise = info.n_precise;
    pt.layers = info.num_layers;
    int tw, th;
    if (g4v_model_plan(m, 4096, 4096, budget, &tw, &th, &pt.tokens, NULL, 0)) goto out;
    pt.side = tw;
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = threads;
    if (g4v_ctx_create(m, &co, &ctx, msg, sizeof msg)) goto out;
    size_t n = (size_t)tw * th * 3;
    uint8_t *rgb = malloc(n);
    if (!rgb) goto out;
    unsigned s = 12345;
    for (size_t i = 0; i < n; i++)
        rgb[i] = (uint8_t)((s = s * 1103515245u + 12345u) >> 24);
    g4v_encode_options eo;
    g4v_encode_options_init(&eo);
    eo.budget = budget;
    g4v_result r;
    double ts[64];
    if (reps > 64) reps = 64;
    for (int i = -1; i < reps; i++) {
        double t = bench_now();
        if (g4v_encode_rgb(ctx, rgb, tw, th, (size_t)tw * 3, &eo, &r)) {
            fprintf(stderr, "bench_encoder: %s\n", g4v_ctx_error(ctx));
            goto out;
        }
        if (i >= 0) ts[i] = bench_now() - t;
    }
    pt.median = bench_median(ts, reps);
    double L = (double)(tw / info.patch_size) * (th / info.patch_size), D = info.hidden_size;
    double I = info.intermediate_size, Hd = (double)info.num_heads * info.head_dim;
    double p2 = (double)info.patch_size * info.patch_size;
    pt.L = (int)L;
    pt.gflop = (info.num_layers * (2 * L * (4 * D * D + 3 * D * I) + 4 * L * L * Hd) +
                2 * L * 3 * p2 * D + 2.0 * r.n_tokens * D * info.dim) *
               1e-9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    pt.rss_mb = ru.ru_maxrss / 1024.0;
    pt.ok = 1;
    free(rgb);
out:
    g4v_ctx_free(ctx);
    g4v_model_free(m);
    if (write(fd, &pt, sizeof pt) != (ssize_t)sizeof pt) _exit(1);
    _exit(0);
}

static point run_point(const char *dir, int budget, int threads, int reps, int precise) {
    point pt = {0};
    int fds[2];
    if (pipe(fds)) return pt;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        child(dir, budget, threads, reps, precise, fds[1]);
    }
    close(fds[1]);
    if (pid > 0 && read(fds[0], &pt, sizeof pt) != (ssize_t)sizeof pt) memset(&pt, 0, sizeof pt);
    close(fds[0]);
    if (pid > 0) waitpid(pid, NULL, 0);
    return pt;
}

/* Runs a peer command once for thread count T and all budgets (`CMD --model DIR --threads T
 * --budgets .. --sides .. --reps ..`) and reads its "peer budget=B dtype=X ... median_s=S" lines
 * into pb (bf16) and pf (the other dtype); its output is echoed to stderr. */
static void run_peer(const char *peer, const char *dir, int T, const int *budgets, int nb,
                     const point *pts, int peer_reps, double *pb, double *pf) {
    char cmd[4096], bl[256] = "", sl[256] = "", rl[256] = "";
    for (int bi = 0; bi < nb; bi++) {
        size_t o1 = strlen(bl), o2 = strlen(sl), o3 = strlen(rl);
        snprintf(bl + o1, sizeof bl - o1, "%s%d", bi ? "," : "", budgets[bi]);
        snprintf(sl + o2, sizeof sl - o2, "%s%d", bi ? "," : "", pts[bi].side ? pts[bi].side : 48);
        snprintf(rl + o3, sizeof rl - o3, "%s%d", bi ? "," : "",
                 budgets[bi] >= 560 ? (peer_reps > 1 ? peer_reps - 1 : 1) : peer_reps);
    }
    snprintf(cmd, sizeof cmd, "%s --model %s --threads %d --budgets %s --sides %s --reps %s", peer,
             dir, T, bl, sl, rl);
    fprintf(stderr, "bench_encoder: running peer: %s\n", cmd);
    fflush(NULL);
    FILE *f = popen(cmd, "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        int b;
        char dt[8];
        double s;
        const char *ms = strstr(line, "median_s=");
        if (sscanf(line, "peer budget=%d dtype=%7s", &b, dt) == 2 && ms &&
            sscanf(ms, "median_s=%lf", &s) == 1)
            for (int bi = 0; bi < nb; bi++)
                if (budgets[bi] == b) *(strcmp(dt, "bf16") ? &pf[bi] : &pb[bi]) = s;
        fprintf(stderr, "  %s", line);
    }
    if (f) pclose(f);
}

int main(int argc, char **argv) {
    const char *dir = NULL, *peer = NULL, *hf_peer = NULL, *sharp_dir = NULL;
    int budgets[MAXB] = {G4V_BUDGETS}, nb = (int)(sizeof(int[]){G4V_BUDGETS} / sizeof(int)),
        threads[MAXT] = {1, 2}, nt = 2;
    int reps = 5, reps_large = 3, peer_reps = 3, precise = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--precise"))
            precise = 1;
        else if (!strcmp(a, "--int8"))
            precise = 2;
        else if (!v) {
            fprintf(stderr, "bench_encoder: %s needs a value\n", a);
            return 2;
        } else if (!strcmp(a, "--model"))
            dir = v, i++;
        else if (!strcmp(a, "--budgets"))
            nb = parse_list(v, budgets, MAXB), i++;
        else if (!strcmp(a, "--threads"))
            nt = parse_list(v, threads, MAXT), i++;
        else if (!strcmp(a, "--reps"))
            reps = atoi(v), i++;
        else if (!strcmp(a, "--reps-large"))
            reps_large = atoi(v), i++;
        else if (!strcmp(a, "--sharp-model"))
            sharp_dir = v, i++;
        else if (!strcmp(a, "--peer"))
            peer = v, i++;
        else if (!strcmp(a, "--hf-peer"))
            hf_peer = v, i++;
        else if (!strcmp(a, "--peer-reps"))
            peer_reps = atoi(v), i++;
        else {
            fprintf(stderr, "bench_encoder: unknown option %s\n", a);
            return 2;
        }
    }
    if (!dir || reps < 1 || reps_large < 1) {
        fprintf(stderr, "usage: bench_encoder --model DIR [--budgets 70,140,...] [--threads 1,2] "
                        "[--reps N] [--reps-large N] [--peer CMD] [--hf-peer CMD] "
                        "[--peer-reps N] [--sharp-model DIR] [--precise | --int8]\n");
        return 2;
    }
    printf("bench_encoder: %s, %s mode, ISA %s, %ld online CPUs\n", dir,
           precise == 1   ? "PRECISE"
           : precise == 2 ? "INT8"
                          : "FAST",
           getenv("G4V_ISA") ? getenv("G4V_ISA") : "auto",
           sysconf(_SC_NPROCESSORS_ONLN));
    bench_require_isa("bench_encoder");
    bench_peaks pk;
    if (bench_peaks_measure(&pk, threads, nt, 5)) return 1;
    bench_peaks_print(&pk, stderr);
    if (pk.suspect) printf("\nWARNING: the peaks measured inconsistently (busy machine).\n");
    for (int ti = 0; ti < nt; ti++) {
        int T = threads[ti];
        int width = bench_peaks_get(&pk, T, BENCH_FMA_ZMM) > 0 ? 512 : 256;
        double peak = bench_peaks_get(&pk, T, width == 512 ? BENCH_FMA_ZMM : BENCH_FMA_YMM),
               peak_dp = bench_peaks_get(&pk, T, BENCH_DPBF16);
        /* FAST mode multiplies with vdpbf16ps where the CPU has it: that is the peak to meet */
        int use_dp = peak_dp > 0 && !precise;
        double peak_used = use_dp ? peak_dp : peak;
        char dp_txt[64] = "not available on this CPU (no AVX512-BF16)";
        if (peak_dp > 0) snprintf(dp_txt, sizeof dp_txt, "%.0f GFLOP/s", peak_dp);
        printf("\nPeaks measured for %d thread(s) in this run (best of %d): FMA (%d-bit) %.0f "
               "GFLOP/s; vdpbf16ps %s.\n\n",
               T, pk.rounds, width, peak, dp_txt);
        printf(
            "| budget | tokens | L | thr | ours s (median/reps) | GFLOP/s | %% of peak | s at 100%% "
            "of peak | peak RSS MB | load s | torch bf16 s | torch f32 s | torch bf16 / ours | "
            "torch f32 / ours | HF bf16 s | HF f32 s | HF bf16 / ours | HF f32 / ours |\n");
        printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        fflush(stdout);
        point pts[MAXB];
        for (int bi = 0; bi < nb; bi++)
            pts[bi] =
                run_point(dir, budgets[bi], T, budgets[bi] >= 560 ? reps_large : reps, precise);
        /* the peers, once per thread count, all budgets */
        double pb[MAXB] = {0}, pf[MAXB] = {0}, hb[MAXB] = {0}, hf[MAXB] = {0};
        if (peer) run_peer(peer, dir, T, budgets, nb, pts, peer_reps, pb, pf);
        if (hf_peer) run_peer(hf_peer, dir, T, budgets, nb, pts, peer_reps, hb, hf);
        for (int bi = 0; bi < nb; bi++) {
            point *p = &pts[bi];
            int r = budgets[bi] >= 560 ? reps_large : reps;
            if (!p->ok) {
                printf("| %d | - | - | %d | failed | | | | | | | | | | | | | |\n", budgets[bi], T);
                continue;
            }
            char b1[32] = "-", b2[32] = "-", r1[32] = "-", r2[32] = "-";
            if (pb[bi] > 0)
                snprintf(b1, sizeof b1, "%.2f", pb[bi]),
                    snprintf(r1, sizeof r1, "%.1fx", pb[bi] / p->median);
            if (pf[bi] > 0)
                snprintf(b2, sizeof b2, "%.2f", pf[bi]),
                    snprintf(r2, sizeof r2, "%.1fx", pf[bi] / p->median);
            char h1[32] = "-", h2[32] = "-", q1[32] = "-", q2[32] = "-";
            if (hb[bi] > 0)
                snprintf(h1, sizeof h1, "%.2f", hb[bi]),
                    snprintf(q1, sizeof q1, "%.2fx", hb[bi] / p->median);
            if (hf[bi] > 0)
                snprintf(h2, sizeof h2, "%.2f", hf[bi]),
                    snprintf(q2, sizeof q2, "%.2fx", hf[bi] / p->median);
            double gf = p->gflop / p->median;
            /* the floor: these FLOPs at the measured peak, what no kernel can beat here */
            printf("| %d | %d | %d | %d | %.3f (%d) | %.1f | %.0f%% of %.0f %s | %.3f | %.0f | %.2f "
                   "| %s | %s | %s | %s | %s | %s | %s | %s |\n",
                   budgets[bi], p->tokens, p->L, T, p->median, r, gf, 100 * gf / peak_used,
                   peak_used, use_dp ? "bf16" : "FMA", p->gflop / peak_used, p->rss_mb, p->load_s,
                   b1, b2, r1, r2, h1, h2, q1, q2);
            fflush(stdout);
        }
        if (sharp_dir) { /* the same points on the all-sharp tower, beside the ordinary one */
            printf("\nOrdinary vs all-sharp tower (%s: q/k norm weights above the sharpness "
                   "threshold, docs/NUMERICS.md §6.5: its sharp layers run as PRECISE even in "
                   "FAST), %d thread(s), same run:\n\n",
                   sharp_dir, T);
            printf("| budget | tokens | thr | ordinary s | PRECISE layers | all-sharp s | PRECISE "
                   "layers | all-sharp / ordinary |\n|---|---|---|---|---|---|---|---|\n");
            for (int bi = 0; bi < nb; bi++) {
                point *p = &pts[bi];
                point q = run_point(sharp_dir, budgets[bi], T,
                                    budgets[bi] >= 560 ? reps_large : reps, precise);
                if (!p->ok || !q.ok) {
                    printf("| %d | - | %d | failed | | | | |\n", budgets[bi], T);
                    continue;
                }
                printf("| %d | %d | %d | %.3f | %d of %d | %.3f | %d of %d | %.2fx |\n",
                       budgets[bi], p->tokens, T, p->median, p->n_precise, p->layers, q.median,
                       q.n_precise, q.layers, q.median / p->median);
                fflush(stdout);
            }
        }
        (void)width;
    }
    return 0;
}
