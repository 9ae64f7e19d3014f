// Drives the calculator example from a page in a real browser: the system's headless Chromium,
// driven by `playwright-core`, shows a page served from another origin than the calculators',
// and the page calls them with the client that `@open-rpc/generator` generates from the
// calculator's OpenRPC document (tests/data/calculator.openrpc.json), over `fetch` and over
// WebSocket. The generator writes a TypeScript package that imports `@open-rpc/client-js`,
// `@open-rpc/schema-utils-js` and `lodash` by their package names; `esbuild` strips its types and
// bundles it with those packages, as they are pinned here, into one module the page imports.
// Nothing generated is kept: both go to a temporary folder that is removed at the end.
//
//   node tests/interop/browser.mjs
//
// It talks with its test in one JSON line each way, since the calculators must be started with
// the page's origin, which is only known once the page's server listens:
//
//   1. it prints {"origin": "http://127.0.0.1:PORT"}, the origin of the page it serves;
//   2. it reads {"allowed": ADDR, "unlisted": ADDR, "other": ADDR, "token": ADDR, "secret": TOKEN}
//      on stdin: calculators (host:port) started with `--allow-origin ORIGIN`, with no
//      `--allow-origin`, with `--allow-origin` of another origin, and with `--allow-origin ORIGIN
//      --token TOKEN`;
//   3. it prints what the page saw, as one JSON object on one line, and exits 0.
//
// On an error it exits 1 with the reason on stderr. Progress goes to stderr too.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import generator from '@open-rpc/generator';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';

/** Debian's Chromium (`apt-get install chromium`): Playwright's own browsers are not used. */
const CHROMIUM = '/usr/bin/chromium';
/**
 * Flags for a machine whose network is closed: without the background networking ones, Chromium
 * keeps trying to reach Google's hosts.
 */
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const here = fileURLToPath(new URL('.', import.meta.url));
const DOCUMENT = join(here, '..', 'data', 'calculator.openrpc.json');

const progress = (step) => console.error(`browser interop: ${step}: ok`);

/**
 * Returns `value` without the `format`s that schemars gives Rust's numbers (`int64`, `uint32`,
 * `double`...). The generated client checks each call's params against the document with
 * `@open-rpc/schema-utils-js`' `MethodCallValidator`, an ajv 6 with its default options, which
 * throws on a format it does not know rather than ignore it; JSON Schema leaves such formats to
 * the parties' agreement, and `type` says all a client checks.
 */
const NUMBER_FORMAT = /^(u?int(8|16|32|64|128)?|float|double)$/;
function withoutNumberFormats(value) {
  if (Array.isArray(value)) return value.map(withoutNumberFormats);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key, member]) => !(key === 'format' && NUMBER_FORMAT.test(member)))
      .map(([key, member]) => [key, withoutNumberFormats(member)]),
  );
}

/**
 * Generates the calculator's client with `@open-rpc/generator` into `dir` and bundles it for the
 * page; returns the bundle's text (an ES module exporting `Calculator`).
 *
 * package.json overrides the generator's `@open-rpc/typings` 1.13.0 with 1.13.1: 1.13.0's
 * `@open-rpc/schema-utils-js` (2.0.2) dereferences every method's `result` and crashes on the
 * calculator's notifications, which have none (OpenRPC 1.3 lets a method omit it); 1.13.1 comes
 * with 2.2.1, which skips it, and the generated client then sends those methods as notifications.
 */
