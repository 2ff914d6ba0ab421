/* mgmt: a client for the RabbitMQ management HTTP API (libcurl + jansson).
 *
 * One struct mgmt talks to one broker and one virtual host over one reused
 * libcurl easy handle (HTTP keep-alive), with basic authentication whose
 * password is an "env:NAME" reference resolved at every request and never
 * written into a message. It reads what cutover needs to measure the old
 * delay queues and verify a ladder (queues, one queue or exchange, the
 * bindings of an exchange, policies, nodes and where queues run) and
 * writes policies (remove_old's fences). Anything else goes through
 * mgmt_request(). What only tests and bench use (the overview, paginated
 * listings, putting and deleting queues, exchanges and bindings) is in
 * tests/support/mgmt_test.h.
 *
 * Every call returns 0 or a negative code: MGMT_NOT_FOUND where "not
 * found" is a normal answer (a caller tests for it before it treats a
 * negative code as a failure), else a MGMT_ERR_* code; either way with a
 * message in the caller's ERR buffer (ERRLEN bytes; ERR may be NULL) that
 * names the call and says why (method, encoded path, HTTP status and the
 * broker's reason, or what kept the answer from coming, with the base
 * URL); the password is never in it,
 * even where an answer quotes it (it becomes "***"):
 *   GET /api/overview: HTTP 401 (not_authorized: Login failed) as user bob
 *   PUT /api/policies/%2F/p: HTTP 400 (bad_request: Validation failed ...)
 *   GET /api/overview: connection refused (http://127.0.0.1:15999)
 *
 * A struct mgmt is not thread-safe: one thread uses it at a time (the
 * engine). Management statistics (messages, consumers) lag the broker by
 * up to about 5-10 s; exact, current counts come from an AMQP passive
 * declare (broker.h). */
#ifndef CUTOVER_MGMT_H
#define CUTOVER_MGMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "errbuf.h"
#include "tls.h"

/* The return codes: X(NAME, CODE, WHAT), WHAT as mgmt_status_name gives
 * it. */
#define MGMT_STATUS_MAP(X)						\
	X(MGMT_OK, 0, "done")						\
	/* bad argument, URL or password reference */			\
	X(MGMT_ERR_ARG, -1, "bad argument")				\
	/* refused, DNS, timeout */					\
	X(MGMT_ERR_TRANSPORT, -2, "no answer")				\
	/* HTTP 401 or 403 */						\
	X(MGMT_ERR_AUTH, -3, "not authorised")				\
	/* any other unexpected HTTP status */				\
	X(MGMT_ERR_HTTP, -4, "unexpected HTTP status")			\
	/* not the JSON answer expected */				\
	X(MGMT_ERR_ANSWER, -5, "unexpected answer")			\
	X(MGMT_ERR_NOMEM, -6, "out of memory")				\
	/* 404: the object does not exist (not a failure where a call	\
	 * documents it) */						\
	X(MGMT_NOT_FOUND, -7, "not found")

/* enum mgmt_status, and mgmt_status_name(RC): what mgmt code RC means, in
 * a word or three; "unknown" for any other value. */
ERRBUF_CODES(mgmt_status, MGMT_STATUS_MAP, mgmt_status_name);

#define MGMT_PAGE_SIZE_MAX 500	/* the broker refuses more (400) */
#define MGMT_ANSWER_MAX	(256u * 1024 * 1024) /* bytes, at most */

struct mgmt;

