/* mgmt_all: every queue of the vhost with statistics (mgmt_list_queues_all,
 * mgmt.h): in one listing up to MGMT_ONE_LISTING_MAX queues, else the
 * vhost's queue names in one listing without statistics and then each
 * queue by its name, so that what the broker does grows with the queues,
 * not with their square. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mgmt_int.h"
#include "textbuf.h"

/* Where a listing stands: whom each queue taken goes to, how many so far,
 * and the last name handed (the next comes after it, in strcmp order). */
struct taker {
	mgmt__item_fn	 take;
	void		*arg;
	size_t		 taken;
	char		*last;		/* a copy; NULL until one is taken */
	size_t		 cap;
};

/* Hands queue IT (queue I of the listing WHAT) to TK->take, after checking
 * that it is named, after the last one taken and, when WANT is not NULL,
 * that name. Returns 0, MGMT_ERR_ANSWER with ERR, MGMT_ERR_NOMEM, or
 * TK->take's code. */
static int
take(struct taker *tk, json_t *it, const char *want, const char *what, size_t i,
    char *err, size_t errlen)
{
	const char *name = mgmt__str_member(it, "name");
	size_t n;
	int rc;

	if (name == NULL || (want != NULL && strcmp(name, want) != 0) ||
	    (tk->last != NULL && strcmp(tk->last, name) >= 0)) {
		errbuf_set(err, errlen, "%s: queue %zu of the listing %s", what, i,
		    name == NULL ? "has no name" : want != NULL &&
		    strcmp(name, want) != 0 ? "is not the queue asked for" :
		    "is out of name order");
		return MGMT_ERR_ANSWER;
	}
	if ((rc = tk->take(tk->arg, it, err, errlen)) != 0)
		return rc;
	n = strlen(name) + 1;
	if (textbuf_grow(&tk->last, &tk->cap, n, 256, 0) != 0) {
		errbuf_set(err, errlen, "%s: out of memory", what);
		return MGMT_ERR_NOMEM;
	}
	memcpy(tk->last, name, n);
	tk->taken++;
	return 0;
}

/* Starts P as the vhost's queue listing with QUERY ("?...&", ending where
 * the columns go) and COLUMNS, the name among them: the listing is
 * checked by it, whether the caller asked for it or not. */
static void
listing_path(struct path *p, struct mgmt *m, const char *query,
    const char *columns)
{
	mgmt__path_vhost(p, m, "/api/queues/");
	mgmt__path_add(p, query);
	mgmt__path_add(p, "columns=");
	if (strncmp(columns, "name,", 5) != 0 && strcmp(columns, "name") != 0)
		mgmt__path_add(p, "name,");
	mgmt__path_add(p, columns);
}

/* Calls M's listing hook, when a test set one, after request REQUEST. */
static void
hook(struct mgmt *m, size_t request)
{
	if (m->listing_hook != NULL)
		m->listing_hook(m->listing_hook_arg, request);
}

/* The one listing's state as mgmt__get_items hands it its queues. */
struct one {
	struct taker *tk;
	size_t i;			/* the next queue's index */
};

/* mgmt__get_items' callback: queue IT of the one listing (ARG). */
static int
one_take(void *arg, json_t *it, char *err, size_t errlen)
{
	struct one *o = arg;

	return take(o->tk, it, NULL, "GET /api/queues", o->i++, err, errlen);
}

/* Every queue with COLUMNS in one request, statistics on, to TK (nothing
 * taken before), each as it is read from the answer's text
 * (mgmt__get_items). Returns 0, MGMT_ERR_TRANSPORT when no answer came
 * (nothing was taken: the caller goes on by name), or another code with
 * ERR. */
static int
one_listing(struct mgmt *m, struct taker *tk, const char *columns, char *err,
    size_t errlen)
{
	struct path p;
	struct one o = { .tk = tk };
	int rc;

	listing_path(&p, m, "?", columns);
	if ((rc = mgmt__path_check(&p, "GET /api/queues", err, errlen)) != 0)
		return rc;
	m->pages.requests++;
	rc = mgmt__get_items(m, p.s, one_take, &o, err, errlen);
	hook(m, m->pages.requests);
	return rc;
}

/* The vhost's queue names, as the names listing hands them. */
struct names {
	char	**v;
	size_t	  n, cap;
};

static void
names_free(struct names *nm)
{
	for (size_t i = 0; i < nm->n; i++)
		free(nm->v[i]);
	free(nm->v);
	memset(nm, 0, sizeof(*nm));
}

/* mgmt__get_items' callback: keeps the name of queue IT in ARG. */
static int
name_keep(void *arg, json_t *it, char *err, size_t errlen)
{
	struct names *nm = arg;
	const char *name = mgmt__str_member(it, "name");

	if (name == NULL || name[0] == '\0') {
		errbuf_set(err, errlen, "GET /api/queues (names): queue %zu of the "
		    "listing has no name", nm->n);
		return MGMT_ERR_ANSWER;
	}
	if (nm->n == nm->cap) {
		size_t cap = nm->cap ? 2 * nm->cap : 1024;
		char **v = realloc(nm->v, cap * sizeof(*v));

		if (v == NULL)
			goto nomem;
		nm->v = v;
		nm->cap = cap;
	}
	if ((nm->v[nm->n] = strdup(name)) == NULL)
		goto nomem;
	nm->n++;
	return 0;
nomem:
	errbuf_set(err, errlen, "GET /api/queues (names): out of memory");
	return MGMT_ERR_NOMEM;
}