async function generateClient(dir) {
  const document = withoutNumberFormats(JSON.parse(await readFile(DOCUMENT, 'utf8')));
  // The package is CommonJS: its `default` export is the generator.
  const generate = generator.default ?? generator;
  await generate({
    outDir: dir,
    openrpcDocument: document,
    components: [{ type: 'client', name: 'calculator', language: 'typescript' }],
  });
  const bundled = await build({
    entryPoints: [join(dir, 'client', 'typescript', 'src', 'index.ts')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    // The generated folder has no node_modules of its own: its imports are resolved here.
    nodePaths: [join(here, 'node_modules')],
    write: false,
    logLevel: 'silent',
  });
  return bundled.outputFiles[0].text;
}

/** Serves the page (empty: the steps run in it) and the client's bundle on 127.0.0.1. */
async function servePage(bundle) {
  const server = createServer((request, response) => {
    if (request.url === '/') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      // An empty icon, so that the browser asks for no `/favicon.ico`.
      response.end('<!doctype html><link rel="icon" href="data:,"><title>jrpc interop</title>');
    } else if (request.url === '/calculator.js') {
      response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
      response.end(bundle);
    } else {
      response.writeHead(404);
      response.end();
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

/** The first line on stdin, parsed. */
async function readAddresses() {
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    lines.close();
    return JSON.parse(line);
  }
  throw new Error('stdin ended before the calculators\' addresses');
}

// ---------------------------------------------------------------------------------------------
// What the page does. Each function runs in the page (Playwright serializes it): it may use only
// its argument and the page's globals.

/**
 * Over `fetch`, through the generated client: calls, an error, and a batch (the client's
 * `startBatch`/`stopBatch`).
 */
async function fetchCalls({ host, port }) {
  const { Calculator } = await import('/calculator.js');
  const calc = new Calculator({ transport: { type: 'http', host, port, path: '/rpc' } });
  const settle = (promise) =>
    promise.then(
      (result) => ({ result }),
      (err) => ({ error: { code: err.code, message: err.message } }),
    );
  const calls = {
    add: await settle(calc.add(2, 3)),
    whoami: await settle(calc.whoami()),
    divide: await settle(calc.divide(1, 0)),
  };
  calc.startBatch();
  const answers = [calc.add(1, 2), calc.divide(1, 0), calc.get_data()].map(settle);
  // The generated methods reach the batch only after a few awaits of their own (the document's
  // parse, the transport's connection): the batch is sent once they all have.
  await new Promise((resolve) => setTimeout(resolve, 0));
  calc.stopBatch();
  return { calls, batch: await Promise.all(answers) };
}

/**
 * Over WebSocket, through the generated client: calls, then `watch("news")` and
 * `announce("news", "hi")`, and the `announcement` pushed to this page.
 */
async function webSocketCalls({ host, port, path }) {
  const { Calculator } = await import('/calculator.js');
  const calc = new Calculator({ transport: { type: 'websocket', host, port, path } });
  // The client's WebSocket transport gives each call 5 s by default: no budget here.
  calc.setDefaultTimeout(null);
  // Its calls wait for the socket to open, forever if it never does: a refused one is an error.
  const socket = calc.transport.connection;
  await new Promise((resolve, reject) => {
    if (socket.readyState === WebSocket.OPEN) resolve();
    socket.addEventListener('open', resolve);
    socket.addEventListener('close', (event) =>
      reject(new Error(`the WebSocket to ${path} did not open (close code ${event.code})`)),
    );
  });
  const notifications = [];
  let announced;
  const announcement = new Promise((resolve) => {
    announced = resolve;
  });
  calc.onNotification((notification) => {
    notifications.push(notification);
    if (notification.method === 'announcement') announced();
  });
  const result = {
    add: await calc.add(2, 3),
    whoami: await calc.whoami(),
    watch: await calc.watch('news'),
    announce: await calc.announce('news', 'hi'),
  };
  await announcement;
  calc.rpc.close();
  return { ...result, notifications };
}

/** A plain `fetch` POST of `add(2, 3)` with `headers`: its status and body, or its error's name. */
async function plainFetch({ url, headers }) {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'add', params: [2, 3] }),
    });
    return { status: response.status, body: await response.json() };
  } catch (err) {
    return { error: err.name };
  }
}

/** Whether the page's `WebSocket` to `url` opens, and how it closed if it did not. */
function webSocketOpens(url) {
  return new Promise((resolve) => {
    const socket = new WebSocket(url);
    socket.addEventListener('open', () => {
      socket.close(1000);
      resolve({ opened: true });
    });
    socket.addEventListener('close', (event) => resolve({ opened: false, code: event.code }));
  });
}

// ---------------------------------------------------------------------------------------------

/**
 * Starts keeping what Chromium's network does for `page` (through the DevTools protocol, which
 * sees the CORS preflights, and why a CORS check failed, where the page sees neither); its
 * `of(addr)` sums up the exchanges with the calculator at `addr`:
 *
 * - `posts`: each POST the page asked for, in order: its methods (several for a batch), and the
 *   status it was answered with or why Chromium refused it to the page (`corsError`);
 * - `preflights`: the statuses its preflights were answered with, each once (Chromium keeps a
 *   preflight's answer a few seconds, so how many it sends is not the test's to count).
 */
