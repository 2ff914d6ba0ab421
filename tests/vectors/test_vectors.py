#!/usr/bin/env python3
"""test_vectors: the Python producer of docs/producers.md, exactly as the
page shows it (the ```python block after its "python.vectors runs this
block" marker), gives every answer of ladder.tsv, the vectors `cutover
encode` generates; and its publish_delayed hands pika what the page's
contract says (exchange, key, mandatory, persistent, no expiration, the
dead-letter history stripped, other headers kept). Needs python3-pika.
Exit 0 when all hold, 1 naming each one that does not.

Usage: test_vectors.py [producers.md [ladder.tsv]]
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
doc = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "../../docs/producers.md")
tsv = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "ladder.tsv")
MARKER = "<!-- python.vectors runs this block"

with open(doc, encoding="utf-8") as f:
    lines = f.read().split("\n")
try:
    start = next(i for i, l in enumerate(lines) if l.startswith(MARKER))
    begin = next(i for i in range(start, len(lines)) if lines[i] == "```python") + 1
    end = next(i for i in range(begin, len(lines)) if lines[i] == "```")
except StopIteration:
    sys.exit(f"test_vectors: {doc} has no ```python block after '{MARKER}'")
code = "\n".join(lines[begin:end])
ns = {"__name__": "producer_example"}
exec(compile(code, f"{doc} (line {begin + 1})", "exec"), ns)
Ladder, LadderRefused, publish_delayed = ns["Ladder"], ns["LadderRefused"], ns["publish_delayed"]

failures = cases = refused = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg, file=sys.stderr)


def opt(v):
    return None if v == "-" else v


with open(tsv, encoding="utf-8") as f:
    for n, line in enumerate(f, 1):
        line = line.rstrip("\n")
        if not line or line.startswith("#") or line.startswith("naming\t"):
            continue
        naming, prefix, unit, levels, max_ms, delay, dest, result, units, rounded, exchange, key = line.split("\t")
        cases += 1
        want = (exchange, key, int(units), int(rounded)) if result == "ok" else "refused"
        try:
            ladder = Ladder(naming, opt(prefix), int(unit) if opt(unit) else None,
                            int(levels) if opt(levels) else None, int(max_ms) if opt(max_ms) else None)
            ex, rk, u = ladder.encode(int(delay), dest)
            got = (ex, rk, u, u * ladder.unit_ms)
        except LadderRefused:
            got = "refused"
            refused += 1
        if got != want:
            fail(f"{tsv}:{n}: {naming} {delay} ms to {dest}: expected {want}, got {got}")

if cases == 0:
    sys.exit(f"test_vectors: no case in {tsv}")


class Channel:
    """Stands in for pika's BlockingChannel: records one basic_publish."""

    def basic_publish(self, exchange, routing_key, body, properties=None, mandatory=False):
        self.sent = (exchange, routing_key, body, properties, mandatory)


ch = Channel()
ladder = Ladder("cutover", "delay", 1000, 6)
publish_delayed(ch, ladder, 42000, "email.delivery", b"x",
                {"x-death": [{"queue": "delay.level.05"}], "x-first-death-queue": "q",
                 "x-last-death-reason": "expired", "trace-id": "t1"})
ex, rk, body, props, mandatory = ch.sent
if (ex, rk, body) != ("delay.level.05", "1.0.1.0.1.0.email.delivery", b"x"):
    fail(f"publish_delayed sent {(ex, rk, body)}")
if mandatory is not True:
    fail("publish_delayed does not publish mandatory")
if props is None or props.delivery_mode != 2:
    fail("publish_delayed does not publish persistent (delivery_mode 2)")
if props is not None and props.expiration is not None:
    fail(f"publish_delayed sets an expiration ({props.expiration})")
if props is not None and props.headers != {"trace-id": "t1"}:
    fail(f"publish_delayed sent the headers {props.headers}: the dead-letter history must go, the rest stay")
try:
    publish_delayed(Channel(), ladder, 64000, "email.delivery", b"x")
    fail("publish_delayed sent a delay beyond the ladder")
except LadderRefused:
    pass

print(f"test_vectors: {cases} cases ({refused} refused) and the publish, {failures} failure(s)")
sys.exit(1 if failures else 0)
