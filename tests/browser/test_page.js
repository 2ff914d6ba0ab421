#!/usr/bin/env node
/* The status page in a real browser: Debian's headless Chromium,
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
 * Then a whole plan: three old queues, measure, declare, verify,
 * canary, a gated flip through a real HTTP flag service this test runs, the
 * watch, a gated remove_old. At each stage the top of the page, at 1280×800
 * and at 360 px wide, is measured (bounding boxes within the first screen):
 * the state in words, the progress bar, the action with its button; the
 * flip's gate says which flag service, feature and value; remove_old's
 * gate lists what it would delete and leave, and its confirm states the
 * count; the charts have time and value ticks and hover values; one time
 * zone (UTC, labelled); the history grouped by step with the removals
 * folded, filtered, in UTC milliseconds, with the plan's YAML, a refused
 * request recorded, and its JSON and CSV downloads verified offline. A
 * finished plan's name is refused until archived on the page.
 * What holds a plan (the API's holds) is said at the top and in the list,
 * whose badge says "waiting for approval" or "alert open", not "running",
 * and which puts the plan that needs a person first: the gate by step and
 * kind, two alerts holding the watch by number and kind. A command given
 * on the page is followed to done (a refusal, worded as the API words it,
 * given through the browser). The alerts' help lines show when the API
 * gives them and nothing breaks when it does not; the watch's levels are a
 * strip (delay, state, depth); a finished plan opens with what it did; the
 * history reads as words with the JSON behind a toggle.
 * Screenshots: BUILD/screenshots/NN-stage-WIDTH.png.
 *
 * usage: node test_page.js CUTOVER_BINARY BUILD_DIR
 * Needs CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER,
 * CUTOVER_TEST_PASSWORD and /usr/bin/chromium: without them it fails. */
