#!/usr/bin/env python3
"""fleet_net: bench/fleet's network pieces, in one process.

- An HTTP flag service for every plan of the fleet (the plan's `flag:
  kind: http`): GET /NAME answers {"enabled": V} (false until written),
  PUT or POST /NAME with {"enabled": V} sets it. A flag service of its own
  per plan would be as many processes; one path each is what the plans
  see apart.
- TCP proxies in front of the broker for one plan (its AMQP and management
  ports): while the file DELAY_FILE exists, every chunk the broker sends
  reaches the plan DELAY_MS after it arrived (the plan's requests go
  through at once); without it they pass at once. That is a broker slow
  to answer that one plan, and only that one.

Usage: fleet_net.py --flag-port P [--proxy LISTEN:TARGET ...]
    [--delay-file PATH] [--delay-ms MS] --ready FILE
Writes FILE once every socket listens; runs until killed.
"""
import argparse
import json
import os
import queue
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FLAGS = {}
FLAGS_LOCK = threading.Lock()


class FlagHandler(BaseHTTPRequestHandler):
    """One plan's flag per path."""

    def log_message(self, fmt, *args):
        pass

    def answer(self, code, doc):
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with FLAGS_LOCK:
            value = FLAGS.get(self.path, False)
        self.answer(200, {"enabled": value})

    def write(self):
        n = int(self.headers.get("Content-Length") or 0)
        try:
            doc = json.loads(self.rfile.read(n) or b"{}")
        except ValueError:
            self.answer(400, {"error": "not JSON"})
            return
        with FLAGS_LOCK:
            FLAGS[self.path] = doc.get("enabled", False)
        self.answer(200, {})

    do_PUT = write
    do_POST = write


def pump_delayed(src, dst, delay_file, delay_s):
    """Copies src to dst, each chunk DELAY_S after it arrived while
    DELAY_FILE exists (None: never): a reader thread stamps chunks, this
    one sends them when due, so a long answer is late by DELAY_S, not by
    DELAY_S a chunk."""
    chunks = queue.Queue()

    def reader():
        try:
            while True:
                data = src.recv(65536)
                slow = delay_file is not None and os.path.exists(delay_file)
                due = time.monotonic() + (delay_s if slow else 0)
                chunks.put((due, data))
                if not data:
                    return
        except OSError:
            chunks.put((0, b""))

    threading.Thread(target=reader, daemon=True).start()
    try:
        while True:
            due, data = chunks.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    shut_both(src, dst)


def shut_both(*socks):
    """Ends both directions of each socket: one side closing ends the pair."""
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def proxy(listen_port, target_port, delay_file, delay_s):
    """Accepts on 127.0.0.1:LISTEN_PORT and joins each connection to
    127.0.0.1:TARGET_PORT."""
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", listen_port))
    ls.listen(64)

    def serve():
        while True:
            client, _ = ls.accept()
            try:
                upstream = socket.create_connection(("127.0.0.1", target_port))
            except OSError:
                client.close()
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=pump_delayed, args=(client, upstream, None, 0),
                             daemon=True).start()
            threading.Thread(target=pump_delayed, args=(upstream, client, delay_file, delay_s),
                             daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flag-port", type=int, required=True)
    ap.add_argument("--proxy", action="append", default=[])
    ap.add_argument("--delay-file", default="/nonexistent")
    ap.add_argument("--delay-ms", type=int, default=3000)
    ap.add_argument("--ready", required=True)
    a = ap.parse_args()
    flags = ThreadingHTTPServer(("127.0.0.1", a.flag_port), FlagHandler)
    flags.daemon_threads = True
    for p in a.proxy:
        listen, target = p.split(":")
        proxy(int(listen), int(target), a.delay_file, a.delay_ms / 1000.0)
    with open(a.ready, "w") as f:
        f.write("ready\n")
    flags.serve_forever()


if __name__ == "__main__":
    main()
