/* cli_operators: `cutover operators add|list|remove` — the operators file
 * serve reads, kept without editing it by hand. `add` makes a token,
 * prints it once and writes only its sha256; the file is replaced whole
 * (a new file beside it, then renamed over it), so that serve starting
 * meanwhile reads either the old file or the new one, never half of it. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "auth.h"
#include "cli.h"
#include "errbuf.h"
#include "hex.h"
#include "plan.h"
#include "serve_config.h"

/* Where the package's serve.yaml puts the operators file. */
#define OPERATORS_DEFAULT	"/etc/cutover/operators"
#define OPERATORS_FILE_MAX	(1024 * 1024)
#define TOKEN_BYTES		32

static const char usage_line[] =
    "cutover operators add NAME | list | remove NAME [--file FILE | --config serve.yaml]";

/* The operators file the verb works on: --file, else serve.yaml's
 * `operators:` (--config), else the package's. Returns 0 with *PATH (to
 * free), or -1 after saying why. */
static int
operators_path(const char *file, const char *config, char **path)
{
	struct plan_errors errs = { 0 };
	struct serve_config *c = NULL;
	char line[512];
	int rc = -1;

	if (file != NULL || config == NULL) {
		*path = strdup(file != NULL ? file : OPERATORS_DEFAULT);
		return *path != NULL ? 0 : -1;
	}
	if (serve_config_load_file(config, &c, &errs) != 0) {
		for (size_t i = 0; i < errs.n; i++)
			fprintf(stderr, "%s\n", plan_error_format(&errs, i, line, sizeof(line)));
		goto done;
	}
	if (c->operators == NULL) {
		fprintf(stderr, "cutover operators: %s names no operators file "
		    "(operators: PATH); give --file FILE\n", config);
		goto done;
	}
	*path = strdup(c->operators);
	rc = *path != NULL ? 0 : -1;
done:
	plan_errors_free(&errs);
	serve_config_free(c);
	return rc;
}

/* Whether TEXT holds a line that is not blank or a comment: a file
 * without one is empty to `add`, where serve refuses it. */
static bool
has_entry(const char *text)
{
	for (const char *p = text; *p != '\0'; ) {
		const char *e = strchr(p, '\n');
		size_t n = e != NULL ? (size_t)(e - p) : strlen(p);

		for (size_t i = 0; i < n && p[i] != '#'; i++)
			if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
				return true;
		p += n + (e != NULL);
	}
	return false;
}

/* Reads the operators file PATH: its text in *TEXT (empty when there is
 * no file yet; to free) and, when it names an operator, the set loaded as
 * serve loads it in *OPS (NULL otherwise). Returns 0, or -1 after saying
 * why: a file serve would refuse is not written over. */
static int
operators_read(const char *path, char **text, struct auth **ops)
{
	char err[1024];
	size_t len;

	*ops = NULL;
	if (cli_read_file(path, path, OPERATORS_FILE_MAX, text, &len, err, sizeof(err)) != 0) {
		if (errno != ENOENT) {
			fprintf(stderr, "cutover operators: %s\n", err);
			return -1;
		}
		*text = strdup("");
		return *text != NULL ? 0 : -1;
	}
	if (has_entry(*text) && auth_load(path, ops, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover operators: %s (mend it before changing it)\n", err);
		free(*text);
		*text = NULL;
		return -1;
	}
	return 0;
}

/* Replaces PATH with the LEN bytes of TEXT: a new file in its folder,
 * synced, then renamed over PATH. It keeps the owner, group and mode of
 * the file it replaces (serve may run as another user, as the package's
 * does, reading it through its group); a first file is mode 0600, its
 * creator's. Sets *CREATED when there was none. Returns 0, or -1 after
 * saying why. */
static int
operators_write(const char *path, const char *text, size_t len, bool *created)
{
	struct stat old;
	char *tmp = NULL;
	size_t off = 0;
	int fd = -1, rc = -1;

	*created = stat(path, &old) != 0;

	if ((tmp = malloc(strlen(path) + 8)) == NULL)
		goto done;
	sprintf(tmp, "%s.XXXXXX", path);
	if ((fd = mkstemp(tmp)) < 0) {
		fprintf(stderr, "cutover operators: cannot write beside %s: %s\n", path,
		    strerror(errno));
		free(tmp);
		tmp = NULL;
		goto done;
	}
	if (!*created && ((old.st_uid != geteuid() || old.st_gid != getegid()) &&
	    fchown(fd, old.st_uid, old.st_gid) != 0)) {
		fprintf(stderr, "cutover operators: cannot give the new %s the old one's owner "
		    "and group: %s (run this as its owner or root)\n", path, strerror(errno));
		goto done;
	}
	if (fchmod(fd, *created ? 0600 : old.st_mode & 07777) != 0) {
		fprintf(stderr, "cutover operators: setting the mode of %s: %s\n", tmp,
		    strerror(errno));
		goto done;
	}
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "cutover operators: writing %s: %s\n", tmp, strerror(errno));
			goto done;
		}
		off += (size_t)n;
	}
	if (fsync(fd) != 0 || close(fd) != 0) {
		fd = -1;
		fprintf(stderr, "cutover operators: writing %s: %s\n", tmp, strerror(errno));
		goto done;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		fprintf(stderr, "cutover operators: replacing %s: %s\n", path, strerror(errno));
		goto done;
	}
	rc = 0;
