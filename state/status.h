/* status: the statuses a plan and its steps are stored with, as enums and
 * their names. The names are what the database, the API, the history
 * export and `cutover status` carry; code compares the enums, never the
 * names (nor their first letters). */
#ifndef CUTOVER_STATUS_H
#define CUTOVER_STATUS_H

/* STATUS(ID, NAME): one row per status, in the order a step goes through
 * them. */
#define STEP_STATUS_TABLE(STATUS) \
	STATUS(PENDING, "pending") \
	STATUS(WAITING_APPROVAL, "waiting_approval") \
	STATUS(RUNNING, "running") \
	STATUS(SUCCEEDED, "succeeded") \
	STATUS(FAILED, "failed")

#define PLAN_STATUS_TABLE(STATUS) \
	STATUS(RUNNING, "running") \
	STATUS(SUCCEEDED, "succeeded") \
	STATUS(FAILED, "failed") \
	STATUS(ABORTED, "aborted")

enum step_status {
	STEP_STATUS_UNKNOWN = -1,	/* a name that is none of them */
#define STATUS(id, name) STEP_STATUS_##id,
	STEP_STATUS_TABLE(STATUS)
#undef STATUS
	STEP_STATUS_COUNT
};

enum plan_status {
	PLAN_STATUS_UNKNOWN = -1,
#define STATUS(id, name) PLAN_STATUS_##id,
	PLAN_STATUS_TABLE(STATUS)
#undef STATUS
	PLAN_STATUS_COUNT
};

/* The stored name of S (static), or "?" for a value that is none. */
const char *step_status_name(enum step_status s);
const char *plan_status_name(enum plan_status s);

/* The status NAME stands for (NULL or unknown: *_STATUS_UNKNOWN). */
enum step_status step_status_of(const char *name);
enum plan_status plan_status_of(const char *name);

#endif
