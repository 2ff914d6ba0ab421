/* test_sentences: messages built a clause at a time into a fixed buffer. */

#include <stdlib.h>
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
	static const struct {
		const char *what;
		size_t size;
		const char *clauses[3];
		const char *want;
	} cases[] = {
		{ "the second clause cut", 24,
		  { "probe #0 came early", "level 1 early" }, "probe #0 came early;..." },
		{ "room for the separator but not a letter more: cut whole", 24,
		  { "probe #0 arrived early", "level 1 early" }, "probe #0 arrived ear..." },
		{ "a full buffer takes nothing more, and stays terminated", 24,
		  { "probe #0 arrived early", "level 1 early", "more" },
		  "probe #0 arrived ear..." },
		{ "the first clause alone, too long", 24,
		  { "123456789012345678901234567" }, "12345678901234567890..." },
		{ "exactly filling is no cut", 24,
		  { "12345678901234567890123" }, "12345678901234567890123" },
		{ "a tiny buffer", 3, { "abcdef" }, "ab" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* Exactly the buffer's size: a sanitizer sees a byte past it. */
		char *buf = calloc(1, cases[i].size);

		assert_non_null(buf);
		for (size_t k = 0; k < 3 && cases[i].clauses[k] != NULL; k++)
			sentences_add(buf, cases[i].size, "%s", cases[i].clauses[k]);
		if (strcmp(buf, cases[i].want) != 0)
			fail_msg("%s: \"%s\", not \"%s\"", cases[i].what, buf,
			    cases[i].want);
		free(buf);
	}
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_clauses_joined),
	cmocka_unit_test(test_cut_is_marked))
