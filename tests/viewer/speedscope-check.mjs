// speedscope-check.mjs: checks that ranksim's Chrome trace-event JSON shows in speedscope
// without nesting artefacts.  Run through tests/viewer/speedscope-check.sh.
//
//   node speedscope-check.mjs [--json-only] [--raw-gzip] [--screenshot DIR] TRACE...
//
// For each trace:
//  - file: size; a .gz path must start with the gzip magic 1f 8b and is decompressed to a
//    temporary file (speedscope is given plain JSON unless --raw-gzip);
//  - JSON: for every (pid, tid), the "X" slices sorted by ts (longer first on a tie) must nest
//    completely or not overlap; partially overlapping pairs are counted twice, in exact decimal
//    time (ts and dur to the picosecond) and in the double arithmetic speedscope itself uses
//    (ts - min ts of the thread, then + dur).  Both counts must be 0;
//  - viewer (unless --json-only): speedscope's release build and the trace are served on
//    127.0.0.1 (node's http module), index.html#profileURL=... is opened in headless
//    Chromium through puppeteer-core, the check waits for the title "NAME - speedscope",
//    and collects console messages, page errors, dialogs and failed requests.  A console
//    warning or error, a page error or a dialog fails the trace.
//
// Environment: VIEWER_DIR (the npm folder with speedscope and puppeteer-core, default
// /tmp/viewer), CHROMIUM (default /usr/bin/chromium), SPEEDSCOPE_TIMEOUT (seconds per
// trace, default 600).  Exit 0 all passed, 1 a failure, 77 a tool is missing.

import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';

const SKIP = 77;
const args = process.argv.slice(2);
let jsonOnly = false, rawGzip = false, shotDir = null;
const traces = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--json-only') jsonOnly = true;
  else if (a === '--raw-gzip') rawGzip = true;
  else if (a === '--screenshot') shotDir = args[++i];
  else if (a.startsWith('--')) { console.error(`unknown option ${a}`); process.exit(2); }
  else traces.push(a);
}
if (traces.length === 0) {
  console.error('usage: speedscope-check.mjs [--json-only] [--raw-gzip] [--screenshot DIR] TRACE...');
  process.exit(2);
}

const viewerDir = process.env.VIEWER_DIR || '/tmp/viewer';
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
const timeoutMs = 1000 * Number(process.env.SPEEDSCOPE_TIMEOUT || 600);

let puppeteer = null, distDir = null;
if (!jsonOnly) {
  const req = createRequire(path.join(viewerDir, 'package.json'));
  try {
    puppeteer = req('puppeteer-core');
    distDir = path.join(path.dirname(req.resolve('speedscope/package.json')), 'dist', 'release');
  } catch (e) {
    console.log(`SKIP: speedscope or puppeteer-core not installed in ${viewerDir} (${e.code || e.message})`);
    process.exit(SKIP);
  }
  if (!fs.existsSync(path.join(distDir, 'index.html'))) {
    console.log(`SKIP: no index.html in ${distDir}`);
    process.exit(SKIP);
  }
  if (!fs.existsSync(chromium)) {
    console.log(`SKIP: no Chromium at ${chromium}`);
    process.exit(SKIP);
  }
}

const mib = (n) => (n / 1048576).toFixed(2) + ' MiB';
const out = (s = '') => console.log(s);

// ---- JSON-level check ------------------------------------------------------------------

function describe(x) {
  const e = x.e || x; // overlaps() works on {e, s, t} wrappers
  const a = e.args || {};
  const extra = ['idx', 'layer', 'group', 'seq'].filter((k) => k in a).map((k) => `${k}=${a[k]}`);
  const span = e.end !== undefined && e.end !== null ? `end=${e.end}` : `dur=${e.dur}`;
  return `"${e.name}" ts=${e.ts} ${span}${extra.length ? ' ' + extra.join(' ') : ''}`;
}

// Counts partially overlapping pairs of slices [s, s+d) on one thread, slices sorted by
// start then longer first.  `act` holds every slice still open at the current start.
function overlaps(list, start, end, examples, label, key) {
  let pairs = 0;
  const act = [];
  for (const e of list) {
    const s = start(e), t = end(e);
    for (let i = act.length - 1; i >= 0; i--) if (end(act[i]) <= s) act.splice(i, 1);
    for (const o of act) {
      if (end(o) < t && start(o) < s) {
        pairs++;
        if (examples.length < 5) examples.push(`${label} ${key}: ${describe(o)} ends inside ${describe(e)}`);
      }
    }
    act.push(e);
  }
  return pairs;
}

