/* mgmt_pages: every queue of the vhost with statistics, in one listing
 * up to MGMT_ONE_LISTING_MAX queues, else page by page, each page joined
 * to the one before so that queues created or deleted between requests
 * never make the listing skip one (mgmt_list_queues_all, mgmt.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mgmt_int.h"
#include "textbuf.h"

/* How many queues before the last name read a page is chosen to start,
 * at first: queues deleted before it between two requests up to this
 * many cost nothing; more make the page start too late, and it is asked
 * for again with the margin PAGE_MARGIN_GROWTH times larger. */
#define PAGE_MARGIN		16
#define PAGE_MARGIN_GROWTH	4
#define PAGE_REPEATS_MAX	8	/* of one page, before giving up */

/* A name as the listing keeps it between two queues (or pages): a copy,
 * since each queue is released once taken. */
struct name_copy {
	char	*s;			/* NULL until set */
	size_t	 cap;
};

/* Where the listing stands: whom each queue taken goes to, how many so
 * far, and the name and index the last of them had in the page it came
 * from. */
struct pager {
	mgmt__item_fn	 take;		/* each queue taken, in name order */
	void		*arg;
	size_t		 taken;
	struct name_copy last;		/* the last name taken (NULL: none) */
	struct name_copy prev;		/* the page's queue before, taken or not */
	long		 last_index;	/* its index in the list when read */
	long		 margin;	/* see PAGE_MARGIN */
	int		 repeats;	/* of the page under way */
};

/* Sets C to NAME. Returns 0, or -1 when out of memory. */
static int
name_set(struct name_copy *c, const char *name)
{
	size_t n = strlen(name) + 1;

	if (textbuf_grow(&c->s, &c->cap, n, 256, 0) != 0)
		return -1;
	memcpy(c->s, name, n);
	return 0;
}

static void
name_clear(struct name_copy *c)
{
	free(c->s);
	c->s = NULL;
	c->cap = 0;
}

/* The page of size *SIZE (within MAX/2..MAX) and number *PAGE (1-based)
 * that starts at or before index TARGET and reaches furthest past it:
 * pages of one size are cut at its multiples, so only a size with a
 * multiple just at or before TARGET gives a page that joins the last one
 * read and goes on. */
static void
choose_page(long target, int max, int *page, int *size)
{
	long best_end = -1, end;
	int s, lo = max / 2 > 0 ? max / 2 : 1;

	for (s = max; s >= lo; s--) {
		end = (target / s + 1) * s;
		if (end > best_end) {
			best_end = end;
			*size = s;
			*page = (int)(target / s + 1);
		}
	}
}

/* Starts P as the vhost's queue listing with QUERY ("?page=1&...&",
 * ending where the columns go) and COLUMNS, the name among them: the
 * pages are joined by it, whether the caller asked for it or not. */
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

/* GET page PAGE of size SIZE of the queues, COLUMNS and the name, into
 * *ANSWER (its items array checked). Returns 0, MGMT_ERR_HTTP with
 * *STATUS 400 for a page past the end, or another code with ERR. */
static int
get_page(struct mgmt *m, const char *columns, int page, int size,
    json_t **answer, long *status, char *err, size_t errlen)
{
	struct path p;
	char num[64], what[WHAT_MAX];
	int rc;

	snprintf(num, sizeof(num), "?page=%d&page_size=%d&", page, size);
	listing_path(&p, m, num, columns);
	if ((rc = mgmt__path_check(&p, "GET /api/queues (page)", err, errlen)) != 0)
		return rc;
	m->pages.requests++;
	if ((rc = mgmt_request(m, "GET", p.s, NULL, answer, status, err, errlen)) != 0)
		return rc == MGMT_NOT_FOUND ? MGMT_ERR_HTTP : rc;
	if (!json_is_array(json_object_get(*answer, "items"))) {
		mgmt__describe(what, sizeof(what), "GET", p.s);
		errbuf_set(err, errlen, "%s: the answer has no items array (not a "
		    "page)", what);
		json_decref(*answer);
		*answer = NULL;
		return MGMT_ERR_ANSWER;
	}
	return 0;
}

/* The name of queue I of ITEMS, or NULL. */
static const char *
item_name(const json_t *items, size_t i)
{
	return mgmt__str_member(json_array_get(items, i), "name");
}

