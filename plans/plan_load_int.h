/* plan_load_int: what the parts of the plan loader share, and nothing
 * outside plans/ includes — the loader's state, a mapping being read, and
 * the functions of plan_yaml.c and plan_yaml_read.c (py_: the YAML reader,
 * scalar conversions, the file and its one document), plan_check.c (pc_:
 * checks across sections), plan_load_old.c and plan_load_ladder.c (pl_:
 * the old and ladder sections) used by plan_load.c (the other section
 * loaders and plan_load_buffer/file) and plan_section.c (plan_section.h for
 * the flag kinds). Errors are recorded in the loader with FILE:LINE:COL
 * (plan_errors.c). The files call one another in one direction only:
 * plan_load.c on top, then the section files, plan_section.c, plan_tls.c,
 * plan_yaml_read.c, plan_yaml.c and the error list at the bottom. */
#ifndef CUTOVER_PLAN_LOAD_INT_H
#define CUTOVER_PLAN_LOAD_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "plan.h"

#define QUEUE_NAME_MAX		255			/* AMQP short string */
#define BROKER_URLS_MAX		16			/* broker.amqp, broker.management */
#define PY_FILE_MAX		(4 * 1024 * 1024)	/* a plan or config is a page of text */
/* The shape of a file, refused before a document is built (py_read_document):
 * a plan is a few levels deep, with a few keys a mapping and a few anchors. */
#define PY_DEPTH_MAX		32	/* collections within collections */
#define PY_KEYS_MAX		1024	/* keys of one mapping */
#define PY_ITEMS_MAX		1024	/* items of one list (old queue names…) */
#define PY_ANCHORS_MAX		256	/* anchors and aliases in one file */

struct loader {
	yaml_document_t		*doc;
	struct plan		*p;
	struct plan_errors	*errs;
	int			 oom;
	yaml_node_t		*match;		/* old.queues.match, when valid */
	yaml_node_t		*names;		/* old.queues.names, when given */
	yaml_node_t		*old_ladder;	/* old.ladder, when it is a ladder */
	yaml_node_t		*library;	/* old.library, when valid */
	bool			 entries_given;	/* move_old.entry is written */
	const char		*root_name;	/* the root in messages; NULL: "the plan" */
};

/* A mapping being read, and its path in messages ("" for the plan itself). */
struct sect {
	yaml_node_t		*map;
	const char		*path;
};

enum url_kind {
	URL_AMQP,		/* amqp(s)://host[:port]/vhost */
	URL_HTTP_BASE,		/* http(s)://host[:port][/path] */
	URL_HTTP		/* http(s)://host[:port][/path][?query] */
};

/* plan_section.h's handle: a mapping of the plan being loaded. */
struct plan_section {
	struct loader		*ld;
	const struct sect	*s;
};

/* plan_yaml.c: the YAML reader — nodes, positions and errors, keys of a
 * mapping, and scalars converted into what the plan holds; from
 * py_syntax_error on, plan_yaml_read.c's: the file and its document. */
int py_mark_num(size_t v);
void py_err_at(struct loader *, const yaml_node_t *, const char *, ...)
    __attribute__((format(printf, 3, 4)));
char *py_copy(struct loader *ld, const char *s);
yaml_node_t *py_node_at(struct loader *ld, int i);
const char *py_text(const yaml_node_t *n);
const char *py_kind_name(const yaml_node_t *n);
bool py_is_null(const yaml_node_t *n);
const char *py_label(char *buf, size_t len, const struct sect *s, const char *key);
yaml_node_pair_t *py_find_pair(struct loader *ld, yaml_node_t *map, const char *key);
void py_check_keys(struct loader *ld, const struct sect *s, const char *const *keys);
yaml_node_t *py_field(struct loader *ld, const struct sect *s, const char *key, int required,
    const char *expect);
int py_get_map(struct loader *ld, const struct sect *s, const char *key, int required,
    const char *expect, const char *path, struct sect *sub);
const char *py_conv_text(struct loader *ld, const yaml_node_t *n, const char *what, const char *expect);
int py_conv_dup(struct loader *ld, const yaml_node_t *n, const char *what, const char *expect,
    char **out);
int py_conv_duration(struct loader *ld, const yaml_node_t *n, const char *what, int64_t *out);
int py_conv_int(struct loader *ld, const yaml_node_t *n, const char *what, int lo, int hi,
    int *out);
int py_conv_bool(struct loader *ld, const yaml_node_t *n, const char *what, bool *out);
int py_check_env_ref(struct loader *ld, const yaml_node_t *n, const char *what, const char *t);
int py_get_text(struct loader *ld, const struct sect *s, const char *key, int required,
    const char *expect, char **out);
int py_get_duration(struct loader *ld, const struct sect *s, const char *key, int required,
    int64_t *out);
