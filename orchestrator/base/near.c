/* near: edit distance over short words (verbs, plan names, step and alert
 * kinds), to suggest the one a person meant. Words longer than NEAR_MAX
 * are not compared: nobody mistypes a 64-letter name by one letter and
 * expects a guess. */
#include <ctype.h>
#include <string.h>

#include "near.h"

#define NEAR_MAX	64

/* C folded for comparison: case, and '-' as '_' (remove-old, remove_old). */
static int
fold(int c)
{
	return c == '-' ? '_' : tolower((unsigned char)c);
}

size_t
near_distance(const char *a, const char *b, size_t limit)
{
	size_t la = strlen(a), lb = strlen(b), prev2[NEAR_MAX + 1], prev[NEAR_MAX + 1],
	    cur[NEAR_MAX + 1];

	if (la > NEAR_MAX || lb > NEAR_MAX)
		return limit + 1;
	if ((la > lb ? la - lb : lb - la) > limit)
		return limit + 1;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (fold(a[i - 1]) != fold(b[j - 1]));
			size_t best = prev[j] + 1 < cur[j - 1] + 1 ? prev[j] + 1 : cur[j - 1] + 1;

			if (sub < best)
				best = sub;
			/* Two neighbours swapped: one slip, not two. */
			if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) &&
			    fold(a[i - 2]) == fold(b[j - 1]) && prev2[j - 2] + 1 < best)
				best = prev2[j - 2] + 1;
			cur[j] = best;
		}
		memcpy(prev2, prev, sizeof(prev));
		memcpy(prev, cur, sizeof(cur));
	}
	return prev[lb] > limit ? limit + 1 : prev[lb];
}

const char *
near_word(const char *word, const char *const *words, size_t n)
{
	size_t limit = strlen(word) / 3, best = (size_t)-1, d;
	const char *found = NULL;
	int ties = 0;

	if (limit < 1)
		limit = 1;
	for (size_t i = 0; i < n; i++) {
		if (words[i] == NULL)
			continue;
		d = near_distance(word, words[i], limit);
		if (d > limit)
			continue;
		if (d < best) {
			best = d;
			found = words[i];
			ties = 0;
		} else if (d == best && strcmp(words[i], found) != 0) {
			ties++;
		}
	}
	return ties == 0 ? found : NULL;
}