/* Opens a client for the management API at BASE_URL ("http://host:15672",
 * https too, optionally with a path prefix; no credentials, query or
 * fragment), for virtual host VHOST ("/" is fine), as USERNAME with the
 * password named by PASSWORD_REF, which must be "env:NAME". NAME must be
 * set now (checked here, so a missing variable fails early) and is read
 * again at every request. TIMEOUT_MS (> 0) bounds each whole request; the
 * connect phase gets the smaller of TIMEOUT_MS and 5 s (mgmt_set_timeouts
 * changes both). Nothing is sent: use mgmt_overview to check the broker.
 *
 * libcurl: every mgmt_open calls curl_global_init and every mgmt_close
 * curl_global_cleanup; libcurl counts these calls, initialises on the first
 * and cleans up on the last, so any number of opens and closes is fine and
 * this module keeps no global state. Since libcurl 7.84 these two calls are
 * thread-safe when curl_version_info() reports CURL_VERSION_THREADSAFE
 * (Debian 12's 7.88 does); with an older libcurl, make the first mgmt_open
 * (or your own curl_global_init) before starting other threads.
 *
 * Returns 0 and stores a new client in *OUT (the caller frees it with
 * mgmt_close), or a negative code with ERR set and *OUT left NULL. */
int mgmt_open(const char *base_url, const char *vhost, const char *username,
    const char *password_ref, long timeout_ms, struct mgmt **out,
    char *err, size_t errlen);

/* mgmt_open for an https:// base URL with the plan's TLS settings TLS
 * (NULL: verify against the system's CAs and the URL's host; copied, see
 * tls.h). TLS failures (unknown CA, name mismatch, expired, handshake, a
 * client certificate required) come back as MGMT_ERR_TRANSPORT from the
 * first request, in words naming TLS's place in the plan. */
int mgmt_open_tls(const char *base_url, const struct tls_opts *tls,
    const char *vhost, const char *username, const char *password_ref,
    long timeout_ms, struct mgmt **out, char *err, size_t errlen);

/* mgmt_open over the NBASES (>= 1) BASE_URLS of one broker's nodes (a
 * cluster): a request that gets no HTTP answer from the node in use (refused,
 * timed out, closed; GET, PUT and DELETE only, which may be repeated) is made
 * again on the next node in the order given, wrapping round, and the node
 * that answers is used from then on; TLS as for mgmt_open_tls. ERR then says why each node failed.
 *
 * On a later node than the first, the client goes back to the list's
 * order: once MGMT_RETURN_AFTER_MS (mgmt_set_return_after) have passed
 * since it moved there or last tried, a GET, PUT or DELETE is sent to the
 * earlier nodes first, in order, each connect within 2 s at most; the
 * first that answers is used from then on ("management: URL answers
 * again; back to it from URL" is logged), and when none does the request
 * goes to the node in use as before. */
int mgmt_open_list(const char *const *base_urls, size_t nbases,
    const struct tls_opts *tls, const char *vhost, const char *username,
    const char *password_ref, long timeout_ms, struct mgmt **out, char *err,
    size_t errlen);

#define MGMT_RETURN_AFTER_MS 30000

/* How long M, on a later node than the first of its list, waits before it
 * tries the earlier ones again (see mgmt_open_list): MS, or never when
 * MS <= 0. */
void mgmt_set_return_after(struct mgmt *m, int64_t ms);

/* Closes the connection and frees M. M may be NULL. */
void mgmt_close(struct mgmt *m);

/* How many of M's requests got no HTTP answer (refused, timed out,
 * closed; not a TLS refusal) since mgmt_open, its clients for reading
 * queues by name included: as broker_losses, what tells a caller that
 * failed whether the node's silence or absence was why. */
unsigned long mgmt_losses(const struct mgmt *m);

/* The virtual host M was opened for (owned by M). */
const char *mgmt_vhost(const struct mgmt *m);

/* Percent-encodes S as one path segment or query value: every byte but
 * A-Z a-z 0-9 - . _ ~ becomes %XX, so "/" is %2F, "#" is %23 and a space
 * %20. Writes a NUL-terminated string into OUT (OUTLEN bytes, at most
 * 3 * strlen(S) + 1 needed). Returns its length, or -1 if it does not fit. */
int mgmt_escape(const char *s, char *out, size_t outlen);

