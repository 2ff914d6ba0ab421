/* itest_move_old: what the move_old tests share: the plan, old queues of
 * every kind made and filled with stamped messages, the step run and its
 * state carried over, and reading what arrived. Names from here are
 * prefixed imove_.
 *
 * test_move_old_*.c (integration): the move_old step on a real
 * RabbitMQ node (CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER,
 * password env:CUTOVER_TEST_PASSWORD). Old TTL'd queues hold messages
 * stamped with the AMQP timestamp, with a header (epoch ms and RFC 3339)
 * and unstamped; after the step every moved message arrives at its
 * destination never before the moment its old queue would have let it out
 * (checked against the test's own arithmetic, not the step's stamps), with
 * its body, properties and application headers and without x-death; the
 * ones that cannot go stay in their old queue. A queue whose dead-letter
 * target is no destination stops the step before anything moves; a
 * returned publish leaves the message in place; a resumed step skips the
 * queues its pass had finished. After a move, remove_old deletes a queue
 * the last pass emptied without waiting its old TTL, and still leaves one
 * holding what the move left (until its not-before, and while it holds
 * it), one published into since, and one whose feeder is still there.
 * Each test has a vhost of its own, deleted at teardown whatever happens. */
#ifndef CUTOVER_ITEST_MOVE_OLD_H
#define CUTOVER_ITEST_MOVE_OLD_H

#define _DEFAULT_SOURCE	/* usleep */
#include <sys/types.h>
#include <sys/wait.h>

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "itest_broker.h"
#include "itest_run.h"
#include "ladder.h"
#include "old_path.h"
#include "plan.h"
#include "step.h"

#define DEST "itmv.dest"
#define SEC 1000LL
#define MIN (60 * SEC)

/* One message the test put in an old queue, and what it expects. */
struct sent {
	char body[64];
	const char *queue;
	int64_t not_before_ms;	/* the test's own: entry + TTL; 0: not moved */
	bool arrived;
};

extern struct plan *imove_plan;
extern struct step_ctx imove_ctx;

int imove_setup(void **state);

/* The AMQP URL of the vhost imove_setup made for the test. */
const char *imove_vhost_url(void);

int imove_teardown(void **state);

/* Loads a plan of the test's vhost named NAME: BODY after its broker
 * section. */
struct plan *imove_load(const char *name, const char *body);

/* Loads the test plan (old queues '^old\.', a 1 s ladder of 7 levels: up
 * to 127 s, destination DEST) with ENTRY as move_old.entry and BOUND as
 * unknown_entry_max_lateness, opens its context and declares its ladder. */
void imove_start(const char *entry, const char *bound);

/* imove_start with REST as the plan's last sections (its steps, and what
 * they need) instead of "steps: [measure_horizon, declare_ladder]". */
void imove_start_with(const char *entry, const char *bound, const char *rest);

/* Declares classic old queue NAME with TTL_MS dead-lettering through the
 * default exchange with key DLK (NULL: none). */
void imove_old_queue(const char *name, int64_t ttl_ms, const char *dlk);

/* The same dead-lettering through exchange DLX ("" the default). */
void imove_old_queue_to(const char *name, int64_t ttl_ms, const char *dlx,
    const char *dlk);

extern struct sent imove_sent[64];
extern size_t imove_nsent;

/* Publishes BODY to old queue Q through the default exchange: with
 * timestamp TS_S (0: none), header x-sent-at HDR_MS (0: none) or HDR_TEXT
 * (NULL: none), and an application header x-app. NB is what the test
 * expects as its not-before time (0: it must stay). */
void imove_put(const char *q, const char *body, uint64_t ts_s, int64_t hdr_ms,
    const char *hdr_text, int64_t nb);

/* Waits (30 s at most) until queue Q holds N ready messages: a message
 * rejected with requeue is back in its queue once the broker has handled
 * the reject, which a later request may overtake. */
void imove_wait_depth(const char *q, uint32_t n);

uint32_t imove_depth(const char *q);

/* Runs move_old until it is done (it passes once when the stragglers'
 * window is over). Returns its result; fails the test when it fails. */
json_t *imove_move(void);

/* The entry of queue NAME in R's array LIST ("queues" of move_old's
 * result, "entries" of remove_old's); fails the test when there is none. */
const json_t *imove_entry_in(const json_t *r, const char *list, const char *name);

const json_t *imove_queue_entry(const json_t *r, const char *name);

/* Runs move_old once in a child process on a fresh context of the plan,
 * flipped 10 s before NOW_MS, with the fault that kills it between the
 * target's confirms and the old queue's acks; fails the test unless the
 * child died of SIGKILL there. */
void imove_crash_after_confirm(int64_t now_ms);

/* After a run killed between confirm and ack: consumes DEST (40 s at the
 * most) until each of the three messages whose bodies are PREFIX and their
 * number I, 0 to 2 ("d-0"), has arrived twice, and acks them. Fails the
 * test unless each copy of message I comes no earlier than
 * NOT_BEFORE_MS[I] with an x-cutover-move-id, the same for both copies of
 * one message and another for each other message. */
void imove_expect_twice_one_id(const char *dest, const char *prefix,
    const int64_t not_before_ms[3]);

/* imove_crash_after_confirm with the step's state written, as the engine
 * has it written, into plan PLAN_ID of the store at DB (a connection of
 * the child's own). */
void imove_crash_after_confirm_in(int64_t now_ms, const char *db, int64_t plan_id);

int64_t imove_count_of(const json_t *e, const char *key);

/* measure_horizon's result for the queues there now. */
json_t *imove_measure(void);

#endif
