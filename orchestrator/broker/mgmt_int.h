/* mgmt_int: what the files of the management API client (mgmt_*.c) share:
 * the client struct, the path builder, the request's helpers and the JSON
 * readers. Included only by orchestrator/broker/mgmt_*.c and by
 * tests/support/mgmt_test.c (the calls only tests and bench make); the
 * public contract is mgmt.h. The functions shared across files are named
 * mgmt__, so that none of them can be taken for another module's. */
#ifndef CUTOVER_MGMT_INT_H
#define CUTOVER_MGMT_INT_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include <curl/curl.h>
#include <jansson.h>

#include "mgmt.h"
#include "clock.h"
#include "errbuf.h"
#include "httpbody.h"
#include "tls_curl.h"

#define CONNECT_TIMEOUT_MS	5000L	/* at most, to connect */
#define LISTING_TIMEOUT_MS	120000L	/* at least, for a listing of every
					 * queue of a vhost (mgmt__timeout_ms) */
#define RETURN_CONNECT_MS	2000L	/* at most, to an earlier node again */
#define PATH_MAX_LEN		4096	/* encoded path and query */
#define WHAT_MAX		160	/* "METHOD /path" in messages */
#define EXCERPT_MAX		160	/* bytes of an answer quoted */
#define USER_AGENT		"cutover-mgmt/1"
/* Clients reading queues by name at once (mgmt_all.c): at 100,000
 * queues four answer each GET in 357 us against 588 us for one, and
 * cost the broker 490 us of CPU each against 743 (3.10, 2 CPUs). */
#define MGMT_BY_NAME_CLIENTS	4
#define MGMT_TLS_WHERE		"broker.tls (not given: the system's CA store)"

/* Columns of the fast listing; with disable_stats the broker has no
 * effective_policy_definition and no consumers (checked on 3.10.8). */
#define FAST_COLUMNS	"name,type,durable,arguments,policy,messages"
#define PAGE_COLUMNS	"name,type,durable,arguments,policy," \
			"effective_policy_definition,messages,consumers"
#define QUEUE_COLUMNS	"name,type,durable,arguments,policy," \
			"operator_policy,effective_policy_definition," \
			"messages,consumers"


struct mgmt {
	CURL			*curl;
	struct curl_slist	*hdr_plain;	/* without a body */
	struct curl_slist	*hdr_json;	/* with a JSON body */
	char			*base;		/* http://host:port: bases[cur] */
	char			**bases;	/* every node given, tried in order */
	size_t			 nbases;
	size_t			 cur;
	int64_t			 return_after_ms; /* see mgmt_set_return_after */
	int64_t			 return_from;	/* monotonic ms: moved to a later
						 * node, or last tried an
						 * earlier one in vain */
	char			*vhost;
	char			*vhost_enc;
	char			*username;
	char			*password_env;	/* NAME of env:NAME */
	struct tls_opts		 tls;		/* for https:// (tls.h) */
	long			 connect_ms;
	long			 total_ms;
	long			 request_ms;	/* the bound of the request under
						 * way (mgmt__timeout_ms) */
	int			 global_init;
	unsigned long		 losses;	/* see mgmt_losses */
	long			 one_listing_max; /* see MGMT_ONE_LISTING_MAX */
	/* Tests only (mgmt_test.h): called after each request of
	 * mgmt_list_queues_all, with its number (1: the first). */
	void			(*listing_hook)(void *arg, size_t request);
	void			*listing_hook_arg;
	struct mgmt_pages	 pages;		/* the last mgmt_list_queues_all's */
	struct httpbody		 answer;
	bool			 answer_text;	/* a 2xx answer is left as text
					 * in ANSWER, not parsed
					 * (mgmt__get_items) */
	char			 curlerr[CURL_ERROR_SIZE];
};

/* A path being built: literal pieces and encoded segments. */
struct path {
	char	s[PATH_MAX_LEN];
	size_t	len;
	int	overflow;
};

/* 0, or MGMT_ERR_ARG with ERR when NAME (a KIND's) is empty. */
static inline int
mgmt__check_name(const char *name, const char *kind, char *err, size_t errlen)
{
	if (name == NULL || name[0] == '\0') {
		errbuf_set(err, errlen, "mgmt: %s name is empty", kind);
		return MGMT_ERR_ARG;
	}
	return 0;
}

/* ---- mgmt_open.c ---- */

/* A client of its own on what M is open on (its nodes, TLS, vhost, user
 * and password reference, timeouts), for another thread. Returns 0 and
 * *OUT (mgmt_close), or a code with ERR. */
int mgmt__open_again(const struct mgmt *m, struct mgmt **out, char *err, size_t errlen);

/* ---- mgmt_path.c: building an encoded path ---- */

void mgmt__path_add(struct path *p, const char *lit);
void mgmt__path_seg(struct path *p, const char *seg);
/* Starts P as PREFIX followed by the encoded vhost, e.g. "/api/queues/%2F". */
void mgmt__path_vhost(struct path *p, const struct mgmt *m, const char *prefix);
int mgmt__path_check(const struct path *p, const char *what, char *err,
    size_t errlen);
/* Starts P as PREFIX, the encoded vhost, "/" and the encoded NAME, e.g.
 * "/api/queues/%2F/q". Returns 0, or MGMT_ERR_ARG with ERR when NAME is
 * empty (KIND says what it names). */
int mgmt__path_object(struct path *p, const struct mgmt *m, const char *prefix,
    const char *name, const char *kind, char *err, size_t errlen);

/* ---- mgmt_request.c ---- */

/* A public call's start: refuses a NULL client M or result OUT (ERR
 * names CALL), else empties OUT (SIZE bytes), so that a failure leaves
 * nothing for the caller to free. Returns 0 or MGMT_ERR_ARG. */
