#!/usr/bin/env python3
"""notify_receiver: the webhook receiver integration.notify starts — an
HTTP server on 127.0.0.1:PORT that answers every POST with the next status
of STATUSES (comma-separated; the last one repeats; default 200) and
appends what it got, one JSON line per request (path, content_type,
status answered, body), to LOG. STATUSES "hang": it records each request
(status null) and never answers. Writes LOG.ready once it listens; stops
on SIGTERM. Usage: notify_receiver.py PORT LOG [STATUSES]"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from http_fixture import QuietHandler, serve  # noqa: E402 (after the path)

port = int(sys.argv[1])
log = sys.argv[2]
spec = sys.argv[3] if len(sys.argv) > 3 else "200"
statuses = [] if spec == "hang" else [int(s) for s in spec.split(",")]
served = 0


class Handler(QuietHandler):
    def do_POST(self):
        global served
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        status = statuses[min(served, len(statuses) - 1)] if statuses else None
        served += 1
        with open(log, "a") as f:
            f.write(json.dumps({"path": self.path,
                                "content_type": self.headers.get("Content-Type"),
                                "status": status,
                                "body": body.decode("utf-8", "replace")}) + "\n")
        while status is None:
            time.sleep(60)
        self.send_response(status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")


serve(port, Handler, log)