/* Sends one request: METHOD is GET, PUT, POST or DELETE; PATH starts with
 * "/api/" and is already encoded (mgmt_escape), query string included;
 * BODY, if not NULL, is sent as compact JSON (borrowed, not modified).
 * Stores the HTTP status in *HTTP_STATUS (0 when there was no answer) if
 * HTTP_STATUS is not NULL.
 *
 * Returns 0 on any 2xx status, and then, if ANSWER is not NULL, stores the
 * parsed answer in *ANSWER (a new reference the caller releases with
 * json_decref; NULL when the body is empty). Returns MGMT_NOT_FOUND on
 * 404 (ERR set too, for callers that treat it as an error), or a negative
 * code with ERR set; *ANSWER is NULL whenever 0 is not returned. */
int mgmt_request(struct mgmt *m, const char *method, const char *path,
    const json_t *body, json_t **answer, long *http_status,
    char *err, size_t errlen);

/* ---- the broker itself ---- */

/* The broker's version and feature flags. Strings are borrowed from the
 * JSON the struct owns. */
struct mgmt_about {
	const char *version;		/* rabbitmq_version, "3.10.8" */
	const char *erlang;		/* erlang_version, NULL if not said */
	json_t *overview;		/* GET /api/overview (some columns) */
	json_t *flags;			/* GET /api/feature-flags: an array of
					 * {name, state, stability} */
};

/* Reads the broker's version (GET /api/overview?columns=...) and, with
 * FLAGS_TOO, every feature flag with its state (GET /api/feature-flags:
 * on RabbitMQ 3.10 only a user with the administrator tag may, HTTP 401
 * otherwise; on 4.0 any management user). Read-only. Returns 0 and fills
 * *OUT (free with mgmt_about_free; FLAGS is NULL without FLAGS_TOO), or a
 * negative code with *OUT empty (MGMT_ERR_AUTH for a refused read,
 * MGMT_ERR_ANSWER when the overview names no version). */
int mgmt_read_about(struct mgmt *m, bool flags_too, struct mgmt_about *out,
    char *err, size_t errlen);

/* The state of feature flag NAME as A lists it: "enabled", "disabled",
 * "state_changing" (or "unknown" when the broker gives none), or NULL
 * when the broker does not know the flag at all (borrowed from A). */
const char *mgmt_about_flag(const struct mgmt_about *a, const char *name);

/* Frees what A holds and zeroes it. A may be zeroed or NULL. */
void mgmt_about_free(struct mgmt_about *a);

/* ---- nodes ---- */

/* One cluster member as GET /api/nodes shows it. Strings are borrowed
 * from the list; integers are -1 when the broker did not say (a node that
 * is down, or one whose statistics have not come in since it started). */
struct mgmt_node {
	const char *name;		/* "rabbit@host" */
	bool running;
	int64_t uptime_ms;		/* of the Erlang VM: a full restart (or
					 * a kill) sets it back near zero */
	const char *os_pid;		/* the VM's process id, NULL if not said */
	/* Counters since the rabbit application started: they go back to
	 * zero when only the application restarts (stop_app / start_app),
	 * which uptime does not show. */
	int64_t connection_created;
	int64_t channel_created;
	int64_t queue_declared;
};

/* The cluster's members, in the broker's order; strings are borrowed
 * from JSON, which the list owns. */
struct mgmt_node_list {
	struct mgmt_node *v;
	size_t n;
	json_t *json;
};

/* Every member of the cluster, running or not: GET /api/nodes?columns=
 * name,running,uptime,os_pid,connection_created,channel_created,
 * queue_declared. Returns 0 and fills *OUT (free with
 * mgmt_node_list_free), or a negative code (MGMT_ERR_ANSWER when a node
 * has no name) with *OUT empty. */
int mgmt_list_nodes(struct mgmt *m, struct mgmt_node_list *out, char *err,
    size_t errlen);

