/* budget.c - the soft-token budgets: one list (G4V_BUDGETS in g4v.h), one message. */
#include "base/budget.h"

#include <stdio.h>

#define STR_(...) #__VA_ARGS__
#define STR(...) STR_(__VA_ARGS__)

static const int budgets[] = {G4V_BUDGETS};

int g4v_budget_valid(int budget) {
    for (size_t i = 0; i < sizeof budgets / sizeof budgets[0]; i++)
        if (budget == budgets[i]) return 1;
    return 0;
}

int g4v_budgets(int *out, int max) {
    int n = (int)(sizeof budgets / sizeof budgets[0]);
    for (int i = 0; out && i < n && i < max; i++) out[i] = budgets[i];
    return n;
}

int g4v_default_budget(void) { return G4V_DEFAULT_BUDGET; }

int g4v_default_video_budget(void) { return G4V_DEFAULT_VIDEO_BUDGET; }

size_t g4v_video_alloc_cap(void) { return G4V_VIDEO_ALLOC_CAP; }

g4v_status g4v_budget_check(int budget, char *errbuf, size_t errbuf_size) {
    int ok = g4v_budget_valid(budget);
    if (!errbuf || !errbuf_size) return ok ? G4V_OK : G4V_ERR_ARG;
    errbuf[0] = '\0';
    if (ok) return G4V_OK;
    snprintf(errbuf, errbuf_size, "unsupported token budget %d (use one of %s)", budget,
             STR(G4V_BUDGETS));
    return G4V_ERR_ARG;
}

int g4v_budget_require(int budget, g4v_err *err) {
    char msg[128];
    int st = g4v_budget_check(budget, msg, sizeof msg);
    return st ? g4v_fail(err, st, "%s", msg) : G4V_OK;
}
