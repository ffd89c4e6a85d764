/* cpu_gate.h - the server's CPU budget (docs/SERVICE.md "Threads"): every computation that runs a
 * team of threads (a decode call of the text model, an image or video encoded by libg4v) enters
 * the gate with its team's size and leaves it when done, and the gate lets in at most `units`
 * threads at once, in arrival order. So `g4v serve --lm` never has more compute threads busy
 * than the machine has cores, however many conversations and encode requests arrive together:
 * they take turns at the granularity of one call instead of time-slicing the cores (which
 * slows everyone: the teams' barriers wait for descheduled threads). A team larger than the
 * budget enters alone. A NULL gate lets everything in (g4v chat: one team at a time anyway). */
#ifndef G4V_FRONTEND_CPU_GATE_H
#define G4V_FRONTEND_CPU_GATE_H

#include <pthread.h>
#include <stdint.h>

typedef struct fe_cpu_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int units;          /* threads that may compute at once */
    int used;           /* threads computing now */
    uint64_t next, head; /* tickets: the next one given, the first one still waiting */
    uint64_t waits;      /* entries that had to wait (for tests and metrics) */
} fe_cpu_gate;

/* units <= 0: one per online CPU. */
void fe_cpu_gate_init(fe_cpu_gate *g, int units);
void fe_cpu_gate_destroy(fe_cpu_gate *g);
/* Blocks until n threads (at most units) may compute, after every earlier entrant got in;
 * returns the number taken, to give back to fe_cpu_gate_leave. */
int fe_cpu_gate_enter(fe_cpu_gate *g, int n);
void fe_cpu_gate_leave(fe_cpu_gate *g, int taken);

#endif
