/* test_cpu_gate.c - the server's CPU budget (common/cpu_gate.h): never more threads inside than
 * its units, teams larger than the budget clamped and alone, and first come first served (a
 * small team that would fit does not pass a large one waiting before it). */
#include "cpu_gate.h"
#include "test_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* How many entrants the gate has seen wait (its counter, under its mutex). */
static uint64_t waits_of(fe_cpu_gate *g) {
    pthread_mutex_lock(&g->mu);
    uint64_t w = g->waits;
    pthread_mutex_unlock(&g->mu);
    return w;
}

static void wait_for_waits(fe_cpu_gate *g, uint64_t n) {
    for (int i = 0; i < 2000 && waits_of(g) < n; i++) sleep_ms(1);
}

static void test_clamp_and_null(void) {
    fe_cpu_gate g;
    fe_cpu_gate_init(&g, 2);
    CHECK(g.units == 2);
    int t = fe_cpu_gate_enter(&g, 5); /* larger than the budget: clamped, runs alone */
    CHECK(t == 2);
    fe_cpu_gate_leave(&g, t);
    CHECK(fe_cpu_gate_enter(&g, 0) == 1); /* a team is at least one thread */
    fe_cpu_gate_leave(&g, 1);
    CHECK(g.used == 0 && g.waits == 0);
    fe_cpu_gate_destroy(&g);
    CHECK(fe_cpu_gate_enter(NULL, 4) == 0); /* no gate: everything in */
    fe_cpu_gate_leave(NULL, 0);
    fe_cpu_gate_init(&g, 0); /* one unit per online CPU */
    CHECK(g.units >= 1);
    fe_cpu_gate_destroy(&g);
}

/* Order of entry: each waiter writes its name when it gets in. */
typedef struct {
    fe_cpu_gate *g;
    int n;         /* team size */
    char name;
    char *log;
    atomic_int *pos;
} entrant;

static void *enter_and_log(void *p) {
    entrant *e = p;
    int t = fe_cpu_gate_enter(e->g, e->n);
    e->log[atomic_fetch_add(e->pos, 1)] = e->name;
    fe_cpu_gate_leave(e->g, t);
    return NULL;
}

static void test_fifo(void) {
    fe_cpu_gate g;
    fe_cpu_gate_init(&g, 2);
    char log[4] = {0};
    atomic_int pos = 0;
    int held = fe_cpu_gate_enter(&g, 1); /* one unit busy */
    entrant big = {&g, 2, 'B', log, &pos}, small = {&g, 1, 's', log, &pos};
    pthread_t tb, ts;
    pthread_create(&tb, NULL, enter_and_log, &big); /* needs both units: waits */
    wait_for_waits(&g, 1);
    pthread_create(&ts, NULL, enter_and_log, &small); /* would fit, but came later: waits */
    wait_for_waits(&g, 2);
    sleep_ms(20);
    CHECK_MSG(atomic_load(&pos) == 0, "%d got in while a unit was held", atomic_load(&pos));
    fe_cpu_gate_leave(&g, held);
    pthread_join(tb, NULL);
    pthread_join(ts, NULL);
    CHECK_MSG(log[0] == 'B' && log[1] == 's', "entry order %c%c, not Bs", log[0], log[1]);
    CHECK(g.used == 0 && g.waits == 2);
    fe_cpu_gate_destroy(&g);
}

/* Many teams of 1-3 threads through a gate of 3 units: the threads inside never exceed it. */
typedef struct {
    fe_cpu_gate *g;
    atomic_int *inside, *most;
    unsigned seed;
} worker;

static void *churn(void *p) {
    worker *w = p;
    for (int i = 0; i < 300; i++) {
        int n = 1 + (int)(rand_r(&w->seed) % 3);
        int t = fe_cpu_gate_enter(w->g, n);
        int now = atomic_fetch_add(w->inside, t) + t;
        int m = atomic_load(w->most);
        while (now > m && !atomic_compare_exchange_weak(w->most, &m, now)) {
        }
        if (rand_r(&w->seed) % 4 == 0) sleep_ms(0);
        atomic_fetch_sub(w->inside, t);
        fe_cpu_gate_leave(w->g, t);
    }
    return NULL;
}

static void test_budget_held(void) {
    fe_cpu_gate g;
    fe_cpu_gate_init(&g, 3);
    atomic_int inside = 0, most = 0;
    worker w[6];
    pthread_t th[6];
    for (int i = 0; i < 6; i++) {
        w[i] = (worker){&g, &inside, &most, 17u * (unsigned)i + 1};
        pthread_create(&th[i], NULL, churn, &w[i]);
    }
    for (int i = 0; i < 6; i++) pthread_join(th[i], NULL);
    CHECK_MSG(atomic_load(&most) <= 3, "%d threads inside a gate of 3", atomic_load(&most));
    CHECK(atomic_load(&most) >= 2); /* teams counted by their size, not as one */
    CHECK(g.used == 0 && g.head == g.next);
    fe_cpu_gate_destroy(&g);
}

int main(void) {
    test_clamp_and_null();
    test_fifo();
    test_budget_held();
    return test_summary("test_cpu_gate");
}