done:
	if (fd >= 0)
		close(fd);
	if (rc != 0 && tmp != NULL)
		unlink(tmp);
	free(tmp);
	return rc;
}

/* `add NAME`: a new token, its hash appended to PATH, the token printed
 * once on stdout (what to do with it on stderr, so that
 * TOKEN=$(cutover operators add NAME) keeps only the token). */
static int
operators_add(const char *path, const char *name)
{
	unsigned char raw[TOKEN_BYTES];
	char token[2 * TOKEN_BYTES + 1], hash[65], *text = NULL, *out = NULL;
	struct auth *ops = NULL;
	size_t len, olen;
	bool created;
	int rc = CLI_FAIL;

	if (!auth_name_valid(name, strlen(name))) {
		fprintf(stderr, "cutover operators: '%s' cannot be an operator's name: 1 to 64 "
		    "of A-Z a-z 0-9 . _ @ -\n", name);
		return CLI_FAIL;
	}
	if (operators_read(path, &text, &ops) != 0)
		goto done;
	for (size_t i = 0; i < auth_count(ops); i++)
		if (strcmp(auth_name(ops, i), name) == 0) {
			fprintf(stderr, "cutover operators: '%s' is already an operator in %s; to "
			    "give them a new token: cutover operators remove %s --file %s, then "
			    "add them again\n", name, path, name, path);
			goto done;
		}
	if (RAND_bytes(raw, sizeof(raw)) != 1) {
		fprintf(stderr, "cutover operators: no random bytes for a token\n");
		goto done;
	}
	hex_encode(raw, sizeof(raw), token);
	if (auth_hash_hex(token, strlen(token), hash) != 0)
		goto done;
	len = strlen(text);
	olen = len + strlen(name) + sizeof(hash) + 4;
	if ((out = malloc(olen)) == NULL)
		goto done;
	snprintf(out, olen, "%s%s%s:%s\n", text, len > 0 && text[len - 1] != '\n' ? "\n" : "",
	    name, hash);
	if (operators_write(path, out, strlen(out), &created) != 0)
		goto done;
	if (created)
		fprintf(stderr, "cutover operators: made %s, readable by you alone: the user "
		    "cutover serve runs as must read it (the package's: chgrp cutover %s; "
		    "chmod 640 %s)\n", path, path, path);
	fprintf(stderr, "cutover operators: '%s' added to %s; their token follows, shown "
	    "this once (the file holds only its sha256):\n", name, path);
	fflush(stderr);
	printf("%s\n", token);
	fflush(stdout);
	fprintf(stderr, "Give it to %s: the status page asks for it when they act, the CLI "
	    "reads it from $CUTOVER_TOKEN. cutover serve reads %s when it starts: restart it "
	    "to let %s in.\n", name, path, name);
	rc = CLI_OK;
done:
	OPENSSL_cleanse(raw, sizeof(raw));
	OPENSSL_cleanse(token, sizeof(token));
	auth_free(ops);
	free(text);
	free(out);
	return rc;
}

