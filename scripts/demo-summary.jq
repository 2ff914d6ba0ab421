# demo-summary.jq: what plan 'demo' did, from GET /api/plans/ID (the
# steps' results), as scripts/demo prints it once the plan has succeeded.
def step(k): [.steps[] | select(.kind == k)][0];
def s(ms): if ms == null then "?" else ((ms / 100 | round) / 10 | tostring) + " s" end;
def utc(ms): if ms == null then "?" else (ms / 1000 | floor | todate) end;
def n(x): if x == null then "?" else (x | tostring) end;
(step("measure_horizon").result.summary // {}) as $h
| (step("canary").result // {}) as $c
| ($c.summary // {}) as $cs
| (step("flip") // {}) as $f
| (step("move_old").result) as $m
| (step("watch").result // {}) as $w
| ($w.probe // {}) as $p
| (step("remove_old").result // {}) as $r
| ($c.max_lateness_ms) as $bound
| "  took          \(s(.steps[-1].ended_ms - .steps[0].started_ms)) from measure_horizon to remove_old",
  "  measured      \(n($h.queues)) old queues holding \(n($h.total_messages)) messages; the longest TTL \(s($h.max_ttl_ms)) (\($h.max_ttl_queue // "?"))",
  "  canary        \(n($cs.arrived)) of \(n($cs.count)) test messages came through the ladder: \(n($cs.lost)) lost, \(n($cs.early)) early, \(n($cs.late)) late; lateness p50 \(n($cs.p50_ms)) ms, max \(n($cs.max_ms)) ms against its bound of \(n($bound)) ms (canary.max_lateness)",
  "  flip          the flag turned on at \(utc($f.ended_ms)), approved by \($f.approved_by // "?")",
  (if $m == null then
  "  moved         nothing: this plan has no move_old step, so the messages already in the old queues were left to come out by themselves"
   else
  "  moved         \(n($m.counts.moved)) messages from the old queues into the ladder; \(n($m.counts.left)) left there, \(n($m.counts.skipped)) skipped, \(n($m.counts.may_duplicate)) may come twice"
   end),
  "  drained       the last message entered the old path at \(utc($w.last_old_entry_ms)) (\(s($w.last_old_entry_ms - $w.flip_ms)) after the flip, as the broker's statistics saw it: they lag by seconds); the watch waited until \(utc($w.deadline_ms)) (that + the longest TTL \(s($w.max_ttl_ms)) + allowance \(s($w.allowance_ms))); at its end the \(n($w.summary.old_queues)) old queues held \(n($w.summary.old_depth)) messages",
  "  probes        the watch sent \(n($p.sent)) probes through the ladder: \(n($p.arrived)) arrived, \(n($p.lost)) lost, \(n($p.early)) early, \(n($p.late)) late; lateness max \(n($p.max_lateness_ms)) ms against the same bound of \(n($bound)) ms",
  "  removed       \(n($r.counts.removed)) old queues deleted (each empty, unused and past its deadline), \(n($r.counts.gone)) already gone, \(n($r.counts.left)) left",
  "  alerts        \(.alerts | length) open"
