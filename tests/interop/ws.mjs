// Drives the calculator example over WebSocket with clients nobody here wrote: the `json-rpc-2.0`
// package's client (both ends of a connection, so it also takes the server's `tick`
// notifications) on a `ws` socket, and raw `ws` frames for what a library would hide.
//
//   node tests/interop/ws.mjs 127.0.0.1:PORT
//
// Exits 0 when every step behaved, 1 with the reason otherwise.

import assert from 'node:assert/strict';
import { once } from 'node:events';
import {
  JSONRPCClient,
  JSONRPCErrorException,
  JSONRPCServer,
  JSONRPCServerAndClient,
} from 'json-rpc-2.0';
import WebSocket from 'ws';

const LIMIT_MS = 30_000;
/** How long the server has to send something it must not send. */
const QUIET_MS = 300;

const addr = process.argv[2];
if (!addr) {
  console.error('usage: node ws.mjs <host:port of the calculator>');
  process.exit(2);
}
const url = `ws://${addr}/ws`;

const watchdog = setTimeout(() => {
  console.error(`ws interop: no end after ${LIMIT_MS} ms`);
  process.exit(1);
}, LIMIT_MS);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function open() {
  const socket = new WebSocket(url);
  await once(socket, 'open');
  return socket;
}

/** Awaits `promise`, which must reject with the JSON-RPC error `code` and `message`. */
async function rejectsWith(promise, code, message) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof JSONRPCErrorException, `not a JSON-RPC error: ${err}`);
    assert.equal(err.code, code);
    assert.equal(err.message, message);
    return true;
  });
}

/** The `json-rpc-2.0` client over one `ws` socket, every frame received kept in order. */
async function libraryClient() {
  const socket = await open();
  const frames = [];
  const ticks = [];
  const server = new JSONRPCServer();
  server.addMethod('tick', ({ n }) => {
    ticks.push(n);
  });
  const peer = new JSONRPCServerAndClient(
    server,
    new JSONRPCClient((payload) => {
      socket.send(JSON.stringify(payload));
    }),
  );
  socket.on('message', (data, isBinary) => {
    assert.equal(isBinary, false, 'the server sends text frames');
    const message = JSON.parse(data.toString('utf8'));
    frames.push(message);
    peer.receiveAndSend(message).catch((err) => {
      console.error('ws interop: could not take a frame:', err);
      process.exit(1);
    });
  });
  socket.on('close', () => peer.rejectAllPendingRequests('the connection closed'));
  return { socket, peer, frames, ticks };
}

async function withLibrary() {
  const { socket, peer, frames, ticks } = await libraryClient();

  assert.equal(await peer.request('add', [2, 3]), 5);
  assert.equal(await peer.request('add', { a: 2, b: 3 }), 5);
  assert.equal(await peer.request('subtract', [42, 23]), 19);
  assert.equal(await peer.request('subtract', [23, 42]), -19);
  assert.equal(await peer.request('subtract', { minuend: 42, subtrahend: 23 }), 19);
  assert.equal(await peer.request('subtract', { subtrahend: 23, minuend: 42 }), 19);
  assert.equal(await peer.request('sum', [1, 2, 4]), 7);
  assert.deepEqual(await peer.request('get_data'), ['hello', 5]);
  assert.equal(await peer.request('divide', { dividend: 7, divisor: 2 }), 3.5);
  await rejectsWith(peer.request('divide', { dividend: 1, divisor: 0 }), 1, 'division by zero');
  await assert.rejects(peer.request('no_such_method', []), (err) => err.code === -32601);
  assert.deepEqual(await peer.request('echo', { nested: [1, 'two', null] }), {
    nested: [1, 'two', null],
  });
  assert.equal(await peer.request('whoami'), 'ws');

  // A batch with a notification in it: answers for the calls only, matched by id.
  const batch = await peer.requestAdvanced([
    { jsonrpc: '2.0', id: 'b1', method: 'add', params: [1, 2] },
    { jsonrpc: '2.0', method: 'notify_sum', params: [1, 2, 4] },
    { jsonrpc: '2.0', id: 'b2', method: 'divide', params: { dividend: 1, divisor: 0 } },
    { jsonrpc: '2.0', id: 'b3', method: 'get_data' },
  ]);
  assert.deepEqual(
    batch.map((answer) => answer.id),
    ['b1', 'b2', 'b3'],
  );
  assert.equal(batch[0].result, 3);
  assert.deepEqual(batch[1].error, { code: 1, message: 'division by zero' });
  assert.deepEqual(batch[2].result, ['hello', 5]);
  const batchFrame = frames.at(-1);
  assert.ok(Array.isArray(batchFrame), 'a batch is answered in one frame');
  assert.equal(batchFrame.length, 3, 'nothing for the notification in the batch');

  // A notification is not answered: the next frame is the next call's answer.
  const before = frames.length;
  peer.notify('update', [1, 2, 3, 4, 5]);
  assert.equal(await peer.request('add', [20, 22]), 42);
  assert.equal(frames.length, before + 1, `only the call's answer: ${JSON.stringify(frames.slice(before))}`);

  // The server's notifications on this connection come before the answer of the call that sent
  // them.
  const start = frames.length;
  assert.equal(await peer.request('ticks', { count: 3 }), 3);
  const seen = frames.slice(start);
  assert.deepEqual(
    seen.map((frame) => (frame.method === 'tick' ? `tick ${frame.params.n}` : 'answer')),
    ['tick 1', 'tick 2', 'tick 3', 'answer'],
    JSON.stringify(seen),
  );
  for (const frame of seen.slice(0, 3)) {
    assert.equal(frame.jsonrpc, '2.0');
    assert.equal('id' in frame, false, `a notification has no id: ${JSON.stringify(frame)}`);
  }
  await sleep(0);
  assert.deepEqual(ticks, [1, 2, 3], 'the client library took the ticks as notifications');
  assert.equal(await peer.request('ticks', [0]), 0);

  // Calls sent together are all answered, each to its own id.
  const many = await Promise.all(
    Array.from({ length: 20 }, (_, i) => peer.request('add', [i, 1000])),
  );
  assert.deepEqual(
    many,
    Array.from({ length: 20 }, (_, i) => i + 1000),
  );

  await sleep(QUIET_MS);
  assert.equal(
    frames.filter((frame) => !Array.isArray(frame) && frame.method !== undefined && frame.method !== 'tick').length,
    0,
    'the server sent no requests',
  );
  socket.close(1000);
  const [code] = await once(socket, 'close');
  assert.equal(code, 1000);
}

