/* test_file_read: the one file reader — a file read whole up to its
 * bound and not a byte past it, each failure told apart by its code. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm.h"
#include "file_read.h"

/* Writes N bytes of 'x' into a new temporary file, its name into PATH. */
static void
make_file(char *path, size_t len, size_t n)
{
	const char *tmp = getenv("TMPDIR");
	FILE *f;
	int fd;

	snprintf(path, len, "%s/file_read.XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
	assert_true((fd = mkstemp(path)) >= 0);
	assert_non_null(f = fdopen(fd, "wb"));
	for (size_t i = 0; i < n; i++)
		assert_int_equal(fputc('x', f), 'x');
	assert_int_equal(fclose(f), 0);
}

/* A file of exactly the bound is read whole and NUL-terminated; one
 * byte more is FILE_READ_EBIG with nothing handed back. */
static void
test_the_bound_is_exact(void **state)
{
	char path[512], *out = (char *)1;
	size_t len = 99;

	(void)state;
	make_file(path, sizeof(path), 10000);
	assert_int_equal(file_read(path, 10000, &out, &len), FILE_READ_OK);
	assert_int_equal(len, 10000);
	assert_int_equal(out[9999], 'x');
	assert_int_equal(out[10000], '\0');
	free(out);
	assert_int_equal(file_read(path, 9999, &out, &len), FILE_READ_EBIG);
	assert_null(out);
	assert_int_equal(len, 0);
	unlink(path);
}

/* An empty file is a string of length 0, not a failure. */
static void
test_empty_file(void **state)
{
	char path[512], *out = NULL;
	size_t len = 99;

	(void)state;
	make_file(path, sizeof(path), 0);
	assert_int_equal(file_read(path, 100, &out, &len), FILE_READ_OK);
	assert_non_null(out);
	assert_int_equal(len, 0);
	assert_string_equal(out, "");
	free(out);
	unlink(path);
}

/* A missing file is FILE_READ_EOPEN with errno saying why; a directory
 * opens but does not read: FILE_READ_EREAD. */
static void
test_open_and_read_failures(void **state)
{
	char *out = (char *)1;
	size_t len = 99;

	(void)state;
	errno = 0;
	assert_int_equal(file_read("/nonexistent/file_read", 100, &out, &len),
	    FILE_READ_EOPEN);
	assert_int_equal(errno, ENOENT);
	assert_null(out);
	assert_int_equal(file_read("/", 100, &out, &len), FILE_READ_EREAD);
	assert_int_equal(errno, EISDIR);
	assert_null(out);
}

/* Every code has its words; anything else is "unknown". */
static void
test_codes_have_words(void **state)
{
	(void)state;
	assert_string_equal(file_read_status_name(FILE_READ_EOPEN), "cannot open it");
	assert_string_equal(file_read_status_name(FILE_READ_EBIG), "larger than the bound");
	assert_string_equal(file_read_status_name(FILE_READ_ENOMEM), "out of memory");
	assert_string_equal(file_read_status_name(FILE_READ_EREAD), "read error");
	assert_string_equal(file_read_status_name(-99), "unknown");
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_the_bound_is_exact),
	cmocka_unit_test(test_empty_file),
	cmocka_unit_test(test_open_and_read_failures),
	cmocka_unit_test(test_codes_have_words))
