/* mgmt_all: every queue of the vhost with statistics (mgmt_list_queues_all
 * and, a queue at a time, mgmt_list_queues_each, mgmt.h): in one listing
 * up to MGMT_ONE_LISTING_MAX queues, else the vhost's queue names in one
 * listing without statistics and then each queue by its name, so that
 * what the broker does grows with the queues, not with their square. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
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

/* Adds "columns=" and COLUMNS to P, the name among them: each queue is
 * checked by it, whether the caller asked for it or not. */
static void
columns_add(struct path *p, const char *columns)
{
	mgmt__path_add(p, "columns=");
	if (strncmp(columns, "name,", 5) != 0 && strcmp(columns, "name") != 0)
		mgmt__path_add(p, "name,");
	mgmt__path_add(p, columns);
}

/* Starts P as the vhost's queue listing with QUERY ("?...&", ending where
 * the columns go) and COLUMNS (columns_add). */
static void
listing_path(struct path *p, struct mgmt *m, const char *query,
    const char *columns)
{
	mgmt__path_vhost(p, m, "/api/queues/");
	mgmt__path_add(p, query);
	columns_add(p, columns);
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

/* GET queue NAME with COLUMNS (the name among them) on client M into
 * *IT. Returns 0, MGMT_NOT_FOUND (gone), or another code with ERR. */
static int
get_queue(struct mgmt *m, const char *name, const char *columns, json_t **it,
    char *err, size_t errlen)
{
	struct path p;
	long status;
	int rc;

	*it = NULL;
	if ((rc = mgmt__path_object(&p, m, "/api/queues/", name, "queue", err,
	    errlen)) != 0)
		return rc;
	mgmt__path_add(&p, "?");
	columns_add(&p, columns);
	if ((rc = mgmt__path_check(&p, "GET /api/queues/{name}", err, errlen)) != 0)
		return rc;
	return mgmt_request(m, "GET", p.s, NULL, it, &status, err, errlen);
}

/* The queues' own GETs, made by MGMT_BY_NAME_CLIENTS threads at once, each
 * on a client of its own (mgmt__open_again), at most BY_NAME_AHEAD of them
 * ahead of the queue the caller hands on: the answers come back out of
 * order and are handed in the names' order. */
#define BY_NAME_AHEAD	(4 * MGMT_BY_NAME_CLIENTS)

struct answer {
	json_t	*it;			/* the queue, or NULL */
	int	 rc;			/* get_queue's */
	bool	 done;
	char	 err[512];
};

struct fetch {
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	const struct names *nm;
	const char	*columns;
	size_t		 next;		/* the next name to ask for */
	size_t		 handed;	/* the next answer the caller takes */
	bool		 stop;
	struct answer	 ring[BY_NAME_AHEAD];
};

struct fetcher {
	struct fetch	*f;
	struct mgmt	*m;
	pthread_t	 th;
};

/* A fetcher's thread: asks for the next name not asked for yet, while it
 * is fewer than BY_NAME_AHEAD ahead of the caller, until the names end or
 * the caller stops. */
static void *
fetch_loop(void *arg)
{
	struct fetcher *fr = arg;
	struct fetch *f = fr->f;

	pthread_mutex_lock(&f->mu);
	for (;;) {
		struct answer a = { 0 };
		size_t i;

		while (!f->stop && f->next < f->nm->n && f->next >= f->handed + BY_NAME_AHEAD)
			pthread_cond_wait(&f->cv, &f->mu);
		if (f->stop || f->next >= f->nm->n)
			break;
		i = f->next++;
		pthread_mutex_unlock(&f->mu);
		a.rc = get_queue(fr->m, f->nm->v[i], f->columns, &a.it, a.err, sizeof(a.err));
		pthread_mutex_lock(&f->mu);
		a.done = true;
		f->ring[i % BY_NAME_AHEAD] = a;
		pthread_cond_broadcast(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* Starts the fetchers of F on clients opened again from M: *N of them
 * (fewer when a client or a thread could not be had; 0: the caller asks
 * for each queue itself). The names are F's until they stop. */
static void
fetchers_start(struct mgmt *m, struct fetch *f, struct fetcher *fr, int *n)
{
	char why[512];

	*n = 0;
	for (int k = 0; k < MGMT_BY_NAME_CLIENTS; k++) {
		fr[k] = (struct fetcher){ .f = f };
		if (mgmt__open_again(m, &fr[k].m, why, sizeof(why)) != 0) {
			log_event("warn", NULL, NULL, "management: a client for reading "
			    "queues by name: %s: reading them with %d", why, k);
			break;
		}
		if (pthread_create(&fr[k].th, NULL, fetch_loop, &fr[k]) != 0) {
			mgmt_close(fr[k].m);
			break;
		}
		*n = k + 1;
	}
}

/* Stops and joins N fetchers of F, closes their clients (their losses
 * become M's) and releases the answers not taken. */
static void
fetchers_stop(struct mgmt *m, struct fetch *f, struct fetcher *fr, int n)
{
	pthread_mutex_lock(&f->mu);
	f->stop = true;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	for (int k = 0; k < n; k++) {
		pthread_join(fr[k].th, NULL);
		m->losses += fr[k].m->losses;
		mgmt_close(fr[k].m);
	}
	for (size_t i = 0; i < BY_NAME_AHEAD; i++)
		json_decref(f->ring[i].it);
}

/* The answer to name I: from the fetchers of F when there are any (N),
 * else asked for on M. Returns get_queue's code, with *IT and ERR. */
static int
answer_of(struct mgmt *m, struct fetch *f, int n, size_t i, json_t **it, char *err,
    size_t errlen)
{
	struct answer *a = &f->ring[i % BY_NAME_AHEAD];
	int rc;

	if (n == 0)
		return get_queue(m, f->nm->v[i], f->columns, it, err, errlen);
	pthread_mutex_lock(&f->mu);
	while (!a->done)
		pthread_cond_wait(&f->cv, &f->mu);
	*it = a->it;
	rc = a->rc;
	if (rc != 0)
		errbuf_set(err, errlen, "%s", a->err);
	*a = (struct answer){ 0 };
	f->handed = i + 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

/* Every queue with COLUMNS to TK (nothing taken before): the vhost's
 * names in one listing without statistics (the broker walks its queues
 * once and computes nothing), then GET /api/queues/{vhost}/{name} with
 * COLUMNS for each, MGMT_BY_NAME_CLIENTS at once, handed on in name
 * order. A queue named by the listing and gone before its own request
 * (404) is counted in m->pages.gone and left out. Returns 0, or a code
 * with ERR. */
static int
each_by_name(struct mgmt *m, struct taker *tk, const char *columns, char *err,
    size_t errlen)
{
	struct names nm = { 0 };
	struct fetch f = { .nm = &nm, .columns = columns };
	struct fetcher fr[MGMT_BY_NAME_CLIENTS];
	struct path p;
	json_t *it = NULL;
	size_t k = 0;
	int rc, n = 0;

	listing_path(&p, m, "?disable_stats=true&", "name");
	if ((rc = mgmt__path_check(&p, "GET /api/queues (names)", err, errlen)) != 0)
		return rc;
	m->pages.requests++;
	if ((rc = mgmt__get_items(m, p.s, name_keep, &nm, err, errlen)) != 0)
		goto done;
	hook(m, m->pages.requests);
	qsort(nm.v, nm.n, sizeof(*nm.v), cmp_name);
	/* Each name once (the broker's listing has none twice). */
	for (size_t i = 0; i < nm.n; i++)
		if (k == 0 || strcmp(nm.v[k - 1], nm.v[i]) != 0)
			nm.v[k++] = nm.v[i];
		else
			free(nm.v[i]);
	nm.n = k;
	pthread_mutex_init(&f.mu, NULL);
	pthread_cond_init(&f.cv, NULL);
	if (nm.n > 1)
		fetchers_start(m, &f, fr, &n);
	for (size_t i = 0; i < nm.n; i++) {
		m->pages.requests++;
		rc = answer_of(m, &f, n, i, &it, err, errlen);
		if (rc == MGMT_NOT_FOUND) {
			m->pages.gone++;
			hook(m, m->pages.requests);
			rc = 0;
			continue;
		}
		if (rc != 0)
			break;
		rc = take(tk, it, nm.v[i], "GET /api/queues/{name}", i, err, errlen);
		json_decref(it);
		it = NULL;
		if (rc != 0)
			break;
		hook(m, m->pages.requests);
	}
	fetchers_stop(m, &f, fr, n);
	pthread_cond_destroy(&f.cv);
	pthread_mutex_destroy(&f.mu);
done:
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
mgmt_list_queues_each(struct mgmt *m, const char *columns, mgmt_item_fn fn,
    void *arg, char *err, size_t errlen)
{
	struct taker tk = { .take = fn, .arg = arg };
	long total;
	int rc;

	if (m == NULL || fn == NULL) {
		errbuf_set(err, errlen, "mgmt_list_queues_each: no client or callback");
		return MGMT_ERR_ARG;
	}
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

/* mgmt_list_queues_each's callback for mgmt_list_queues_all: appends IT
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
	if ((rc = mgmt_list_queues_each(m, columns, append_item, all, err,
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