/* Frees what L holds and empties it. L may be empty or NULL. */
void mgmt_node_list_free(struct mgmt_node_list *l);

/* Where a queue runs: a quorum queue's leader and its members (all, and
 * those online), a classic queue's node. Strings are borrowed from the
 * list. */
struct mgmt_queue_place {
	const char *name;
	const char *type;		/* "classic", "quorum", "stream", "" */
	const char *leader;		/* quorum: the leader (NULL: none, the
					 * queue is down); classic: its node */
	size_t members, online;		/* quorum; classic: 1 and 1 */
};

/* Every queue's place, sorted by name (strcmp order); strings and V are
 * owned by the list. */
struct mgmt_queue_place_list {
	struct mgmt_queue_place *v;
	size_t n;
	json_t *json;
};

/* Every queue of the vhost and where it runs, in one unpaginated listing
 * without statistics: GET /api/queues/{vhost}?disable_stats=true&
 * enable_queue_totals=true&columns=name,type,node,leader,members,online.
 * After a node restart a quorum queue can stay down while the API says
 * "live": then leader is null and online is empty (DESIGN §3). Returns 0
 * and fills *OUT (free with mgmt_queue_place_list_free), or a negative
 * code with *OUT empty. */
int mgmt_list_queue_places(struct mgmt *m, struct mgmt_queue_place_list *out,
    char *err, size_t errlen);

/* The same for the N queues NAMES only, one GET /api/queues/{vhost}/{name}
 * each (columns as above): at thousands of queues in the vhost, a few
 * queues cost the broker far less this way than one listing of all. A
 * queue that does not exist is left out, as the listing would. Returns 0
 * and fills *OUT, or a negative code with *OUT empty. */
int mgmt_list_queue_places_of(struct mgmt *m, const char *const *names, size_t n,
    struct mgmt_queue_place_list *out, char *err, size_t errlen);

/* Finds NAME in L (binary search). Returns the entry (owned by L) or NULL. */
const struct mgmt_queue_place *mgmt_queue_place_find(
    const struct mgmt_queue_place_list *l, const char *name);

/* Frees what L holds and empties it. L may be empty or NULL. */
void mgmt_queue_place_list_free(struct mgmt_queue_place_list *l);

/* ---- queues ---- */

/* One queue. Strings belong to the list or info that holds the struct;
 * integers are -1 when the broker did not say or the argument is absent. */
struct mgmt_queue {
	const char *name;
	const char *type;		/* "classic", "quorum", "stream", "" */
	const char *policy;		/* policy applied, NULL if none */
	int64_t messages;		/* depth: ready + unacknowledged */
	int64_t message_ttl;		/* x-message-ttl argument, ms */
	int64_t expires;		/* x-expires argument, ms */
	int64_t policy_message_ttl;	/* message-ttl of the policy, ms */
	const char *dead_letter_exchange; /* x-dead-letter-exchange argument
					 * ("" the default exchange), NULL if none */
	const char *dead_letter_routing_key; /* x-dead-letter-routing-key
					 * argument, NULL if none */
	int64_t publish;		/* message_stats.publish (statistics,
					 * cumulative): mgmt_list_queues_counted
					 * only, -1 otherwise or when absent */
	int32_t consumers;		/* -1 unknown (last, with DURABLE: a
					 * listing holds 100,000 of these) */
	bool durable;
};

struct strblocks;

/* An array of queues sorted by name (strcmp order). V and the strings it
 * points to (in blocks: strblocks.h) are owned by the list; free them
 * with mgmt_queue_list_free. */
struct mgmt_queue_list {
	struct mgmt_queue *v;
	size_t n;
	struct strblocks *strings;	/* private: names, policies,
					 * dead-letter arguments */
};

