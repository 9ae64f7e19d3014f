// Reads the calculator's SSE answer to `ticks(3)` with a real Server-Sent Events parser
// (eventsource-parser), and its plain JSON answer without the header.
//
//   node tests/interop/sse.mjs 127.0.0.1:PORT
//
// Exits 0 when both behaved, 1 with the reason otherwise.

import assert from 'node:assert/strict';
import { EventSourceParserStream } from 'eventsource-parser/stream';

const addr = process.argv[2];
if (!addr) {
  console.error('usage: node sse.mjs <host:port>');
  process.exit(2);
}
const url = `http://${addr}/rpc`;
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ticks', params: [3] });

try {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body,
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/event-stream');
  const events = [];
  const reader = res.body
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream())
    .getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    events.push(value);
  }
  assert.deepEqual(
    events.map((event) => [event.event, JSON.parse(event.data)]),
    [
      [undefined, { jsonrpc: '2.0', method: 'tick', params: { n: 1 } }],
      [undefined, { jsonrpc: '2.0', method: 'tick', params: { n: 2 } }],
      [undefined, { jsonrpc: '2.0', method: 'tick', params: { n: 3 } }],
      [undefined, { jsonrpc: '2.0', result: 3, id: 1 }],
    ],
  );

  // fetch sends `Accept: */*`: plain JSON, as before (ticks cannot push there).
  const plain = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  assert.equal(plain.headers.get('content-type'), 'application/json');
  const answer = await plain.json();
  assert.equal(answer.id, 1);
  assert.equal(typeof answer.error?.code, 'number');
  console.log('sse interop: ok');
  process.exit(0);
} catch (err) {
  console.error('sse interop: FAILED:', err);
  process.exit(1);
}
