/* lib: what the browser tests share — a log line with the seconds since
 * the test began, checks that say what held, waiting with a bound, and a
 * free port for the server under test. */
'use strict';
const net = require('net');

const t0 = Date.now();

/* MSG on stdout after the seconds since the test began. */
function log(msg) { console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`); }
/* Ends the test with MSG. */
function fail(msg) { throw new Error(msg); }
/* Fails with MSG unless COND; logs it as held when it does. */
function check(cond, msg) { if (!cond) fail(msg); log('ok: ' + msg); }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/* FN's first truthy answer, asked every 200 ms; fails naming WHAT (and
 * the last error FN threw) after MS. */
async function until(what, fn, ms = 20000) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    if (Date.now() > end) fail(`timed out waiting for ${what}` + (last instanceof Error ? `: ${last.message}` : ''));
    await sleep(200);
  }
}

/* A TCP port on 127.0.0.1 that nothing listened on a moment ago. */
function freePort() {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); });
  });
}

module.exports = { log, fail, check, sleep, until, freePort };