function checkJson(text) {
  const r = { ok: true, problems: [], phases: {}, xEvents: 0, threads: 0, exact: 0, viewer: 0,
              examples: [], metaName: null };
  let doc;
  try { doc = JSON.parse(text); } catch (e) {
    r.ok = false; r.problems.push(`not JSON: ${e.message}`); return r;
  }
  const events = Array.isArray(doc) ? doc : doc && doc.traceEvents;
  if (!Array.isArray(events)) { r.ok = false; r.problems.push('no traceEvents array'); return r; }
  r.events = events.length;
  const byThread = new Map();
  let bad = 0;
  const tracks = new Set(); // threads speedscope makes a profile of: those with B, E or X events
  const open = new Map(); // pid/tid -> stack of "B" events not yet ended
  const add = (e, end) => {
    const k = `pid ${e.pid} tid ${e.tid}`;
    let l = byThread.get(k);
    if (!l) byThread.set(k, (l = []));
    l.push({ ...e, end });
  };
  for (const e of events) {
    r.phases[e.ph] = (r.phases[e.ph] || 0) + 1;
    if (e.ph === 'B' || e.ph === 'E' || e.ph === 'X') tracks.add(`${e.pid}/${e.tid}`);
    if (e.ph !== 'X' && e.ph !== 'B' && e.ph !== 'E') continue;
    if (typeof e.ts !== 'number' || !isFinite(e.ts) ||
        (e.ph === 'X' && (typeof e.dur !== 'number' || !(e.dur >= 0)))) {
      if (bad++ < 5) r.problems.push(`malformed ${e.ph} event: ${JSON.stringify(e).slice(0, 200)}`);
      continue;
    }
    const t = `${e.pid}/${e.tid}`;
    if (e.ph === 'B') {
      if (!open.has(t)) open.set(t, []);
      open.get(t).push(e);
    } else if (e.ph === 'E') {
      const st = open.get(t);
      const b = st && st.pop();
      if (!b || e.ts < b.ts) {
        if (bad++ < 5) r.problems.push(`"E" without its "B" at ts=${e.ts} on ${t}`);
        continue;
      }
      add(b, e.ts); // an exact end: no addition in any viewer
    } else {
      add(e, null);
    }
  }
  for (const [t, st] of open)
    if (st.length && bad++ < 5) r.problems.push(`${st.length} "B" events never ended on ${t}`);
  if (bad) r.ok = false;
  r.xEvents = [...byThread.values()].reduce((n, l) => n + l.length, 0);
  r.threads = tracks.size;
  const ps = (x) => Math.round(x * 1e6); // microseconds -> integer picoseconds (exact to 6 decimals)
  for (const [k, l] of byThread) {
    // exact decimal time
    const ex = l.map((e) => ({ e, s: ps(e.ts), t: e.end !== null ? ps(e.end) : ps(e.ts) + ps(e.dur) }));
    ex.sort((a, b) => a.s - b.s || (b.t - b.s) - (a.t - a.s));
    r.exact += overlaps(ex, (x) => x.s, (x) => x.t, r.examples, 'exact', k);
    // speedscope's own arithmetic (importer: ts -= min ts; an "X" ends at ts + dur, a "B" at
    // its "E"'s ts - min, in doubles)
    let min = Number.MAX_SAFE_INTEGER;
    for (const e of l) min = Math.min(min, e.ts);
    const vw = l.map((e) => { const s = e.ts - min; return { e, s, t: e.end !== null ? e.end - min : s + e.dur }; });
    vw.sort((a, b) => a.s - b.s || (b.t - b.s) - (a.t - a.s));
    r.viewer += overlaps(vw, (x) => x.s, (x) => x.t, r.examples, 'viewer', k);
  }
  if (r.exact || r.viewer) r.ok = false;
  return r;
}

// ---- viewer check ----------------------------------------------------------------------

const MIME = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css',
  '.json': 'application/json', '.wasm': 'application/wasm', '.png': 'image/png',
  '.ico': 'image/x-icon', '.woff2': 'font/woff2', '.txt': 'text/plain', '.md': 'text/plain' };