/* Every queue of the vhost, the way that stays fast at 10,000 queues: one
 * unpaginated GET /api/queues/{vhost}?disable_stats=true&
 * enable_queue_totals=true&columns=name,type,durable,arguments,policy,
 * messages (about 1 s for 10,000 queues: the broker reads the queue
 * records and their totals without the statistics database), plus two
 * small requests for what that listing cannot carry (checked on 3.10.8:
 * with disable_stats it has no effective_policy_definition and no
 * consumers): GET /api/policies/{vhost}, to fill policy_message_ttl from
 * the named policy's definition, and GET /api/consumers/{vhost}, counted
 * per queue (statistics: a new consumer shows after a few seconds). The
 * caller filters names itself (e.g. with regexec).
 *
 * Operator policies are not resolved here (the fast listing does not name
 * them); one can only lower a TTL, so a horizon computed without them is
 * never too early. mgmt_get_queue reports the true effective value.
 *
 * Returns 0 and fills *OUT (the caller frees it with mgmt_queue_list_free),
 * or a negative code with *OUT empty. */
int mgmt_list_queues(struct mgmt *m, struct mgmt_queue_list *out,
    char *err, size_t errlen);

/* mgmt_list_queues with the statistics on, so that each queue also
 * carries its cumulative publish counter (message_stats.publish; -1 for a
 * queue nothing was published into yet), read as mgmt_list_queues_all
 * reads them (a queue there throughout the listing is in it, one created
 * or deleted meanwhile may not be). One listing instead of two for a
 * caller that needs both the queues and their counters (remove_old).
 * Each queue's policy is the one its record names (the fast listing's,
 * read after the statistics): the statistics name a policy
 * applied seconds ago only later. Same return as mgmt_list_queues. */
int mgmt_list_queues_counted(struct mgmt *m, struct mgmt_queue_list *out,
    char *err, size_t errlen);

/* What the last mgmt_list_queues_all of a client cost. */
struct mgmt_pages {
	size_t requests;		/* HTTP requests made */
	size_t gone;			/* queues the names' listing named that
					 * were gone by their own request (404) */
	size_t queues;			/* in the listing */
	bool whole;			/* read in one request
					 * (MGMT_ONE_LISTING_MAX) */
};

/* Up to this many queues in the broker (all its vhosts, as its overview
 * counts them), mgmt_list_queues_all reads them in one request: at
 * 10,000 queues that is 1.3 s against 4.8 s by name, and the broker
 * answers within about 10 s even on a loaded node, far from the 60 s its
 * listener waits. Past it one listing grows faster than the queues (3.10
 * on 2 CPUs: 4.8 s at 30,000, 24 s at 60,000, 52 s at 100,000). */
#define MGMT_ONE_LISTING_MAX 20000

/* Every queue of the vhost with statistics on, into *OUT: a new JSON
 * array of the queue objects (the caller releases it), sorted by name
 * (strcmp order), no name twice. COLUMNS is the comma list of the columns
 * wanted (dotted for a member: "message_stats.publish"); the name is
 * asked for too when it does not start with it.
 *
 * When the broker's overview counts at most MGMT_ONE_LISTING_MAX queues,
 * in one request: GET /api/queues/{vhost}?columns=COLUMNS. Otherwise (or
 * when that gets no answer) by name: the vhost's names in one listing
 * without statistics (disable_stats: the broker walks its queues once and
 * computes nothing), then GET /api/queues/{vhost}/{name}?columns=COLUMNS
 * for each, in name order.
 *
 * Why by name: without statistics off, one listing makes the broker
 * compute every queue's statistics before it sends a byte, and past about
 * 50,000 queues the management listener closes the idle connection first
 * (60 s). Its paged listing (?page=N) answers each page within seconds,
 * but builds and sorts the vhost's whole queue list for every page: N /
 * 500 walks of it, which at 100,000 queues is over 600 s a listing (3.10
 * on 2 CPUs, against 52 s in one request). A queue's own GET costs the
 * broker about the same at 10,000 queues as at 100,000 (0.45 and 0.59 ms
 * of its CPU): by name, a listing grows with the queues.
 *
 * So every queue that existed throughout the listing is in it, once, as
 * its own GET found it; one deleted after the names were read is left out
 * (counted, mgmt_last_pages' gone), one created after them is not in it.
 * A caller must not read a queue's absence as "gone" without asking for
 * it by name.
 *
 * Returns 0 and fills *OUT, or a negative code with *OUT NULL:
 * MGMT_ERR_ANSWER for an answer that is not a listing of named queues in
 * name order, or another request's code. */
