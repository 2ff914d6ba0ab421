#!/usr/bin/env node
/* The plan list at a platform team's scale, in a real browser (Debian's
 * headless Chromium through playwright-core) against a real `cutover
 * serve` on a real SQLite file: 50 plans in every state — waiting for
 * approval, failed, alerts open (on a running plan and on one that
 * succeeded), running, succeeded, aborted — written into the file while
 * serve runs (its engine looks for new plans once a minute here, so it
 * leaves them as written for the test's length). The list puts them in
 * the order a person should look (approval, failed, alerts, running,
 * finished; newest first within each), all 50 rows within one 1280×1080
 * screen; the name and state filters cut the list and go into the
 * address, and an address with a filter opens the list filtered.
 * Screenshot: BUILD/screenshots/list-50.png.
 *
 * usage: node test_list.js CUTOVER_BINARY BUILD_DIR
 * Needs /usr/bin/chromium and sqlite3: without them it fails. */
'use strict';
const { spawn, execFileSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');

const CHROMIUM = process.env.CUTOVER_CHROMIUM || '/usr/bin/chromium';
let server = null, browser = null, tmp = null;

const { log, fail, check, sleep, until, freePort } = require('./lib.js');

/* The 50 plans: [name, plan status, the current step's status or null,
 * an open alert, what the list calls it], created in this order (the id,
 * and the time, grow with it: newest last). */
function fleet() {
  const kinds = [
    ['running', 'running', null, 'running'],
    ['done', 'succeeded', 'succeeded', 'finished'],
    ['gate', 'running', 'waiting_approval', 'approval'],
    ['failed', 'failed', 'failed', 'failed'],
    ['alert', 'running', 'running', 'alert', true],
    ['aborted', 'aborted', null, 'finished'],
    ['done-alert', 'succeeded', 'succeeded', 'alert', true],
  ];
  const plans = [];
  for (let i = 0; plans.length < 50; i++) {
    const k = kinds[i % kinds.length];
    plans.push({ name: `team${String(i).padStart(2, '0')}-${k[0]}`, status: k[1], step: k[2],
      attention: k[3], alert: !!k[4] });
  }
  return plans;
}

/* The SQL that writes PLANS into the database: a plan row, two steps
 * (the second gated), an open alert where the plan has one. */
function fleetSql(plans) {
  const yaml = 'name: listed\n';
  const sha = crypto.createHash('sha256').update(yaml).digest('hex');
  const q = (s) => `'${String(s).replace(/'/g, "''")}'`;
  const out = ['BEGIN;'];
  plans.forEach((p, i) => {
    const id = 1000 + i, at = 1795000000000 + i * 60000;
    p.id = id;
    out.push(`INSERT INTO plans (id, name, yaml, sha256, status, created_ms) VALUES (${id}, ${q(p.name)}, ${q(yaml)}, ${q(sha)}, ${q(p.status)}, ${at});`);
    out.push(`INSERT INTO steps (plan_id, idx, kind, gate, status, started_ms) VALUES (${id}, 0, 'declare_ladder', 0, ${q(p.step ? 'succeeded' : 'running')}, ${at});`);
    out.push(`INSERT INTO steps (plan_id, idx, kind, gate, status, started_ms) VALUES (${id}, 1, 'flip', 1, ${q(p.step || 'pending')}, ${p.step ? at + 1000 : 'NULL'});`);
    if (p.alert)
      out.push(`INSERT INTO alerts (plan_id, kind, message, raised_ms, last_ms) VALUES (${id}, 'parking', '1 message parked', ${at}, ${at});`);
  });
  out.push('COMMIT;');
  return out.join('\n');
}

/* The order a person should look at PLANS in: by attention, newest first
 * within each. */
function expectedOrder(plans) {
  const rank = ['approval', 'failed', 'alert', 'running', 'finished'];
  return plans.slice().sort((a, b) => rank.indexOf(a.attention) - rank.indexOf(b.attention) || b.id - a.id)
    .map((p) => p.id);
}

async function rowIds(page) {
  return (await page.locator('#plans tbody tr').evaluateAll((rs) => rs.map((r) => +r.dataset.plan)));
}

async function main() {
  const [bin, build] = process.argv.slice(2);
  if (!bin || !build) fail('usage: node test_list.js CUTOVER_BINARY BUILD_DIR');
  if (!fs.existsSync(CHROMIUM)) fail(`${CHROMIUM} is missing: install Debian's chromium (scripts/setup)`);
  const { chromium } = require('playwright-core');

  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cutover-browser-list-'));
  const db = path.join(tmp, 'list.db');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  /* The engine's first look finds no plan; its next is a minute away. */
  server = spawn(bin, ['serve', '--db', db, '--listen', `127.0.0.1:${port}`, '--poll-ms', '60000'],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  let serverLog = '';
  server.stdout.on('data', (d) => { serverLog += d; });
  server.stderr.on('data', (d) => { serverLog += d; });
  process.on('exit', () => { if (process.exitCode) console.error('--- cutover serve log ---\n' + serverLog.slice(-4000)); });
  await until('cutover serve to answer /healthz', async () => (await fetch(base + '/healthz')).ok);
  await sleep(500);
  const plans = fleet();
  execFileSync('sqlite3', ['-cmd', '.timeout 5000', db], { input: fleetSql(plans) });
  const api = await (await fetch(base + '/api/plans')).json();
  check(api.plans.length === 50, 'the API lists the 50 plans');
  const want = expectedOrder(plans);
  check(JSON.stringify(api.plans.map((p) => p.id)) === JSON.stringify(want),
    'the API lists them by what needs a person: approval, failed, alerts, running, finished');
  check(api.plans.every((p) => p.attention === plans.find((x) => x.id === p.id).attention),
    'each plan\'s attention is what it was written as');

  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 1080 } });
  const problems = [];
  page.on('pageerror', (e) => problems.push(String(e)));
  await page.goto(base + '/#/');
  await until('the 50 rows', async () => (await page.locator('#plans tbody tr').count()) === 50);
  const ids = await rowIds(page);
  check(JSON.stringify(ids) === JSON.stringify(want), 'the page keeps the order: ' +
    (await page.locator('#plans tbody tr').evaluateAll((rs) => rs.slice(0, 12).map((r) => r.dataset.attention))).join(','));
  const firstGate = page.locator('#plans tbody tr').first();
  check(/waiting for approval/.test(await firstGate.innerText()), 'the first row waits for approval');
  const last = await page.locator('#plans tbody tr').last().boundingBox();
  const first = await firstGate.boundingBox();
  check(last.y + last.height <= 1080, `all 50 rows on one 1280×1080 screen (the last ends at ${Math.round(last.y + last.height)} px, rows ${first.height.toFixed(1)} px)`);
  check(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no row overflows the width');
  fs.mkdirSync(path.join(build, 'screenshots'), { recursive: true });
  await page.screenshot({ path: path.join(build, 'screenshots', 'list-50.png') });

  /* The state filter: the select cuts the list and writes the address. */
  await page.selectOption('#f-state', 'failed');
  const failed = plans.filter((p) => p.attention === 'failed').map((p) => p.id).sort((a, b) => b - a);
  await until('only the failed plans', async () => JSON.stringify(await rowIds(page)) === JSON.stringify(failed));
  check(new URL(page.url()).hash === '#/?state=failed', 'the state filter is in the address: ' + new URL(page.url()).hash);
  check(/^7 of 50 plans$/.test(await page.locator('#list-count').innerText()), 'the count says 7 of 50 plans');

  /* The name filter with it: a part of the name, any case. */
  await page.fill('#f-name', 'TEAM1');
  const both = plans.filter((p) => p.attention === 'failed' && p.name.startsWith('team1')).map((p) => p.id).sort((a, b) => b - a);
  await until('the failed plans named team1…', async () => JSON.stringify(await rowIds(page)) === JSON.stringify(both));
  check(new URL(page.url()).hash === '#/?name=TEAM1&state=failed', 'both filters are in the address: ' + new URL(page.url()).hash);

  /* A linked address opens the list filtered, the controls set. */
  const page2 = await browser.newPage({ viewport: { width: 1280, height: 1080 } });
  page2.on('pageerror', (e) => problems.push(String(e)));
  await page2.goto(base + '/#/?state=alert&name=done');
  const alerts = plans.filter((p) => p.attention === 'alert' && p.name.includes('done')).map((p) => p.id).sort((a, b) => b - a);
  await until('the linked filter', async () => JSON.stringify(await rowIds(page2)) === JSON.stringify(alerts));
  check(alerts.length === 7 && (await page2.inputValue('#f-state')) === 'alert' && (await page2.inputValue('#f-name')) === 'done',
    'a linked address opens the list filtered (7 finished plans with alerts open), its controls set');
  await page2.selectOption('#f-state', 'running');
  await until('nothing matches', async () => (await rowIds(page2)).length === 0 && await page2.locator('#plans-none').isVisible());
  check(true, 'a filter nothing matches says so');
  await page2.selectOption('#f-state', '');
  await page2.fill('#f-name', '');
  await until('the whole list again', async () => (await rowIds(page2)).length === 50);
  check(new URL(page2.url()).hash === '#/', 'no filter: the address is #/ again');
  check(problems.length === 0, 'no script error on the page' + (problems.length ? ': ' + problems.join('; ') : ''));
}

async function cleanup() {
  if (browser) await browser.close().catch(() => {});
  if (server) { server.kill('SIGTERM'); await sleep(300); server.kill('SIGKILL'); }
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
}

main().then(cleanup, async (e) => {
  console.error('FAIL: ' + (e && e.stack || e));
  process.exitCode = 1;
  await cleanup();
});
