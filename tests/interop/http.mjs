// Drives the calculator example over HTTP with a client nobody here wrote: the `json-rpc-2.0`
// package's client, sending with Node's built-in `fetch`.
//
//   node tests/interop/http.mjs 127.0.0.1:PORT
//
// Exits 0 when every step behaved, 1 with the reason otherwise.

import assert from 'node:assert/strict';
import { JSONRPCClient, JSONRPCErrorException } from 'json-rpc-2.0';

const LIMIT_MS = 30_000;

const addr = process.argv[2];
if (!addr) {
  console.error('usage: node http.mjs <host:port of the calculator>');
  process.exit(2);
}
const url = `http://${addr}/rpc`;

const watchdog = setTimeout(() => {
  console.error(`http interop: no end after ${LIMIT_MS} ms`);
  process.exit(1);
}, LIMIT_MS);

/** Every HTTP exchange, in order: what was sent, the status, the content type and the body. */
const exchanges = [];
/** The exchange in flight (a notification's send is not awaited by the library). */
let lastSend = Promise.resolve();

const client = new JSONRPCClient((payload) => {
  lastSend = (async () => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(payload),
    });
    const body = await response.text();
    exchanges.push({
      payload,
      status: response.status,
      contentType: response.headers.get('content-type'),
      body,
    });
    if (response.status === 200) {
      client.receive(JSON.parse(body));
    } else if (response.status !== 204) {
      throw new Error(`HTTP ${response.status}: ${body}`);
    }
  })();
  return lastSend;
});

/** Awaits `promise`, which must reject with the JSON-RPC error `code` and `message`. */
async function rejectsWith(promise, code, message) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof JSONRPCErrorException, `not a JSON-RPC error: ${err}`);
    assert.equal(err.code, code);
    if (message !== undefined) assert.equal(err.message, message);
    return true;
  });
}

async function calls() {
  assert.equal(await client.request('add', [2, 3]), 5);
  assert.equal(await client.request('add', { a: 2, b: 3 }), 5);
  assert.equal(await client.request('subtract', [42, 23]), 19);
  assert.equal(await client.request('subtract', [23, 42]), -19);
  assert.equal(await client.request('subtract', { minuend: 42, subtrahend: 23 }), 19);
  assert.equal(await client.request('subtract', { subtrahend: 23, minuend: 42 }), 19);
  assert.equal(await client.request('sum', [1, 2, 4]), 7);
  assert.deepEqual(await client.request('get_data'), ['hello', 5]);
  assert.equal(await client.request('divide', { dividend: 7, divisor: 2 }), 3.5);
  await rejectsWith(client.request('divide', { dividend: 1, divisor: 0 }), 1, 'division by zero');
  await rejectsWith(client.request('no_such_method', []), -32601);
  await rejectsWith(client.request('add', ['two', 3]), -32602);
  assert.deepEqual(await client.request('echo', { nested: [1, 'two', null] }), {
    nested: [1, 'two', null],
  });
  assert.equal(await client.request('whoami'), 'http');
  // HTTP cannot carry the server's notifications: `ticks` says so with its error 2.
  await rejectsWith(client.request('ticks', { count: 3 }), 2);

  const last = exchanges.at(-1);
  assert.equal(last.status, 200);
  assert.match(last.contentType, /^application\/json/);
}

async function batch() {
  const answers = await client.requestAdvanced([
    { jsonrpc: '2.0', id: 'b1', method: 'add', params: [1, 2] },
    { jsonrpc: '2.0', method: 'notify_sum', params: [1, 2, 4] },
    { jsonrpc: '2.0', id: 'b2', method: 'divide', params: { dividend: 1, divisor: 0 } },
    { jsonrpc: '2.0', id: 'b3', method: 'get_data' },
  ]);
  assert.deepEqual(
    answers.map((answer) => answer.id),
    ['b1', 'b2', 'b3'],
  );
  assert.equal(answers[0].result, 3);
  assert.deepEqual(answers[1].error, { code: 1, message: 'division by zero' });
  assert.deepEqual(answers[2].result, ['hello', 5]);
  const body = JSON.parse(exchanges.at(-1).body);
  assert.ok(Array.isArray(body), 'a batch is answered with an array');
  assert.equal(body.length, 3, 'nothing for the notification in the batch');
}

async function notifications() {
  client.notify('update', [1, 2, 3, 4, 5]);
  await lastSend;
  const single = exchanges.at(-1);
  assert.equal(single.payload.method, 'update');
  assert.equal(single.status, 204, 'a notification is answered with 204 No Content');
  assert.equal(single.body, '');

  // A batch of notifications only: nothing to answer either.
  await client.requestAdvanced([
    { jsonrpc: '2.0', method: 'notify_hello', params: [7] },
    { jsonrpc: '2.0', method: 'notify_sum', params: [1, 2] },
  ]);
  await lastSend;
  const all = exchanges.at(-1);
  assert.ok(Array.isArray(all.payload));
  assert.equal(all.status, 204, 'a batch of notifications is answered with 204 No Content');
  assert.equal(all.body, '');

  // Serving goes on.
  assert.equal(await client.request('add', [20, 22]), 42);
}

async function concurrent() {
  const many = await Promise.all(
    Array.from({ length: 20 }, (_, i) => client.request('add', [i, 1000])),
  );
  assert.deepEqual(
    many,
    Array.from({ length: 20 }, (_, i) => i + 1000),
  );
}

const steps = [
  ['calls', calls],
  ['batch', batch],
  ['notifications', notifications],
  ['concurrent calls', concurrent],
];
try {
  for (const [name, step] of steps) {
    await step();
    console.log(`http interop: ${name}: ok`);
  }
  clearTimeout(watchdog);
  console.log('http interop: ok');
  process.exit(0);
} catch (err) {
  console.error('http interop: FAILED:', err);
  process.exit(1);
}