int mgmt_list_queues_all(struct mgmt *m, const char *columns, json_t **out,
    char *err, size_t errlen);

/* Takes ITEM (borrowed: released after the call), an element of a
 * listing. Returns 0, or a negative code with ERR, which ends the
 * listing with it. */
typedef int (*mgmt_item_fn)(void *arg, json_t *item, char *err, size_t errlen);

/* mgmt_list_queues_all handing each queue to FN (with ARG), in name
 * order, as it is read, instead of gathering them into one array: a
 * caller that keeps a few columns of each never holds the listing's tree
 * (about 1.1 KB a queue with the watch's columns). A failure after some
 * queues were handed over leaves the caller to drop them. Returns as
 * mgmt_list_queues_all, or MGMT_ERR_ARG without a client or FN. */
int mgmt_list_queues_each(struct mgmt *m, const char *columns, mgmt_item_fn fn,
    void *arg, char *err, size_t errlen);

/* What M's last mgmt_list_queues_all cost (zeroed at its start). */
struct mgmt_pages mgmt_last_pages(const struct mgmt *m);

/* Finds NAME in L (binary search). Returns the entry (owned by L) or NULL. */
const struct mgmt_queue *mgmt_queue_list_find(const struct mgmt_queue_list *l,
    const char *name);

/* Frees what L holds and empties it. L may be empty or NULL. */
void mgmt_queue_list_free(struct mgmt_queue_list *l);

/* One queue as GET /api/queues/{vhost}/{name} shows it. Q's strings and
 * the json_t pointers are borrowed from JSON, which the struct owns. */
struct mgmt_queue_info {
	struct mgmt_queue q;		/* policy_message_ttl: effective */
	const char *operator_policy;	/* NULL if none */
	json_t *arguments;		/* object, never NULL */
	json_t *effective_policy;	/* effective_policy_definition */
	json_t *json;			/* the answer; owns the above */
};

/* Reads queue NAME. Returns 0 and fills *OUT (free with
 * mgmt_queue_info_free), MGMT_NOT_FOUND if there is no such queue (or no
 * such vhost; *OUT zeroed), or a negative code. messages and consumers
 * are statistics (-1 until the queue has reported once, then lagging). */
int mgmt_get_queue(struct mgmt *m, const char *name,
    struct mgmt_queue_info *out, char *err, size_t errlen);

/* Releases what Q holds and zeroes it. Q may be zeroed or NULL. */
void mgmt_queue_info_free(struct mgmt_queue_info *q);

/* ---- exchanges ---- */

/* One exchange; strings and ARGUMENTS are borrowed from JSON, which the
 * struct owns. */
struct mgmt_exchange {
	const char *name;
	const char *type;		/* "direct", "topic", "fanout", ... */
	bool durable;
	bool auto_delete;
	bool internal;
	const char *policy;		/* the policy that applies, NULL if none
					 * (current: the broker updates it as a
					 * policy is set or cleared) */
	json_t *arguments;		/* object, never NULL */
	json_t *json;
};

/* Reads exchange NAME (GET /api/exchanges/{vhost}/{name}). Returns 0 and
 * fills *OUT (free with mgmt_exchange_free), MGMT_NOT_FOUND (*OUT
 * zeroed), or a negative code. */