int py_get_secret(struct loader *ld, const struct sect *s, const char *key, int required,
    const char *example, char **out);
int py_get_url(struct loader *ld, const struct sect *s, const char *key, int required,
    enum url_kind kind, char **out);
/* KEY of S: one URL of KIND, or a list of 1..MAX distinct ones (AMQP: all
 * with one vhost). Sets *OUT (owned by the plan) and *NOUT. Returns 0 when
 * set or absent (*NOUT untouched; reported when REQUIRED), -1 when invalid. */
int py_get_urls(struct loader *ld, const struct sect *s, const char *key, int required,
    enum url_kind kind, size_t max, char ***out, size_t *nout);
yaml_node_t *py_key_node(struct loader *ld, yaml_node_pair_t *pair);
size_t py_seq_items(struct loader *ld, yaml_node_t *n, const char *what, const char *expect);
yaml_node_t *py_seq_item(struct loader *ld, yaml_node_t *n, size_t i);
int py_conv_json(struct loader *ld, const yaml_node_t *n, const char *what, char **out);
void py_syntax_error(struct loader *ld, const yaml_parser_t *ps, const char *buf, size_t len);
/* What check_url finds wrong with URL as KIND, or NULL; *SECRET is set when
 * it carries credentials. Messages never repeat the URL itself. */
const char *py_url_problem(const char *url, enum url_kind kind, int *secret);
/* Sorts ERRS by position, as a reader goes through the file (stable). */
void py_sort_errors(struct plan_errors *errs);
/* A YAML document as the loaders read it: the parser and the document,
 * each with whether it is there to delete. Zero-initialise. */
struct py_document {
	yaml_parser_t parser;
	yaml_document_t doc;
	bool have_parser, have_doc;
};
/* Parses BUF with D's parser (initialized here) into D's document, its
 * root node into *ROOT; an empty file is reported as expecting EMPTY_EXPECT, a second document
 * as one too many per WHAT ("plan"). A file deeper than PY_DEPTH_MAX, with
 * a mapping of more than PY_KEYS_MAX keys, a list of more than PY_ITEMS_MAX
 * items or more than PY_ANCHORS_MAX anchors and aliases is refused, at the first event past the bound, before
 * any document is built. Returns 0, or -1 after reporting. */
int py_read_document(struct loader *ld, struct py_document *d, const char *buf,
    size_t len, yaml_node_t **root, const char *empty_expect, const char *what);
/* Ends a load of the WHAT ("plan") read into D: reports running out of
 * memory, sorts the errors by position and deletes D's document and
 * parser. Returns whether the load is whole (no error, memory enough). */
bool py_load_end(struct loader *ld, struct py_document *d, const char *what);
/* Reads the file PATH (at most PY_FILE_MAX bytes) into *OUT (the caller
 * frees it) and *OUTLEN. Returns 0, or -1 with ERRS (named PATH) saying
 * why the WHAT ("plan") cannot be read; SIZE_EXPECT is what a file should
 * be instead of too large. */
int py_read_file(const char *path, const char *what, const char *size_expect, char **out,
    size_t *outlen, struct plan_errors *errs);

/* plan_tls.c: a `tls` map of PARENT (broker, flag) into T; PATH
 * ("broker.tls") names it in messages and in T->where. */
void pt_load_tls(struct loader *ld, const struct sect *parent, const char *path,
    struct tls_opts *t);
/* Reports a `tls` map of PARENT that none of URLS (NURLS, NULLs skipped)
 * would use: it has no amqps:// or https:// URL. */
void pt_check_used(struct loader *ld, const struct sect *parent, const char *path,
    const struct tls_opts *t, const char *const *urls, size_t nurls);

/* plan_load_old.c: a PCRE2 pattern over queue names at N (WHAT names it),
 * compiled and its cost bounded; copied into *OUT. Returns 0, or -1
 * after recording why. */
int pl_conv_pattern(struct loader *ld, yaml_node_t *n, const char *what, char **out);
/* The old section of ROOT (old.queues, old.library, max_message_ttl,
 * allow_expiring) into the plan. */
void pl_load_old(struct loader *ld, const struct sect *root);
/* What old.library sets that the plan does not write itself: the
 * selection and move_old.entry. Once every section is read. */
void pl_apply_library(struct loader *ld);

/* plan_load_ladder.c: the ladder section of ROOT into the plan's ladder
 * and destinations. */
void pl_load_ladder(struct loader *ld, const struct sect *root);

/* plan_move_old.c: the move_old section. */
void pm_load_move_old(struct loader *ld, const struct sect *root);

/* plan_check.c: checks across sections, once they are all read. */
void pc_check_sections(struct loader *ld, const struct sect *root);
void pc_check_own(struct loader *ld);

#endif
