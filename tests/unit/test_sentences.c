/* test_sentences: messages built a clause at a time into a fixed buffer. */

#include <string.h>

#include "cm.h"
#include "sentences.h"

static void
test_clauses_joined(void **state)
{
	char buf[64] = "";

	(void)state;
	sentences_add(buf, sizeof(buf), "level %d late", 3);
	sentences_add(buf, sizeof(buf), "level %d early", 4);
	assert_string_equal(buf, "level 3 late; level 4 early");
}

/* A clause that does not fit ends in "..." rather than in the first
 * letters of a word that read as part of the message. */
static void
test_cut_is_marked(void **state)
{
	char buf[24] = "";

	(void)state;
	sentences_add(buf, sizeof(buf), "probe #0 came early");
	sentences_add(buf, sizeof(buf), "level 1 early");
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
	assert_string_equal(buf, "probe #0 came early;...");
	/* Room for the separator but not a letter more: cut whole. */
	memset(buf, 0, sizeof(buf));
	sentences_add(buf, sizeof(buf), "probe #0 arrived early");
	sentences_add(buf, sizeof(buf), "level 1 early");
	assert_string_equal(buf, "probe #0 arrived ear...");
	/* A full buffer takes nothing more, and stays terminated. */
	sentences_add(buf, sizeof(buf), "more");
	assert_string_equal(buf, "probe #0 arrived ear...");
	/* The first clause alone, too long. */
	memset(buf, 0, sizeof(buf));
	sentences_add(buf, sizeof(buf), "%s", "123456789012345678901234567");
	assert_string_equal(buf, "12345678901234567890...");
	/* Exactly filling is no cut. */
	memset(buf, 0, sizeof(buf));
	sentences_add(buf, sizeof(buf), "%s", "12345678901234567890123");
	assert_string_equal(buf, "12345678901234567890123");
}

static void
test_tiny_buffer(void **state)
{
	char buf[3] = "";

	(void)state;
	sentences_add(buf, sizeof(buf), "abcdef");
	assert_string_equal(buf, "ab");
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_clauses_joined),
	cmocka_unit_test(test_cut_is_marked),
	cmocka_unit_test(test_tiny_buffer))