/* Takes queue IT, number I of the page that starts at index START (its
 * name checked after PG->prev), when it is named after PG->last: hands
 * it to PG->take, setting *TOOK. Returns 0, MGMT_ERR_ANSWER with ERR for
 * a page not sorted by name (nothing could be said of what lies between
 * two pages), MGMT_ERR_NOMEM, or PG->take's code. */
static int
take_one(struct pager *pg, json_t *it, long start, size_t i, bool *took, char *err,
    size_t errlen)
{
	const char *name = mgmt__str_member(it, "name");
	int rc;

	*took = false;
	if (name == NULL || (i > 0 && strcmp(pg->prev.s, name) >= 0)) {
		errbuf_set(err, errlen, "GET /api/queues (page): queue %ld of the list %s",
		    start + (long)i, name == NULL ? "has no name" :
		    "is out of name order");
		return MGMT_ERR_ANSWER;
	}
	if (name_set(&pg->prev, name) != 0)
		goto nomem;
	if (pg->last.s != NULL && strcmp(name, pg->last.s) <= 0)
		return 0;
	if ((rc = pg->take(pg->arg, it, err, errlen)) != 0)
		return rc;
	if (name_set(&pg->last, name) != 0)
		goto nomem;
	pg->taken++;
	*took = true;
	return 0;
nomem:
	errbuf_set(err, errlen, "GET /api/queues (page): out of memory");
	return MGMT_ERR_NOMEM;
}

/* Takes the queues of ITEMS (the page that starts at index START) named
 * after PG->last (take_one), setting *TOOK to how many. Returns 0 or
 * take_one's code. */
static int
take_page(struct pager *pg, const json_t *items, long start, size_t *took,
    char *err, size_t errlen)
{
	size_t i, n = json_array_size(items);
	bool one;
	int rc;

	*took = 0;
	for (i = 0; i < n; i++) {
		if ((rc = take_one(pg, json_array_get(items, i), start, i, &one, err,
		    errlen)) != 0)
			return rc;
		*took += one;
	}
	if (n > 0)
		pg->last_index = start + (long)n - 1;
	return 0;
}

/* The one listing's state as mgmt__get_items hands it its queues. */
struct one {
	struct pager *pg;
	size_t i;			/* the next queue's index */
};

/* mgmt__get_items' callback: queue IT of the one listing (ARG). */
static int
one_take(void *arg, json_t *it, char *err, size_t errlen)
{
	struct one *o = arg;
	bool took;

	return take_one(o->pg, it, 0, o->i++, &took, err, errlen);
}

/* Every queue with COLUMNS in one request, statistics on, to PG->take
 * (nothing taken before; sorted, each name once, checked), each as it is
 * read from the answer's text (mgmt__get_items). Returns 0,
 * MGMT_ERR_TRANSPORT when no answer came (nothing was taken: the caller
 * goes on in pages), or another code with ERR. */
