/* review: the design-review checklist of the bounded-delay-ladder article,
 * each of its twelve questions answered from a plan — or marked as one only
 * the application can answer, so the reviewer is reminded to. */
#ifndef CUTOVER_REVIEW_H
#define CUTOVER_REVIEW_H

#include <jansson.h>

#include "plan.h"

#define REVIEW_QUESTIONS 12

/* Returns a new JSON array of REVIEW_QUESTIONS objects
 * {"question": "...", "answered_by": "plan"|"application", "answer": "...",
 *  "warning": "..." (only where the plan's choice deserves a second look)},
 * in the article's order, or NULL when out of memory. The caller owns it. */
json_t *review_answers(const struct plan *p);

#endif
