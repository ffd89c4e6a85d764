/* cpu_gate.c - a FIFO semaphore counted in threads (cpu_gate.h). FIFO, not "whoever fits":
 * a team of all the cores must not wait forever behind a stream of small ones. */
#include "cpu_gate.h"

#include <unistd.h>

void fe_cpu_gate_init(fe_cpu_gate *g, int units) {
    if (units <= 0) units = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (units < 1) units = 1;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->units = units;
    g->used = 0;
    g->next = g->head = 0;
    g->waits = 0;
}

void fe_cpu_gate_destroy(fe_cpu_gate *g) {
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

int fe_cpu_gate_enter(fe_cpu_gate *g, int n) {
    if (!g) return 0;
    if (n < 1) n = 1;
    if (n > g->units) n = g->units; /* a team larger than the budget runs alone */
    pthread_mutex_lock(&g->mu);
    uint64_t t = g->next++;
    if (t != g->head || g->used + n > g->units) g->waits++;
    while (t != g->head || g->used + n > g->units)
        pthread_cond_wait(&g->cv, &g->mu);
    g->used += n;
    g->head++;
    pthread_cond_broadcast(&g->cv); /* the next ticket may fit too */
    pthread_mutex_unlock(&g->mu);
    return n;
}

void fe_cpu_gate_leave(fe_cpu_gate *g, int taken) {
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    g->used -= taken;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}
