/* view_json: the JSON values the views of the store build their documents
 * with (view_json.c), below view.c, view_gate.c and view_notify.c. */
#ifndef CUTOVER_VIEW_JSON_H
#define CUTOVER_VIEW_JSON_H

#include <jansson.h>

/* A JSON string of S, with any byte that is not valid UTF-8 replaced by
 * '?', or JSON null when S is NULL. Never returns NULL but out of memory. */
json_t *view_string(const char *s);

#endif
