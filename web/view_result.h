/* view_result: a step's recorded result as the plan document carries it,
 * its long lists left out when it is large (view_result.c). */
#ifndef CUTOVER_VIEW_RESULT_H
#define CUTOVER_VIEW_RESULT_H

#include <stdint.h>

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

/* The same of a result read apart from its rows (store_step_get_apart):
 * TEXT as written, its list MEMBER kept as NROWS rows, which the whole
 * result would carry; its other long lists are cut whatever TEXT's length,
 * and MEMBER is named in *ELIDED with NROWS. *RESULT NULL when TEXT does
 * not parse. */
void view_result_brief_apart(const char *text, const char *member, int64_t nrows,
    json_t **result, json_t **elided);

/* Whether a result read apart with NROWS rows of NBYTES in all, its own
 * text TEXTLEN long, is one the plan document carries without them (else
 * it is read whole): view_result_brief would cut that list. */
#define VIEW_ROWS_APART(nrows, nbytes, textlen) \
	((nrows) > VIEW_LIST_INLINE && (textlen) + (nbytes) + (nrows) > VIEW_RESULT_INLINE)

#endif
