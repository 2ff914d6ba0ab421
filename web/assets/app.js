/* The cutover status page: plain script, talks only to this server's JSON
 * API. Everything the API returns goes into the page as text (textContent,
 * SVG attributes), never as markup. The operator's token lives in a
 * variable of this tab only: never a cookie, never storage. */
'use strict';
(function () {
  var token = null;             /* the operator's token, once asked */
  var timer = null;
  var busy = false;
  var route = { plan: null };
  var samples = { plan: null, next: 0, series: {} };
  var lastPlan = null;
  var lastHistory = null, historyKey = null;
  var openResults = {};              /* 'plan:step' -> its result is unfolded */
  var FAST = 3000, SLOW = 15000, MAXPTS = 4000;

  function $(id) { return document.getElementById(id); }

  /* el('td', {class: 'x'}, 'text', child…): text children become text nodes. */
  function el(tag, attrs) {
    var e = document.createElement(tag);
    var k, i, c;
    for (k in attrs || {}) {
      if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] == null) continue;
      if (k === 'class') e.className = attrs[k];
      else if (k === 'onclick') e.addEventListener('click', attrs[k]);
      else e.setAttribute(k, attrs[k]);
    }
    for (i = 2; i < arguments.length; i++) {
      c = arguments[i];
      if (c == null) continue;
      e.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }

  function fmtTime(ms) {
    if (ms == null) return '—';
    return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  }
  function fmtDur(ms) {
    if (ms == null || !isFinite(ms)) return '—';
    if (ms < 0) ms = 0;
    if (ms < 1000) return Math.round(ms) + ' ms';
    var s = Math.floor(ms / 1000), d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600),
      m = Math.floor(s % 3600 / 60), r = s % 60;
    if (d) return d + 'd ' + h + 'h ' + m + 'm';
    if (h) return h + 'h ' + m + 'm ' + r + 's';
    if (m) return m + 'm ' + r + 's';
    return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + ' s';
  }
  function num(v) { return v == null ? '—' : String(v); }
  function stateBadge(s) { return el('span', { class: 'state s-' + String(s) }, String(s).replace('_', ' ')); }

  function notice(text, bad) {
    var n = $('notice');
    n.textContent = text;
    n.className = 'banner' + (bad ? ' err' : '');
    n.hidden = !text;
  }

  /* One API call. Resolves {status, body}; rejects (err.unreachable) when
   * the service cannot be reached. */
  function api(method, path, body) {
    var h = { 'Accept': 'application/json' };
    if (token) h['Authorization'] = 'Bearer ' + token;
    if (body !== undefined) h['Content-Type'] = 'application/json';
    return fetch(path, {
      method: method, headers: h, cache: 'no-store', credentials: 'omit',
      body: body === undefined ? undefined : JSON.stringify(body)
    }).then(function (r) {
      return r.text().then(function (t) {
        var j = null;
        try { j = t ? JSON.parse(t) : null; } catch (e) { j = null; }
        reachable(true);
        return { status: r.status, body: j };
      });
    }, function () {
      reachable(false);
      var e = new Error('unreachable');
      e.unreachable = true;
      throw e;
    });
  }
  function errText(r) {
    return (r.body && typeof r.body.error === 'string') ? r.body.error : 'HTTP ' + r.status;
  }
  function reachable(ok) {
    var u = $('unreachable');
    if (ok) { u.hidden = true; return; }
    u.textContent = 'The cutover service cannot be reached (' + location.host +
      '). What is shown may be out of date; the page keeps trying every few seconds.';
    u.hidden = false;
  }
  /* A GET; on 401 (reads need a token on this server) asks for the token once. */
  function get(path) {
    return api('GET', path).then(function (r) {
      if (r.status === 401 && !token) {
        return askToken('This server needs an operator token to read.').then(function (ok) {
          return ok ? api('GET', path) : r;
        });
      }
      return r;
    });
  }

  /* ---- the dialog: approve, retry, abort, acknowledge ---- */
  var dlg = { resolve: null, run: null };
  function openDialog(title, text, danger, run) {
    $('act-title').textContent = title;
    $('act-text').textContent = text;
    $('act-comment').value = '';
    $('act-comment').parentNode.hidden = run == null;
    $('act-token').value = '';
    $('act-token-row').hidden = !!token;
    $('act-error').textContent = '';
    $('act-ok').className = danger ? 'danger' : '';
    $('act-ok').textContent = danger ? 'Yes, ' + title.toLowerCase() : 'OK';
    dlg.run = run;
    $('act').showModal();
    ($('act-token-row').hidden ? $('act-comment') : $('act-token')).focus();
    return new Promise(function (res) { dlg.resolve = res; });
  }
  function closeDialog(v) {
    if ($('act').open) $('act').close();
    if (dlg.resolve) { var r = dlg.resolve; dlg.resolve = null; r(v); }
  }
  function askToken(why) {
    return openDialog('Operator token', why, false, null).then(function (ok) { return ok && !!token; });
  }
  function takeToken() {
    var t = $('act-token').value.trim();
    if (!$('act-token-row').hidden) {
      if (!t) { $('act-error').textContent = 'Enter your operator token.'; return false; }
      token = t;
      $('forget').hidden = false;
    }
    return true;
  }
  function onSubmit(ev) {
    ev.preventDefault();
    if (!takeToken()) return;
    if (!dlg.run) { closeDialog(true); return; }
    $('act-ok').disabled = true;
    dlg.run($('act-comment').value).then(function (r) {
      $('act-ok').disabled = false;
      if (r.status === 202) {
        closeDialog(true);
        notice(r.body && r.body.message ? 'Recorded: ' + r.body.kind + ' by ' + r.body.actor +
          '; ' + r.body.message : 'Recorded.', false);
        schedule(700);
        return;
      }
      if (r.status === 401) {
        token = null;
        $('forget').hidden = true;
        $('act-token-row').hidden = false;
      }
      $('act-error').textContent = 'Refused (' + r.status + '): ' + errText(r);
    }, function () {
      $('act-ok').disabled = false;
      $('act-error').textContent = 'The service cannot be reached; nothing was sent.';
    });
  }
  function command(path, title, text, danger) {
    return function () {
      openDialog(title, text, danger, function (comment) {
        return api('POST', path, comment ? { comment: comment } : {});
      });
    };
  }

  /* ---- the plans list ---- */
  function showPlans() {
    return get('/api/plans').then(function (r) {
      if (r.status !== 200) { notice('Listing the plans failed: ' + errText(r), true); return false; }
      var plans = (r.body && r.body.plans) || [];
      var tb = clear($('plans').tBodies[0]);
      $('plans-empty').hidden = plans.length > 0;
      var running = false;
      /* The list says which step each plan is at: no plan document (its
       * results can be megabytes at 10,000 old queues) is fetched here. */
      plans.forEach(function (p) {
        var cur = p.current;
        if (p.status === 'running') running = true;
        tb.appendChild(el('tr', { 'data-plan': p.id },
          el('td', null, el('a', { href: '#/plans/' + p.id }, p.name), el('span', { class: 'muted' }, ' #' + p.id)),
          el('td', null, stateBadge(p.status)),
          el('td', null, cur ? cur.n + '. ' + cur.kind + ' (' + String(cur.status).replace('_', ' ') + ')' : '—'),
          el('td', null, fmtTime(p.created_ms)),
          el('td', null, cur ? fmtTime(cur.started_ms) : '—')));
      });
      return running;
    });
  }

  /* ---- one plan ---- */
  function kv(pairs) {
    var dl = el('dl', { class: 'kv' });
    pairs.forEach(function (p) {
      if (p == null) return;
      dl.appendChild(el('dt', null, p[0]));
      dl.appendChild(el('dd', null, p[1]));
    });
    return dl;
  }
  /* What the page shows of each step kind's result: a sentence and
   * label/value pairs. A kind with no view here shows the pairs its row of
   * the step-kind table names (the API's "shows": labels and JSON pointers
   * into the result). */
  var stepViews = {
    measure_horizon: function (st, r) {
      var words = null, pairs = [], s;
      s = r.summary || {};
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
    watch: function (st, r) {
      var words = null, pairs = [], s;
      s = r.summary || {};
      var lad = s.ladder_depth || [], tot = 0, pl = s.probe_lateness_ms || {};
      lad.forEach(function (v) { tot += v || 0; });
      words = fmtDur(s.time_left_ms) + ' left to the deadline; old path ' + num(s.old_depth) +
        ' messages in ' + num(s.old_nonempty) + ' non-empty queues; ladder ' + tot +
        ' messages; parking ' + num(s.parking_depth) + '.';
      pairs = [['time left', fmtDur(s.time_left_ms)], ['deadline', fmtTime(r.deadline_ms)],
        ['old-path depth', num(s.old_depth)],
        ['non-empty old queues', num(s.old_nonempty) + ' of ' + num(s.old_queues)],
        ['ladder depth by level', lad.length ? lad.map(function (v, k) { return k + ':' + num(v); }).join('  ') : '—'],
        ['parking depth', num(s.parking_depth)],
        ['probe lateness', 'last ' + fmtDur(pl.last) + ', max ' + fmtDur(pl.max)],
        ['probes in flight', num(s.probes_in_flight)],
        r.probe ? ['probes', num(r.probe.sent) + ' sent, ' + num(r.probe.arrived) + ' arrived, ' +
          num(r.probe.late) + ' late, ' + num(r.probe.early) + ' early, ' + num(r.probe.lost) + ' lost'] : null,
        r.old ? ['old publishes after flip', num(r.old.after_flip)] : null,
        ['open alerts', num(s.open_alerts)]].concat(levelPairs(s));
      return { words: words, pairs: pairs };
    },
    remove_old: function (st, r) {
      var words = null, pairs = [], s;
      s = r.counts || {};
      words = num(s.removed) + ' old queues removed, ' + num(s.left) + ' left' +
        (s.gone ? ', ' + s.gone + ' already gone' : '') + (r.dry_run ? ' (dry run: ' + num(s.would_remove) + ' would go)' : '') + '.';
      /* The queues left need someone to look; the removed and the gone
       * are counted above (at 10,000 old queues, listing them would bury
       * the few that matter). */
      var left = (r.entries || []).filter(function (e) { return e.outcome === 'left'; });
      left.slice(0, 50).forEach(function (e) {
        pairs.push([e.name, 'left' + (e.reason ? ': ' + e.reason : '')]);
      });
      if (left.length > 50) pairs.push(['…', (left.length - 50) + ' more left: see the recorded result']);
      return { words: words, pairs: pairs };
    }
  };
  /* The watch's per-level proof (issue 22): which levels a probe proved
   * moving, which are late, which are too long to probe; pending
   * dead-letters; each level's oldest age and where it comes from. */
  function levelPairs(s) {
    var lv = s.levels || [], by = {};
    if (!lv.length) return [];
    lv.forEach(function (l) { (by[l.status] = by[l.status] || []).push(l.level); });
    function list(st) { return (by[st] || []).join(', ') || 'none'; }
    var dl = lv.filter(function (l) { return l.dead_letters > 0; });
    return [['levels moving (probe on time)', list('moving')],
      ['levels late or stuck', list('late')],
      ['levels not yet proven', list('probing') + (by.unproven ? '; waiting: ' + list('unproven') : '')],
      ['levels not probed (TTL beyond ' + fmtDur(s.probe_budget_ms) + ')', list('not_probed')],
      ['pending dead-letters', dl.length ? dl.map(function (l) { return l.level + ':' + l.dead_letters; }).join('  ') : 'none' +
        (s.parking_dead_letters > 0 ? '; parking ' + s.parking_dead_letters : '')],
      ['oldest age by level', lv.filter(function (l) { return l.oldest_age_source !== 'empty'; }).map(function (l) {
        return l.level + ':' + (l.oldest_age_ms == null ? '?' : (l.oldest_age_source === 'probe_bound' ? '≤' : '') +
          fmtDur(l.oldest_age_ms));
      }).join('  ') || 'every level empty']];
  }
  function pointerValue(r, ptr) {
    return String(ptr).split('/').slice(1).reduce(function (v, k) {
      return v != null && typeof v === 'object' ? v[k.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    }, r);
  }
  function shownPairs(st, r) {
    return (st.shows || []).map(function (sh) {
      var v = pointerValue(r, sh.pointer);
      return [sh.label, v === undefined ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v)];
    });
  }
  function progress(st) {
    var r = st.result, box = el('div', { class: 'progress' }), view;
    if (r == null || typeof r !== 'object') return null;
    view = Object.prototype.hasOwnProperty.call(stepViews, st.kind) ? stepViews[st.kind](st, r) :
      { words: null, pairs: shownPairs(st, r) };
    if (view.words) box.appendChild(el('p', { class: 'progress-words' }, view.words));
    if (view.pairs.length) box.appendChild(kv(view.pairs));
    box.appendChild(resultDetails(st));
    return box;
  }
  /* A step's recorded result, folded. At 10,000 old queues a result is
   * megabytes, so its JSON is written out only while it is open, and it
   * stays open across refreshes. */
  function resultDetails(st) {
    var d = el('details', { 'data-result': st.n }, el('summary', null, 'recorded result'));
    function fill() {
      if (d.open && !d.querySelector('pre')) d.appendChild(el('pre', null, JSON.stringify(st.result, null, 2)));
    }
    if (openResults[route.plan + ':' + st.n]) d.open = true;
    fill();
    d.addEventListener('toggle', function () {
      openResults[route.plan + ':' + st.n] = d.open;
      fill();
    });
    return d;
  }
  function stepItem(p, st, cur) {
    var li = el('li', { class: 't-' + st.status + (cur ? ' current' : ''), 'data-step': st.n });
    var dur = st.started_ms ? (st.ended_ms || Date.now()) - st.started_ms : null;
    li.appendChild(el('div', { class: 'step-head' }, st.n + '. ' + st.kind + ' ', stateBadge(st.status),
      st.gate ? el('span', { class: 'muted' }, ' gated') : null));
    var pairs = [['started', fmtTime(st.started_ms)], ['ended', fmtTime(st.ended_ms)],
      ['duration', st.started_ms ? fmtDur(dur) + (st.ended_ms ? '' : ' so far') : '—']];
    if (st.gate) pairs.push(['gate', st.gate_state === 'waiting' ? 'waiting for approval' : String(st.gate_state)]);
    if (st.approved_by) pairs.push(['approved by', st.approved_by + ' at ' + fmtTime(st.approved_ms) +
      (st.approval_comment ? ' — ' + st.approval_comment : '')]);
    if (st.retried_by) pairs.push(['retried by', st.retried_by + ' at ' + fmtTime(st.retried_ms)]);
    li.appendChild(kv(pairs));
    if (st.error) li.appendChild(el('p', { class: 'error' }, st.error));
    var acts = el('div', { class: 'actions' });
    if (st.status === 'waiting_approval')
      acts.appendChild(el('button', { type: 'button', class: 'approve', onclick: command(
        '/api/plans/' + p.id + '/steps/' + st.n + '/approve', 'Approve',
        'Approve step ' + st.n + ' (' + st.kind + ') of ' + p.name + '. It starts at the engine\'s next turn.', false) },
        'Approve step ' + st.n));
    if (st.status === 'failed' && p.status !== 'aborted')
      acts.appendChild(el('button', { type: 'button', class: 'retry', onclick: command(
        '/api/plans/' + p.id + '/steps/' + st.n + '/retry', 'Retry',
        'Run step ' + st.n + ' (' + st.kind + ') of ' + p.name + ' again from the beginning.', false) },
        'Retry step ' + st.n));
    if (acts.firstChild) li.appendChild(acts);
    var pr = progress(st);
    if (pr) li.appendChild(pr);
    return li;
  }
  function rollbackText(p) {
    var flip = null, rm = null;
    (p.steps || []).forEach(function (s) { if (s.kind === 'flip') flip = s; if (s.kind === 'remove_old') rm = s; });
    var removing = rm && (rm.status === 'running' || rm.status === 'succeeded' || rm.status === 'failed');
    if (flip && flip.status === 'succeeded' && removing)
      return 'The old queues are being removed, so there is no rollback: producers stay on the ladder. The plan stops.';
    if (flip && (flip.status === 'succeeded' || flip.status === 'running' || flip.status === 'failed'))
      return 'Rollback: the feature flag is switched back off, so new delayed publishes go to the old queues again (they still exist). The ladder stays declared. The plan stops for good.';
    return 'The flag was never turned on, so nothing needs rolling back; the plan stops for good and nothing on the broker is deleted.';
  }
  function showPlan(id) {
    return Promise.all([get('/api/plans/' + id), api('GET', '/api/plans/' + id + '/history')]).then(function (rs) {
      var r = rs[0], h = rs[1];
      if (r.status !== 200) { notice('Reading plan ' + id + ' failed: ' + errText(r), true); return false; }
      var p = r.body, cur = p.current;
      lastPlan = p;
      $('plan-title').textContent = p.name + ' ';
      $('plan-title').appendChild(stateBadge(p.status));
      $('plan-meta').textContent = 'Plan #' + p.id + ', submitted ' + fmtTime(p.created_ms) +
        (cur && p.status !== 'succeeded' ? '; current step ' + cur.n + '. ' + cur.kind : '') + '; sha256 ' + String(p.sha256).slice(0, 16) + '…';
      var acts = clear($('plan-actions'));
      if (p.status === 'running' || p.status === 'failed')
        acts.appendChild(el('button', { type: 'button', class: 'danger abort', onclick: command(
          '/api/plans/' + p.id + '/abort', 'Abort', 'Abort plan ' + p.name + '? ' + rollbackText(p), true) }, 'Abort plan…'));
      var al = clear($('alerts'));
      (p.alerts || []).forEach(function (a) {
        al.appendChild(el('li', { 'data-alert': a.id }, el('strong', null, a.kind), ': ' + a.message + ' ',
          el('span', { class: 'muted' }, '(since ' + fmtTime(a.raised_ms) + ', seen ' + a.count + '×, last ' +
            fmtTime(a.last_ms) + ') '),
          el('button', { type: 'button', class: 'ack', onclick: command('/api/plans/' + p.id + '/alerts/' + a.id + '/ack',
            'Acknowledge', 'Acknowledge alert ' + a.id + ' (' + a.kind + '): ' + a.message, false) }, 'Acknowledge')));
      });
      $('alerts-box').hidden = !(p.alerts || []).length;
      var tl = clear($('timeline'));
      (p.steps || []).forEach(function (st) { tl.appendChild(stepItem(p, st, cur && st.n === cur.n && p.status === 'running')); });
      showHistory(h);
      var watch = (p.steps || []).filter(function (s) { return s.kind === 'watch' && s.started_ms; })[0];
      $('charts-box').hidden = !watch;
      var done = watch ? loadSamples(p.id).then(drawCharts) : Promise.resolve();
      return done.then(function () { return p.status === 'running'; });
    });
  }
  function showHistory(h) {
    var tb = $('history').tBodies[0], v = $('verify');
    if (h.status !== 200) {
      clear(tb);
      historyKey = null;
      v.textContent = 'History: ' + errText(h);
      v.className = 'error';
      return;
    }
    lastHistory = h.body;
    var ver = h.body.verification || {};
    v.textContent = ver.verified ? 'The history chain verifies (' + ver.checked + ' events checked).' :
      'The history chain does NOT verify: event ' + num(ver.bad_event) + ': ' + num(ver.reason);
    v.className = ver.verified ? 'ok' : 'error';
    /* Events are only ever appended: the same count and newest hash mean
     * the same rows (10,000 of them after remove_old at that scale). */
    var evs = h.body.events || [], key = h.body.plan + ':' + evs.length + ':' +
      (evs.length ? evs[evs.length - 1].hash : '');
    if (key === historyKey && tb.rows.length === evs.length) return;
    historyKey = key;
    tb = clear(tb);
    evs.forEach(function (e) {
      tb.appendChild(el('tr', null, el('td', null, fmtTime(e.ts_ms)), el('td', null, e.actor),
        el('td', null, e.kind), el('td', { class: 'details' }, e.details == null ? '' : JSON.stringify(e.details))));
    });
  }
  function download() {
    if (!lastHistory) return;
    var blob = new Blob([JSON.stringify(lastHistory, null, 2) + '\n'], { type: 'application/json' });
    var a = el('a', { href: URL.createObjectURL(blob), download: 'cutover-' + lastHistory.name + '-' + lastHistory.plan + '-history.json' });
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  }

  /* ---- the watch's charts, from /samples (fetched incrementally) ---- */
  function loadSamples(id) {
    if (samples.plan !== id) samples = { plan: id, next: 0, series: {} };
    return api('GET', '/api/plans/' + id + '/samples?since=' + samples.next).then(function (r) {
      if (r.status !== 200) return;
      (r.body.samples || []).forEach(function (s) {
        if (s.value == null) return;
        var k = s.metric + (s.label ? '#' + s.label : '');
        var a = samples.series[k] || (samples.series[k] = []);
        a.push([s.ts_ms, s.value]);
        if (a.length > MAXPTS) a.splice(0, a.length - MAXPTS);
        if (s.ts_ms + 1 > samples.next) samples.next = s.ts_ms + 1;
      });
      if (r.body.truncated && r.body.next_since) { samples.next = r.body.next_since; return loadSamples(id); }
    });
  }
  var SVGNS = 'http://www.w3.org/2000/svg';
  function sv(tag, attrs, text) {
    var e = document.createElementNS(SVGNS, tag), k;
    for (k in attrs) e.setAttribute(k, String(attrs[k]));
    if (text != null) e.textContent = String(text);
    return e;
  }
  function chart(title, lines, unit) {
    var W = 480, H = 200, L = 48, R = 8, T = 10, B = 24;
    var box = el('div', { class: 'chart' }, el('h3', null, title));
    var t0 = Infinity, t1 = -Infinity, v1 = 0, any = false;
    lines.forEach(function (l) {
      l.pts.forEach(function (p) { any = true; t0 = Math.min(t0, p[0]); t1 = Math.max(t1, p[0]); v1 = Math.max(v1, p[1]); });
    });
    var svg = sv('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': title });
    if (!any) { svg.appendChild(sv('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', fill: '#5b6470' }, 'no samples yet')); box.appendChild(svg); return box; }
    if (t1 === t0) t1 = t0 + 1;
    if (v1 <= 0) v1 = 1;
    function x(t) { return L + (t - t0) / (t1 - t0) * (W - L - R); }
    function y(v) { return T + (1 - v / v1) * (H - T - B); }
    svg.appendChild(sv('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#d5dae0' }));
    svg.appendChild(sv('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#d5dae0' }));
    svg.appendChild(sv('text', { x: L - 4, y: T + 8, 'text-anchor': 'end', 'font-size': 11, fill: '#5b6470' }, fmtV(v1, unit)));
    svg.appendChild(sv('text', { x: L - 4, y: H - B, 'text-anchor': 'end', 'font-size': 11, fill: '#5b6470' }, '0'));
    svg.appendChild(sv('text', { x: L, y: H - 6, 'font-size': 11, fill: '#5b6470' }, fmtTime(t0).slice(11)));
    svg.appendChild(sv('text', { x: W - R, y: H - 6, 'text-anchor': 'end', 'font-size': 11, fill: '#5b6470' }, fmtTime(t1).slice(11)));
    var legend = el('div', { class: 'legend' });
    lines.forEach(function (l, i) {
      var color = l.color || 'hsl(' + (i * 137 % 360) + ',65%,42%)';
      var pts = thin(l.pts, 400).map(function (p) { return x(p[0]).toFixed(1) + ',' + y(p[1]).toFixed(1); }).join(' ');
      svg.appendChild(sv(l.dots ? 'g' : 'polyline', l.dots ? {} : { points: pts, fill: 'none', stroke: color, 'stroke-width': 1.6 }));
      if (l.dots) thin(l.pts, 400).forEach(function (p) {
        svg.lastChild.appendChild(sv('circle', { cx: x(p[0]).toFixed(1), cy: y(p[1]).toFixed(1), r: 2, fill: color }));
      });
      var last = l.pts.length ? l.pts[l.pts.length - 1][1] : null;
      var key = el('span', null, (i ? ' · ' : '') + l.name + ' ' + fmtV(last, unit));
      key.style.color = color;      /* CSSOM, which the page's CSP allows */
      legend.appendChild(key);
    });
    box.appendChild(svg);
    box.appendChild(legend);
    return box;
  }
  function fmtV(v, unit) { return v == null ? '—' : unit === 'ms' ? fmtDur(v) : String(Math.round(v)); }
  /* At most N points, keeping each bucket's largest value. */
  function thin(pts, n) {
    if (pts.length <= n) return pts;
    var out = [], step = pts.length / n, i, j, best;
    for (i = 0; i < n; i++) {
      best = null;
      for (j = Math.floor(i * step); j < Math.floor((i + 1) * step); j++)
        if (!best || pts[j][1] > best[1]) best = pts[j];
      if (best) out.push(best);
    }
    return out;
  }
  function drawCharts() {
    var s = samples.series, box = clear($('charts')), levels = [];
    Object.keys(s).forEach(function (k) {
      if (k.indexOf('ladder.depth#') === 0) levels.push({ name: 'L' + k.slice(13), pts: s[k], lv: +k.slice(13) });
    });
    levels.sort(function (a, b) { return a.lv - b.lv; });
    levels = levels.filter(function (l) { return l.pts.some(function (p) { return p[1] > 0; }); });
    box.appendChild(chart('Old path draining (messages)', [{ name: 'old depth', pts: s['old.depth'] || [], color: '#a05a00' },
      { name: 'non-empty queues', pts: s['old.nonempty'] || [], color: '#5b6470' }]));
    box.appendChild(chart('Ladder depth by level (messages)', levels.length ? levels : [{ name: 'all levels', pts: [] }]));
    if (s['parking.depth']) box.lastChild.appendChild(el('div', { class: 'legend' }, 'parking depth now: ' +
      fmtV(s['parking.depth'][s['parking.depth'].length - 1][1])));
    box.appendChild(chart('Probe lateness', [{ name: 'lateness', pts: s['probe.lateness_ms'] || [], dots: true, color: '#0b5cad' }], 'ms'));
    /* Client publishes entering each level per sample: the delay band
     * [2^k, 2^(k+1)) units (publish_in is cumulative: differences). */
    var bands = [];
    Object.keys(s).forEach(function (k) {
      if (k.indexOf('ladder.band#') !== 0) return;
      var pts = s[k].slice(1).map(function (p, i) { return [p[0], Math.max(0, p[1] - s[k][i][1])]; });
      if (pts.some(function (p) { return p[1] > 0; })) bands.push({ name: 'band ' + k.slice(12), pts: pts, lv: +k.slice(12) });
    });
    bands.sort(function (a, b) { return a.lv - b.lv; });
    box.appendChild(chart('Publishes entering each level (delay band)', bands.length ? bands : [{ name: 'all bands', pts: [] }]));
  }

  /* ---- routing and refresh ---- */
  function parseRoute() {
    var m = /^#\/plans\/(\d+)$/.exec(location.hash);
    route.plan = m ? +m[1] : null;
    $('plans-view').hidden = route.plan != null;
    $('plan-view').hidden = route.plan == null;
  }
  function refresh() {
    if (busy) return;
    busy = true;
    clearTimeout(timer);
    var p = route.plan != null ? showPlan(route.plan) : showPlans();
    p.then(function (running) {
      busy = false;
      $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
      schedule(running ? FAST : SLOW);
    }, function (e) {
      busy = false;
      if (!e || !e.unreachable) notice('The page failed: ' + (e && e.message), true);
      schedule(FAST);
    });
  }
  function schedule(ms) { clearTimeout(timer); timer = setTimeout(refresh, ms); }

  document.addEventListener('DOMContentLoaded', function () {
    $('act-form').addEventListener('submit', onSubmit);
    $('act-cancel').addEventListener('click', function () { closeDialog(false); });
    $('act').addEventListener('cancel', function () { closeDialog(false); });
    $('refresh').addEventListener('click', refresh);
    $('download').addEventListener('click', download);
    $('forget').addEventListener('click', function () { token = null; $('forget').hidden = true; notice('Token forgotten.', false); });
    window.addEventListener('hashchange', function () { notice('', false); parseRoute(); refresh(); });
    parseRoute();
    refresh();
  });
})();