function serve(traceFile) {
  const server = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://127.0.0.1');
    let file;
    if (u.pathname === '/trace.json') file = traceFile;
    else {
      const rel = path.normalize(decodeURIComponent(u.pathname)).replace(/^(\.\.[/\\])+/, '');
      file = path.join(distDir, rel === '/' ? 'index.html' : rel);
      if (!file.startsWith(distDir)) file = null;
    }
    if (!file || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404); res.end('not found'); return;
    }
    res.writeHead(200, { 'Content-Type': MIME[path.extname(file)] || 'application/octet-stream',
                         'Content-Length': fs.statSync(file).size });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok(server)));
}

async function checkViewer(browser, traceFile, shotName) {
  const r = { loaded: false, ms: null, title: null, toolbar: null, console: [], pageErrors: [],
              dialogs: [], failed: [], importMs: null };
  const server = await serve(traceFile);
  const port = server.address().port;
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  page.on('console', (m) => {
    const text = m.text();
    if (m.type() === 'timeEnd' && /^import: /.test(text)) { r.importMs = text; return; }
    r.console.push({ type: m.type(), text: text.length > 400 ? text.slice(0, 400) + '...' : text });
  });
  page.on('pageerror', (e) => r.pageErrors.push(String(e && e.message || e)));
  page.on('dialog', async (d) => { r.dialogs.push(d.message()); await d.dismiss().catch(() => {}); });
  page.on('requestfailed', (q) => r.failed.push(`${q.url()} ${q.failure() && q.failure().errorText}`));
  const url = `http://127.0.0.1:${port}/index.html#profileURL=` +
              encodeURIComponent(`http://127.0.0.1:${port}/trace.json`);
  const t0 = Date.now();
  try {
    await page.goto(url, { waitUntil: 'load', timeout: timeoutMs });
    await page.waitForFunction(
      () => / - speedscope$/.test(document.title) ||
            /Something went wrong/.test(document.body ? document.body.innerText : ''),
      { timeout: Math.max(1000, timeoutMs - (Date.now() - t0)), polling: 200 });
    r.ms = Date.now() - t0;
    r.title = await page.title();
    r.loaded = / - speedscope$/.test(r.title);
    // the toolbar's centre shows the thread's name and "(i/N)" when there are several
    r.toolbar = await page.evaluate(() => {
      const t = document.body.innerText.split('\n').map((s) => s.trim()).filter(Boolean);
      return t.slice(0, 8).join(' | ');
    });
    // let the first frame render (WebGL) and late warnings arrive
    await new Promise((ok) => setTimeout(ok, 1500));
    if (shotName) await page.screenshot({ path: shotName });
  } catch (e) {
    r.ms = Date.now() - t0;
    r.error = String(e.message || e).split('\n')[0];
    r.title = await page.title().catch(() => null);
  }
  await page.close().catch(() => {});
  await new Promise((ok) => server.close(ok));
  return r;
}

// ---- main ------------------------------------------------------------------------------

