/* plan_yaml_read: the plan loader's file and document: a plan or config
 * file read whole (bounded in size), parsed into exactly one YAML document
 * whose shape (depth, keys, items, anchors) is bounded before it is built,
 * libyaml's syntax errors recorded where it says, and the errors sorted as
 * a reader goes through the file. It uses plan_yaml.c's positions, and
 * shares plan_load_int.h with it. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "file_read.h"
#include "plan.h"
#include "plan_load_int.h"

/* Reports what libyaml's parser refused, where it says. */
void
py_syntax_error(struct loader *ld, const yaml_parser_t *ps, const char *buf, size_t len)
{
	const char *problem = ps->problem != NULL ? ps->problem : "unknown problem";
	size_t i, line = 0, col = 0, off;
	int rc;

	if (ps->error == YAML_MEMORY_ERROR) {
		ld->oom = 1;
		return;
	}
	if (ps->error == YAML_READER_ERROR) {
		/* The reader has no mark, only a byte offset. */
		off = ps->problem_offset < len ? ps->problem_offset : len;
		for (i = 0; i < off; i++) {
			if (buf[i] == '\n') {
				line++;
				col = 0;
			} else
				col++;
		}
		rc = plan_errors_add(ld->errs, py_mark_num(line), py_mark_num(col),
		    "YAML syntax error: %s (byte 0x%02x); expected UTF-8 text", problem,
		    (unsigned)ps->problem_value & 0xff);
	} else if (ps->context != NULL)
		rc = plan_errors_add(ld->errs, py_mark_num(ps->problem_mark.line),
		    py_mark_num(ps->problem_mark.column), "YAML syntax error: %s (%s at "
		    "line %d); expected well-formed YAML", problem, ps->context,
		    py_mark_num(ps->context_mark.line));
	else
		rc = plan_errors_add(ld->errs, py_mark_num(ps->problem_mark.line),
		    py_mark_num(ps->problem_mark.column), "YAML syntax error: %s; "
		    "expected well-formed YAML", problem);
	if (rc == -1)
		ld->oom = 1;
}

/* Orders errors by position, as a reader goes through the file; errors
 * without a position go last. Stable, so one node's errors keep their order. */
void
py_sort_errors(struct plan_errors *errs)
{
	struct plan_error e;
	size_t i, j;

	for (i = 1; i < errs->n; i++) {
		e = errs->v[i];
		for (j = i; j > 0; j--) {
			const struct plan_error *d = &errs->v[j - 1];
			unsigned dl = d->line > 0 ? (unsigned)d->line : UINT_MAX;
			unsigned el = e.line > 0 ? (unsigned)e.line : UINT_MAX;

			if (dl < el || (dl == el && d->column <= e.column))
				break;
			errs->v[j] = *d;
		}
		errs->v[j] = e;
	}
}

/* One document per file: a second one, or a syntax error after the first,
 * is reported along with whatever the first one holds. */
static void
check_one_document(struct loader *ld, yaml_parser_t *parser, const char *buf,
    size_t len, const char *what)
{
	yaml_document_t extra;

	if (!yaml_parser_load(parser, &extra))
		py_syntax_error(ld, parser, buf, len);
	else {
		if (yaml_document_get_root_node(&extra) != NULL &&
		    plan_errors_add(ld->errs, py_mark_num(extra.start_mark.line),
		    py_mark_num(extra.start_mark.column), "a second YAML document starts "
		    "here; expected exactly one document per %s", what) == -1)
			ld->oom = 1;
		yaml_document_delete(&extra);
	}
}

static void shape_error(struct loader *, const yaml_event_t *, const char *, ...)
    __attribute__((format(printf, 3, 4)));

