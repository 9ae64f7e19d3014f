// Drives the calculator example with OpenRPC's own tools: `@open-rpc/client-js` asks for the
// document with `rpc.discover` and calls `add` over HTTP, WebSocket and stdio (newline-delimited
// and Content-Length framing), and `@open-rpc/schema-utils-js` validates the document against
// the OpenRPC meta-schema.
//
//   node tests/interop/openrpc.mjs 127.0.0.1:PORT target/debug/examples/calculator
//
// Prints the document (from HTTP) on stdout and exits 0 when every step behaved, 1 with the
// reason otherwise.

import assert from 'node:assert/strict';
import {
  Client,
  ContentLengthMessageFramer,
  HTTPTransport,
  NewlineDelimitedMessageFramer,
  RequestManager,
  WebSocketTransport,
} from '@open-rpc/client-js';
import { StdioTransport } from '@open-rpc/client-js/stdio';
import { validateOpenRPCDocument } from '@open-rpc/schema-utils-js';

const LIMIT_MS = 30_000;

const [addr, calculator] = process.argv.slice(2);
if (!addr || !calculator) {
  console.error('usage: node openrpc.mjs <host:port of the calculator> <path to calculator>');
  process.exit(2);
}

const watchdog = setTimeout(() => {
  console.error(`openrpc interop: no end after ${LIMIT_MS} ms`);
  process.exit(1);
}, LIMIT_MS);

const transports = [
  ['http', () => new HTTPTransport(`http://${addr}/rpc`)],
  ['ws', () => new WebSocketTransport(`ws://${addr}/ws`)],
  [
    'stdio',
    () =>
      new StdioTransport({
        command: calculator,
        args: ['--stdio'],
        framer: new NewlineDelimitedMessageFramer(),
      }),
  ],
  [
    'stdio --content-length',
    () =>
      new StdioTransport({
        command: calculator,
        args: ['--stdio', '--content-length'],
        framer: new ContentLengthMessageFramer(),
      }),
  ],
];

/** Checks what the issue pins of the document: its version, and `add`. */
function checkDocument(document) {
  const valid = validateOpenRPCDocument(document);
  assert.equal(valid, true, `the document is not valid OpenRPC: ${valid}`);
  assert.match(document.openrpc, /^1\.3\.[0-2]$/);
  const add = document.methods.find((method) => method.name === 'add');
  assert.ok(add, 'add is listed');
  assert.deepEqual(
    add.params.map((param) => [param.name, param.required, param.schema.type]),
    [
      ['a', true, 'integer'],
      ['b', true, 'integer'],
    ],
  );
  assert.equal(add.result.schema.type, 'integer');
  assert.ok(
    !document.methods.some((method) => method.name === 'rpc.discover'),
    'rpc.discover is not one of the service methods',
  );
}

try {
  let first;
  for (const [name, make] of transports) {
    const transport = make();
    const client = new Client(new RequestManager([transport]));
    try {
      const document = await client.request({ method: 'rpc.discover' });
      checkDocument(document);
      if (first === undefined) {
        first = document;
      } else {
        assert.deepEqual(document, first, `${name}: the same document as over http`);
      }
      assert.equal(await client.request({ method: 'add', params: [2, 3] }), 5);
      assert.equal(await client.request({ method: 'add', params: { a: 40, b: 2 } }), 42);
    } catch (err) {
      throw new Error(`${name}: ${err?.stack ?? err}`);
    } finally {
      client.close();
    }
    console.error(`openrpc interop: ${name}: ok`);
  }
  clearTimeout(watchdog);
  console.log(JSON.stringify(first));
  process.exit(0);
} catch (err) {
  console.error('openrpc interop: FAILED:', err);
  process.exit(1);
}
