/* view_samples: a plan's watch samples as the API's JSON text, written
 * straight from the store's rows: a page of 5,000 samples built as a
 * jansson document cost serve about 20,000 allocations and most of its
 * time under readers, for text that is always the same shape. The text
 * is byte for byte what json_dumps(JSON_COMPACT | JSON_PRESERVE_ORDER)
 * made of that document (unit.view checks it against jansson). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "textbuf.h"
#include "utf8.h"
#include "view.h"

#define TEXT_FIRST	(64 * 1024)	/* the buffer's first size; it doubles */
#define NUMBER_MAX	40		/* "%.17g" of a double, and ".0" */

/* The text being written, and where the samples' page ends. */
struct text {
	struct textbuf b;
	size_t n;		/* samples written */
	int64_t next;		/* the first sample's time not written, or 0 */
};

/* Appends the C string S to T. */
static void
put_text(struct text *t, const char *s)
{
	textbuf_put(&t->b, s, strlen(s));
}

/* Appends S as a JSON string, as view_string and jansson's dump make it:
 * a byte that is not valid UTF-8 becomes '?', '"' and '\\' and the
 * control characters are escaped (the usual short forms, else \u00XX in
 * upper-case hex), everything else is copied. */
static void
put_string(struct text *t, const char *s)
{
	static const char shorts[][3] = {
		['\b'] = "\\b", ['\f'] = "\\f", ['\n'] = "\\n", ['\r'] = "\\r",
		['\t'] = "\\t",
	};
	size_t n = strlen(s), i = 0, k;
	char esc[8];

	textbuf_put(&t->b, "\"", 1);
	while (i < n) {
		unsigned char c = (unsigned char)s[i];

		if ((k = utf8_seq((const unsigned char *)s + i, n - i)) == 0) {
			textbuf_put(&t->b, "?", 1);
			i++;
		} else if (c == '"' || c == '\\') {
			textbuf_put(&t->b, c == '"' ? "\\\"" : "\\\\", 2);
			i++;
		} else if (c < 0x20) {
			if (c < sizeof(shorts) / sizeof(shorts[0]) && shorts[c][0] != '\0')
				textbuf_put(&t->b, shorts[c], 2);
			else {
				snprintf(esc, sizeof(esc), "\\u%04X", c);
				textbuf_put(&t->b, esc, 6);
			}
			i++;
		} else {
			textbuf_put(&t->b, s + i, k);
			i += k;
		}
	}
	textbuf_put(&t->b, "\"", 1);
}

/* Appends V as jansson writes a real (jsonp_dtostr, its default precision
 * of 17 digits): "%.17g", ".0" added when that reads as an integer, and
 * the exponent without a '+' or leading zeros; null when V is not finite,
 * as the view always wrote it. */
static void
put_real(struct text *t, double v)
{
	char num[NUMBER_MAX], *e, *from;
	size_t n;

	if (!isfinite(v)) {
		textbuf_put(&t->b, "null", 4);
		return;
	}
	n = (size_t)snprintf(num, sizeof(num) - 2, "%.17g", v);
	if (strchr(num, '.') == NULL && strchr(num, 'e') == NULL) {
		memcpy(num + n, ".0", 3);
		n += 2;
	}
	if ((e = strchr(num, 'e')) != NULL) {
		e++;
		if (*e == '-')
			e++;
		for (from = e; *from == '+' || *from == '0'; from++)
			;
		memmove(e, from, strlen(from) + 1);
		n = strlen(num);
	}
	textbuf_put(&t->b, num, n);
}

/* Appends the integer V. */
static void
put_int(struct text *t, int64_t v)
{
	char num[24];

	textbuf_put(&t->b, num, (size_t)snprintf(num, sizeof(num), "%lld", (long long)v));
}

/* store_each_sample's FN: one sample into the text at ARG, or, once
 * VIEW_SAMPLES_MAX are in, its time as where the next page starts. */
static int
sample(int64_t ts_ms, const char *metric, const char *label, double value, void *arg)
{
	struct text *t = arg;

	if (t->n == VIEW_SAMPLES_MAX) {
		t->next = ts_ms;
		return 1;
	}
	put_text(t, t->n == 0 ? "{\"ts_ms\":" : ",{\"ts_ms\":");
	put_int(t, ts_ms);
	put_text(t, ",\"metric\":");
	put_string(t, metric);
	put_text(t, ",\"label\":");
	put_string(t, label != NULL ? label : "");
	put_text(t, ",\"value\":");
	put_real(t, value);
	textbuf_put(&t->b, "}", 1);
	t->n++;
	return t->b.failed ? -1 : 0;
}

int
view_samples_text(struct store *s, int64_t id, int64_t since_ms, char **out,
    size_t *outlen, char *err, size_t errlen)
{
	struct store_plan p;
	struct text t = { .b.first = TEXT_FIRST };
	int r, rc = -1;

	*out = NULL;
	*outlen = 0;
	if ((r = store_plan_get(s, id, &p, err, errlen)) != 0)
		return r;
	put_text(&t, "{\"plan\":");
	put_int(&t, id);
	put_text(&t, ",\"since\":");
	put_int(&t, since_ms);
	put_text(&t, ",\"samples\":[");
	if (store_each_sample(s, id, since_ms, sample, &t, err, errlen) != 0 && !t.b.failed)
		goto done;
	put_text(&t, t.next != 0 ? "],\"truncated\":true,\"next_since\":" :
	    "],\"truncated\":false,\"next_since\":null");
	if (t.next != 0)
		put_int(&t, t.next);
	put_text(&t, "}\n");
	if (t.b.failed) {
		snprintf(err, errlen, "reading samples of plan %lld: out of memory",
		    (long long)id);
		goto done;
	}
	*out = t.b.p;
	*outlen = t.b.len;
	t.b.p = NULL;
	rc = 0;
done:
	free(t.b.p);
	return rc;
}
