#!/usr/bin/env python3
"""flag_counter: counts the writes a flag service gets. An HTTP server on
127.0.0.1:PORT that passes every request on to the flag service at
UPSTREAM (the test Unleash) and its answer back, headers and body as they
are, and appends one JSON line per request that is not a GET (method,
path, the status the service answered) to LOG: Unleash records no event
for a switch that changes nothing, so a second flip would not show in its
own log. Writes LOG.ready once it listens; stops on SIGTERM.
Usage: flag_counter.py PORT UPSTREAM LOG"""
import http.client
import json
import os
import sys
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from http_fixture import QuietHandler, serve  # noqa: E402 (after the path)

port = int(sys.argv[1])
upstream = urllib.parse.urlsplit(sys.argv[2])
log = sys.argv[3]
# Headers that describe one hop, not the request: never passed on.
hop = {"connection", "keep-alive", "transfer-encoding", "host", "content-length"}


class Handler(QuietHandler):
    protocol_version = "HTTP/1.1"

    def relay(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in hop}
        conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=30)
        try:
            conn.request(self.command, upstream.path.rstrip("/") + self.path,
                         body=body or None, headers=headers)
            answer = conn.getresponse()
            status, data = answer.status, answer.read()
            answer_headers = [(k, v) for k, v in answer.getheaders() if k.lower() not in hop]
        except OSError as e:
            status, data, answer_headers = 502, str(e).encode(), []
        finally:
            conn.close()
        if self.command != "GET":
            with open(log, "a") as f:
                f.write(json.dumps({"method": self.command, "path": self.path,
                                    "status": status}) + "\n")
        self.send_response(status)
        for k, v in answer_headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = relay


serve(port, Handler, log, threaded=True)