'use strict';
const { spawn, execFileSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');

const CHROMIUM = process.env.CUTOVER_CHROMIUM || '/usr/bin/chromium';
const TOKEN = crypto.randomBytes(16).toString('hex');
const t0 = Date.now();
let server = null, browser = null, tmp = null, planFile = null, destQueue = null;
let flagServer = null, full = null, lastPage = null;   /* the whole plan's flag service and names */
const FLAG_SECRET = 'Bearer s3cr3t-' + crypto.randomBytes(6).toString('hex');

const { log, fail, check, sleep, until, freePort } = require('./lib.js');
function sql(db, query) { return execFileSync('sqlite3', [db, query], { encoding: 'utf8' }).trim(); }

async function main() {
  const [bin, build] = process.argv.slice(2);
  process.env.CUTOVER_TEST_FLAG_AUTH = FLAG_SECRET;   /* the serve below inherits it */
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
  /* Two cores shared with the rest of the suite can take longer than
   * Playwright's 30 s default to render a full-page screenshot. */
  browser.setDefaultTimeout(90000);
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
  check(rowText.includes(name) && /waiting for approval/.test(rowText) && !/\brunning\b/.test(rowText),
    'the plan list badge says the plan waits for approval, not "running": ' + rowText.replace(/\s+/g, ' '));
  check(/approve step 2 \(verify_ladder\)/.test(await row.locator('td.needs').innerText()),
    'the plan list says what it needs: ' + await row.locator('td.needs').innerText());
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
  /* A large result (step 1's, rewritten as one with a list as long as a
   * measure's at 10,000 queues): the plan carries it without the list,
   * named with its count; the page still says what it said, and the
   * unfolded result is the whole one, read from its own route. */
  const names = Array.from({ length: 3000 }, (_, i) => `${id}.delay.${i}ms`);
  const bigResult = JSON.stringify({ exchanges: 7, queues: 7, bindings: 7, names });
  execFileSync('sqlite3', [db], { input: `UPDATE steps SET result_json = '${bigResult}' WHERE plan_id = ${planId} AND idx = 0;\n` });
  const brief = await until('the plan to carry the result without its list', async () => {
    const st = (await (await fetch(`${base}/api/plans/${planId}`)).json()).steps[0];
    return st.result_elided ? st : null;
  });
  check(brief.result_elided.length === 1 && brief.result_elided[0].pointer === '/names' &&
    brief.result_elided[0].count === 3000 && brief.result.names.length === 0 && brief.result.exchanges === 7,
    'the plan names the list it left out, with its count: ' + JSON.stringify(brief.result_elided));
  const whole = await (await fetch(base + brief.result_url)).json();
  check(whole.names.length === 3000 && whole.names[2999] === names[2999], 'its result_url serves the whole result');
  await page.locator('#refresh').click();
  await until('the page to show the whole result', async () =>
    (await page.locator('#timeline li[data-step="1"] details[data-result="1"] pre').innerText()).includes(names[2999]));
  check(/Declared 7 exchanges, 7 queues, 7 bindings/.test(await page.locator('#timeline li[data-step="1"]').innerText()),
    'step 1 still shows its progress from the brief');
  const alertText = await page.locator('#alerts li').first().innerText();
  check(alertText.includes('<img src=x id=pwned') && (await page.locator('#pwned').count()) === 0 &&
    !(await page.evaluate(() => window.pwned)), 'the alert shows, its markup as text');
  check(/1 open alert: parking/.test(await page.locator('#glance-alerts').innerText()),
    'the top of the page counts the open alert by kind: ' + await page.locator('#glance-alerts').innerText());
  /* What holds the plan, from the API's holds: the gate (step, kind) and
   * the alert (number, kind), each with what to do; the badge says so. */
  const alertId = +sql(db, `SELECT id FROM alerts WHERE plan_id = ${planId} AND acked_ms IS NULL`);
  await until('the holds at the top', async () => (await page.locator('#glance-holds li').count()) === 2);
  const holds = await page.locator('#glance-holds li').allInnerTexts();
  check(/waiting for your approval of step 2, verify_ladder/.test(await page.locator('#state-words').innerText()) &&
    /^To do: approve step 2 \(verify_ladder\)$/.test(holds[0].trim()) &&
    new RegExp(`alert ${alertId} \\(parking\\) is open`).test(holds[1]) &&
    new RegExp(`acknowledge alert ${alertId} \\(parking\\)`).test(holds[1]),
    'the top of the page says what holds the plan: ' + holds.map((h) => h.replace(/\s+/g, ' ')).join(' | '));
  check(/waiting for approval/.test(await page.locator('#plan-title').innerText()) &&
    (await page.locator('#glance-none').count()) === 0, 'the plan\'s badge says it waits for approval, and nothing says "Nothing waits for you"');
  /* The alert's help lines, from the alert table through the API. */
  check(/What it means: messages that are not cutover's own wait in the plan's parking queue/.test(
    await page.locator('#alerts li .alert-help').first().innerText()) &&
    !/undefined/.test(await page.locator('#alerts').innerText()),
    'the alert says what it means, from the alert table');

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
  /* The page follows the command to its end: done, with the engine's outcome. */
  const ackCmd = page.locator('#commands li').first();
  await until('the ack to be done', async () => (await ackCmd.getAttribute('data-state')) === 'done', 15000);
  const ackText = await ackCmd.innerText();
  check(new RegExp(`Acknowledge alert ${alertId} of plan #${planId}`).test(ackText) && /done at \d{4}-.+ UTC/.test(ackText) &&
    !/GET \/api/.test(await page.locator('body').innerText()),
    'the page says the acknowledgement was done, not where to look: ' + ackText.replace(/\s+/g, ' '));
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
  const apCmd = page.locator('#commands li', { hasText: `Approve step 2 of plan #${planId}` });
  await until('the approval to be done', async () => (await apCmd.getAttribute('data-state')) === 'done', 15000);
  check(/^done/i.test(await apCmd.innerText()) && (await page.locator('#commands li').count()) === 2,
    'the approval is followed to done: ' + (await apCmd.innerText()).replace(/\s+/g, ' '));
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
  /* The plan's own status is written after its last step's: the page
   * shows it at its next refresh. */
  await until('the plan to succeed', async () => /succeeded/.test(await page.locator('#plan-title').innerText()));
  check(true, 'the plan succeeded');
  await until('the finished summary', async () => (await page.locator('#finished-summary').count()) === 1);
  const fin1 = await page.locator('#finished-summary').innerText();
  check(/took/.test(fin1) && /2 of 2 succeeded/.test(fin1) && /nothing moved/.test(fin1) && /no old queue removed/.test(fin1),
    'a finished plan opens with what it did: ' + fin1.replace(/\s+/g, ' '));
  /* The history in words, its JSON behind a toggle. */
  const apRow = page.locator('#history tr[data-kind="step.approved"]');
  check(/step approved/.test(await apRow.innerText()) && /comment ladder looks right/.test(await apRow.innerText()) && !/"comment"/.test(await apRow.innerText()),
    'the history says the approval in words: ' + (await apRow.innerText()).replace(/\s+/g, ' '));
  await apRow.locator('details.ev-json summary').click();
  check(/"comment": "ladder looks right"/.test(await apRow.locator('details.ev-json pre').innerText()), 'its JSON is one click away');
  await apRow.locator('details.ev-json summary').click();

  /* The history as JSON: the server's export, which verifies offline. */
  const [dl] = await Promise.all([page.waitForEvent('download'), page.locator('#download').click()]);
  const hist = JSON.parse(fs.readFileSync(await dl.path(), 'utf8'));
  check(hist.format === 'cutover.history' && hist.events.some((e) => e.kind === 'step.approved' && e.actor === 'alice'),
    'the downloaded history is the export, with alice\'s approval');
  execFileSync(bin, ['history', '--verify', await dl.path()], { encoding: 'utf8' });

  fs.mkdirSync(path.join(build, 'screenshots'), { recursive: true });
  await page.screenshot({ path: path.join(build, 'screenshot-plan.png'), fullPage: true });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(build, 'screenshots', '00-commands-finished-1100.png') });
  log(`screenshot ${path.join(build, 'screenshots', '00-commands-finished-1100.png')}`);
  await page.locator('#history').screenshot({ path: path.join(build, 'screenshot-history.png') });
  log(`screenshots: ${path.join(build, 'screenshot-plan.png')}, ${path.join(build, 'screenshot-history.png')}`);

  /* A narrow window: nothing wider than the screen. */
  await page.setViewportSize({ width: 360, height: 740 });
  await until('the page laid out at 360 px', async () => (await page.evaluate(() => window.innerWidth)) === 360);
  const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  const wide = over <= 1 ? [] : await page.evaluate(() => Array.from(document.querySelectorAll('body *'))
    .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.scroll'))
    .slice(0, 5).map((e) => e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right)));
  check(over <= 1, `a 360 px window does not scroll sideways (${over} px over${wide.length ? ': ' + wide.join(', ') : ''})`);
  await page.setViewportSize({ width: 1100, height: 900 });

  /* /metrics: names, labels and label values from the bounded sets. */
  await checkMetrics(base, name);

  check(problems.length === 0, 'no script errors or CSP refusals' + (problems.length ? ': ' + problems.join('; ') : ''));
  check(foreign.length === 0, 'nothing requested from anywhere else' + (foreign.length ? ': ' + foreign.join(', ') : ''));

  await wholePlan(page, base, db, bin, build, problems);

  /* The server stops: the page says so. */
  const srv = server;
  server = null;
  srv.kill('SIGTERM');
  await new Promise((r) => srv.once('exit', r));
  await page.locator('#refresh').click();
  await page.locator('#unreachable').waitFor({ state: 'visible', timeout: 10000 });
  check(/cannot be reached/.test(await page.locator('#unreachable').innerText()), 'the page says the service is unreachable');
}

