/* page: serves the embedded page files and /metrics. */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "metrics.h"
#include "page.h"

/* Nothing from anywhere but this server; no inline script or style. */
#define PAGE_CSP "default-src 'none'; script-src 'self'; style-src 'self'; " \
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; " \
    "form-action 'none'; frame-ancestors 'none'"

const struct page_asset *
page_asset(const char *name)
{
	for (const struct page_asset *a = page_assets; a->name != NULL; a++)
		if (strcmp(a->name, name) == 0)
			return a;
	return NULL;
}

enum page_kind
page_route(const char *path, struct page_target *t)
{
	memset(t, 0, sizeof(*t));
	if (strcmp(path, "/metrics") == 0)
		return t->kind = PAGE_METRICS;
	if (strcmp(path, "/") == 0 || strcmp(path, "/index.html") == 0)
		t->asset = page_asset("index.html");
	else if (strncmp(path, "/assets/", 8) == 0 && strchr(path + 8, '/') == NULL &&
	    strcmp(path + 8, "index.html") != 0)
		t->asset = page_asset(path + 8);
	return t->kind = t->asset != NULL ? PAGE_ASSET : PAGE_NONE;
}

static const char *
content_type(const char *name)
{
	const char *dot = strrchr(name, '.');

	if (dot == NULL)
		return "application/octet-stream";
	if (strcmp(dot, ".html") == 0)
		return "text/html; charset=utf-8";
	if (strcmp(dot, ".js") == 0)
		return "text/javascript; charset=utf-8";
	if (strcmp(dot, ".css") == 0)
		return "text/css; charset=utf-8";
	if (strcmp(dot, ".svg") == 0)
		return "image/svg+xml";
	return "application/octet-stream";
}

static enum MHD_Result
queue(struct MHD_Connection *c, struct MHD_Response *resp, int code, const char *type,
    int *status)
{
	enum MHD_Result ret;

	if (resp == NULL)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Content-Security-Policy", PAGE_CSP);
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	ret = MHD_queue_response(c, (unsigned int)code, resp);
	MHD_destroy_response(resp);
	if (ret == MHD_YES)
		*status = code;
	return ret;
}

enum MHD_Result
page_respond(struct MHD_Connection *c, const struct page_target *t, struct store *s,
    int *status)
{
	struct api_response r = { 0 };
	struct MHD_Response *resp;
	char err[512], *text = NULL;
	size_t len = 0;

	if (t->kind == PAGE_ASSET)
		return queue(c, MHD_create_response_from_buffer(t->asset->len,
		    (void *)t->asset->data, MHD_RESPMEM_PERSISTENT), 200,
		    content_type(t->asset->name), status);
	if (metrics_render(s, &text, &len, err, sizeof(err)) == 0)
		return queue(c, MHD_create_response_from_buffer(len, text,
		    MHD_RESPMEM_MUST_FREE), 200, "text/plain; version=0.0.4; charset=utf-8",
		    status);
	api_error(&r, 500, "reading the metrics failed: %s", err);
	resp = MHD_create_response_from_buffer(r.len, r.body, MHD_RESPMEM_MUST_FREE);
	if (resp != NULL)
		r.body = NULL;
	api_response_clear(&r);
	return queue(c, resp, 500, "application/json", status);
}