int mgmt_get_exchange(struct mgmt *m, const char *name,
    struct mgmt_exchange *out, char *err, size_t errlen);

/* Releases what X holds and zeroes it. X may be zeroed or NULL. */
void mgmt_exchange_free(struct mgmt_exchange *x);

/* ---- bindings ---- */

enum mgmt_dest {
	MGMT_DEST_QUEUE,		/* "q" in binding paths */
	MGMT_DEST_EXCHANGE		/* "e" */
};

struct mgmt_binding {
	const char *source;
	const char *destination;
	enum mgmt_dest destination_type;
	const char *routing_key;
	const char *properties_key;	/* id, for mgmt_delete_binding */
	json_t *arguments;		/* object, never NULL */
};

/* Bindings in the broker's order; all strings and json_t pointers are
 * borrowed from JSON, which the list owns. */
struct mgmt_binding_list {
	struct mgmt_binding *v;
	size_t n;
	json_t *json;
};

/* Every binding whose source is EXCHANGE (GET /api/exchanges/{vhost}/
 * {name}/bindings/source). The broker answers an empty list, not 404, for
 * an exchange that does not exist: use mgmt_get_exchange for existence.
 * Returns 0 and fills *OUT (free with mgmt_binding_list_free), or a
 * negative code. */
int mgmt_list_bindings_from(struct mgmt *m, const char *exchange,
    struct mgmt_binding_list *out, char *err, size_t errlen);

/* Every binding whose destination is EXCHANGE (GET /api/exchanges/
 * {vhost}/{name}/bindings/destination: exchanges that route into it),
 * like mgmt_list_bindings_from. */
int mgmt_list_bindings_to(struct mgmt *m, const char *exchange,
    struct mgmt_binding_list *out, char *err, size_t errlen);

/* Frees what L holds and empties it. L may be empty or NULL. */
void mgmt_binding_list_free(struct mgmt_binding_list *l);

/* ---- policies ---- */

struct mgmt_policy {
	const char *name;
	const char *pattern;		/* a regex over object names */
	const char *apply_to;		/* "queues", "exchanges", "all" */
	int priority;
	json_t *definition;		/* object, never NULL */
};

/* Policies; strings and json_t pointers are borrowed from JSON, which
 * the list owns. */
struct mgmt_policy_list {
	struct mgmt_policy *v;
	size_t n;
	json_t *json;
};

/* Every policy of the vhost (GET /api/policies/{vhost}). Returns 0 and
 * fills *OUT (free with mgmt_policy_list_free), or a negative code. */
int mgmt_list_policies(struct mgmt *m, struct mgmt_policy_list *out,
    char *err, size_t errlen);

/* Frees what L holds and empties it. L may be empty or NULL. */
void mgmt_policy_list_free(struct mgmt_policy_list *l);

/* The definition of policy NAME in PL (borrowed from PL's JSON), or NULL:
 * no such policy, or NAME NULL. The one lookup of a policy by the name an
 * object's "policy" gives. */
const json_t *mgmt_policy_definition(const struct mgmt_policy_list *pl,
    const char *name);

/* Creates or replaces policy NAME: PUT /api/policies/{vhost}/{name} with
 * {"pattern", "definition", "apply-to", "priority"}. DEFINITION is an
 * object (borrowed), e.g. {"message-ttl": 3000}; APPLY_TO "queues",
 * "exchanges" or "all" (NULL: "all"). The broker validates the definition
 * (HTTP 400 with its reason otherwise). Returns 0 or a negative code. */
int mgmt_put_policy(struct mgmt *m, const char *name, const char *pattern,
    const char *apply_to, int priority, const json_t *definition,
    char *err, size_t errlen);

/* Deletes policy NAME. Returns 0, MGMT_NOT_FOUND, or a negative code. */
int mgmt_delete_policy(struct mgmt *m, const char *name,
    char *err, size_t errlen);

#endif /* CUTOVER_MGMT_H */