/* The management API of the test broker: METHOD PATH [BODY]. */
async function mgmt(method, p, body) {
  const auth = Buffer.from(`${process.env.CUTOVER_TEST_USER}:${process.env.CUTOVER_TEST_PASSWORD}`).toString('base64');
  const r = await fetch(process.env.CUTOVER_TEST_MGMT + p, { method, headers: { Authorization: `Basic ${auth}`,
    'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!r.ok && !(method === 'DELETE' && r.status === 404)) fail(`management ${method} ${p}: ${r.status} ${await r.text()}`);
  return r;
}

/* A feature flag service over HTTP (the plan's `kind: http`): GET answers
 * {"enabled": bool}, PUT sets it; both need the plan's Authorization. */
function startFlagServer() {
  const http = require('http');
  const state = { enabled: false, calls: [] };
  return new Promise((res) => {
    const srv = http.createServer((req, rsp) => {
      let body = '';
      req.on('data', (d) => { body += d; });
      req.on('end', () => {
        state.calls.push(req.method);
        if (req.headers.authorization !== FLAG_SECRET) { rsp.writeHead(401); rsp.end('{}'); return; }
        if (req.method === 'PUT') { try { state.enabled = JSON.parse(body).enabled === true; } catch (e) { rsp.writeHead(400); rsp.end(); return; } }
        rsp.writeHead(200, { 'Content-Type': 'application/json' });
        rsp.end(JSON.stringify({ enabled: state.enabled }));
      });
    });
    srv.listen(0, '127.0.0.1', () => res({ srv, state, port: srv.address().port }));
  });
}

/* The element's box lies within the first screen (the viewport). */
async function inFirstScreen(page, sel, what) {
  const vp = page.viewportSize();
  const b = await page.locator(sel).first().boundingBox();
  check(b != null && b.y >= 0 && b.y + b.height <= vp.height && b.x >= 0 && b.x + b.width <= vp.width + 1,
    `${what} is within the first screen at ${vp.width}×${vp.height} (${b ? `y ${Math.round(b.y)}–${Math.round(b.y + b.height)}` : 'not shown'})`);
}

/* At 1280×800 and at 360×740: the state, the progress bar and the action
 * (when WANT_ACTION) in the first screen; a screenshot of each. */
async function atAGlance(page, build, stage, wantAction) {
  for (const [w, h] of [[1280, 800], [360, 740]]) {
    await page.setViewportSize({ width: w, height: h });
    await page.evaluate(() => window.scrollTo(0, 0));
    await inFirstScreen(page, '#state-words', `${stage}: the state in words`);
    await inFirstScreen(page, '#steps-progress .bar', `${stage}: the steps' progress bar`);
    if (wantAction) await inFirstScreen(page, wantAction, `${stage}: the action it waits for`);
    const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(over <= 1, `${stage}: ${w} px wide does not scroll sideways (${over} px over)`);
    const file = path.join(build, 'screenshots', `${stage}-${w}.png`);
    await page.screenshot({ path: file });
    log(`screenshot ${file}`);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}

async function planDoc(base, id) { return (await fetch(`${base}/api/plans/${id}`)).json(); }

/* The whole plan, stage by stage: the top of the page, the gates (one
 * approved ahead), the watch's charts, and the plan's name refused until
 * archived. */
async function wholePlan(page, base, db, bin, build, problems) {
  fs.mkdirSync(path.join(build, 'screenshots'), { recursive: true });
  fs.rmSync(path.join(build, 'screenshots', 'failure.png'), { force: true });   /* an earlier run's */
  lastPage = page;
  flagServer = await startFlagServer();
  const id = `itestbrowserw${process.pid}`;
  const name = `${id}-whole`;
  full = { id, name, old: [`${id}.old.20s`, `${id}.old.10s`, `${id}.old.5s`], dest: `${id}.dest` };
  const ttls = [20000, 10000, 5000];
  /* Old delay queues as producers left them: each has taken a delayed
   * message (so the broker counts its publishes), which expires. */
  for (let i = 0; i < 3; i++) {
    await mgmt('PUT', `/api/queues/%2F/${encodeURIComponent(full.old[i])}`, { durable: true, arguments: { 'x-message-ttl': ttls[i] } });
    await mgmt('POST', '/api/exchanges/%2F/amq.default/publish', { properties: {}, routing_key: full.old[i], payload: 'old', payload_encoding: 'string' });
  }
  const flagUrl = `http://127.0.0.1:${flagServer.port}/flags/${id}`;
  const yaml = [
    `name: ${name}`, 'broker:', `  amqp: ${process.env.CUTOVER_TEST_AMQP}`,
    `  management: ${process.env.CUTOVER_TEST_MGMT}`, `  username: ${process.env.CUTOVER_TEST_USER}`,
    '  password: env:CUTOVER_TEST_PASSWORD', 'old:', `  queues: { names: [${full.old.join(', ')}] }`, 'ladder:',
    `  prefix: ${id}`, '  unit: 100ms', '  levels: 8', `  destinations: [${full.dest}]`, '  create_destinations: true',
    '  queue_type: classic', 'canary:', '  delays: [100ms, 300ms]', '  max_lateness: 2s', 'flag:', '  kind: http',
    `  on: { method: PUT, url: '${flagUrl}', body: '{"enabled":true}' }`,
    `  off: { method: PUT, url: '${flagUrl}', body: '{"enabled":false}' }`,
    `  read: { url: '${flagUrl}', pointer: /enabled, on: true, off: false }`,
    '  headers: { Authorization: env:CUTOVER_TEST_FLAG_AUTH }',
    'watch:', '  interval: 1s', '  allowance: 2s', '  probe_every: 1s',
    'steps:', '  - measure_horizon', '  - declare_ladder', '  - verify_ladder', '  - canary',
    '  - { step: flip, gate: true }', '  - watch', '  - { step: remove_old, gate: true }', ''].join('\n');
  full.file = path.join(tmp, 'whole.yaml');
  fs.writeFileSync(full.file, yaml);
  const sub = await fetch(base + '/api/plans', { method: 'POST', body: yaml,
    headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/yaml' } });
  check(sub.status === 201, `the whole plan submitted (${sub.status})`);
  const pid = (await sub.json()).id;
  full.planId = pid;
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${base}/#/plans/${pid}`);

  /* 1. The flip's gate. */
  await until('the flip to wait', async () => {
    const p = await planDoc(base, pid);
    const bad = p.steps.find((st) => st.status === 'failed');
    if (bad) fail(`step ${bad.n} (${bad.kind}) failed: ${bad.error}`);
    return p.steps[4].status === 'waiting_approval';
  }, 120000);
  await until('the page to show the flip waiting', async () =>
    /waiting for your approval of step 5, flip/.test(await page.locator('#state-words').innerText()), 15000);
  check(/Approve step 5 \(flip\)/.test(await page.locator('#glance-action button.approve').innerText()),
    'the glance offers "Approve step 5 (flip)"');
  const steps = await page.locator('#steps-progress .bar .seg').count();
  const doneSegs = await page.locator('#steps-progress .bar .seg.t-succeeded').count();
  check(steps === 7 && doneSegs === 4 && /4 of 7 steps done/.test(await page.locator('#steps-progress').innerText()),
    `the progress bar has 7 steps, 4 done (${doneSegs}/${steps})`);
  const will = await page.locator('#glance [data-will-do="flip"]').innerText();
  check(will.includes(`HTTP PUT to 127.0.0.1:${flagServer.port}`) && will.includes('{"enabled":true}') &&
    will.includes('/enabled') && !will.includes('/flags/'),
    'the flip\'s gate says which flag service, how, and the value it will read back: ' + will.replace(/\s+/g, ' '));
  const html = await page.content();
  check(!html.includes(FLAG_SECRET) && !html.includes('s3cr3t'), 'the flag\'s secret is nowhere on the page');
  check(/UTC/.test(await page.locator('#updated').innerText()) && /all times UTC/.test(await page.locator('.crumbs').innerText()),
    'the header clock and the page say UTC: ' + await page.locator('#updated').innerText());
  check(await page.locator('#timeline li[data-step="7"] button.approve-ahead').count() === 1,
    'remove_old, not reached yet, can be approved ahead');
  await atAGlance(page, build, '01-flip-gate', '#glance-action button.approve');
  /* The list: the plan waiting for approval first, saying which gate. */
  await page.goto(`${base}/#/`);
  await until('the list', async () => (await page.locator('#plans tbody tr').count()) >= 2);
  const first = page.locator('#plans tbody tr').first();
  check(await first.getAttribute('data-plan') === String(pid) && /waiting for approval/.test(await first.innerText()) &&
    /approve step 5 \(flip\)/.test(await first.locator('td.needs').innerText()),
    'the plan list puts the plan that waits for approval first, naming the gate: ' + (await first.innerText()).replace(/\s+/g, ' '));
  await page.screenshot({ path: path.join(build, 'screenshots', '01-list-gate-1280.png') });
  log(`screenshot ${path.join(build, 'screenshots', '01-list-gate-1280.png')}`);
  await page.goto(`${base}/#/plans/${pid}`);
  await until('the plan again', async () => /waiting for your approval of step 5/.test(await page.locator('#state-words').innerText()), 15000);

  /* Approve the flip on the page: the confirm says what it will do. */
  await page.locator('#glance-action button.approve').click();
  const confirmText = await page.locator('#act-text').innerText();
  check(/turns|calls the flag service/.test(confirmText) && confirmText.includes(`127.0.0.1:${flagServer.port}`) &&
    /Flip the flag on/.test(await page.locator('#act-ok').innerText()), 'the flip\'s confirm says what it will do: ' + confirmText);
  await page.locator('#act-ok').click();

  /* 2. The watch: time left of its horizon, the deadline, the charts. */
  await until('the watch to run', async () => /watching: .+ left of /.test(await page.locator('#state-words').innerText()), 60000);
  check(flagServer.state.enabled === true, 'the flag service was switched on by the flip');
  /* Two alerts, as the watch raises them: they hold the watch, and the top
   * of the page and the list say which, by number and kind. */
  const t = Date.now();
  sql(db, `INSERT INTO alerts (plan_id, kind, message, raised_ms, last_ms, count) VALUES ` +
    `(${pid}, 'parking', '2 messages in the parking queue', ${t}, ${t}, 1), ` +
    `(${pid}, 'probe_late', 'a probe of level 3 came 4.1 s late', ${t}, ${t}, 1);`);
  const [al1, al2] = sql(db, `SELECT id FROM alerts WHERE plan_id = ${pid} AND acked_ms IS NULL ORDER BY id`).split('\n').map(Number);
  await until('the alerts among the holds', async () => (await page.locator('#glance-holds li[data-hold="alert"]').count()) === 2, 15000);
  const ah = await page.locator('#glance-holds li[data-hold="alert"]').allInnerTexts();
  check(new RegExp(`alert ${al1} \\(parking\\) is open, and the watch does not end while it is`).test(ah[0]) &&
    new RegExp(`acknowledge alert ${al2} \\(probe_late\\)`).test(ah[1]) && (await page.locator('#glance-none').count()) === 0,
    'the watch held by two alerts: the top says which, not "Nothing waits for you": ' + ah.map((x) => x.replace(/\s+/g, ' ')).join(' | '));
  check(/alert open/.test(await page.locator('#plan-title').innerText()), 'the badge says an alert is open, not "running"');
  /* The alert's help lines, as the API gives them from the alert table:
   * parking's cause is followed (the watch finds the parking queue empty:
   * gone); probe_late is no kind of the table and has none. */
  await page.locator('#refresh').click();
  await until('the help lines', async () => (await page.locator(`#alerts li[data-alert="${al1}"] .alert-help div`).count()) === 4, 15000);
  const help = await page.locator(`#alerts li[data-alert="${al1}"] .alert-help`).innerText();
  check(/What it means: messages that are not cutover's own/.test(help) && /How to check: the parking queue the message names/.test(help) &&
    /How to clear: move each of them/.test(help) && /The cause is gone/.test(help) &&
    (await page.locator(`#alerts li[data-alert="${al2}"] .alert-help`).count()) === 0,
    'each alert shows what it means, how to check and clear it, and whether its cause is there: ' + help.replace(/\s+/g, ' '));
  await page.locator('#alerts-box').screenshot({ path: path.join(build, 'screenshots', '02-alerts-help-1280.png') });
  log(`screenshot ${path.join(build, 'screenshots', '02-alerts-help-1280.png')}`);
  const ws = await page.locator('#state-words').innerText();
  const wb = await page.locator('#watch-progress').innerText();
  check(/deadline \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/.test(wb), `the watch bar shows time left and the deadline in UTC: "${ws}" / "${wb}"`);
  await until('charts with samples', async () => (await page.locator('[data-chart="old-depth"] polyline').count()) === 1 &&
    (await page.locator('[data-chart="probe-lateness"] circle').count()) > 0, 30000);
  for (const c of ['old-depth', 'old-nonempty', 'probe-lateness', 'parking-depth']) {
    const xt = await page.locator(`[data-chart="${c}"] .xtick`).count();
    const yt = await page.locator(`[data-chart="${c}"] .ytick`).count();
    const yl = await page.locator(`[data-chart="${c}"] .ylabel`).textContent();
    check(xt >= 2 && yt >= 2 && /time \(UTC\)/.test(await page.locator(`[data-chart="${c}"] .xlabel`).textContent()),
      `chart ${c}: ${xt} time ticks, ${yt} value ticks, axes "time (UTC)" and "${yl}"`);
  }
  check(await page.locator('[data-chart="probe-lateness"] .bound').count() === 1 &&
    /bound 2\.0 s/.test(await page.locator('[data-chart="probe-lateness"]').innerText() + await page.locator('[data-chart="probe-lateness"] svg').textContent()),
    'probe lateness is drawn against its bound (2 s)');
  check(await page.locator('[data-chart^="level-"]').count() === 8, 'the ladder\'s depth is 8 small multiples, one per level');
  const svgBox = await page.locator('[data-chart="old-depth"] svg').boundingBox();
  check(svgBox.height >= 200, `charts are sized to read (${Math.round(svgBox.width)}×${Math.round(svgBox.height)} px)`);
  await page.locator('[data-chart="old-depth"] svg').scrollIntoViewIfNeeded();
  const sb = await page.locator('[data-chart="old-depth"] svg').boundingBox();
  await page.mouse.move(sb.x + sb.width * 0.7, sb.y + sb.height * 0.5);
  await until('a hover value', async () => /\d\d:\d\d:\d\d.*: old depth \d+/.test(await page.locator('[data-chart="old-depth"] .tip').innerText()), 5000);
  log('hover: ' + await page.locator('[data-chart="old-depth"] .tip').innerText());
  await page.evaluate(() => window.scrollTo(0, 0));
  /* The ladder at a glance: a box per level with its delay and state. */
  await until('the ladder strip', async () => (await page.locator('#glance-ladder .lv').count()) === 8, 15000);
  const lvs = await page.locator('#glance-ladder .lv').evaluateAll((es) => es.map((e) => [e.dataset.status, e.innerText.replace(/\s+/g, ' ')]));
  check(lvs.every((l) => ['moving', 'late', 'probing', 'unproven', 'not_probed'].includes(l[0])) &&
    /^100 ms (moving|late|probing|not yet proven) /.test(lvs[0][1]) && /^13 s /.test(lvs[7][1]) &&
    /Ladder, 8 levels: /.test(await page.locator('#glance-ladder .strip-title').innerText()),
    'the top of the watch shows each level\'s delay and state: ' + lvs.map((l) => l[1]).join(' | '));
  await until('a level proven moving', async () => (await page.locator('#glance-ladder .lv[data-status="moving"]').count()) > 0, 20000);
  await atAGlance(page, build, '02-watch', '#glance-holds');
  await page.locator('#glance-ladder').screenshot({ path: path.join(build, 'screenshots', '02-ladder-strip-1280.png') });
  log(`screenshot ${path.join(build, 'screenshots', '02-ladder-strip-1280.png')}`);
  /* The list: the plan with alerts open, saying which. */
  await page.goto(`${base}/#/`);
  const wrow = page.locator(`#plans tbody tr[data-plan="${pid}"]`);
  await until('the list row', async () => (await wrow.count()) === 1 && /alert open/.test(await wrow.innerText()), 15000);
  check(new RegExp(`acknowledge alert ${al1} \\(parking\\).*acknowledge alert ${al2} \\(probe_late\\)`).test(await wrow.locator('td.needs').innerText()),
    'the list names the alerts that hold the plan: ' + await wrow.locator('td.needs').innerText());
  await page.goto(`${base}/#/plans/${pid}`);
  /* Acknowledged on the page: the first followed to done; the second's
   * answer is the engine's refusal as the API words it, given through the
   * browser (the engine acts within 200 ms here: a real refusal cannot be
   * timed from outside), to show how the page says it. */
  await until('the ack buttons', async () => (await page.locator('#glance-holds button.ack').count()) === 2, 15000);
  await page.locator(`#glance-holds li[data-alert="${al1}"] button.ack`).click();
  await page.locator('#act-ok').click();
  const ack1 = page.locator('#commands li', { hasText: `Acknowledge alert ${al1} of plan #${pid}` });
  await until('the first ack done', async () => (await ack1.getAttribute('data-state')) === 'done', 15000);
  await page.route('**/api/plans/*/commands/*', async (route) => {
    const r = await route.fetch();
    const j = await r.json();
    if (j.alert === al2) Object.assign(j, { state: 'refused', outcome: `refused: no open alert ${al2}`, handled_ms: Date.now() });
    await route.fulfill({ response: r, json: j });
  });
  await until('the second ack button', async () => (await page.locator(`#glance-holds li[data-alert="${al2}"] button.ack`).count()) === 1, 15000);
  await page.locator(`#glance-holds li[data-alert="${al2}"] button.ack`).click();
  await page.locator('#act-ok').click();
  const ack2 = page.locator('#commands li', { hasText: `Acknowledge alert ${al2} of plan #${pid}` });
  await until('the refusal on the page', async () => (await ack2.getAttribute('data-state')) === 'refused', 15000);
  const refusedText = await ack2.innerText();
  check(new RegExp(`Acknowledge alert ${al2} .*refused at .*: no open alert ${al2}`).test(refusedText.replace(/\s+/g, ' ')),
    'a refused command says so, with the why: ' + refusedText.replace(/\s+/g, ' '));
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.locator('#commands').screenshot({ path: path.join(build, 'screenshots', '02-commands-1280.png') });
  log(`screenshot ${path.join(build, 'screenshots', '02-commands-1280.png')}`);
  await page.unroute('**/api/plans/*/commands/*');
  await page.locator('#commands li[data-state="refused"] button.dismiss').click();
  check(await page.locator('#commands li[data-state="refused"]').count() === 0, 'a refusal stays until dismissed');
  await until('both alerts acknowledged', async () => sql(db, `SELECT count(*) FROM alerts WHERE plan_id = ${pid} AND acked_ms IS NULL`) === '0', 15000);
  await until('the holds to go', async () => (await page.locator('#glance-holds').count()) === 0, 15000);
  await page.locator('#charts-box').screenshot({ path: path.join(build, 'screenshots', '03-charts-1280.png') });
  log(`screenshot ${path.join(build, 'screenshots', '03-charts-1280.png')}`);
  /* The README's picture (docs/status-page.png): the top of the page and
   * the watch's charts, mid-watch. */
  await page.screenshot({ path: path.join(build, 'screenshots', 'status-page.png'), fullPage: true,
    clip: { x: 0, y: 0, width: 1280, height: 1500 } });

  /* 3. remove_old's gate: the engine's preview, then a producer still
   * publishing into one old queue, which the preview then leaves. */
  await until('remove_old to wait', async () => (await planDoc(base, pid)).steps[6].status === 'waiting_approval', 90000);
  const w = (await planDoc(base, pid)).steps[5];
  await until('the finished watch on the page', async () => /watch done: .+ ended \d{4}-/.test(await page.locator('#watch-progress').innerText()), 15000);
  const watchText = await page.locator('#timeline li[data-step="6"]').innerText();
  check(!/0 ms left/.test(watchText) && !/left to the deadline/.test(watchText) && /Watched /.test(watchText),
    `a finished watch does not say "0 ms left": ${watchText.split('\n').find((l) => /Watched/.test(l))}`);
  check(w.status === 'succeeded', 'the watch succeeded');
  await until('the preview to list all three', async () => (await page.locator('#glance [data-list="delete"] li').count()) === 3, 30000);
  await mgmt('POST', '/api/exchanges/%2F/amq.default/publish', { properties: {}, routing_key: full.old[2], payload: 'late', payload_encoding: 'string' });
  await until('the preview to leave the queue that took a message', async () => {
    const leave = await page.locator('#glance [data-list="leave"]').innerText();
    return leave.includes(full.old[2]) && (await page.locator('#glance [data-list="delete"] li').count()) === 2;
  }, 60000);
  const del = await page.locator('#glance [data-list="delete"] li').allInnerTexts();
  const leave = await page.locator('#glance [data-list="leave"] li').allInnerTexts();
  check(del.sort().join(',') === [full.old[0], full.old[1]].sort().join(','), 'the preview would delete exactly: ' + del.join(', '));
  check(leave.length === 1 && leave[0].startsWith(full.old[2] + ': ') && /message|publish/.test(leave[0]),
    'and would leave, saying why: ' + leave[0]);
  check(/waiting for your approval of step 7, remove_old/.test(await page.locator('#state-words').innerText()), 'the state says step 7 waits');
  await atAGlance(page, build, '06-remove-gate', '#glance-action button.approve');
  await page.locator('#glance-action button.approve').click();
  const okText = await page.locator('#act-ok').innerText();
  check(/Delete 2 queues/.test(okText) && /would delete 2 old queues and leave 1/.test(await page.locator('#act-text').innerText()),
    `remove_old's confirm states the count: "${okText}"`);
  await page.screenshot({ path: path.join(build, 'screenshots', '07-remove-confirm-1280.png') });
  await page.locator('#act-ok').click();

  /* 4. The queue that took a message waits its TTL from then (time
   * resolves that); published into again while it waits, the producer is
   * still there, which a person must see to: left, and the step fails,
   * saying so at the top. */
  await until('remove_old to wait for the queue that took a message', async () => {
    const st = (await planDoc(base, pid)).steps[6];
    return st.status === 'running' && st.result && (st.result.entries || []).some((e) => e.name === full.old[2] && e.outcome === 'waiting');
  }, 60000);
  await mgmt('POST', '/api/exchanges/%2F/amq.default/publish', { properties: {}, routing_key: full.old[2], payload: 'later', payload_encoding: 'string' });
  await until('remove_old to fail', async () => /failed at remove_old/.test(await page.locator('#state-words').innerText()), 60000);
  check(/left/.test(await page.locator('#state-words').innerText()) && !/undefined/.test(await page.locator('#plan-view').innerText()),
    'the failure is in words, naming what was left: ' + (await page.locator('#state-words').innerText()).slice(0, 160));
  await atAGlance(page, build, '08-failed', '#glance-action button.retry');
  await auditHistory(page, base, bin, build, pid, yaml);
  const remaining = [];
  for (const q of full.old) if ((await mgmt('GET', `/api/queues/%2F/${encodeURIComponent(q)}`).catch(() => ({ status: 404 }))).status === 200) remaining.push(q);
  check(remaining.join(',') === full.old[2], 'the broker holds only the old queue that took a message: ' + remaining.join(','));

  /* 5. Names: abort, refuse the name, archive on the page, submit again. */
  const ab = await fetch(`${base}/api/plans/${pid}/abort`, { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}` } });
  check(ab.status === 202, 'abort recorded');
  await until('the plan to be aborted', async () => (await planDoc(base, pid)).status === 'aborted', 30000);
  const again = await fetch(base + '/api/plans', { method: 'POST', body: yaml, headers: { Authorization: `Bearer ${TOKEN}` } });
  const againBody = await again.json();
  check(again.status === 409 && /archive it first/.test(againBody.error), `the finished plan's name is refused: ${again.status} ${againBody.error}`);
  await until('the archive button', async () => (await page.locator('#glance-action button.archive').count()) === 1, 15000);
  await page.locator('#glance-action button.archive').click();
  await page.locator('#act-ok').click();
  await until('archived', async () => /archived at/.test(await page.locator('#state-words').innerText()), 15000);
  check((await planDoc(base, pid)).archived_ms > 0, 'the plan is archived, by the page');
  await atAGlance(page, build, '09-archived', '#finished-summary .strip-title');
  const fin = await page.locator('#finished-summary').innerText();
  check(/took/.test(fin) && /aborted at step 7, remove_old/.test(fin) && /2 old queues removed, 1 left/.test(fin) &&
    /nothing moved/.test(fin) && /lateness\s+.*at most .+ — (within|OVER) its bound of 2\.0 s/.test(fin),
    'the finished plan opens with what it did: ' + fin.replace(/\s+/g, ' '));
  const third = await fetch(base + '/api/plans', { method: 'POST', body: yaml, headers: { Authorization: `Bearer ${TOKEN}` } });
  check(third.status === 201, `once archived, the name is free (${third.status})`);
  const pid2 = (await third.json()).id;
  full.planId2 = pid2;
  const st = execFileSync(bin, ['status', '--db', db, name], { encoding: 'utf8' });
  check(st.includes(`${pid2}`) && !/aborted/.test(st.split('\n')[0]), 'status NAME shows the new plan: ' + st.split('\n')[0]);
  const metrics = await (await fetch(base + '/metrics')).text();
  const states = metrics.split('\n').filter((l) => l.startsWith(`cutover_plan_state{plan="${name}"`) && / 1$/.test(l));
  check(states.length === 1 && /state="running"/.test(states[0]), '/metrics reports one plan of that name, the new one: ' + states[0]);
  const ab2 = await fetch(`${base}/api/plans/${pid2}/abort`, { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}` } });
  check(ab2.status === 202 || ab2.status === 409, 'the new plan aborted');
  await until('the new plan to stop', async () => (await planDoc(base, pid2)).status !== 'running', 60000);
  /* A plan whose measure fails says why at the top, never "undefined". */
  const badYaml = yaml.replace(`name: ${name}`, `name: ${name}-bad`)
    .replace(/queues: \{ names: \[[^\]]*\] \}/, `queues: { names: [${id}.old.none] }`);
  /* ?new=1: it shares the whole plan's ladder and flag, which read as a
   * run of it whose database was lost; its own failure is the point. */
  const bad = await fetch(base + '/api/plans?new=1', { method: 'POST', body: badYaml, headers: { Authorization: `Bearer ${TOKEN}` } });
  check(bad.status === 201, `a plan naming an old queue that does not exist submitted (${bad.status})`);
  const badId = (await bad.json()).id;
  full.badId = badId;
  await until('its measure to fail', async () => (await planDoc(base, badId)).status === 'failed', 60000);
  await page.goto(`${base}/#/plans/${badId}`);
  await until('the failure on the page', async () => /failed at measure_horizon/.test(await page.locator('#state-words').innerText()), 15000);
  const badText = await page.locator('#plan-view').innerText();
  check(!/undefined/.test(badText) && /Not measured: /.test(badText),
    'a failed measure says why, not "undefined old queues found": ' + (await page.locator('#state-words').innerText()).slice(0, 140));
  await atAGlance(page, build, '10-failed-measure', '#glance-action button.retry');
  const ab3 = await fetch(`${base}/api/plans/${badId}/abort`, { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}` } });
  check(ab3.status === 202, 'the failed plan aborted');
  check(problems.length === 0, 'no script errors in the whole plan' + (problems.length ? ': ' + problems.join('; ') : ''));
}

/* The whole plan's history, after remove_old: the history grouped
 * by step with its removals folded into one row that lists their names,
 * filtered by step, actor and kind, times in UTC milliseconds, the plan's
 * YAML shown, a refused request recorded, and both downloads verifying
 * offline with `cutover history --verify` (and a tampered one not). */
async function auditHistory(page, base, bin, build, pid, yaml) {
  /* a wrong token: refused, and recorded without it */
  const wrong = 'tok-wrong-' + crypto.randomBytes(4).toString('hex');
  const den = await fetch(`${base}/api/plans/${pid}/abort`, { method: 'POST', headers: { Authorization: `Bearer ${wrong}` } });
  check(den.status === 401, 'a wrong token is refused (401)');
  const h = await (await fetch(`${base}/api/plans/${pid}/history`)).json();
  const removed = h.events.filter((e) => e.kind === 'old.queue_removed').map((e) => e.details.name).sort();
  check(removed.length === 2, 'the history records 2 removals: ' + removed.join(', '));
  await page.locator('#refresh').click();
  await until('the refused request on the page', async () =>
    (await page.locator('#history tr[data-kind="request.denied"]').count()) === 1, 15000);
  const denRow = await page.locator('#history tr[data-kind="request.denied"]').innerText();
  check(/\(none\)/.test(denRow) && /401/.test(denRow) && /abort/.test(denRow) && !denRow.includes(wrong),
    'the refused request is in the history: status, route, no actor, never the token: ' + denRow.replace(/\s+/g, ' ').slice(0, 160));
  check(!(await page.content()).includes(wrong), 'the wrong token is nowhere on the page');
  /* grouped by step, the removals folded */
  const groups = await page.locator('#history tr.group').allInnerTexts();
  check(groups.length >= 7 && groups.some((g) => /^Step 7 · remove_old — /.test(g)) && groups.some((g) => /^Plan — /.test(g)),
    'the history is grouped by step: ' + groups.map((g) => g.split(' — ')[0]).join(' | '));
  const fold = page.locator('#history tr.folded[data-kind="old.queue_removed"]');
  check(await fold.count() === 1 && await fold.getAttribute('data-count') === '2',
    'the removals are one folded row ("2 × old.queue_removed")');
  await fold.locator('summary').click();
  const names = (await fold.locator('li').allInnerTexts()).sort();
  check(names.join(',') === removed.join(','), 'unfolded, it lists their names: ' + names.join(', '));
  const rows = await page.locator('#history tbody tr:not(.group)').count();
  check(rows < h.events.length, `folding shows ${h.events.length} events in ${rows} rows`);
  const time = await page.locator('#history tbody tr:not(.group) td.time').first().innerText();
  check(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}/.test(time) &&
    /UTC, ms/.test(await page.locator('#history thead').innerText()), 'times are UTC to the millisecond: ' + time);
  /* the plan's YAML */
  await page.locator('#plan-yaml-box summary').click();
  check((await page.locator('#plan-yaml').innerText()).trim() === yaml.trim() &&
    (await page.locator('#plan-yaml-box summary').innerText()).includes(h.sha256),
    'the plan\'s YAML is shown as submitted, with its sha256');
  await page.locator('#history-box').screenshot({ path: path.join(build, 'screenshots', '04-history-1280.png') });
  log(`screenshot ${path.join(build, 'screenshots', '04-history-1280.png')}`);
  /* filters: kind, actor, step */
  await page.locator('#f-kind').selectOption('step.approved');
  const kinds = await page.locator('#history tbody tr:not(.group) td:nth-child(3)').allInnerTexts();
  check(kinds.length === 2 && kinds.every((k) => k === 'step.approved') &&
    /2 of \d+ events \(filtered\)/.test(await page.locator('#history-count').innerText()),
    'filtered by kind: the 2 approvals (' + await page.locator('#history-count').innerText() + ')');
  await page.locator('#f-actor').selectOption('alice');
  check(await page.locator('#history tbody tr:not(.group)').count() === 2, 'and by actor: alice approved both');
  await page.locator('#f-kind').selectOption('');
  await page.locator('#f-step').selectOption('7');
  const g7 = await page.locator('#history tr.group').allInnerTexts();
  check(g7.length === 1 && /^Step 7 · remove_old/.test(g7[0]), 'and by step: only step 7, ' + g7[0]);
  await page.locator('#history-box').screenshot({ path: path.join(build, 'screenshots', '05-history-filtered-1280.png') });
  log(`screenshot ${path.join(build, 'screenshots', '05-history-filtered-1280.png')}`);
  await page.locator('#f-step').selectOption('');
  await page.locator('#f-actor').selectOption('');
  /* the downloads: the server's export, verified offline */
  for (const [btn, ext] of [['#download', 'json'], ['#download-csv', 'csv']]) {
    const [d] = await Promise.all([page.waitForEvent('download'), page.locator(btn).click()]);
    check(d.suggestedFilename() === `cutover-${full.name}-${pid}-history.${ext}`, 'downloaded ' + d.suggestedFilename());
    const file = path.join(tmp, 'export.' + ext);
    await d.saveAs(file);
    const text = fs.readFileSync(file, 'utf8');
    check(ext === 'json' ? JSON.parse(text).plan.yaml === yaml : text.includes(yaml.split('\n').slice(0, 3).join('\n')),
      `the ${ext} export carries the plan's YAML`);
    const out = execFileSync(bin, ['history', '--verify', file], { encoding: 'utf8' });
    check(/verifies: plan/.test(out), `cutover history --verify on the ${ext} download: ${out.trim()}`);
    const at = text.lastIndexOf(removed[0]);        /* in an event, after the YAML */
    const tampered = text.slice(0, at) + removed[0].replace(/\.old\./, '.odd.') + text.slice(at + removed[0].length);
    fs.writeFileSync(file + '.bad', tampered);
    let bad = null;
    try { execFileSync(bin, ['history', '--verify', file + '.bad'], { encoding: 'utf8' }); } catch (e) { bad = e; }
    check(bad && bad.status === 1 && /does NOT verify: event \d+/.test(String(bad.stdout)),
      `a tampered ${ext} export does not: ${String(bad && bad.stdout).trim()}`);
  }
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
    state: (v) => ['running', 'succeeded', 'failed', 'aborted', 'pending', 'waiting_approval', 'delivered'].includes(v),
    notifier: (v) => /^[a-z0-9._-]{1,64}$/.test(v),
    kind: (v) => /^[a-z][a-z_]{0,31}$/.test(v),
    call: (v) => ['flip', 'rollback'].includes(v),
    outcome: (v) => ['arrived', 'early', 'late', 'lost', 'wrong_path', 'unconfirmed', 'confirmed', 'failed'].includes(v),
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
    if (m[1] === 'cutover_build_info') {
      // one series per process: its labels are the build's versions
      check(m[3] === '1' && /^version="[^"]+",commit="[^"]+"/.test(m[2] || ''), `/metrics: ${line} is a build-info gauge`);
      series++;
      continue;
    }
    for (const pair of (m[2] || '').split(',').filter(Boolean)) {
      const lm = /^([a-z]+)="([^"\\]*)"$/.exec(pair);
      if (!lm) fail(`/metrics: bad label ${pair} in ${line}`);
      if (!allowed[lm[1]]) fail(`/metrics: label ${lm[1]} is not a bounded one: ${line}`);
      if (lm[1] === 'le' && types[fam] !== 'histogram') fail(`/metrics: le outside a histogram: ${line}`);
      if (!allowed[lm[1]](lm[2])) fail(`/metrics: ${lm[1]}="${lm[2]}" is not from its bounded set: ${line}`);
    }
    series++;
  }
  check(series > 10 && /cutover_step_state\{plan="[^"]+",step="verify_ladder",state="succeeded"\} 1/.test(text),
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
  if (full && process.env.CUTOVER_TEST_MGMT) {
    /* Everything the whole plan made is named after it: its ladder (which
     * may still hold a probe, so removed here rather than by teardown), the
     * old queues, the destination, the probe and canary queues. */
    const mine = (n) => n.startsWith(full.id + '.') || n.startsWith(`cutover.probe.${full.name}`) ||
      n.startsWith(`cutover.canary.${full.name}`);
    let left = 0;
    for (const kind of ['queues', 'exchanges']) {
      try {
        const all = await (await mgmt('GET', `/api/${kind}/%2F?columns=name`)).json();
        for (const o of all.filter((x) => mine(x.name))) {
          await mgmt('DELETE', `/api/${kind}/%2F/${encodeURIComponent(o.name)}`);
          left++;
        }
      } catch (e) { console.error(`whole plan: removing its ${kind} failed: ${e.message}`); process.exitCode = 1; }
    }
    log(`whole plan: ${left} broker objects removed`);
  }
  if (flagServer) flagServer.srv.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
}

/* A signal ends the run through the same cleanup: the server, the browser,
 * the ladder and the destination go whatever stopped it. */
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'])
  process.once(sig, () => { console.error(`FAILED: ${sig}`); process.exitCode = 1; cleanup().finally(() => process.exit(1)); });

main().then(() => { log('passed'); }, async (e) => {
  console.error('FAILED: ' + e.message);
  process.exitCode = 1;
  /* What the page showed when it failed, for the CI artifacts. */
  if (lastPage) await lastPage.screenshot({ path: path.join(process.argv[3], 'screenshots', 'failure.png'), fullPage: true }).catch(() => {});
})
  .then(cleanup).then(() => log(`done in ${((Date.now() - t0) / 1000).toFixed(1)} s`));
