/* near: the word a person most likely meant, for the messages that
 * answer a mistyped verb, plan, step or alert kind with "did you mean". */
#ifndef CUTOVER_NEAR_H
#define CUTOVER_NEAR_H

#include <stddef.h>

/* The edit distance (insertions, deletions, substitutions, and a swap of
 * two neighbours as one) between A and B, case and '-' against '_' not
 * counted; past LIMIT the count stops at LIMIT + 1. */
size_t near_distance(const char *a, const char *b, size_t limit);

/* Of the N words of WORDS, the one nearest to WORD when it is near enough
 * to have been meant (at most a third of WORD's length away, at least
 * one, and nearer than any other), else NULL. */
const char *near_word(const char *word, const char *const *words, size_t n);

#endif
