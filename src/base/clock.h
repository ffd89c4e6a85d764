/* clock.h - the one wall clock libg4v and its tools time things with. */
#ifndef G4V_BASE_CLOCK_H
#define G4V_BASE_CLOCK_H

/* Seconds on CLOCK_MONOTONIC (immune to wall-clock changes); only differences are meaningful. */
double g4v_now_s(void);

#endif
