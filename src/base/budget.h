/* budget.h - the check every budget argument goes through inside the library (the list and the
 * public g4v_budget_valid / g4v_budget_check are in g4v.h). */
#ifndef G4V_BASE_BUDGET_H
#define G4V_BASE_BUDGET_H

#include "base/error.h"

/* G4V_OK for one of G4V_BUDGETS; otherwise fails err with g4v_budget_check's message. */
int g4v_budget_require(int budget, g4v_err *err);

#endif