/** The next text frame on `socket`, parsed. */
async function nextFrame(socket) {
  const [data, isBinary] = await once(socket, 'message');
  assert.equal(isBinary, false);
  return JSON.parse(data.toString('utf8'));
}

async function rawNotifications() {
  const socket = await open();
  const frames = [];
  socket.on('message', (data) => frames.push(JSON.parse(data.toString('utf8'))));
  socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'notify_hello', params: [7] }));
  socket.send(
    JSON.stringify([
      { jsonrpc: '2.0', method: 'update', params: [1] },
      { jsonrpc: '2.0', method: 'notify_sum', params: [1, 2] },
    ]),
  );
  socket.send(JSON.stringify({ jsonrpc: '2.0', id: 'after', method: 'add', params: [1, 1] }));
  while (frames.length === 0) await once(socket, 'message');
  assert.deepEqual(frames[0], { jsonrpc: '2.0', result: 2, id: 'after' });
  await sleep(QUIET_MS);
  assert.equal(frames.length, 1, `nothing but the call's answer: ${JSON.stringify(frames)}`);
  socket.close(1000);
  await once(socket, 'close');
}

async function rawBinaryFrame() {
  const socket = await open();
  // A binary frame of UTF-8 JSON is a message, as web3.py sends them; answered in a text frame.
  socket.send(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'add', params: [1, 2] })), {
    binary: true,
  });
  const [data, isBinary] = await once(socket, 'message');
  assert.equal(isBinary, false, 'the answer is a text frame');
  assert.deepEqual(JSON.parse(data.toString('utf8')), { jsonrpc: '2.0', result: 3, id: 2 });
  // One that is not UTF-8 closes the connection with 1007, as a text frame would.
  const closed = once(socket, 'close');
  socket.send(Buffer.from([0xff, 0xfe]), { binary: true });
  const [code] = await closed;
  assert.equal(code, 1007, 'a binary frame that is not UTF-8 is refused with 1007');
}

async function rawPing() {
  const socket = await open();
  const data = Buffer.from('are you there');
  socket.ping(data);
  const [pong] = await once(socket, 'pong');
  assert.deepEqual(pong, data, 'a ping is answered by a pong with its data');
  socket.close(1000);
  await once(socket, 'close');
}

const steps = [
  ['json-rpc-2.0 client', withLibrary],
  ['raw: notifications get no frame', rawNotifications],
  ['raw: binary frame', rawBinaryFrame],
  ['raw: ping', rawPing],
];
try {
  for (const [name, step] of steps) {
    await step();
    console.log(`ws interop: ${name}: ok`);
  }
  clearTimeout(watchdog);
  console.log('ws interop: ok');
  process.exit(0);
} catch (err) {
  console.error('ws interop: FAILED:', err);
  process.exit(1);
}