let failed = 0;
const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'speedscope-check-'));
let browser = null;
try {
  if (!jsonOnly) {
    try {
      browser = await puppeteer.launch({
        executablePath: chromium, headless: true,
        args: ['--headless=new', '--no-sandbox', '--disable-dev-shm-usage',
               '--enable-unsafe-swiftshader', '--js-flags=--max-old-space-size=8192'],
        protocolTimeout: timeoutMs + 60000,
      });
      out(`chromium: ${await browser.version()} (${chromium}, --headless=new --no-sandbox)`);
    } catch (e) {
      out(`FAIL: Chromium did not start: ${String(e.message || e).split('\n').slice(0, 3).join(' / ')}`);
      process.exitCode = 1;
      failed++;
    }
  }
  for (const trace of traces) {
    out(`== ${trace}`);
    let okTrace = true;
    let buf;
    try { buf = await fsp.readFile(trace); } catch (e) {
      out(`  FAIL: cannot read: ${e.message}`); failed++; continue;
    }
    out(`  file: ${buf.length} bytes (${mib(buf.length)})`);
    const isGz = buf.length >= 2 && buf[0] === 0x1f && buf[1] === 0x8b;
    let plainFile = trace, text;
    if (trace.endsWith('.gz')) {
      if (!isGz) {
        out(`  FAIL: ends in .gz but starts with ${buf.subarray(0, 2).toString('hex')} (not gzip magic 1f8b)`);
        okTrace = false;
        text = buf.toString('utf8');
      } else {
        const raw = zlib.gunzipSync(buf, { maxOutputLength: 2 ** 31 - 1 });
        plainFile = path.join(tmp, path.basename(trace).replace(/\.gz$/, ''));
        await fsp.writeFile(plainFile, raw);
        out(`  gzip: magic 1f8b ok; decompressed ${raw.length} bytes (${mib(raw.length)}) to a temporary file` +
            (rawGzip ? ' (for the JSON check; speedscope is given the .gz as it is)' : ' served to speedscope'));
        text = raw.toString('utf8');
      }
    } else {
      if (isGz) out('  note: gzip data in a file not named .gz');
      text = buf.toString('utf8');
    }
    const t0 = Date.now();
    const j = checkJson(text);
    text = null;
    out(`  json: ${j.events ?? '?'} events (${Object.entries(j.phases).map(([k, v]) => `${k} ${v}`).join(', ')}), ` +
        `${j.xEvents} X slices, ${j.threads} threads with slices, checked in ${Date.now() - t0} ms`);
    out(`  json: partially overlapping X pairs: ${j.exact} exact, ${j.viewer} in speedscope's arithmetic`);
    for (const p of j.problems) out(`  json: ${p}`);
    for (const x of j.examples) out(`  json: overlap: ${x}`);
    if (!j.ok) okTrace = false;

    if (browser) {
      const served = rawGzip && isGz ? trace : plainFile;
      const shot = shotDir ? path.join(shotDir, path.basename(trace).replace(/\.json(\.gz)?$/, '') + '.png') : null;
      if (shotDir) await fsp.mkdir(shotDir, { recursive: true });
      const v = await checkViewer(browser, served, shot);
      out(`  viewer: served ${served === trace ? 'the file as it is' : 'the decompressed copy'}; ` +
          `loaded: ${v.loaded ? 'yes' : 'no'} in ${(v.ms / 1000).toFixed(1)} s` +
          (v.importMs ? ` (speedscope's own "${v.importMs}")` : ''));
      out(`  viewer: title "${v.title}"`);
      if (v.toolbar) out(`  viewer: page text: ${v.toolbar.slice(0, 300)}`);
      const m = /\((\d+)\/(\d+)\)/.exec(v.toolbar || '');
      if (m) {
        out(`  viewer: ${m[2]} threads in the thread selector (JSON has ${j.threads})`);
        if (Number(m[2]) !== j.threads) okTrace = false;
      } else if (v.loaded && j.threads > 1) {
        out(`  viewer: no "(i/N)" thread selector found in the toolbar`);
      }
      if (v.error) out(`  viewer: error: ${v.error}`);
      if (shot && v.loaded) out(`  viewer: screenshot ${shot}`);
      // SwiftShader's "[.WebGL-...]GL Driver Message" notes come from the software renderer,
      // not from speedscope's importer: listed, not counted
      const isWarn = (c) => c.type === 'warn' || c.type === 'warning' || c.type === 'error';
      const isGl = (c) => /^\[\.WebGL-/.test(c.text);
      const bad = v.console.filter((c) => isWarn(c) && !isGl(c));
      const kinds = {};
      for (const c of bad) {
        const k = /Tried to end/.test(c.text) ? '"Tried to end ... when ... was on the top of the stack"'
          : /still open at end of profile/.test(c.text) ? '"Frame ... was still open at end of profile"'
          : `other ${c.type}`;
        kinds[k] = (kinds[k] || 0) + 1;
      }
      out(`  viewer: console messages: ${v.console.length}, importer warnings/errors: ${bad.length}` +
          (bad.length ? ` (${Object.entries(kinds).map(([k, n]) => `${n} ${k}`).join(', ')})` : ''));
      const shown = [...v.console.filter((c) => !isWarn(c) || isGl(c)), ...bad.slice(0, 6)];
      for (const c of shown) out(`    console.${c.type}: ${c.text}`);
      if (bad.length > 6) out(`    ... ${bad.length - 6} more importer warnings`);
      for (const e of v.pageErrors) out(`    page error: ${e}`);
      for (const d of v.dialogs) out(`    dialog: ${d}`);
      for (const f of v.failed) out(`    request failed: ${f}`);
      if (!v.loaded || bad.length || v.pageErrors.length || v.dialogs.length) okTrace = false;
    }
    if (plainFile !== trace) await fsp.rm(plainFile, { force: true });
    out(`  ${okTrace ? 'PASS' : 'FAIL'}`);
    if (!okTrace) failed++;
  }
} finally {
  if (browser) await browser.close().catch(() => {});
  await fsp.rm(tmp, { recursive: true, force: true });
}
const n = traces.length;
out(`speedscope-check: ${n - Math.min(failed, n)} passed, ${Math.min(failed, n)} failed`);
process.exit(failed ? 1 : 0);
