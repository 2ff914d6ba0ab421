/* The cutover status page: plain script, talks only to this server's JSON
 * API. Everything the API returns goes into the page as text (textContent,
 * SVG attributes), never as markup. The operator's token lives in a
 * variable of this tab only: never a cookie, never storage. The DOM and
 * text helpers and the sample charts are draw.js's, loaded before. */
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

  /* The helpers and charts of draw.js. */
  var D = window.cutoverDraw;
  var $ = D.$, el = D.el, clear = D.clear, fmtTime = D.fmtTime, fmtDur = D.fmtDur, num = D.num,
    plural = D.plural, fmtSpan = D.fmtSpan, stateBadge = D.stateBadge, chart = D.chart;
  /* What each step kind's result says, from steps.js. */
  var S = window.cutoverSteps;

  var noticeTimer = null;
  /* A banner; a good one goes after 12 s so that it does not push the
   * plan's state down for good. */
  function notice(text, bad) {
    var n = $('notice');
    n.textContent = text;
    n.className = 'banner' + (bad ? ' err' : '');
    n.hidden = !text;
    clearTimeout(noticeTimer);
    if (text && !bad) noticeTimer = setTimeout(function () { n.hidden = true; }, 12000);
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
  function openDialog(title, text, danger, run, okLabel) {
    $('act-title').textContent = title;
    $('act-text').textContent = text;
    $('act-comment').value = '';
    $('act-comment').parentNode.hidden = run == null;
    $('act-token').value = '';
    $('act-token-row').hidden = !!token;
    $('act-error').textContent = '';
    $('act-ok').className = danger ? 'danger' : '';
    $('act-ok').textContent = okLabel || (danger ? 'Yes, ' + title.toLowerCase() : 'OK');
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
      if (r.status === 202 && r.body && r.body.command != null) {
        closeDialog(true);
        track(r.body);
        schedule(700);
        return;
      }
      if (r.status === 202 || r.status === 200) {
        closeDialog(true);
        notice(r.body && r.body.message ? 'Done: ' + r.body.kind + ' by ' + r.body.actor + '; ' + r.body.message : 'Done.', false);
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
  /* TEXT may be a function (called when the dialog opens, so that it says
   * what the latest refresh knows); OKLABEL names the confirm button. */
  function command(path, title, text, danger, okLabel) {
    return function () {
      var t = typeof text === 'function' ? text() : text;
      openDialog(title, t.text || t, danger, function (comment) {
        return api('POST', path, comment ? { comment: comment } : {});
      }, t.ok || okLabel);
    };
  }

  /* ---- what became of a command: pending, then done or refused ----
   * The API records a command (202) and the engine acts on it at its next
   * turn, against the state it then finds; its answer is read from
   * GET /api/plans/ID/commands/C until it is no longer pending. */
  var tracked = [], POLL = 700, GIVE_UP = 10 * 60000, DONE_SHOWN = 20000;
  function commandLabel(b) {
    return (b.kind === 'ack' ? 'Acknowledge' : b.kind.charAt(0).toUpperCase() + b.kind.slice(1)) +
      (b.step != null ? ' step ' + b.step : '') + (b.alert != null ? ' alert ' + b.alert : '') + ' of plan #' + b.plan;
  }
  function track(b) {
    var c = { id: b.command, plan: b.plan, label: commandLabel(b), actor: b.actor, state: 'pending', outcome: null, since: Date.now() };
    tracked.unshift(c);
    tracked = tracked.slice(0, 6);
    showCommands();
    pollCommand(c);
  }
  function pollCommand(c) {
    api('GET', '/api/plans/' + c.plan + '/commands/' + c.id).then(function (r) {
      if (r.status === 200 && r.body) {
        c.state = r.body.state; c.outcome = r.body.outcome; c.handled_ms = r.body.handled_ms; c.error = null;
        if (c.state !== 'pending') c.ended = Date.now();
      }
      else c.error = 'reading its state failed: ' + errText(r);
      showCommands();
      if (c.state !== 'pending') { schedule(50); return; }      /* the page shows what it did */
      if (Date.now() - c.since < GIVE_UP) setTimeout(function () { pollCommand(c); }, POLL);
    }, function () { setTimeout(function () { pollCommand(c); }, 3000); });
  }
  /* The commands of the plan shown (all of them on the list): pending
   * ones, done ones for DONE_SHOWN (the page then shows what they did),
   * refused ones until dismissed (the why needs reading). */
  function showCommands() {
    var ul = clear($('commands-list')), now = Date.now();
    tracked = tracked.filter(function (c) { return !c.dismissed && !(c.state === 'done' && now - c.ended > DONE_SHOWN); });
    tracked.filter(function (c) { return route.plan == null || c.plan === route.plan; }).forEach(function (c) {
      var waited = Date.now() - c.since, words;
      if (c.state === 'pending')
        words = waited < GIVE_UP ? 'recorded; waiting for the engine to act on it at its next turn…' :
          'still not acted on after ' + fmtSpan(waited) + ': is the engine (cutover serve) running?';
      else if (c.state === 'done') words = 'done at ' + fmtTime(c.handled_ms) + (c.outcome && c.outcome !== 'done' ? ': ' + c.outcome : '');
      else words = 'refused at ' + fmtTime(c.handled_ms) + ': ' + String(c.outcome).replace(/^refused:\s*/, '');
      ul.appendChild(el('li', { 'data-command': c.id, 'data-state': c.state, class: 'cmd cmd-' + c.state },
        el('span', { class: 'cmd-state' }, c.state), ' ', el('strong', null, c.label), ' (by ' + c.actor + '): ', words,
        c.error ? el('span', { class: 'muted' }, ' (' + c.error + ')') : null,
        c.state === 'refused' ? el('button', { type: 'button', class: 'dismiss', onclick: function () { c.dismissed = true; showCommands(); } },
          'Dismiss') : null));
    });
    $('commands').hidden = !ul.firstChild;
  }

  /* The notifications counted by notifier (the API's "deliveries": names
   * only, never a URL) into table TABLE, its box BOX hidden when none. */
  function showDeliveries(rows, table, box) {
    var tb = clear($(table).tBodies[0]);
    (rows || []).forEach(function (d) {
      tb.appendChild(el('tr', { 'data-notifier': d.notifier },
        el('td', null, d.notifier),
        el('td', { class: d.pending ? 'warn' : null }, num(d.pending)),
        el('td', null, num(d.delivered)),
        el('td', { class: d.failed ? 'bad' : null }, num(d.failed))));
    });
    $(box).hidden = !(rows || []).length;
  }

  /* ---- what holds a plan for a person (the API's "holds", said once
   * by the server: web/view_holds.c) ---- */
  /* The plan's badge: a running plan that a gate or an alert holds says
   * so, not "running". */
  var HOLD_BADGE = { gate: ['waiting_approval', 'waiting for approval'], alert: ['alert', 'alert open'],
    cannot_run: ['failed', 'cannot run'] };
  function planBadge(p) {
    var h = (p.holds || [])[0], b = h && HOLD_BADGE[h.what];
    if (!b || p.status !== 'running') return stateBadge(p.status);
    return el('span', { class: 'state s-' + b[0], title: 'plan status: ' + p.status, 'data-hold': h.what }, b[1]);
  }
  /* The holds as a list, each with what holds the plan and what to do;
   * at the top of a plan's page (GLANCE) with the ack buttons, and a gate's
   * or a failure's what to do alone: the state in words above says what. */
  function holdsList(p, glance) {
    var ul = el('ul', { class: 'holds', id: glance ? 'glance-holds' : null }), buttons = glance;
    (p.holds || []).forEach(function (h) {
      var a = h.what === 'alert' ? (p.alerts || []).filter(function (x) { return x.id === h.alert; })[0] : null;
      var says = glance && h.what !== 'alert' ? null : [el('span', { class: 'hold-says' }, h.says), el('br')];
      ul.appendChild(el('li', { class: 'hold h-' + h.what, 'data-hold': h.what, 'data-step': h.step != null ? String(h.step) : null,
        'data-alert': h.alert != null ? String(h.alert) : null },
        says && says[0], says && says[1], el('span', { class: 'hold-todo' }, 'To do: ' + h.todo),
        buttons && a ? el('span', null, ' ', ackButton(p, a)) : null));
    });
    return ul;
  }
  function ackButton(p, a) {
    return el('button', { type: 'button', class: 'ack', onclick: command('/api/plans/' + p.id + '/alerts/' + a.id + '/ack',
      'Acknowledge', 'Acknowledge alert ' + a.id + ' (' + a.kind + '): ' + a.message, false) }, 'Acknowledge');
  }

  /* ---- the plans list ---- */
  /* The list's filter, from the address (#/?name=PART&state=ATTENTION), so
   * that a filtered list can be linked: a part of the name, and the
   * server's "attention" (approval, failed, alert, running, finished). */
  function listFilter() {
    var q = /^#\/?\?(.*)$/.exec(location.hash), f = { name: '', state: '' };
    (q ? q[1].split('&') : []).forEach(function (kv) {
      var i = kv.indexOf('='), k = i < 0 ? kv : kv.slice(0, i), v = i < 0 ? '' : kv.slice(i + 1);
      try { v = decodeURIComponent(v.replace(/\+/g, ' ')); } catch (e) { v = ''; }
      if (k === 'name' || k === 'state') f[k] = v;
    });
    return f;
  }
  /* The address for filter F: #/ when it filters nothing. */
  function filterHash(f) {
    var q = [];
    if (f.name) q.push('name=' + encodeURIComponent(f.name));
    if (f.state) q.push('state=' + encodeURIComponent(f.state));
    return '#/' + (q.length ? '?' + q.join('&') : '');
  }
  function onFilter() {
    var h = filterHash({ name: $('f-name').value.trim(), state: $('f-state').value });
    if (h !== (location.hash || '#/')) history.replaceState(null, '', h);
    if (lastList) drawPlans(lastList);
  }
  var lastList = null;
  function showPlans() {
    return get('/api/plans').then(function (r) {
      if (r.status !== 200) { notice('Listing the plans failed: ' + errText(r), true); return false; }
      lastList = r.body || {};
      showDeliveries(lastList.deliveries, 'deliveries-all', 'deliveries-all-box');
      return drawPlans(lastList);
    });
  }
  /* The list LIST (the API's), filtered; says whether a plan runs. */
  function drawPlans(list) {
    var plans = list.plans || [], f = listFilter(), name = f.name.toLowerCase(), shown = 0;
    var tb = clear($('plans').tBodies[0]);
    var running = plans.some(function (p) { return p.status === 'running'; });
    if (document.activeElement !== $('f-name')) $('f-name').value = f.name;
    $('f-state').value = f.state;
    $('plans-empty').hidden = plans.length > 0;
    /* The list says which step each plan is at and what holds it, in the
     * server's order (what needs a person first): no plan document (its
     * results can be megabytes at 10,000 old queues) is fetched here. */
    plans.forEach(function (p) {
      var cur = p.current, needs;
      if (name && String(p.name).toLowerCase().indexOf(name) < 0) return;
      if (f.state && p.attention !== f.state) return;
      shown++;
      needs = (p.holds || []).map(function (h) { return h.todo; }).join('; ');
      tb.appendChild(el('tr', { 'data-plan': p.id, 'data-attention': p.attention || null, class: p.needs_person ? 'needs-person' : null },
        el('td', null, el('a', { href: '#/plans/' + p.id }, p.name), el('span', { class: 'muted' }, ' #' + p.id)),
        el('td', null, planBadge(p), p.archived_ms ? el('span', { class: 'muted' }, ' archived') : null),
        el('td', { class: 'needs', title: needs || null }, needs || el('span', { class: 'muted' }, 'nothing')),
        el('td', null, cur ? cur.n + '. ' + cur.kind + ' (' + String(cur.status).replace('_', ' ') + ')' : '—'),
        el('td', null, fmtTime(p.created_ms)),
        el('td', null, cur ? fmtTime(cur.started_ms) : '—')));
    });
    $('plans-none').hidden = !plans.length || shown > 0;
    $('list-count').textContent = f.name || f.state ? shown + ' of ' + plural(plans.length, 'plan') : plural(plans.length, 'plan');
    return running;
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
    view = Object.prototype.hasOwnProperty.call(S.views, st.kind) ? S.views[st.kind](st, r) :
      { words: null, pairs: shownPairs(st, r) };
    if (view.words) box.appendChild(el('p', { class: 'progress-words' }, view.words));
    if (view.pairs.length) box.appendChild(kv(view.pairs));
    if (view.extra) box.appendChild(view.extra);
    box.appendChild(resultDetails(st));
    return box;
  }
  /* A step's recorded result, folded. At 10,000 old queues a result is
   * megabytes, so its JSON is written out only while it is open, and it
   * stays open across refreshes. */
  function resultDetails(st) {
    var d = el('details', { 'data-result': st.n }, el('summary', null, 'recorded result')), asked = false;
    function fill() {
      if (!d.open || d.querySelector('pre') || asked) return;
      if (!st.result_elided || st.result_whole) { d.appendChild(el('pre', null, JSON.stringify(st.result, null, 2))); return; }
      /* the plan left its long lists out: the whole result has its own route */
      asked = true;
      api('GET', st.result_url).then(function (x) {
        d.appendChild(el('pre', null, x.status === 200 ? JSON.stringify(x.body, null, 2) :
          'Reading ' + st.result_url + ' failed: ' + errText(x)));
      }, function () { asked = false; });
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
    if (st.gate) pairs.push(['gate', st.gate_state === 'waiting' ? 'waiting for approval' :
      st.gate_state === 'approved_ahead' ? 'approved ahead: opens when the plan gets here' : String(st.gate_state)]);
    if (st.approved_by) pairs.push(['approved by', st.approved_by + ' at ' + fmtTime(st.approved_ms) +
      (st.approved_ahead ? ' (ahead of time)' : '') + (st.approval_comment ? ' — ' + st.approval_comment : '')]);
    if (st.retried_by) pairs.push(['retried by', st.retried_by + ' at ' + fmtTime(st.retried_ms)]);
    li.appendChild(kv(pairs));
    if (st.error) li.appendChild(el('p', { class: 'error' }, st.error));
    var acts = el('div', { class: 'actions' });
    if (st.status === 'waiting_approval')
      acts.appendChild(approveButton(p, st, 'approve'));
    if (st.status === 'pending' && st.gate && st.gate_state !== 'approved_ahead' && p.status === 'running')
      acts.appendChild(approveButton(p, st, 'approve-ahead'));
    var will = willDo(p, st);
    if (will && (st.status === 'pending' || st.status === 'waiting_approval')) li.appendChild(will);
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
  /* ---- what a gate will do, said before it is approved ---- */
  function stepOf(p, n) { return (p.steps || [])[n - 1] || null; }
  /* What approving step ST would do, as an element, or null. */
  function willDo(p, st) {
    var box, f = p.flip, l, ul, ul2;
    if (st.kind === 'flip' && f) {
      box = el('div', { class: 'will-do', 'data-will-do': 'flip' },
        el('p', null, 'Approving step ' + st.n + ' ' + f.sentence + '.'));
      box.appendChild(kv(f.provider === 'unleash' ? [['flag service', 'Unleash at ' + f.host],
        ['feature', f.feature], ['environment', f.environment], ['project', f.project], ['value set', f.value]] :
        [['flag service', 'HTTP ' + f.method + ' to ' + f.host], f.body != null ? ['request body', f.body] : null,
          ['read back at', f.read], ['value expected', f.value]]));
      return box;
    }
    if (st.kind === 'remove_old') {
      if (!st.result || !st.result.preview)
        return el('div', { class: 'will-do', 'data-will-do': 'remove_old' }, el('p', null,
          'When this step waits at its gate, the engine lists here which old queues it would delete and which it would leave.'));
      l = S.previewLists(st.result);
      box = el('div', { class: 'will-do', 'data-will-do': 'remove_old' },
        el('p', null, 'If approved now, step ' + st.n + ' deletes ' + plural(l.go.length, 'old queue') + ' and leaves ' +
          l.stay.length + (l.gone.length ? ' (' + l.gone.length + ' already gone)' : '') +
          '. The engine checked this at ' + fmtTime(l.at) + ' and checks each queue again before deleting it.'));
      ul = el('ul', { class: 'qlist', 'data-list': 'delete' });
      /* Each one's deadline, and what it is made of (move_old's or last entry + TTL), on hover. */
      l.go.forEach(function (e) { ul.appendChild(el('li', { title: e.deadline_why ? 'deadline: ' + e.deadline_why : null }, e.name)); });
      ul2 = el('ul', { class: 'qlist', 'data-list': 'leave' });
      l.stay.forEach(function (e) { ul2.appendChild(el('li', null, e.name + ': ' + (e.reason || e.outcome))); });
      box.appendChild(el('details', { open: l.go.length + l.stay.length <= 40 ? '' : null },
        el('summary', null, 'Would delete (' + l.go.length + ')'), ul));
      box.appendChild(el('details', { open: '' }, el('summary', null, 'Would leave (' + l.stay.length + ')'), ul2));
      return box;
    }
    return null;
  }
  /* The confirm: it says what will happen, with the count for remove_old. */
  function approveText(p, st, ahead) {
    var base = (ahead ? 'Approve step ' + st.n + ' (' + st.kind + ') of ' + p.name + ' ahead of time: the approval is recorded now, ' +
      'and the step starts without waiting when the plan reaches it.' :
      'Approve step ' + st.n + ' (' + st.kind + ') of ' + p.name + '. It starts at the engine\'s next turn.');
    var f = p.flip, l;
    if (st.kind === 'flip' && f)
      return { text: base + ' It ' + f.sentence + (f.provider === 'unleash' ? ' (Unleash at ' + f.host + ', feature ' +
        f.feature + ', environment ' + f.environment + ', set ' + f.value + ').' : ' (HTTP ' + f.method + ' to ' + f.host + ').'),
        ok: ahead ? 'Approve the flip ahead' : 'Flip the flag on' };
    if (st.kind === 'remove_old' && st.result && st.result.preview) {
      l = S.previewLists(st.result);
      return { text: base + ' As of ' + fmtTime(l.at) + ' it would delete ' + plural(l.go.length, 'old queue') + ' and leave ' +
        l.stay.length + '.', ok: 'Delete ' + plural(l.go.length, 'queue') };
    }
    return { text: base, ok: ahead ? 'Approve ahead' : 'Approve' };
  }
  function approveButton(p, st, cls) {
    var ahead = cls === 'approve-ahead';
    return el('button', { type: 'button', class: cls, onclick: command('/api/plans/' + p.id + '/steps/' + st.n + '/approve',
      ahead ? 'Approve ahead' : 'Approve', function () { return approveText(lastPlan || p, stepOf(lastPlan || p, st.n) || st, ahead); },
      st.kind === 'remove_old') }, (ahead ? 'Approve step ' + st.n + ' ahead' : 'Approve step ' + st.n + ' (' + st.kind + ')…'));
  }

  /* What an alert means, how to check it and how to clear it, and whether
   * its cause is still there, when the API says (older servers do not):
   * a line each, nothing when absent. */
  function alertHelp(a) {
    var lines = [['means', 'What it means: '], ['check', 'How to check: '], ['clear', 'How to clear: ']], box = el('div', { class: 'alert-help' });
    lines.forEach(function (l) {
      if (typeof a[l[0]] === 'string' && a[l[0]]) box.appendChild(el('div', { 'data-field': l[0] }, el('span', { class: 'muted' }, l[1]), a[l[0]]));
    });
    if (typeof a.cause_present === 'boolean')
      box.appendChild(el('div', { 'data-field': 'cause_present', class: a.cause_present ? 'bad' : 'good' }, a.cause_present ?
        'The cause is still there.' : 'The cause is gone: acknowledging it closes it for good.'));
    return box.firstChild ? box : null;
  }

  /* ---- at a glance: the top of a plan's page ---- */
  function watchOf(p) { return (p.steps || []).filter(function (s) { return s.kind === 'watch'; })[0] || null; }
  /* {left, total, deadline, done} of the watch, or null before it starts. */
  function watchSpan(w) {
    if (!w || !w.started_ms || !w.result || !w.result.deadline_ms) return null;
    var dl = w.result.deadline_ms, start = w.result.started_ms || w.started_ms;
    return { deadline: dl, total: Math.max(dl - start, 1), left: w.ended_ms ? 0 : Math.max(dl - Date.now(), 0),
      done: !!w.ended_ms, start: start };
  }
  /* The engine cannot run the plan (its open plan_cannot_run alert):
   * {why, todo} from the alert's message, or null. */
  function cannotRun(p) {
    var a = (p.alerts || []).filter(function (x) { return x.kind === 'plan_cannot_run'; })[0], i;
    if (!a) return null;
    i = a.message.indexOf('; what to do: ');
    return i < 0 ? { why: a.message, todo: '' } : { why: a.message.slice(0, i), todo: a.message.slice(i + 14) };
  }
  /* The plan's state in words. */
  function stateWords(p) {
    var cur = p.current, st = cur ? stepOf(p, cur.n) : null, n = (p.steps || []).length, ws, cr = cannotRun(p);
    if (p.archived_ms) return 'archived at ' + fmtTime(p.archived_ms) + ' (was ' + p.status + ')';
    if (cr) return 'needs attention: the engine cannot run this plan: ' + cr.why;
    if (p.status === 'succeeded') return 'succeeded: all ' + n + ' steps done';
    if (p.status === 'aborted') return 'aborted' + (st ? ' at step ' + st.n + ', ' + st.kind : '');
    if (!st) return String(p.status);
    if (p.status === 'failed' || st.status === 'failed')
      return 'failed at ' + st.kind + ' (step ' + st.n + ')' + (st.error ? ': ' + st.error : '');
    if (st.status === 'waiting_approval') return 'waiting for your approval of step ' + st.n + ', ' + st.kind;
    if (st.kind === 'watch' && st.status === 'running') {
      ws = watchSpan(st);
      if (!ws) return 'watching: starting';
      return ws.left > 0 ? 'watching: ' + fmtSpan(ws.left) + ' left of ' + fmtSpan(ws.total) :
        'watching: the deadline has passed; the watch ends when the old path is empty and nothing holds it' +
        (p.alerts && p.alerts.length ? ' (see the alerts)' : '');
    }
    return 'running step ' + st.n + ' of ' + n + ', ' + st.kind;
  }
  /* A finished plan's page opens with what it did: how long it took, what
   * moved, what was removed, and its lateness against its bound. */
  function finishedSummary(p) {
    if (p.status !== 'succeeded' && p.status !== 'aborted') return null;
    var steps = p.steps || [], by = {}, end = p.created_ms, pairs = [], f = p.facts || {}, bound = f.max_lateness_ms;
    steps.forEach(function (st) { by[st.kind] = by[st.kind] || st; if (st.ended_ms && st.ended_ms > end) end = st.ended_ms; });
    var done = steps.filter(function (st) { return st.status === 'succeeded'; }).length;
    pairs.push(['took', fmtSpan(end - p.created_ms) + ' (submitted ' + fmtTime(p.created_ms) + ', last step ended ' + fmtTime(end) + ')']);
    pairs.push(['steps', done + ' of ' + steps.length + ' succeeded' + (p.status === 'aborted' && p.current ? '; aborted at step ' +
      p.current.n + ', ' + p.current.kind : '')]);
    var mv = by.move_old, mc = mv && mv.result && mv.result.counts;
    pairs.push(['moved', mc ? num(mc.moved) + ' messages moved from the old queues to the ladder' + (mc.left ? ', ' + num(mc.left) + ' left' : '') :
      mv ? 'move_old did not finish' : 'nothing moved: the plan has no move_old step (old messages expired from the old queues by their TTL)']);
    var rm = by.remove_old, rc = rm && rm.result && !rm.result.preview && rm.result.counts;
    pairs.push(['removed', rc ? plural(rc.removed || 0, 'old queue') + ' removed' + (rc.left ? ', ' + rc.left + ' left' : '') +
      (rc.gone ? ', ' + rc.gone + ' already gone' : '') : rm ? 'no old queue removed (remove_old did not run)' : 'no old queue removed: the plan has no remove_old step']);
    var w = by.watch, ws = w && w.result && w.result.summary, wl = ws && ws.probe_lateness_ms, cs = by.canary && by.canary.result && by.canary.result.summary;
    var late = [];
    if (wl && wl.max != null) late.push('watch probes at most ' + fmtDur(wl.max) + ' late');
    if (cs && cs.max_ms != null) late.push('canary at most ' + fmtDur(cs.max_ms));
    var worst = Math.max(wl && wl.max != null ? wl.max : -1, cs && cs.max_ms != null ? cs.max_ms : -1);
    pairs.push(['lateness', late.length ? late.join('; ') + (bound != null ? ' — ' + (worst <= bound ? 'within' : 'OVER') +
      ' its bound of ' + fmtDur(bound) : '') : 'not measured (no canary or watch ran)']);
    return el('div', { id: 'finished-summary', class: 'finished' }, el('p', { class: 'strip-title' }, 'What this plan did'), kv(pairs));
  }
  function bar(cls, label) {
    return el('div', { class: 'bar ' + cls, role: 'progressbar', 'aria-label': label });
  }
  function glance(p) {
    var box = clear($('glance-body')), cur = p.current, steps = p.steps || [], done = 0, b, ws, w, st, a;
    box.appendChild(el('p', { id: 'state-words', class: 'state-words s-' + p.status }, stateWords(p)));
    if ((p.holds || []).length) {
      box.appendChild(el('p', { class: 'holds-title' }, 'Waiting for you:'));
      box.appendChild(holdsList(p, true));
    }
    steps.forEach(function (s) { if (s.status === 'succeeded') done++; });
    b = bar('steps', 'steps done');
    b.setAttribute('aria-valuemin', 0); b.setAttribute('aria-valuemax', steps.length); b.setAttribute('aria-valuenow', done);
    steps.forEach(function (s) {
      var seg = el('span', { class: 'seg t-' + s.status + (cur && cur.n === s.n ? ' current' : ''), title: s.n + '. ' + s.kind + ': ' + s.status });
      seg.style.flexGrow = '1';
      b.appendChild(seg);
    });
    box.appendChild(el('div', { class: 'bar-row', id: 'steps-progress' }, b,
      el('span', { class: 'bar-text' }, done + ' of ' + steps.length + ' steps done' + (cur && p.status === 'running' ? '; now ' + cur.n + '. ' + cur.kind : ''))));
    w = watchOf(p);
    ws = watchSpan(w);
    if (ws) {
      b = bar('watch', 'watch horizon');
      var frac = ws.done ? 1 : Math.min(1, (Date.now() - ws.start) / ws.total), fill = el('span', { class: 'fill' });
      fill.style.width = (frac * 100).toFixed(1) + '%';
      b.appendChild(fill);
      b.setAttribute('aria-valuemin', 0); b.setAttribute('aria-valuemax', 100); b.setAttribute('aria-valuenow', Math.round(frac * 100));
      box.appendChild(el('div', { class: 'bar-row', id: 'watch-progress' }, b, el('span', { class: 'bar-text' },
        ws.done ? 'watch done: ' + fmtSpan(w.ended_ms - w.started_ms) + ', ended ' + fmtTime(w.ended_ms) :
        (ws.left > 0 ? fmtSpan(ws.left) + ' left of ' + fmtSpan(ws.total) : 'deadline passed') + '; deadline ' + fmtTime(ws.deadline))));
    }
    if (w && w.started_ms && p.status === 'running' && w.result && w.result.summary) {
      var strip = S.ladderStrip(w.result.summary, 'glance-ladder');
      if (strip) box.appendChild(strip);
    }
    if (w && w.status === 'running' && w.result && w.result.summary) {
      var sm = w.result.summary, tot = 0;
      (sm.ladder_depth || []).forEach(function (v) { tot += v || 0; });
      box.appendChild(el('p', { id: 'glance-watch', class: 'bar-text' }, 'old path ' + num(sm.old_depth) + ' messages in ' +
        num(sm.old_nonempty) + ' of ' + num(sm.old_queues) + ' queues · ladder ' + tot + ' · parking ' + num(sm.parking_depth) +
        ' · probe lateness last ' + fmtDur((sm.probe_lateness_ms || {}).last) + ' (bound ' + fmtDur((p.facts || {}).max_lateness_ms) + ')'));
    }
    var fin = finishedSummary(p);
    if (fin) box.appendChild(fin);
    a = p.alerts || [];
    box.appendChild(el('p', { id: 'glance-alerts', class: a.length ? 'alerts-line bad' : 'alerts-line muted' },
      a.length ? plural(a.length, 'open alert') + ': ' + a.map(function (x) { return x.kind; }).join(', ') + ' (below)' : 'No open alerts.'));
    var act = el('div', { id: 'glance-action', class: 'actions' }), cr = cannotRun(p);
    st = cur ? stepOf(p, cur.n) : null;
    if (cr) {
      /* Its commands would wait unanswered: no buttons, what to do instead. */
      box.appendChild(el('p', { id: 'glance-attention', class: 'alerts-line bad' }, 'What to do: ' + cr.todo));
    } else if (st && st.status === 'waiting_approval' && p.status === 'running') {
      act.appendChild(approveButton(p, st, 'approve primary'));
      box.appendChild(act);
      var wd = willDo(p, st);
      if (wd) box.appendChild(wd);
    } else if (st && st.status === 'failed' && p.status === 'failed') {
      act.appendChild(el('button', { type: 'button', class: 'retry primary', onclick: command(
        '/api/plans/' + p.id + '/steps/' + st.n + '/retry', 'Retry',
        'Run step ' + st.n + ' (' + st.kind + ') of ' + p.name + ' again from the beginning.', false) }, 'Retry step ' + st.n));
      box.appendChild(act);
    } else if ((p.status === 'succeeded' || p.status === 'aborted') && !p.archived_ms) {
      act.appendChild(el('button', { type: 'button', class: 'archive', onclick: command('/api/plans/' + p.id + '/archive',
        'Archive', 'Archive plan ' + p.name + ' (#' + p.id + ')? It stays readable here; its name can then be submitted again as a new plan.',
        false, 'Archive') }, 'Archive plan…'));
      box.appendChild(el('p', { class: 'muted' }, 'Nothing waits for you. Archive the plan to use its name again.'));
      box.appendChild(act);
    } else if (p.status === 'running' && !(p.holds || []).length)
      box.appendChild(el('p', { class: 'muted', id: 'glance-none' }, 'Nothing waits for you now; the page refreshes every few seconds.'));
  }

  /* A large step result comes in the plan without its long lists
   * (st.result_elided names them); the steps whose view lists entries get
   * theirs whole from st.result_url, fetched again only when the brief
   * changes. */
  var WHOLE_KINDS = { remove_old: 1, verify_ladder: 1 }, wholeResults = {};
  function withWholeResults(r) {
    if (r.status !== 200 || !r.body) return r;
    return Promise.all((r.body.steps || []).map(function (st) {
      if (!st.result_elided || !st.result_url || !WHOLE_KINDS[st.kind]) return null;
      var key = st.result_url + ' ' + JSON.stringify(st.result), w = wholeResults[st.result_url];
      if (w && w.key === key) { st.result = w.result; st.result_whole = true; return null; }
      return api('GET', st.result_url).then(function (x) {
        if (x.status !== 200 || !x.body) return;
        wholeResults[st.result_url] = { key: key, result: x.body };
        st.result = x.body;
        st.result_whole = true;
      });
    })).then(function () { return r; });
  }
  function showPlan(id) {
    return Promise.all([get('/api/plans/' + id).then(withWholeResults), api('GET', '/api/plans/' + id + '/history')]).then(function (rs) {
      var r = rs[0], h = rs[1];
      if (r.status !== 200) { notice('Reading plan ' + id + ' failed: ' + errText(r), true); return false; }
      var p = r.body, cur = p.current;
      lastPlan = p;
      $('plan-title').textContent = p.name + ' ';
      $('plan-title').appendChild(planBadge(p));
      glance(p);
      $('plan-meta').textContent = 'Plan #' + p.id + ', submitted ' + fmtTime(p.created_ms) +
        (cur && p.status !== 'succeeded' ? '; current step ' + cur.n + '. ' + cur.kind : '') + '; sha256 ' + String(p.sha256).slice(0, 16) + '…';
      var acts = clear($('plan-actions'));
      if ((p.status === 'running' || p.status === 'failed') && !cannotRun(p))
        acts.appendChild(el('button', { type: 'button', class: 'danger abort', onclick: command(
          '/api/plans/' + p.id + '/abort', 'Abort', 'Abort plan ' + p.name + '? ' + rollbackText(p), true) }, 'Abort plan…'));
      var al = clear($('alerts'));
      (p.alerts || []).forEach(function (a) {
        al.appendChild(el('li', { 'data-alert': a.id }, el('strong', null, 'Alert ' + a.id + ', ' + a.kind), ': ' + a.message + ' ',
          el('span', { class: 'muted' }, '(since ' + fmtTime(a.raised_ms) + ', seen ' + a.count + '×, last ' +
            fmtTime(a.last_ms) + ') '),
          a.kind === 'plan_cannot_run' ? el('span', { class: 'muted' }, 'It closes by itself once the plan loads again.') :
          ackButton(p, a), alertHelp(a)));
      });
      $('alerts-box').hidden = !(p.alerts || []).length;
      var tl = clear($('timeline'));
      (p.steps || []).forEach(function (st) { tl.appendChild(stepItem(p, st, cur && st.n === cur.n && p.status === 'running')); });
      showDeliveries(p.deliveries, 'deliveries', 'deliveries-box');
      showHistory(h);
      var watch = (p.steps || []).filter(function (s) { return s.kind === 'watch' && s.started_ms; })[0];
      $('charts-box').hidden = !watch;
      /* Drawn again only when samples came: a chart replaced at every
       * refresh would drop the value a person is hovering over. */
      var done = watch ? loadSamples(p.id).then(function () {
        if (samples.drawn === samples.next && $('charts').firstChild) return;
        drawCharts();
        samples.drawn = samples.next;
      }) : Promise.resolve();
      return done.then(function () { return p.status === 'running'; });
    });
  }
  /* The history: grouped by step, runs of the same kind by the same actor
   * folded into one row (102 removals: one row listing their names),
   * filtered by step, actor and kind; times in UTC to the millisecond. */
  var FOLD = 2;                         /* a run this long or longer is folded */
  function fmtMs(e) {
    return e.time_utc ? e.time_utc.replace('T', ' ').replace('Z', '') : fmtTime(e.ts_ms);
  }
  function stepName(n) {
    if (n == null) return 'Plan';
    var st = lastPlan && (lastPlan.steps || [])[n - 1];
    return 'Step ' + n + (st ? ' · ' + st.kind : '');
  }
  /* An event in words: what happened, then its details as "key value"
   * pairs; the JSON itself sits behind a toggle. */
  var EVENT_WORDS = {
    'plan.submitted': 'plan submitted', 'plan.succeeded': 'plan succeeded', 'plan.failed': 'plan failed',
    'plan.aborted': 'plan aborted', 'plan.archived': 'plan archived', 'plan.cannot_run': 'the engine cannot run the plan',
    'step.started': 'step started', 'step.succeeded': 'step succeeded', 'step.failed': 'step failed',
    'step.waiting_approval': 'step waits for approval', 'step.approved': 'step approved',
    'step.approved_ahead': 'step approved ahead of time', 'step.retry': 'step retried',
    'alert.raised': 'alert raised', 'alert.acked': 'alert acknowledged', 'old.queue_removed': 'old queue removed',
    'old.queue_gone': 'old queue already gone', 'old.exchange_removed': 'old exchange removed',
    'old.exchange_gone': 'old exchange already gone', 'old.exchange_left': 'old exchange left in use', 'request.denied': 'request refused', 'command.refused': 'command refused',
    'rollback.requested': 'rollback requested', 'rollback.confirmed': 'rollback confirmed', 'rollback.failed': 'rollback failed',
    'flag.changed': 'the flag changed', 'flag.in_doubt': 'a flag write is in doubt', 'flag.settled': 'the flag settled',
    'state.restored': 'the database was restored from a backup; what happened between its last event and now is not recorded',
    'watch.restored': 'the watch resumed from before the restore'
  };
  function detailText(k, v) {
    if (v == null) return 'none';
    if (typeof v === 'object') { var t = JSON.stringify(v); return t.length > 80 ? t.slice(0, 77) + '…' : t; }
    if (typeof v === 'number' && /_ms$/.test(k) && v > 1e12) return fmtTime(v);
    if (typeof v === 'number' && /_ms$/.test(k)) return fmtDur(v);
    return String(v);
  }
  function eventWords(e) {
    var d = e.details, head = EVENT_WORDS[e.kind] || e.kind.replace(/[._]/g, ' ');
    if (d == null || typeof d !== 'object') return head + (d == null ? '' : ': ' + String(d));
    /* the group's heading already names the step and its kind */
    var st = e.step != null && lastPlan ? (lastPlan.steps || [])[e.step - 1] : null;
    var pairs = Object.keys(d).filter(function (k) {
      return d[k] !== '' && !(k === 'step' && e.step === d[k]) && !(k === 'kind' && st && st.kind === d[k]);
    }).map(function (k) {
      return k.replace(/_ms$/, '').replace(/_/g, ' ') + ' ' + detailText(k, d[k]);
    });
    return head + (pairs.length ? ': ' + pairs.join(' · ') : '');
  }
  function eventDetails(e) {
    if (e.details == null) return '';
    return el('div', null, el('span', { class: 'ev-words' }, eventWords(e)),
      el('details', { class: 'ev-json' }, el('summary', null, 'JSON'), el('pre', null, JSON.stringify(e.details, null, 2))));
  }
  /* What a folded row lists of each event: its name, else its details. */
  function itemOf(e) {
    var d = e.details;
    if (d && typeof d === 'object') {
      if (typeof d.name === 'string') return d.name;
      if (typeof d.queue === 'string') return d.queue;
    }
    return d == null ? '' : JSON.stringify(d);
  }
  function fillSelect(sel, values, label) {
    var keep = sel.value, have = {};
    Array.prototype.forEach.call(sel.options, function (o) { have[o.value] = true; });
    values.forEach(function (v) {
      if (!have[String(v)]) sel.appendChild(el('option', { value: String(v) }, label ? label(v) : String(v)));
    });
    sel.value = keep;
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
    if (lastHistory && lastHistory.plan !== h.body.plan)
      ['f-step', 'f-actor', 'f-kind'].forEach(function (id) {
        var sel = $(id);
        while (sel.options.length > 1) sel.remove(1);
        sel.value = '';
      });
    lastHistory = h.body;
    var ver = h.body.verification || {};
    v.textContent = ver.verified ? 'The history chain verifies (' + ver.checked + ' events checked).' :
      'The history chain does NOT verify: event ' + num(ver.bad_event) + ': ' + num(ver.reason);
    v.className = ver.verified ? 'ok' : 'error';
    $('plan-yaml').textContent = h.body.yaml == null ? '' : h.body.yaml;
    $('plan-yaml-sha').textContent = 'sha256 ' + num(h.body.sha256);
    /* Events are only ever appended: the same count, newest hash and
     * filter mean the same rows (10,000 of them after remove_old at that
     * scale). */
    var evs = h.body.events || [], f = { step: $('f-step').value, actor: $('f-actor').value, kind: $('f-kind').value };
    var key = h.body.plan + ':' + evs.length + ':' + (evs.length ? evs[evs.length - 1].hash : '') + ':' +
      f.step + ':' + f.actor + ':' + f.kind;
    if (key === historyKey) return;
    historyKey = key;
    var steps = [], actors = [], kinds = [], seen = {};
    evs.forEach(function (e) {
      var s = e.step == null ? 'plan' : e.step;
      if (!seen['s' + s]) { seen['s' + s] = 1; steps.push(s); }
      if (!seen['a' + e.actor]) { seen['a' + e.actor] = 1; actors.push(e.actor); }
      if (!seen['k' + e.kind]) { seen['k' + e.kind] = 1; kinds.push(e.kind); }
    });
    fillSelect($('f-step'), steps, function (s) { return s === 'plan' ? 'Plan' : stepName(s); });
    fillSelect($('f-actor'), actors.sort());
    fillSelect($('f-kind'), kinds.sort());
    var shown = evs.filter(function (e) {
      return (!f.step || String(e.step == null ? 'plan' : e.step) === f.step) &&
        (!f.actor || e.actor === f.actor) && (!f.kind || e.kind === f.kind);
    });
    /* Groups in order of first appearance; runs within each. */
    var groups = [], byStep = {};
    shown.forEach(function (e) {
      var s = e.step == null ? 'plan' : e.step, g = byStep[s];
      if (!g) { g = byStep[s] = { step: e.step, runs: [] }; groups.push(g); }
      var run = g.runs[g.runs.length - 1];
      if (run && run[0].kind === e.kind && run[0].actor === e.actor) run.push(e);
      else g.runs.push([e]);
    });
    tb = clear(tb);
    var rows = 0;
    groups.forEach(function (g) {
      var n = g.runs.reduce(function (a, r) { return a + r.length; }, 0);
      tb.appendChild(el('tr', { class: 'group', 'data-step': g.step == null ? 'plan' : String(g.step) },
        el('th', { colspan: '4' }, stepName(g.step) + ' — ' + plural(n, 'event'))));
      g.runs.forEach(function (run) {
        var runs = run.length >= FOLD ? [run] : run.map(function (e) { return [e]; });
        runs.forEach(function (r) {
          var e = r[0], last = r[r.length - 1], tr;
          rows++;
          if (r.length === 1) {
            tr = el('tr', { 'data-kind': e.kind }, el('td', { class: 'time' }, fmtMs(e)), el('td', null, e.actor),
              el('td', null, e.kind), el('td', { class: 'details' }, eventDetails(e)));
          } else {
            var list = el('ol', { class: 'qlist' });
            r.forEach(function (x) { list.appendChild(el('li', { title: fmtMs(x) }, itemOf(x))); });
            tr = el('tr', { class: 'folded', 'data-kind': e.kind, 'data-count': String(r.length) },
              el('td', { class: 'time' }, fmtMs(e), el('br'), '… ' + fmtMs(last)), el('td', null, e.actor),
              el('td', null, r.length + ' × ' + e.kind),
              el('td', { class: 'details' }, el('details', null, el('summary', null,
                'Show all ' + r.length + ' (events ' + e.id + '–' + last.id + ')'), list)));
          }
          tb.appendChild(tr);
        });
      });
    });
    $('history-count').textContent = (shown.length === evs.length ? plural(evs.length, 'event') :
      shown.length + ' of ' + plural(evs.length, 'event') + ' (filtered)') + ' in ' + plural(rows, 'row') +
      '; times are UTC, to the millisecond.';
  }
  /* Downloads the server's own export (FORMAT json or csv), byte for byte:
   * what `cutover history --verify FILE` checks. */
  function download(format) {
    if (!lastHistory) return;
    var h = {};
    if (token) h['Authorization'] = 'Bearer ' + token;
    var name = 'cutover-' + lastHistory.name + '-' + lastHistory.plan + '-history.' + format;
    fetch('/api/plans/' + lastHistory.plan + '/export?format=' + format, { headers: h, cache: 'no-store',
      credentials: 'omit' }).then(function (r) {
      if (r.status !== 200) {
        return r.text().then(function (t) {
          var j = null;
          try { j = JSON.parse(t); } catch (e) { j = null; }
          notice('Downloading the history failed: ' + errText({ status: r.status, body: j }), true);
        });
      }
      return r.blob().then(function (blob) {
        var a = el('a', { href: URL.createObjectURL(blob), download: name });
        document.body.appendChild(a);
        a.click();
        setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
      });
    }, function () { reachable(false); });
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
  /* One quantity per chart; the ladder's levels as small multiples on one
   * scale; probe lateness against the plan's bound. */
  function drawCharts() {
    var s = samples.series, box = clear($('charts')), levels = [], facts = (lastPlan && lastPlan.facts) || {}, vmax = 0;
    Object.keys(s).forEach(function (k) {
      if (k.indexOf('ladder.depth#') === 0) levels.push({ name: 'level ' + k.slice(13), pts: s[k], lv: +k.slice(13) });
    });
    levels.sort(function (a, b) { return a.lv - b.lv; });
    box.appendChild(chart('Old path depth', { id: 'old-depth', unit: 'messages', yLabel: 'messages',
      lines: [{ name: 'old depth', pts: s['old.depth'] || [], color: '#a05a00' }] }));
    box.appendChild(chart('Non-empty old queues', { id: 'old-nonempty', unit: 'queues', yLabel: 'queues',
      lines: [{ name: 'non-empty', pts: s['old.nonempty'] || [], color: '#5b6470' }] }));
    box.appendChild(chart('Probe lateness', { id: 'probe-lateness', unit: 'ms', yLabel: 'lateness',
      lines: [{ name: 'lateness', pts: s['probe.lateness_ms'] || [], dots: true, color: '#0b5cad' }],
      bound: facts.max_lateness_ms != null ? { value: facts.max_lateness_ms, label: 'bound ' + fmtDur(facts.max_lateness_ms) } : null }));
    box.appendChild(chart('Parking depth', { id: 'parking-depth', unit: 'messages', yLabel: 'messages',
      lines: [{ name: 'parking', pts: s['parking.depth'] || [], color: '#c62828' }] }));
    levels.forEach(function (l) { l.pts.forEach(function (p) { vmax = Math.max(vmax, p[1]); }); });
    var mult = el('div', { class: 'multiples', 'data-chart': 'ladder-levels' },
      el('h3', { class: 'multiples-title' }, 'Ladder depth by level (messages; one scale for all levels)'));
    mult.firstChild.style.gridColumn = '1 / -1';
    levels.forEach(function (l) {
      mult.appendChild(chart(l.name, { id: 'level-' + l.lv, unit: 'messages', small: true, vmax: vmax,
        lines: [{ name: l.name, pts: l.pts, color: '#0b5cad' }] }));
    });
    if (!levels.length) mult.appendChild(el('p', { class: 'muted' }, 'no samples yet'));
    box.appendChild(mult);
    /* Client publishes entering each level per sample: the delay band
     * [2^k, 2^(k+1)) units (publish_in is cumulative: differences). */
    var bands = [];
    Object.keys(s).forEach(function (k) {
      if (k.indexOf('ladder.band#') !== 0) return;
      var pts = s[k].slice(1).map(function (p, i) { return [p[0], Math.max(0, p[1] - s[k][i][1])]; });
      if (pts.some(function (p) { return p[1] > 0; })) bands.push({ name: 'band ' + k.slice(12), pts: pts, lv: +k.slice(12) });
    });
    bands.sort(function (a, b) { return a.lv - b.lv; });
    box.appendChild(chart('Publishes entering each level (delay band)', { id: 'bands', unit: 'messages', yLabel: 'publishes per sample',
      lines: bands.length ? bands : [{ name: 'all bands', pts: [] }] }));
  }

  /* ---- routing and refresh ---- */
  function parseRoute() {
    var m = /^#\/plans\/(\d+)$/.exec(location.hash);
    route.plan = m ? +m[1] : null;
    $('plans-view').hidden = route.plan != null;
    $('plan-view').hidden = route.plan == null;
  }
  /* The service's own health (/healthz): a database whose disk is full or
   * whose file was removed holds every plan; say so until it passes. */
  var healthBad = false;
  function showHealth() {
    return get('/healthz').then(function (r) {
      if (r.status === 503) { healthBad = true; notice('The service cannot go on: ' + errText(r), true); }
      else if (healthBad) { healthBad = false; notice('', false); }
    }, function () {});
  }
  function refresh() {
    if (busy) return;
    busy = true;
    clearTimeout(timer);
    showCommands();
    var p = route.plan != null ? showPlan(route.plan) : showPlans();
    p = p.then(function (running) { return showHealth().then(function () { return running; }); });
    p.then(function (running) {
      busy = false;
      $('updated').textContent = 'updated ' + new Date().toISOString().slice(11, 19) + ' UTC';
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
    $('f-name').addEventListener('input', onFilter);
    $('f-state').addEventListener('change', onFilter);
    $('list-filter').addEventListener('submit', function (e) { e.preventDefault(); onFilter(); });
    $('download').addEventListener('click', function () { download('json'); });
    $('download-csv').addEventListener('click', function () { download('csv'); });
    ['f-step', 'f-actor', 'f-kind'].forEach(function (id) {
      $(id).addEventListener('change', function () { if (lastHistory) showHistory({ status: 200, body: lastHistory }); });
    });
    $('forget').addEventListener('click', function () { token = null; $('forget').hidden = true; notice('Token forgotten.', false); });
    window.addEventListener('hashchange', function () { notice('', false); parseRoute(); refresh(); });
    parseRoute();
    refresh();
  });
})();