/* Records that the file goes past one of its bounds at event E. */
static void
shape_error(struct loader *ld, const yaml_event_t *e, const char *fmt, ...)
{
	char msg[sizeof(((struct plan_error *)0)->message)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (plan_errors_add(ld->errs, py_mark_num(e->start_mark.line),
	    py_mark_num(e->start_mark.column), "%s", msg) == -1)
		ld->oom = 1;
}
/* Whether event E is a node (an alias, a scalar, a list's or a mapping's
 * start), counting in *ANCHORS an alias or a node that names an anchor. */
static int
node_event(const yaml_event_t *e, size_t *anchors)
{
	const yaml_char_t *anchor;

	switch (e->type) {
	case YAML_ALIAS_EVENT:
		(*anchors)++;
		return 1;
	case YAML_SCALAR_EVENT:
		anchor = e->data.scalar.anchor;
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = e->data.sequence_start.anchor;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = e->data.mapping_start.anchor;
		break;
	default:
		return 0;
	}
	*anchors += anchor != NULL;
	return 1;
}

/* Reads BUF as a stream of events and stops at the first one past the
 * bounds of plan_load_int.h: nesting deeper than PY_DEPTH_MAX, a mapping of
 * more than PY_KEYS_MAX keys, a list of more than PY_ITEMS_MAX items, more
 * than PY_ANCHORS_MAX anchors and aliases. Each costs time that grows with
 * its square (libyaml's scanner rescans the simple keys of every open
 * collection at every token, its loader searches the anchors for every
 * alias; py_check_keys compares each key with those before it, the loader
 * each old queue name and destination with those before it), so that a
 * body of a megabyte would hold a thread for minutes; here
 * the scanner reads no further than the offending event. A syntax error is
 * left to the loader, which reports it. WHAT ("plan") names the file in
 * messages. Returns 0, or -1 after recording the error. */
static int
bound_shape(struct loader *ld, const char *buf, size_t len, const char *what)
{
	yaml_parser_t ps;
	yaml_event_t e;
	/* Per open collection: whether it is a mapping, and its nodes so far
	 * (a mapping's keys and values both count). */
	unsigned char is_map[PY_DEPTH_MAX + 1];
	size_t nodes[PY_DEPTH_MAX + 1];
	size_t depth = 0, anchors = 0;
	int rc = 0, node, more = 1;

	if (!yaml_parser_initialize(&ps)) {
		ld->oom = 1;
		return -1;
	}
	yaml_parser_set_input_string(&ps, (const unsigned char *)(buf != NULL ? buf : ""),
	    len);
	is_map[0] = 0;
	nodes[0] = 0;
	while (more && rc == 0 && yaml_parser_parse(&ps, &e)) {
		node = node_event(&e, &anchors);
		if (e.type == YAML_STREAM_END_EVENT)
			more = 0;
		else if ((e.type == YAML_SEQUENCE_END_EVENT ||
		    e.type == YAML_MAPPING_END_EVENT) && depth > 0)
			depth--;
		if (node && depth > 0)
			nodes[depth]++;
		if (node && depth > 0 && is_map[depth] && nodes[depth] > 2 * PY_KEYS_MAX) {
			shape_error(ld, &e, "a mapping holds more than %d keys; expected a %s "
			    "with a few keys to a mapping", PY_KEYS_MAX, what);
			rc = -1;
		} else if (node && depth > 0 && !is_map[depth] && nodes[depth] > PY_ITEMS_MAX) {
			shape_error(ld, &e, "a list holds more than %d items; expected a %s "
			    "with shorter lists", PY_ITEMS_MAX, what);
			rc = -1;
		} else if (anchors > PY_ANCHORS_MAX) {
			shape_error(ld, &e, "the file holds more than %d anchors and aliases; "
			    "expected a %s with a few", PY_ANCHORS_MAX, what);
			rc = -1;
		} else if (e.type == YAML_SEQUENCE_START_EVENT ||
		    e.type == YAML_MAPPING_START_EVENT) {
			if (depth == PY_DEPTH_MAX) {
				shape_error(ld, &e, "the YAML nests more than %d lists and "
				    "mappings deep here; expected a %s a few levels deep",
				    PY_DEPTH_MAX, what);
				rc = -1;
			} else {
				depth++;
				is_map[depth] = e.type == YAML_MAPPING_START_EVENT;
				nodes[depth] = 0;
			}
		}
		yaml_event_delete(&e);
	}
	if (ps.error == YAML_MEMORY_ERROR) {
		ld->oom = 1;
		rc = -1;
	}
	yaml_parser_delete(&ps);
	return rc;
}

int
py_read_document(struct loader *ld, struct py_document *d, const char *buf,
    size_t len, yaml_node_t **root, const char *empty_expect, const char *what)
{
	if (bound_shape(ld, buf, len, what) == -1)
		return -1;
	if (!yaml_parser_initialize(&d->parser)) {
		ld->oom = 1;
		return -1;
	}
	d->have_parser = true;
	yaml_parser_set_input_string(&d->parser,
	    (const unsigned char *)(buf != NULL ? buf : ""), len);
	if (!yaml_parser_load(&d->parser, &d->doc)) {
		py_syntax_error(ld, &d->parser, buf, len);
		return -1;
	}
	d->have_doc = true;
	ld->doc = &d->doc;
	if ((*root = yaml_document_get_root_node(&d->doc)) == NULL) {
		if (plan_errors_add(ld->errs, 1, 1, "the file is empty; expected %s",
		    empty_expect) == -1)
			ld->oom = 1;
		return -1;
	}
	check_one_document(ld, &d->parser, buf, len, what);
	return 0;
}

bool
py_load_end(struct loader *ld, struct py_document *d, const char *what)
{
	if (ld->oom)
		plan_errors_add(ld->errs, 0, 0, "out of memory while loading the %s", what);
	py_sort_errors(ld->errs);
	if (d->have_doc)
		yaml_document_delete(&d->doc);
	if (d->have_parser)
		yaml_parser_delete(&d->parser);
	d->have_doc = d->have_parser = false;
	return ld->errs->n == 0 && !ld->oom;
}

static int load_fail(const char *, struct plan_errors *, const char *, ...)
    __attribute__((format(printf, 3, 4)));

/* Fails a load before any YAML is read, with a message about FILE. */
static int
load_fail(const char *file, struct plan_errors *errs, const char *fmt, ...)
{
	struct plan_errors local;
	char msg[sizeof(((struct plan_error *)0)->message)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (errs == NULL)
		errs = &local;
	memset(errs, 0, sizeof(*errs));
	errs->file = strdup(file);
	plan_errors_add(errs, 0, 0, "%s", msg);
	if (errs == &local)
		plan_errors_free(&local);
	return -1;
}

int
py_read_file(const char *path, const char *what, const char *size_expect, char **out,
    size_t *outlen, struct plan_errors *errs)
{
	int rc;

	if (path == NULL)
		path = "(null)";
	/* PY_FILE_MAX - 1: a file of PY_FILE_MAX bytes has always been too
	 * large. */
	switch ((rc = file_read(path, PY_FILE_MAX - 1, out, outlen))) {
	case FILE_READ_OK:
		return 0;
	case FILE_READ_EOPEN:
		return load_fail(path, errs, "cannot open the %s: %s; expected a "
		    "readable YAML file", what, strerror(errno));
	case FILE_READ_EREAD:
		return load_fail(path, errs, "cannot read the %s: %s; expected a "
		    "readable YAML file", what, strerror(errno));
	case FILE_READ_EBIG:
		return load_fail(path, errs, "the file is larger than %d bytes; "
		    "expected %s", PY_FILE_MAX, size_expect);
	default:
		return load_fail(path, errs, "%s reading the %s",
		    file_read_status_name(rc), what);
	}
}
