/* view_result: a step's recorded result as the plan document carries it,
 * its long lists left out when it is large (view_result.c). */
#ifndef CUTOVER_VIEW_RESULT_H
#define CUTOVER_VIEW_RESULT_H

#include <jansson.h>

#define VIEW_RESULT_INLINE	65536	/* bytes of result the plan carries whole */
#define VIEW_LIST_INLINE	200	/* entries of a list a brief still carries */
#define VIEW_POINTER_MAX	128

/* For a step's recorded result TEXT (JSON, may be NULL) longer than
 * VIEW_RESULT_INLINE bytes: sets *RESULT to it parsed with every array of
 * more than VIEW_LIST_INLINE entries that is a member of the result or of
 * one of its object members replaced by [], and *ELIDED to
 * [{pointer, count}] naming each (JSON pointers into the full result).
 * Leaves both NULL when the result is short, has no such list, or is not
 * a JSON object: the caller then carries it whole. */
void view_result_brief(const char *text, json_t **result, json_t **elided);

#endif