int mgmt__begin(const char *call, const struct mgmt *m, void *out, size_t size,
    char *err, size_t errlen);

/* Answers larger than this are not kept as the client's buffer once
 * read: a client that listed 100,000 queues once would hold that text
 * for its whole life. */
#define MGMT_ANSWER_KEEP_MAX (1024u * 1024)

/* Frees M's answer buffer when it grew past MGMT_ANSWER_KEEP_MAX
 * (mgmt_request does after each request, unless the answer is to be
 * read as text: mgmt__get_items then does once it is read). */
void mgmt__answer_release(struct mgmt *m);

/* "METHOD /path" for messages: a long query string is cut to "?...". */
void mgmt__describe(char *out, size_t outlen, const char *method, const char *path);
/* Says in ERR that the listing at PATH was not found (a 404: most likely
 * no such vhost). Returns MGMT_ERR_HTTP. */
int mgmt__listing_not_found(const struct mgmt *m, const char *path, char *err,
    size_t errlen);

/* GET PATH, expecting an array (IS_ARRAY) or an object. A 404 here is an
 * error (a listing of a vhost that does not exist). */
/* The bound of M's request for PATH (encoded, with its query), in ms:
 * M's own, or at least LISTING_TIMEOUT_MS for a listing of every queue of
 * a vhost (GET /api/queues/VHOST or /api/queues): RabbitMQ builds the
 * whole answer before it sends a byte, at about 0.2 ms a queue on an
 * idle 2-CPU node, so a fixed 10 s bound is a ceiling of about 50,000
 * queues, and less on a busy node. */
long mgmt__timeout_ms(const struct mgmt *m, const char *path);

int mgmt__get_json(struct mgmt *m, const char *path, int is_array, json_t **out,
    char *err, size_t errlen);

/* GET the JSON array at PATH into *JSON and room for its items: *N of
 * them, SIZE bytes each, zeroed, at *V (NULL when none; the caller frees
 * it). LABEL is the path the out-of-memory error names (NULL: PATH).
 * Returns 0, or a negative code with ERR and *JSON and *V NULL, *N 0:
 * every listing of the answer's items starts here. */
int mgmt__get_array(struct mgmt *m, const char *path, const char *label, size_t size,
    json_t **json, void **v, size_t *n, char *err, size_t errlen);

/* GET one object: NAME, A_KIND ("a queue") under PREFIX ("/api/queues/"),
 * with QUERY (NULL: none, else "?columns=..."), into *OUT: an object with
 * a name. Returns 0, MGMT_NOT_FOUND (404), or another code with ERR. */
int mgmt__get_object(struct mgmt *m, const char *prefix, const char *name,
    const char *a_kind, const char *query, json_t **out, char *err, size_t errlen);

/* ---- mgmt_json.c: reading answers, building bodies ---- */

/* A non-negative integer member, or -1 (absent, null, not a number). */
int64_t mgmt__int_member(const json_t *obj, const char *key);
/* A string member, or NULL (absent, null, not a string). */
const char *mgmt__str_member(const json_t *obj, const char *key);
/* Makes OBJ[KEY] an object (an empty one when absent or not an object)
 * and returns it, borrowed from OBJ. NULL when out of memory. */
json_t *mgmt__object_member(json_t *obj, const char *key);
int mgmt__body_error(const char *method, const struct path *p, char *err,
    size_t errlen);

/* ---- what borrows from its answer ---- */

/* Defines void FN(struct HOLDER *h), the free function of a struct
 * whose members borrow their strings and json_t pointers from the one
 * answer it owns (json): frees it and empties H, which may be empty or
 * NULL. */
#define MGMT__HOLDER_FREE(fn, holder)					\
	void								\
	fn(struct holder *h)						\
	{								\
		if (h == NULL)						\
			return;						\
		json_decref(h->json);					\
		memset(h, 0, sizeof(*h));				\
	}

/* Defines void FN(struct LIST *l), the free function of a list: a holder
 * (above) whose elements (v, n of them) borrow from its answer. Frees
 * the elements, then the rest as a holder's. One definition serves every
 * such list. */
#define MGMT__LIST_FREE(fn, list)					\
	static MGMT__HOLDER_FREE(fn##_answer, list)			\
	void								\
	fn(struct list *l)						\
	{								\
		if (l != NULL)						\
			free(l->v);					\
		fn##_answer(l);						\
	}

/* ---- mgmt_items.c: a listing one element at a time ---- */

/* Takes ITEM of a listing, as mgmt_item_fn (mgmt.h). */
typedef mgmt_item_fn mgmt__item_fn;

/* Hands FN each element of the JSON array TEXT (LEN bytes), in order,
 * each parsed alone. Returns 0, FN's code, or MGMT_ERR_ANSWER with ERR
 * (WHAT: "GET /path") when TEXT is not a JSON array. */
int mgmt__items_each(const char *text, size_t len, const char *what,
    mgmt__item_fn fn, void *arg, char *err, size_t errlen);

/* GET PATH, a listing (an array), handing FN each of its elements
 * (mgmt__items_each) from the answer's text, never parsed whole. A 404
 * is an error, as in mgmt__get_json. Returns 0, FN's code, or another
 * code with ERR. */
int mgmt__get_items(struct mgmt *m, const char *path, mgmt__item_fn fn, void *arg,
    char *err, size_t errlen);

/* ---- mgmt_queues.c ---- */

/* Builds *OUT from ITEMS, an array of queue objects. With STATS, the
 * objects come from a statistics listing (effective_policy_definition,
 * consumers); otherwise policy_message_ttl and consumers stay -1. */
int mgmt__queues_from_json(const json_t *items, int stats, const char *what,
    struct mgmt_queue_list *out, char *err, size_t errlen);

#endif
