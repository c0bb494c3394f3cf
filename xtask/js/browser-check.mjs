// Opens the web page (examples/web, built by `cargo xtask web`) in headless Chromium with a
// software WebGPU adapter (SwiftShader), waits for its report and fails on a mismatch, an
// error, a console error or a missing row, and on a failed case of the Hub's conformance
// suites the page ran (printing each suite's counts). Used by `cargo xtask web` and CI.
//
// Usage: node browser-check.mjs DIR [--report FILE] [--timeout SECONDS]
//        node browser-check.mjs DIR --serve [--port N]   (serve DIR only, for a browser of yours)
// DIR holds index.html and pkg/ (wasm-bindgen's output).

import { createServer } from 'node:http';
import { readFile, writeFile } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';
import { chromium } from 'playwright-core';

const args = process.argv.slice(2);
const dir = args[0];
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
if (!dir) {
  console.error('usage: node browser-check.mjs DIR [--serve] [--port N] [--report FILE]');
  process.exit(2);
}

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
};

// Files of DIR only; WebGPU needs a secure context, which http://127.0.0.1 is.
const server = createServer(async (req, res) => {
  const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname));
  const file = join(dir, path === '/' ? 'index.html' : path);
  if (!file.startsWith(normalize(dir))) {
    res.writeHead(403).end();
    return;
  }
  try {
    const body = await readFile(file);
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
    res.end(body);
  } catch {
    res.writeHead(404).end();
  }
});
const port = Number(option('--port', args.includes('--serve') ? '8000' : '0'));
await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/`;

if (args.includes('--serve')) {
  console.log(`serving ${dir} at ${url} (Ctrl-C to stop); open it in a browser with WebGPU`);
} else {
  process.exitCode = await check();
  server.close();
}

async function check() {
  const timeout = Number(option('--timeout', '900')) * 1000;
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: [
      '--headless=new',
      '--no-sandbox',
      '--enable-unsafe-webgpu',
      '--enable-features=Vulkan',
      '--use-vulkan=swiftshader',
      '--use-webgpu-adapter=swiftshader',
      // No network here: keep Chromium from trying.
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
      '--no-first-run',
    ],
  });
  const problems = [];
  try {
    const page = await browser.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
      else if (message.type() === 'warning') console.error(`console warning: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    await page.goto(url);
    await page.waitForFunction(() => window.kernelsReport || window.kernelsError, null, {
      timeout,
      polling: 500,
    });
    const error = await page.evaluate(() => window.kernelsError);
    if (error) {
      problems.push(`the page failed: ${error}`);
      return report(problems, null);
    }
    const result = await page.evaluate(() => window.kernelsReport);
    const drawn = await page.locator('#rows tr').count();
    if (result.rows.length !== result.expected_rows || drawn !== result.expected_rows) {
      problems.push(
        `expected ${result.expected_rows} rows, the report has ${result.rows.length} and the table ${drawn}`,
      );
    }
    for (const row of result.rows) {
      if (row.status === 'skipped' && row.detail) continue;
      if (row.status !== 'ok') problems.push(`${row.op} / ${row.case} (${row.dtype}): ${row.status}: ${row.detail}`);
    }
    const ops = new Set(result.rows.map((r) => r.op));
    for (const op of ops) {
      if (!result.rows.some((r) => r.op === op && r.status === 'ok')) problems.push(`${op}: no case ran`);
    }
    // A page built without the Hub beside the repository reports its suites as absent, and an
    // older report none at all: neither is a failure.
    const suites = result.conformance ?? [];
    const expectedCases = suites.reduce((n, s) => n + s.expected_rows, 0);
    const listedCases = suites.reduce((n, s) => n + s.rows.length, 0);
    const drawnCases = await page.locator('#conformance-rows tr').count();
    if (listedCases !== expectedCases || drawnCases !== expectedCases) {
      problems.push(
        `expected ${expectedCases} conformance rows, the report has ${listedCases} and the table ${drawnCases}`,
      );
    }
    for (const suite of suites) {
      for (const row of suite.rows) {
        if (row.status === 'passed' || (row.status === 'skipped' && row.detail)) continue;
        problems.push(`${suite.file} / ${row.case}: ${row.status}: ${row.detail}`);
      }
    }
    const out = option('--report');
    if (out) await writeFile(out, JSON.stringify(result, null, 2));
    return report(problems, result);
  } finally {
    await browser.close();
  }
}

// Prints the table (Markdown) and the problems; the exit status.
function report(problems, result) {
  if (result) {
    console.log(`adapter: ${result.adapter} (features: ${result.features.join(', ')})\n`);
    console.log('| op | case | dtype | variant | adapter | max error | GPU µs | result |');
    console.log('|---|---|---|---|---|--:|--:|---|');
    for (const r of result.rows) {
      const err = r.max_error == null ? '' : r.max_error.toExponential(2);
      const gpu = r.gpu_us == null ? '' : r.gpu_us.toFixed(1);
      const verdict = r.status === 'ok' ? 'ok' : `${r.status}: ${r.detail}`;
      console.log(`| ${r.op} | ${r.case} | ${r.dtype} | ${r.variant} | ${r.adapter} | ${err} | ${gpu} | ${verdict} |`);
    }
    const unreached = result.unreached.map((u) => `${u.op} ${u.variant}`);
    console.log(`\nvariants no case on the page (demo or conformance) selected on this adapter: ${unreached.join(', ') || 'none'}`);
    for (const suite of result.conformance ?? []) {
      if (suite.absent) {
        console.log(`\n${suite.file}: not built into the page (${suite.absent})`);
        continue;
      }
      console.log(`\n${suite.file}:\n`);
      console.log('| op | case | variant | max error | result |');
      console.log('|---|---|---|--:|---|');
      for (const r of suite.rows) {
        const err = r.max_error == null ? '' : r.max_error.toExponential(2);
        console.log(`| ${r.op} | ${r.case} | ${r.variant} | ${err} | ${r.status}: ${r.detail} |`);
      }
    }
    // The counts last, where they are seen.
    for (const suite of result.conformance ?? []) {
      if (suite.absent) continue;
      console.log(
        `${suite.file}: ${suite.passed} passed, ${suite.failed} failed, ${suite.skipped} skipped`,
      );
    }
  }
  for (const problem of problems) console.error(`browser check: ${problem}`);
  return problems.length === 0 ? 0 : 1;
}
