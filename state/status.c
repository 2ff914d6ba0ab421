/* status: the name tables of the plan and step statuses (status.h). */
#include <stddef.h>
#include <string.h>

#include "status.h"

static const char *const step_names[STEP_STATUS_COUNT] = {
#define STATUS(id, name) [STEP_STATUS_##id] = name,
	STEP_STATUS_TABLE(STATUS)
#undef STATUS
};

static const char *const plan_names[PLAN_STATUS_COUNT] = {
#define STATUS(id, name) [PLAN_STATUS_##id] = name,
	PLAN_STATUS_TABLE(STATUS)
#undef STATUS
};

/* The index of NAME in NAMES (N of them), or -1. */
static int
name_index(const char *const *names, int n, const char *name)
{
	for (int i = 0; name != NULL && i < n; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

const char *
step_status_name(enum step_status s)
{
	return (int)s >= 0 && s < STEP_STATUS_COUNT ? step_names[s] : "?";
}

const char *
plan_status_name(enum plan_status s)
{
	return (int)s >= 0 && s < PLAN_STATUS_COUNT ? plan_names[s] : "?";
}

enum step_status
step_status_of(const char *name)
{
	return (enum step_status)name_index(step_names, STEP_STATUS_COUNT, name);
}

enum plan_status
plan_status_of(const char *name)
{
	return (enum plan_status)name_index(plan_names, PLAN_STATUS_COUNT, name);
}
