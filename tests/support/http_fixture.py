"""http_fixture: what the tests' small HTTP servers share (integration
tests' notify_receiver.py, the e2e tests' flag_counter.py): a request
handler that writes no access log, and serving one on 127.0.0.1 until
SIGTERM with a file that says when it listens. A script imports it after
putting this directory on sys.path (support_path)."""
import http.server
import signal
import sys


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """A request handler that logs nothing on stderr: what a test reads
    is the log file its server writes."""

    def log_message(self, *args):
        pass


def serve(port, handler, log, threaded=False):
    """Serves HANDLER (a QuietHandler subclass) on 127.0.0.1:PORT until
    SIGTERM, writing LOG.ready once it listens. THREADED: a thread per
    request (one request held does not hold the others); else one at a
    time."""
    kind = http.server.ThreadingHTTPServer if threaded else http.server.HTTPServer
    server = kind(("127.0.0.1", port), handler)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    open(log + ".ready", "w").close()
    server.serve_forever()