/* `list`: the operators' names, one a line. */
static int
operators_list(const char *path)
{
	struct auth *ops = NULL;
	char *text = NULL;

	if (operators_read(path, &text, &ops) != 0)
		return CLI_FAIL;
	if (auth_count(ops) == 0)
		fprintf(stderr, "cutover operators: no operator in %s yet (cutover operators "
		    "add NAME --file %s)\n", path, path);
	for (size_t i = 0; i < auth_count(ops); i++)
		printf("%s\n", auth_name(ops, i));
	auth_free(ops);
	free(text);
	return CLI_OK;
}

/* `remove NAME`: PATH without NAME's line, its comments and the other
 * operators' lines as they were. */
static int
operators_remove(const char *path, const char *name)
{
	struct auth *ops = NULL;
	char *text = NULL, *out = NULL, *o;
	size_t nlen = strlen(name), i;
	bool created;
	int rc = CLI_FAIL;

	if (operators_read(path, &text, &ops) != 0)
		goto done;
	for (i = 0; i < auth_count(ops) && strcmp(auth_name(ops, i), name) != 0; i++)
		;
	if (i == auth_count(ops)) {
		fprintf(stderr, "cutover operators: no operator '%s' in %s (cutover operators "
		    "list --file %s names them)\n", name, path, path);
		goto done;
	}
	if ((out = o = malloc(strlen(text) + 1)) == NULL)
		goto done;
	for (const char *p = text; *p != '\0'; ) {
		const char *e = strchr(p, '\n'), *q = p;
		size_t n = e != NULL ? (size_t)(e - p) + 1 : strlen(p);

		while (*q == ' ' || *q == '\t')
			q++;
		/* Its line: the name, then the colon (serve allows none
		 * between). */
		if (!(strncmp(q, name, nlen) == 0 && q[nlen] == ':')) {
			memcpy(o, p, n);
			o += n;
		}
		p += n;
	}
	*o = '\0';
	if (operators_write(path, out, strlen(out), &created) != 0)
		goto done;
	fprintf(stderr, "cutover operators: '%s' removed from %s; cutover serve reads it when "
	    "it starts: restart it to shut them out.\n", name, path);
	rc = CLI_OK;
done:
	auth_free(ops);
	free(text);
	free(out);
	return rc;
}

/* Where the command line says the operators file is. */
struct where {
	const char *file, *config;
};

/* cli_options' help: the subcommands and where the file is. */
static void
help(void *data)
{
	(void)data;
	printf("\n"
	    "  add NAME     make a token for NAME, print it once, write its sha256\n"
	    "  list         the operators' names\n"
	    "  remove NAME  take NAME's line out\n"
	    "  --file FILE  the operators file (default %s)\n"
	    "  --config F   the operators file serve.yaml F names\n\n"
	    "cutover serve reads the file when it starts.\n", OPERATORS_DEFAULT);
}

int
cli_operators(int argc, char **argv)
{
	static const struct cli_option opts[] = {
		CLI_TEXT("file", 'f', struct where, file),
		CLI_TEXT("config", 'c', struct where, config),
		CLI_OPTIONS_END
	};
	struct where w = { 0 };
	const struct cli_options o = { .verb = "operators", .usage = usage_line,
	    .opts = opts, .help = help, .data = &w };
	const char *file, *config, *sub;
	char *path = NULL;
	int rc;

	if ((rc = cli_options_read(&o, argc, argv)) != CLI_GO_ON)
		return rc;
	file = w.file;
	config = w.config;
	if (file != NULL && config != NULL)
		return cli_usage_error("operators", usage_line, "--file and --config both name "
		    "the file: give one");
	if (optind >= argc)
		return cli_usage_error("operators", usage_line, "expected add, list or remove");
	sub = argv[optind];
	if (strcmp(sub, "list") == 0 ? argc - optind != 1 :
	    (strcmp(sub, "add") == 0 || strcmp(sub, "remove") == 0) ? argc - optind != 2 : 1)
		return cli_usage_error("operators", usage_line, strcmp(sub, "list") == 0 ||
		    strcmp(sub, "add") == 0 || strcmp(sub, "remove") == 0 ?
		    "wrong number of arguments for '%s'" : "unknown subcommand '%s'", sub);
	if (operators_path(file, config, &path) != 0)
		return CLI_FAIL;
	rc = strcmp(sub, "add") == 0 ? operators_add(path, argv[optind + 1]) :
	    strcmp(sub, "remove") == 0 ? operators_remove(path, argv[optind + 1]) :
	    operators_list(path);
	free(path);
	return rc;
}
