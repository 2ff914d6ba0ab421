#!/usr/bin/env node
/* The status page in a real browser (issue 8): Debian's headless Chromium,
 * driven by playwright-core, against a real `cutover serve` and the test
 * broker. A plan [declare_ladder, {verify_ladder, gate}] waits at its gate;
 * the page lists it, shows the gate waiting and an alert (acknowledged
 * through the page), refuses a wrong token with the API's error, approves
 * with the right one and shows the step succeed and the approver in the
 * history; /metrics is parsed and every label checked against the bounded
 * sets; a narrow window does not overflow; when the server stops the page
 * says it cannot reach it. Screenshots go to BUILD/screenshot-plan.png and
 * BUILD/screenshot-history.png.
 *
 * usage: node test_page.js CUTOVER_BINARY BUILD_DIR
 * Needs CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER,
 * CUTOVER_TEST_PASSWORD and /usr/bin/chromium: without them it fails. */
'use strict';
const { spawn, execFileSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');

const CHROMIUM = process.env.CUTOVER_CHROMIUM || '/usr/bin/chromium';
const TOKEN = crypto.randomBytes(16).toString('hex');
const t0 = Date.now();
let server = null, browser = null, tmp = null, planFile = null, destQueue = null;

function log(msg) { console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`); }
function fail(msg) { throw new Error(msg); }
function check(cond, msg) { if (!cond) fail(msg); log('ok: ' + msg); }
function sql(db, query) { return execFileSync('sqlite3', [db, query], { encoding: 'utf8' }).trim(); }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, fn, ms = 20000) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    if (Date.now() > end) fail(`timed out waiting for ${what}` + (last instanceof Error ? `: ${last.message}` : ''));
    await sleep(200);
  }
}

function freePort() {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
  });
}

async function main() {
  const [bin, build] = process.argv.slice(2);
  if (!bin || !build) fail('usage: node test_page.js CUTOVER_BINARY BUILD_DIR');
  for (const v of ['CUTOVER_TEST_AMQP', 'CUTOVER_TEST_MGMT', 'CUTOVER_TEST_USER', 'CUTOVER_TEST_PASSWORD'])
    if (!process.env[v]) fail(`${v} is not set: this test needs the test broker (scripts/test starts one)`);
  if (!fs.existsSync(CHROMIUM)) fail(`${CHROMIUM} is missing: install Debian's chromium (scripts/setup)`);
  const { chromium } = require('playwright-core');

  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cutover-browser-'));
  const db = path.join(tmp, 'page.db');
  const ops = path.join(tmp, 'operators');
  fs.writeFileSync(ops, 'alice:' + crypto.createHash('sha256').update(TOKEN).digest('hex') + '\n', { mode: 0o600 });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  server = spawn(bin, ['serve', '--db', db, '--listen', `127.0.0.1:${port}`, '--operators', ops, '--poll-ms', '200'],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  let serverLog = '';
  server.stdout.on('data', (d) => { serverLog += d; });
  server.stderr.on('data', (d) => { serverLog += d; });
  server.on('exit', (code, sig) => { if (server) serverLog += `\n(cutover serve exited: ${code} ${sig})\n`; });
  process.on('exit', () => { if (process.exitCode) console.error('--- cutover serve log ---\n' + serverLog.slice(-4000)); });
  await until('cutover serve to answer /healthz', async () => (await fetch(base + '/healthz')).ok);
  log(`cutover serve on ${base}`);

  /* The plan: its ladder and destination are this test's own. */
  const id = `itestbrowser${process.pid}`;
  const name = `${id}-gate`;
  destQueue = `${id}.dest`;
  const yaml = [
    `name: ${name}`, 'broker:', `  amqp: ${process.env.CUTOVER_TEST_AMQP}`,
    `  management: ${process.env.CUTOVER_TEST_MGMT}`, `  username: ${process.env.CUTOVER_TEST_USER}`,
    '  password: env:CUTOVER_TEST_PASSWORD', 'old:', `  queues: { names: [${id}.old] }`, 'ladder:',
    `  prefix: ${id}`, '  unit: 100ms', '  levels: 6', `  destinations: [${destQueue}]`, '  create_destinations: true', 'canary:',
    '  delays: [100ms]', 'steps: [declare_ladder, { step: verify_ladder, gate: true }]', ''].join('\n');
  planFile = path.join(tmp, 'plan.yaml');
  fs.writeFileSync(planFile, yaml);
  const sub = await fetch(base + '/api/plans', { method: 'POST', body: yaml,
    headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/yaml' } });
  check(sub.status === 201, `plan submitted (${sub.status})`);
  const planId = (await sub.json()).id;
  await until('the gate to wait', async () => {
    const p = await (await fetch(`${base}/api/plans/${planId}`)).json();
    if (p.steps[0].status === 'failed') fail('declare_ladder failed: ' + p.steps[0].error);
    return p.steps[1].status === 'waiting_approval';
  }, 60000);
  log('plan waits at its gate');
  /* An alert, as the watch would raise one; its message is hostile markup
   * the page must show as text. */
  const now = Date.now();
  execFileSync('sqlite3', [db, `INSERT INTO alerts (plan_id, kind, message, raised_ms, last_ms, count) VALUES ` +
    `(${planId}, 'parking', '3 messages in the parking queue <img src=x id=pwned onerror="window.pwned=1">', ${now}, ${now}, 2);`]);

  /* A fresh profile (playwright passes it as --user-data-dir). */
  browser = await chromium.launchPersistentContext(path.join(tmp, 'chromium'), {
    executablePath: CHROMIUM, headless: true, acceptDownloads: true,
    viewport: { width: 1100, height: 900 }, args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  const page = browser.pages()[0] || await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('console', (m) => { if (/Refused to|Content Security Policy/i.test(m.text())) problems.push('console: ' + m.text()); });
  const foreign = [];
  page.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) foreign.push(r.url()); });

  /* The plans list. */
  await page.goto(base + '/');
  const row = page.locator(`#plans tbody tr[data-plan="${planId}"]`);
  await row.waitFor({ timeout: 10000 });
  const rowText = await row.innerText();
  check(rowText.includes(name) && rowText.includes('running'), 'the plan list shows the plan, running');
  check(/2\. verify_ladder \(waiting.approval\)/.test(rowText), 'the plan list shows the current step waiting');

  /* One plan: the gate waits, the alert shows as text, declare's progress. */
  await row.locator('a').click();
  await page.waitForURL(`**/#/plans/${planId}`);
  const step2 = page.locator('#timeline li[data-step="2"]');
  await until('the timeline', async () => (await step2.count()) === 1);
  const s2 = await step2.innerText();
  check(/waiting for approval/.test(s2) && /waiting approval/.test(s2), 'step 2 shows its gate waiting');
  const s1 = await page.locator('#timeline li[data-step="1"]').innerText();
  check(/Declared \d+ exchanges, \d+ queues, \d+ bindings/.test(s1) && /succeeded/.test(s1), 'step 1 shows its progress in words and numbers');
  /* Step 1's recorded result: written out when unfolded, still unfolded
   * after the page refreshes (the timeline is rebuilt each time). */
  const res1 = page.locator('#timeline li[data-step="1"] details[data-result="1"]');
  check((await res1.locator('pre').count()) === 0, 'a folded result is not written out');
  await res1.locator('summary').click();
  await until('the result to show', async () => /"exchanges"/.test(await res1.locator('pre').innerText()));
  const before = await page.locator('#updated').innerText();
  await page.locator('#refresh').click();
  await until('a refresh', async () => (await page.locator('#updated').innerText()) !== before);
  check(await page.locator('#timeline li[data-step="1"] details[data-result="1"]').evaluate((d) => d.open) &&
    /"exchanges"/.test(await page.locator('#timeline li[data-step="1"] details[data-result="1"] pre').innerText()),
    'an unfolded result stays unfolded across a refresh');
  const alertText = await page.locator('#alerts li').first().innerText();
  check(alertText.includes('<img src=x id=pwned') && (await page.locator('#pwned').count()) === 0 &&
    !(await page.evaluate(() => window.pwned)), 'the alert shows, its markup as text');

  /* A wrong token: the API's error is shown. Acknowledging asks for the token. */
  await page.locator('#alerts button.ack').first().click();
  await page.locator('#act-token').fill('not-the-token');
  await page.locator('#act-ok').click();
  await until('the refusal', async () => /the token is not an operator's/.test(await page.locator('#act-error').innerText()));
  const refused = await (await fetch(`${base}/api/plans/${planId}`)).json();
  check(refused.alerts.length === 1 && refused.alerts[0].kind === 'parking' &&
    sql(db, 'SELECT count(*) FROM alerts WHERE acked_ms IS NULL') === '1',
    'a wrong token shows the API\'s error and acknowledges nothing: ' + await page.locator('#act-error').innerText());
  await page.locator('#act-token').fill(TOKEN);
  await page.locator('#act-comment').fill('seen, parking checked');
  await page.locator('#act-ok').click();
  await until('the alert to go', async () => !(await page.locator('#act').evaluate((d) => d.open)) &&
    (await page.locator('#alerts-box').isHidden()), 15000);
  const acked = await (await fetch(`${base}/api/plans/${planId}`)).json();
  check(acked.alerts.length === 0 &&
    sql(db, "SELECT acked_by || '|' || ack_comment FROM alerts WHERE acked_ms IS NOT NULL") === 'alice|seen, parking checked',
    'the alert was acknowledged through the page by alice, with her comment, and is gone');

  /* Approve: the token is not asked again. */
  await step2.locator('button.approve').click();
  check(await page.locator('#act-token-row').isHidden(), 'the token is asked only once');
  await page.locator('#act-comment').fill('ladder looks right');
  await page.locator('#act-ok').click();
  await until('step 2 to succeed', async () => {
    const t = await page.locator('#timeline li[data-step="2"]').innerText();
    return /succeeded/.test(t) && /approved by\s+alice/.test(t);
  }, 30000);
  const approved = (await (await fetch(`${base}/api/plans/${planId}`)).json()).steps[1];
  check(approved.status === 'succeeded' && approved.approved_by === 'alice' &&
    approved.approval_comment === 'ladder looks right', 'step 2 succeeded and names alice as its approver');
  const s2done = await page.locator('#timeline li[data-step="2"]').innerText();
  check(/\d+ objects ok, 0 differing/.test(s2done), 'verify shows objects ok / differing');
  await until('the history to show the approval', async () => {
    const rows = await page.locator('#history tbody tr').allInnerTexts();
    return rows.some((r) => /alice/.test(r) && /step\.approved/.test(r));
  });
  const recorded = await (await fetch(`${base}/api/plans/${planId}/history`)).json();
  check(recorded.events.filter((e) => e.kind === 'step.approved' && e.actor === 'alice').length === 1,
    'the history table shows alice\'s approval, the one the API records');
  check(/verifies/.test(await page.locator('#verify').innerText()), 'the history says the chain verifies');
  check(/succeeded/.test(await page.locator('#plan-title').innerText()), 'the plan succeeded');

  /* The history as JSON. */
  const [dl] = await Promise.all([page.waitForEvent('download'), page.locator('#download').click()]);
  const hist = JSON.parse(fs.readFileSync(await dl.path(), 'utf8'));
  check(hist.verification && hist.verification.verified === true && hist.events.some((e) => e.kind === 'step.approved' && e.actor === 'alice'),
    'the downloaded history is the JSON document');

  fs.mkdirSync(build, { recursive: true });
  await page.screenshot({ path: path.join(build, 'screenshot-plan.png'), fullPage: true });
  await page.locator('#history').screenshot({ path: path.join(build, 'screenshot-history.png') });
  log(`screenshots: ${path.join(build, 'screenshot-plan.png')}, ${path.join(build, 'screenshot-history.png')}`);

  /* A narrow window: nothing wider than the screen. */
  await page.setViewportSize({ width: 360, height: 740 });
  await until('the page laid out at 360 px', async () => (await page.evaluate(() => window.innerWidth)) === 360);
  const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(over <= 1, `a 360 px window does not scroll sideways (${over} px over)`);
  await page.setViewportSize({ width: 1100, height: 900 });

  /* /metrics: names, labels and label values from the bounded sets. */
  await checkMetrics(base, name);

  check(problems.length === 0, 'no script errors or CSP refusals' + (problems.length ? ': ' + problems.join('; ') : ''));
  check(foreign.length === 0, 'nothing requested from anywhere else' + (foreign.length ? ': ' + foreign.join(', ') : ''));

  /* The server stops: the page says so. */
  const srv = server;
  server = null;
  srv.kill('SIGTERM');
  await new Promise((r) => srv.once('exit', r));
  await page.locator('#refresh').click();
  await page.locator('#unreachable').waitFor({ state: 'visible', timeout: 10000 });
  check(/cannot be reached/.test(await page.locator('#unreachable').innerText()), 'the page says the service is unreachable');
}

async function checkMetrics(base, planName) {
  const r = await fetch(base + '/metrics');
  check(r.status === 200 && /^text\/plain; version=0\.0\.4/.test(r.headers.get('content-type')), '/metrics is Prometheus text');
  const text = await r.text();
  const allowed = {
    plan: (v) => v === planName,
    step: (v) => ['measure_horizon', 'declare_ladder', 'verify_ladder', 'canary', 'flip', 'watch', 'remove_old'].includes(v),
    level: (v) => /^(0|[1-9]\d?)$/.test(v),
    path: (v) => ['old', 'ladder', 'parking'].includes(v),
    outcome: (v) => /^[a-z][a-z_]{0,31}$/.test(v),
    le: (v) => v === '+Inf' || /^\d+(\.\d+)?$/.test(v),
  };
  const types = {};
  let series = 0;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let m = /^# TYPE (cutover_[a-z0-9_]+) (gauge|counter|histogram)$/.exec(line);
    if (m) { types[m[1]] = m[2]; continue; }
    if (line.startsWith('#')) continue;
    m = /^(cutover_[a-z0-9_]+)(?:\{(.*)\})? (-?[0-9.e+]+|NaN|\+Inf)$/.exec(line);
    if (!m) fail(`/metrics: not a series line: ${line}`);
    const fam = m[1].replace(/_(bucket|sum|count)$/, (s) => (types[m[1]] ? s : ''));
    if (!types[m[1]] && !types[fam]) fail(`/metrics: ${m[1]} has no TYPE`);
    for (const pair of (m[2] || '').split(',').filter(Boolean)) {
      const lm = /^([a-z]+)="([^"\\]*)"$/.exec(pair);
      if (!lm) fail(`/metrics: bad label ${pair} in ${line}`);
      if (!allowed[lm[1]]) fail(`/metrics: label ${lm[1]} is not a bounded one: ${line}`);
      if (lm[1] === 'le' && types[fam] !== 'histogram') fail(`/metrics: le outside a histogram: ${line}`);
      if (!allowed[lm[1]](lm[2])) fail(`/metrics: ${lm[1]}="${lm[2]}" is not from its bounded set: ${line}`);
    }
    series++;
  }
  check(series > 10 && /cutover_step_state\{plan="[^"]+",step="verify_ladder",outcome="succeeded"\} 1/.test(text),
    `/metrics: ${series} series, every label bounded, verify_ladder succeeded`);
}

async function cleanup() {
  if (browser) await browser.close().catch(() => {});
  if (server) { server.kill('SIGTERM'); await new Promise((r) => { server.once('exit', r); setTimeout(r, 5000); }); }
  const [bin] = process.argv.slice(2);
  if (planFile && fs.existsSync(planFile)) {
    try { execFileSync(bin, ['ladder', 'teardown', planFile], { stdio: 'pipe' }); log('ladder torn down'); } catch (e) {
      console.error('ladder teardown failed: ' + (e.stderr || e.message));
      process.exitCode = 1;
    }
  }
  if (destQueue && process.env.CUTOVER_TEST_MGMT) {
    const auth = Buffer.from(`${process.env.CUTOVER_TEST_USER}:${process.env.CUTOVER_TEST_PASSWORD}`).toString('base64');
    await fetch(`${process.env.CUTOVER_TEST_MGMT}/api/queues/%2F/${encodeURIComponent(destQueue)}`,
      { method: 'DELETE', headers: { Authorization: `Basic ${auth}` } }).catch(() => {});
  }
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
}

/* A signal ends the run through the same cleanup: the server, the browser,
 * the ladder and the destination go whatever stopped it. */
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'])
  process.once(sig, () => { console.error(`FAILED: ${sig}`); process.exitCode = 1; cleanup().finally(() => process.exit(1)); });

main().then(() => { log('passed'); }, (e) => { console.error('FAILED: ' + e.message); process.exitCode = 1; })
  .then(cleanup).then(() => log(`done in ${((Date.now() - t0) / 1000).toFixed(1)} s`));
