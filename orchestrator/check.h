/* check: `cutover check` for one plan (see check.c). */
#ifndef CUTOVER_CHECK_H
#define CUTOVER_CHECK_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* Checks the plan FILE: its text is BUF (LEN bytes) when BUF is not NULL,
 * else the file is read. A valid plan's dry run and design review are
 * printed to OUT unless JSON; every error is printed to ERROUT as
 * FILE:LINE:COLUMN: message unless JSON. Appends the plan's JSON result
 * ({"file", "valid", and "errors" or the dry run}) to the array RESULTS.
 * Returns 0 when the plan is valid, -1 otherwise. */
int check_plan(const char *file, const char *buf, size_t len, int json, FILE *out,
    FILE *errout, json_t *results);

#endif