static int
cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every queue with COLUMNS to TK (nothing taken before): the vhost's
 * names in one listing without statistics (the broker walks its queues
 * once and computes nothing), then GET /api/queues/{vhost}/{name} with
 * COLUMNS for each, in name order. A queue named by the listing and gone
 * before its own request (404) is counted in m->pages.gone and left out.
 * Returns 0, or a code with ERR. */
static int
each_by_name(struct mgmt *m, struct taker *tk, const char *columns, char *err,
    size_t errlen)
{
	struct names nm = { 0 };
	struct path p;
	json_t *it = NULL;
	long status;
	int rc;

	listing_path(&p, m, "?disable_stats=true&", "name");
	if ((rc = mgmt__path_check(&p, "GET /api/queues (names)", err, errlen)) != 0)
		return rc;
	m->pages.requests++;
	if ((rc = mgmt__get_items(m, p.s, name_keep, &nm, err, errlen)) != 0)
		goto done;
	hook(m, m->pages.requests);
	qsort(nm.v, nm.n, sizeof(*nm.v), cmp_name);
	for (size_t i = 0; i < nm.n; i++) {
		if (i > 0 && strcmp(nm.v[i - 1], nm.v[i]) == 0)
			continue;
		if ((rc = mgmt__path_object(&p, m, "/api/queues/", nm.v[i], "queue", err,
		    errlen)) != 0)
			goto done;
		mgmt__path_add(&p, "?columns=");
		if (strncmp(columns, "name,", 5) != 0 && strcmp(columns, "name") != 0)
			mgmt__path_add(&p, "name,");
		mgmt__path_add(&p, columns);
		if ((rc = mgmt__path_check(&p, "GET /api/queues/{name}", err, errlen)) != 0)
			goto done;
		m->pages.requests++;
		rc = mgmt_request(m, "GET", p.s, NULL, &it, &status, err, errlen);
		if (rc == MGMT_NOT_FOUND) {
			m->pages.gone++;
			hook(m, m->pages.requests);
			continue;
		}
		if (rc != 0)
			goto done;
		rc = take(tk, it, nm.v[i], "GET /api/queues/{name}", i, err, errlen);
		json_decref(it);
		it = NULL;
		if (rc != 0)
			goto done;
		hook(m, m->pages.requests);
	}
	rc = 0;
done:
	json_decref(it);
	names_free(&nm);
	return rc;
}

/* How many queues the broker holds in all its vhosts (GET /api/overview:
 * object_totals.queues, counted without walking them), or -1 when it
 * does not say. */
static long
queues_in_all(struct mgmt *m)
{
	json_t *j = NULL;
	char why[512];
	long n;

	if (mgmt__get_json(m, "/api/overview?columns=object_totals.queues", 0, &j, why,
	    sizeof(why)) != 0)
		return -1;
	n = (long)mgmt__int_member(json_object_get(j, "object_totals"), "queues");
	json_decref(j);
	return n;
}

int
mgmt__list_queues_each(struct mgmt *m, const char *columns, mgmt__item_fn fn,
    void *arg, char *err, size_t errlen)
{
	struct taker tk = { .take = fn, .arg = arg };
	long total;
	int rc;

	memset(&m->pages, 0, sizeof(m->pages));
	/* Up to a size the broker answers in one request well within its
	 * listener's idle timeout, one listing is the cheapest. The overview
	 * counts every vhost's: more than this one holds, never fewer. */
	total = m->one_listing_max > 0 ? queues_in_all(m) : -1;
	if (total >= 0 && total <= m->one_listing_max) {
		rc = one_listing(m, &tk, columns, err, errlen);
		if (rc == 0) {
			m->pages.whole = true;
			goto listed;
		}
		if (rc != MGMT_ERR_TRANSPORT || tk.taken > 0)
			goto done;
		log_event("warn", NULL, NULL, "management: one listing of up to %ld "
		    "queues got no answer (%s): reading them one by one", total, err);
	}
	if ((rc = each_by_name(m, &tk, columns, err, errlen)) != 0)
		goto done;
listed:
	m->pages.queues = tk.taken;
	rc = 0;
done:
	free(tk.last);
	return rc;
}

/* mgmt__list_queues_each's callback for mgmt_list_queues_all: appends IT
 * to the array ARG. */
static int
append_item(void *arg, json_t *it, char *err, size_t errlen)
{
	if (json_array_append(arg, it) != 0) {
		errbuf_set(err, errlen, "GET /api/queues: out of memory");
		return MGMT_ERR_NOMEM;
	}
	return 0;
}

int
mgmt_list_queues_all(struct mgmt *m, const char *columns, json_t **out,
    char *err, size_t errlen)
{
	json_t *all;
	int rc;

	if ((rc = mgmt__begin("mgmt_list_queues_all", m, out, sizeof(*out), err,
	    errlen)) != 0)
		return rc;
	if ((all = json_array()) == NULL) {
		errbuf_set(err, errlen, "mgmt_list_queues_all: out of memory");
		return MGMT_ERR_NOMEM;
	}
	if ((rc = mgmt__list_queues_each(m, columns, append_item, all, err,
	    errlen)) != 0) {
		json_decref(all);
		return rc;
	}
	*out = all;
	return 0;
}

struct mgmt_pages
mgmt_last_pages(const struct mgmt *m)
{
	struct mgmt_pages none = { 0 };

	return m != NULL ? m->pages : none;
}
