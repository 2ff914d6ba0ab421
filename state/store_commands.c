/* store_commands: the commands table — the operators' commands (approve,
 * retry, abort, ack) as rows the engine reads in order and marks handled
 * once. Whether a command may be given is store_admit_command.c's rule. */
#include <stdio.h>
#include <string.h>

#include "store.h"
#include "store_int.h"

int
store_command_insert(struct store *s, int64_t plan_id, const char *kind, int step_idx,
    int64_t alert_id, const char *actor, const char *comment, int64_t now_ms,
    int64_t *id, char *err, size_t errlen)
{
	static const char sql[] =
	    "INSERT INTO commands (plan_id, kind, step_idx, alert_id, actor, comment,"
	    " created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

	return store__write(s, "recording command", id, err, errlen, sql, "ItnpttI",
	    plan_id, kind, step_idx, alert_id, actor, comment != NULL ? comment : "",
	    now_ms);
}

/* store__read's FN for command_row: the command into ARG. */
static int
read_command(sqlite3_stmt *st, void *arg)
{
	struct store_command *out = arg;

	out->id = sqlite3_column_int64(st, 0);
	store__copystr(out->kind, sizeof(out->kind), sqlite3_column_text(st, 1));
	out->step_idx = sqlite3_column_int(st, 2);
	out->alert_id = sqlite3_column_int64(st, 3);
	store__copystr(out->actor, sizeof(out->actor), sqlite3_column_text(st, 4));
	store__copystr(out->comment, sizeof(out->comment), sqlite3_column_text(st, 5));
	out->created_ms = sqlite3_column_int64(st, 6);
	out->handled_ms = sqlite3_column_int64(st, 7);
	store__copystr(out->outcome, sizeof(out->outcome), sqlite3_column_text(st, 8));
	return 0;
}

/* Reads the one command that WHERE (with ?1 the plan, ?2 ARG) selects.
 * Returns 0, STORE_NOT_FOUND when none, -1 on failure. */
static int
command_row(struct store *s, const char *where, int64_t plan_id, int64_t arg,
    struct store_command *out, char *err, size_t errlen)
{
	char sql[512];
	int r;

	snprintf(sql, sizeof(sql), "SELECT id, kind, coalesce(step_idx, -1),"
	    " coalesce(alert_id, 0), actor, comment, created_ms, coalesce(handled_ms, 0),"
	    " coalesce(outcome, '') FROM commands WHERE %s", where);
	memset(out, 0, sizeof(*out));
	r = store__read_one(s, "reading commands", read_command, out, err, errlen, sql,
	    "II", plan_id, arg);
	if (r == 0)
		out->plan_id = plan_id;
	return r;
}

int
store_command_next(struct store *s, int64_t plan_id, struct store_command *out,
    char *err, size_t errlen)
{
	return command_row(s, "plan_id = ?1 AND handled_ms IS NULL AND ?2 = 0"
	    " ORDER BY id LIMIT 1", plan_id, 0, out, err, errlen);
}

int
store_command_get(struct store *s, int64_t plan_id, int64_t id,
    struct store_command *out, char *err, size_t errlen)
{
	return command_row(s, "plan_id = ?1 AND id = ?2", plan_id, id, out, err, errlen);
}

int
store_command_done(struct store *s, int64_t id, int64_t now_ms, const char *outcome,
    char *err, size_t errlen)
{
	static const char sql[] =
	    "UPDATE commands SET handled_ms = ?1, outcome = ?2"
	    " WHERE id = ?3 AND handled_ms IS NULL";

	return store__write_one(s, "marking command handled", "no such command waiting",
	    err, errlen, sql, "ItI", now_ms, outcome, id);
}