static int
one_listing(struct mgmt *m, struct pager *pg, const char *columns, char *err,
    size_t errlen)
{
	struct path p;
	struct one o = { .pg = pg };
	int rc;

	listing_path(&p, m, "?", columns);
	if ((rc = mgmt__path_check(&p, "GET /api/queues", err, errlen)) != 0)
		return rc;
	m->pages.requests++;
	if ((rc = mgmt__get_items(m, p.s, one_take, &o, err, errlen)) != 0)
		return rc;
	if (o.i > 0)
		pg->last_index = (long)o.i - 1;
	return 0;
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

/* The page just asked for cannot be taken (WHY): ask again further back.
 * Returns 0, or MGMT_ERR_ANSWER with ERR after PAGE_REPEATS_MAX. */
static int
repeat_page(struct mgmt *m, struct pager *pg, const char *why, char *err,
    size_t errlen)
{
	m->pages.repeats++;
	if (++pg->repeats > PAGE_REPEATS_MAX) {
		errbuf_set(err, errlen, "GET /api/queues (page): the vhost's queues "
		    "kept changing under the pages (%s, %d times after queue '%.200s'): "
		    "no whole listing", why, PAGE_REPEATS_MAX, pg->last.s);
		return MGMT_ERR_ANSWER;
	}
	pg->margin = pg->margin > 0 ? pg->margin * PAGE_MARGIN_GROWTH : PAGE_MARGIN;
	return 0;
}

int
mgmt__list_queues_each(struct mgmt *m, const char *columns, mgmt__item_fn take,
    void *arg, char *err, size_t errlen)
{
	struct pager pg = { .take = take, .arg = arg, .margin = PAGE_MARGIN };
	json_t *j = NULL, *items;
	const char *first;
	long status, start, total;
	size_t n, took;
	int rc, page, size, max;

	memset(&m->pages, 0, sizeof(m->pages));
	max = m->page_size > 0 ? m->page_size : MGMT_PAGE_SIZE_MAX;
	/* Up to a size the broker answers in one request well within its
	 * listener's idle timeout, one listing costs it one walk of its
	 * queues rather than one a page. The overview counts every vhost's:
	 * more than this one holds, never fewer. */
	total = m->one_listing_max > 0 ? queues_in_all(m) : -1;
	if (total >= 0 && total <= m->one_listing_max) {
		rc = one_listing(m, &pg, columns, err, errlen);
		if (rc == 0) {
			m->pages.whole = true;
			goto listed;
		}
		if (rc != MGMT_ERR_TRANSPORT)
			goto done;
		log_event("warn", NULL, NULL, "management: one listing of up to %ld "
		    "queues got no answer (%s): reading them page by page", total, err);
	}
	for (;;) {
		page = 1;
		size = max;
		if (pg.last.s != NULL)
			choose_page(pg.last_index > pg.margin ? pg.last_index - pg.margin :
			    0, max, &page, &size);
		start = (long)(page - 1) * size;
		rc = get_page(m, columns, page, size, &j, &status, err, errlen);
		if (rc == MGMT_ERR_HTTP && status == 400 && page > 1) {
			/* Past the end: queues went since the last page. */
			if ((rc = repeat_page(m, &pg, "a page past the end", err,
			    errlen)) != 0)
				goto done;
			continue;
		}
		if (rc != 0)
			goto done;
		items = json_object_get(j, "items");
		first = item_name(items, 0);
		if (page > 1 && json_array_size(items) == 0) {
			/* Past the end, answered empty rather than 400 (the list
			 * shrank between the count and the cut): it cannot be the
			 * last page, since nothing joins it to the one before. */
			json_decref(j);
			j = NULL;
			if ((rc = repeat_page(m, &pg, "an empty page past the end", err,
			    errlen)) != 0)
				goto done;
			continue;
		}
		if (pg.last.s != NULL && first != NULL && strcmp(first, pg.last.s) > 0) {
			/* Queues before this page went since the last one: it may
			 * start past queues not read yet. */
			json_decref(j);
			j = NULL;
			if ((rc = repeat_page(m, &pg, "a page that did not join the "
			    "last", err, errlen)) != 0)
				goto done;
			continue;
		}
		n = json_array_size(items);
		if ((total = (long)mgmt__int_member(j, "filtered_count")) < 0) {
			errbuf_set(err, errlen, "GET /api/queues (page %d): the answer has "
			    "no filtered_count (not a page)", page);
			rc = MGMT_ERR_ANSWER;
			goto done;
		}
		if ((rc = take_page(&pg, items, start, &took, err, errlen)) != 0)
			goto done;
		json_decref(j);
		j = NULL;
		if (m->page_hook != NULL)
			m->page_hook(m->page_hook_arg, page, size);
		/* The last page: nothing after it when it was cut. */
		if (start + (long)n >= total)
			break;
		if (took > 0) {
			pg.repeats = 0;
			pg.margin = PAGE_MARGIN;
		} else {
			/* The whole page lies before the last name taken (queues
			 * created before it since): the next starts at its end. */
			pg.margin = 0;
			if ((rc = repeat_page(m, &pg, "a page before the last", err,
			    errlen)) != 0)
				goto done;
			pg.margin = 0;
		}
	}
listed:
	m->pages.queues = pg.taken;
	rc = 0;
done:
	json_decref(j);
	name_clear(&pg.last);
	name_clear(&pg.prev);
	return rc;
}

/* mgmt__list_queues_each's callback for mgmt_list_queues_all: appends IT
 * to the array ARG. */
static int
append_item(void *arg, json_t *it, char *err, size_t errlen)
{
	if (json_array_append(arg, it) != 0) {
		errbuf_set(err, errlen, "GET /api/queues (page): out of memory");
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
