/* The cutover status page's step results: what the page shows of each
 * step kind's result (a sentence and label/value pairs), the ladder's
 * levels as a strip, and what remove_old's preview would do. Pure: it
 * builds elements from a result with draw.js's helpers, and keeps no
 * state; app.js takes it from window.cutoverSteps. Loaded after draw.js,
 * before app.js. */
'use strict';
window.cutoverSteps = (function () {
  var D = window.cutoverDraw;
  var el = D.el, fmtTime = D.fmtTime, fmtDur = D.fmtDur, num = D.num, plural = D.plural, fmtSpan = D.fmtSpan;

  /* The preview remove_old's engine stores while it waits: what it would
   * delete now and what it would leave, and why (`old remove --dry-run`). */
  function previewLists(r) {
    var e = (r.preview && r.preview.entries) || [];
    return {
      go: e.filter(function (x) { return x.outcome === 'would_remove'; }),
      gone: e.filter(function (x) { return x.outcome === 'gone'; }),
      stay: e.filter(function (x) { return x.outcome !== 'would_remove' && x.outcome !== 'gone'; }),
      at: r.preview_ms, error: r.preview_error
    };
  }
  function previewView(r) {
    var l = previewLists(r);
    return { words: 'Preview at ' + fmtTime(l.at) + ': approving now would delete ' + plural(l.go.length, 'old queue') +
      ' and leave ' + l.stay.length + '.', pairs: [] };
  }
  /* What the page shows of each step kind's result: a sentence and
   * label/value pairs. A kind with no view here shows the pairs its row of
   * the step-kind table names (the API's "shows": labels and JSON pointers
   * into the result). */
  var stepViews = {
    measure_horizon: function (st, r) {
      var words = null, pairs = [], s;
      s = r.summary;
      /* A failed measure records no summary: say why, not "undefined". */
      if (!s || r.ok === false)
        return { words: r.error || st.error ? 'Not measured: ' + (r.error || st.error) : 'Not measured yet.', pairs: [] };
      words = s.queues + ' old queue' + (s.queues === 1 ? '' : 's') + ' found, ' + s.non_empty +
        ' non-empty; largest TTL ' + fmtDur(s.max_ttl_ms) + '; horizon ' + fmtTime(s.horizon_ms) + '.';
      pairs = [['queues found', num(s.queues)], ['non-empty', num(s.non_empty)],
        ['messages', num(s.total_messages)], ['largest TTL', fmtDur(s.max_ttl_ms) +
        (s.max_ttl_queue ? ' (' + s.max_ttl_queue + ')' : '')], ['horizon', fmtTime(s.horizon_ms)],
        s.reasoning ? ['reasoning', String(s.reasoning)] : null];
      return { words: words, pairs: pairs };
    },
    declare_ladder: function (st, r) {
      var words = null, pairs = [];
      words = 'Declared ' + num(r.exchanges) + ' exchanges, ' + num(r.queues) + ' queues, ' +
        num(r.bindings) + ' bindings.';
      return { words: words, pairs: pairs };
    },
    verify_ladder: function (st, r) {
      var words = null, pairs = [], s;
      s = r.counts || {};
      words = num(s.ok) + ' objects ok, ' + ((s.missing || 0) + (s.drift || 0)) + ' differing (' +
        num(s.missing) + ' missing, ' + num(s.drift) + ' drifted).';
      (r.objects || []).forEach(function (o) {
        if (o.status !== 'ok') pairs.push([o.kind + ' ' + o.name, o.status + (o.detail ? ': ' + o.detail : '')]);
      });
      return { words: words, pairs: pairs };
    },
    canary: function (st, r) {
      var words = null, pairs = [], s;
      s = r.summary || {};
      words = num(s.count) + ' sent, ' + num(s.arrived) + ' arrived, ' + num(s.early) + ' early, ' +
        num(s.late) + ' late, ' + num(s.lost) + ' lost; lateness p50 ' + fmtDur(s.p50_ms) +
        ', p99 ' + fmtDur(s.p99_ms) + '.';
      pairs = [['wrong path', num(s.wrong_path)], ['unconfirmed', num(s.unconfirmed)],
        ['max lateness', fmtDur(s.max_ms)],
        r.parking ? ['parking check', r.parking.ok ? 'reached the parking queue' : 'failed' +
          (r.parking.detail ? ': ' + r.parking.detail : '')] : null];
      return { words: words, pairs: pairs };
    },
    flip: function (st, r) {
      var words = null, pairs = [];
      words = st.status === 'succeeded' ? 'Flag switched on at ' + fmtTime(st.ended_ms) + ', confirmed by reading it back.' :
        st.status === 'failed' ? 'The flag was not confirmed.' : 'The flag has not been switched yet.';
      pairs = [r.flag ? ['flag', [r.flag.kind, r.flag.feature || r.flag.url || r.flag.read].filter(Boolean).join(' ')] : null,
        ['when', fmtTime(st.ended_ms)],
        r.confirmed_by ? ['confirmed by', String(r.confirmed_by)] : null,
        r.confirmed !== undefined ? ['confirmed', JSON.stringify(r.confirmed)] : null,
        r.read_back !== undefined ? ['read back', JSON.stringify(r.read_back)] : null];
      return { words: words, pairs: pairs };
    },
    /* The move: what it has done, what it has still to take and when
     * it will have taken it at this run's pace, and what it saved. */
    move_old: function (st, r) {
      var c = r.counts || {}, g = r.progress || {}, words, done = c.moved != null ?
        num(c.moved) + ' moved, ' + num(c.left) + ' left in their old queues, ' + num(c.skipped) + ' skipped' :
        'Nothing moved yet';
      var between = !r.ok && r.pass > 1 && st.status === 'running' && !g.remaining;
      if (r.error) words = 'Stopped: ' + r.error;
      else if (r.ok) words = done + '; the old path can be left at ' + fmtTime(r.horizon_ms) +
        (r.saved_ms ? ', ' + fmtDur(r.saved_ms) + ' sooner than without the move' : '') + '.';
      else if (between) words = done + '; the last pass, for what producers still sent to the old path, begins at ' +
        fmtTime(r.stragglers_until_ms) + '.';
      else words = done + '; ' + num(g.remaining) + ' still to take' + (g.eta_ms != null ?
        ', about ' + fmtDur(g.eta_ms) + ' to go at ' + (g.per_s || 0).toFixed(0) + ' a second' : '') + '.';
      return { words: words, pairs: [['pass', num(r.pass) + ' of 2'],
        ['still to take', num(g.remaining)],
        ['pace', g.per_s != null ? (g.per_s || 0).toFixed(1) + ' messages a second' : '—'],
        ['time to go', g.eta_ms != null ? fmtDur(g.eta_ms) : '—'],
        c.may_duplicate ? ['may arrive twice', num(c.may_duplicate) + ' (same x-cutover-move-id)'] : null,
        r.ok ? ['old path left at', fmtTime(r.horizon_ms)] : null,
        r.ok && r.old_horizon_ms ? ['without the move', fmtTime(r.old_horizon_ms)] : null] };
    },
    watch: function (st, r) {
      var words = null, pairs = [], s;
      s = r.summary || {};
      var lad = s.ladder_depth || [], tot = 0, pl = s.probe_lateness_ms || {};
      lad.forEach(function (v) { tot += v || 0; });
      words = (st.ended_ms ? 'Watched ' + fmtDur(st.ended_ms - st.started_ms) + ', ended ' + fmtTime(st.ended_ms) :
        fmtDur(s.time_left_ms) + ' left to the deadline') + '; old path ' + num(s.old_depth) +
        ' messages in ' + num(s.old_nonempty) + ' non-empty queues; ladder ' + tot +
        ' messages; parking ' + num(s.parking_depth) + '.';
      pairs = [st.ended_ms ? null : ['time left', fmtDur(s.time_left_ms)], ['deadline', fmtTime(r.deadline_ms)],
        ['old-path depth', num(s.old_depth)],
        ['non-empty old queues', num(s.old_nonempty) + ' of ' + num(s.old_queues)],
        ['parking depth', num(s.parking_depth)],
        ['probe lateness', 'last ' + fmtDur(pl.last) + ', max ' + fmtDur(pl.max)],
        ['probes in flight', num(s.probes_in_flight)],
        r.probe ? ['probes', num(r.probe.sent) + ' sent, ' + num(r.probe.arrived) + ' arrived, ' +
          num(r.probe.late) + ' late, ' + num(r.probe.early) + ' early, ' + num(r.probe.lost) + ' lost'] : null,
        r.old ? ['old publishes after flip', num(r.old.after_flip)] : null,
        ['open alerts', num(s.open_alerts)]];
      return { words: words, pairs: pairs, extra: ladderStrip(s, null) };
    },
    remove_old: function (st, r) {
      var words = null, pairs = [], s;
      if (r.preview) return previewView(r);
      s = r.counts || {};
      words = num(s.removed) + ' old queues removed, ' + (s.waiting ? num(s.waiting) + ' waiting, ' : '') +
        num(s.left) + ' left' + (s.gone ? ', ' + s.gone + ' already gone' : '') +
        (r.dry_run ? ' (dry run: ' + num(s.would_remove) + ' would go)' : '') + '.' +
        (r.status ? ' ' + r.status + '.' : '');
      /* The queues left need someone to look, and those that wait say
       * until when; the removed and the gone are counted above (at 10,000
       * old queues, listing them would bury the few that matter). */
      var left = (r.entries || []).filter(function (e) { return e.outcome === 'left' || e.outcome === 'waiting'; });
      left.slice(0, 50).forEach(function (e) {
        pairs.push([e.name, e.outcome + (e.reason ? ': ' + e.reason : '')]);
      });
      if (left.length > 50) pairs.push(['…', (left.length - 50) + ' more left: see the recorded result']);
      /* An old ladder's exchanges: the ones left in use are named, with
       * what still uses them. */
      var x = r.exchange_counts;
      if (x) {
        words += ' Old ladder\'s exchanges: ' + num(x.removed) + ' removed, ' + num(x.left) + ' left in use' +
          (x.kept ? ', ' + num(x.kept) + ' kept (the new ladder\'s or a destination\'s)' : '') + '.';
        (r.exchanges || []).filter(function (e) { return e.outcome === 'left'; }).forEach(function (e) {
          pairs.push([e.name, 'exchange left: ' + e.reason]);
        });
      }
      return { words: words, pairs: pairs };
    }
  };
  /* The ladder at a glance, from the watch's summary S: a box per level
   * with its delay, whether its last probe came out on time (moving),
   * did not (late), is on its way or cannot be probed (its TTL is beyond
   * the probe budget), its depth and the dead-letters it holds. */
  var LEVEL_WORDS = { moving: 'moving', late: 'late', not_probed: 'not probed', probing: 'probing', unproven: 'not yet proven' };
  function ladderStrip(s, id) {
    var lv = s.levels || [], depth = s.ladder_depth || [], box, row, counts = {};
    if (!lv.length) return null;
    row = el('div', { class: 'strip' });
    lv.forEach(function (l) {
      counts[l.status] = (counts[l.status] || 0) + 1;
      var held = l.dead_letters > 0;
      row.appendChild(el('div', { class: 'lv lv-' + l.status + (held ? ' held' : ''), 'data-level': String(l.level), 'data-status': l.status,
        title: 'level ' + l.level + ': delay ' + fmtDur(l.ttl_ms) + '; ' + (LEVEL_WORDS[l.status] || l.status) +
          (l.lateness_ms != null ? '; last probe ' + fmtDur(l.lateness_ms) + ' late' : '') +
          (l.oldest_age_ms != null && l.oldest_age_source !== 'empty' ? '; oldest message ' + (l.oldest_age_source === 'probe_bound' ? '≤ ' : '') + fmtDur(l.oldest_age_ms) : '') +
          '; ' + num(l.probes_on_time) + ' of ' + num(l.probes_sent) + ' probes on time' },
        el('span', { class: 'lv-delay' }, fmtDur(l.ttl_ms)),
        el('span', { class: 'lv-state' }, LEVEL_WORDS[l.status] || l.status),
        el('span', { class: 'lv-depth' }, depth[l.level] != null ? plural(depth[l.level], 'msg') : '—'),
        held ? el('span', { class: 'lv-dl' }, plural(l.dead_letters, 'held dead-letter')) : null));
    });
    var held = lv.filter(function (l) { return l.dead_letters > 0; }).length;
    box = el('div', { class: 'ladder-strip', id: id },
      el('p', { class: 'strip-title' }, 'Ladder, ' + plural(lv.length, 'level') + ': ' +
        ['moving', 'late', 'probing', 'unproven', 'not_probed'].filter(function (k) { return counts[k]; })
          .map(function (k) { return counts[k] + ' ' + LEVEL_WORDS[k]; }).join(', ') +
        (held ? '; ' + plural(held, 'level holds', 'levels hold') + ' dead-letters' : '; no held dead-letters') +
        (s.probe_budget_ms != null ? ' (levels longer than ' + fmtDur(s.probe_budget_ms) + ' are not probed)' : '')), row);
    return box;
  }

  return { views: stepViews, ladderStrip: ladderStrip, previewLists: previewLists };
}());