async function watchNetwork(page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  /** POSTs by request id: what `of` returns of each, and a promise of its end. */
  const posts = new Map();
  const preflights = [];
  const end = (requestId, outcome) => {
    const post = posts.get(requestId);
    if (post === undefined) return;
    Object.assign(post.summary, outcome);
    post.ended();
  };
  cdp.on('Network.requestWillBeSent', ({ requestId, request }) => {
    if (request.method !== 'POST') return;
    const methods = [JSON.parse(request.postData)].flat().map((call) => call.method);
    let ended;
    const done = new Promise((resolve) => {
      ended = resolve;
    });
    posts.set(requestId, { url: request.url, summary: { methods }, done, ended });
  });
  cdp.on('Network.responseReceived', ({ requestId, type, response }) => {
    if (type === 'Preflight') {
      preflights.push(response);
    } else {
      end(requestId, { status: response.status });
    }
  });
  cdp.on('Network.loadingFailed', ({ requestId, errorText, corsErrorStatus }) => {
    end(requestId, corsErrorStatus ? { corsError: corsErrorStatus.corsError } : { errorText });
  });
  return {
    // Once every POST to `addr` has ended: the protocol's events may come after the page's
    // answers.
    async of(addr) {
      const url = `http://${addr}/rpc`;
      const mine = [...posts.values()].filter((post) => post.url === url);
      await Promise.all(mine.map((post) => post.done));
      return {
        posts: mine.map((post) => post.summary),
        preflights: [
          ...new Set(preflights.filter((r) => r.url === url).map((r) => r.status)),
        ],
      };
    },
  };
}

const dir = await mkdtemp(join(tmpdir(), 'jrpc-browser-'));
let browser;
let server;
try {
  server = await servePage(await generateClient(dir));
  progress('client generated and bundled');
  const origin = `http://127.0.0.1:${server.address().port}`;
  console.log(JSON.stringify({ origin }));
  const calculators = await readAddresses();

  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
  const page = await browser.newPage();
  // No budgets but the test's own limit on the whole run.
  page.setDefaultTimeout(0);
  const network = await watchNetwork(page);
  page.on('console', (message) => console.error(`page: ${message.text()}`));
  await page.goto(`${origin}/`);

  const at = (addr) => {
    const [host, port] = addr.split(':');
    return { host, port: Number(port) };
  };
  const { allowed, token, secret } = calculators;
  const result = {};
  result.allowed = {
    fetch: await page.evaluate(fetchCalls, at(allowed)),
    ws: await page.evaluate(webSocketCalls, { ...at(allowed), path: '/ws' }),
    network: await network.of(allowed),
  };
  progress('allowed origin');
  for (const name of ['unlisted', 'other']) {
    const addr = calculators[name];
    result[name] = {
      fetch: await page.evaluate(plainFetch, { url: `http://${addr}/rpc`, headers: {} }),
      ws: await page.evaluate(webSocketOpens, `ws://${addr}/ws`),
      network: await network.of(addr),
    };
    progress(`${name} origin`);
  }
  result.token = {
    fetch: await page.evaluate(plainFetch, {
      url: `http://${token}/rpc`,
      headers: { authorization: `Bearer ${secret}` },
    }),
    fetchWithout: await page.evaluate(plainFetch, { url: `http://${token}/rpc`, headers: {} }),
    ws: await page.evaluate(webSocketCalls, {
      ...at(token),
      path: `/ws?access_token=${encodeURIComponent(secret)}`,
    }),
    wsWithout: await page.evaluate(webSocketOpens, `ws://${token}/ws`),
    network: await network.of(token),
  };
  progress('token');
  console.log(JSON.stringify(result));
  await browser.close();
  browser = undefined;
  server.close();
  await rm(dir, { recursive: true, force: true });
  process.exit(0);
} catch (err) {
  console.error('browser interop: FAILED:', err);
  await browser?.close().catch(() => {});
  server?.close();
  await rm(dir, { recursive: true, force: true });
  process.exit(1);
}
