// Drives `mcp_server --http` with the official MCP TypeScript SDK client over Streamable HTTP, as
// an MCP host would.
//
//   node tests/interop/mcp_http.mjs http://127.0.0.1:PORT/mcp
//
// Exits 0 when every step behaved, 1 with the reason otherwise.

import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

const LIMIT_MS = 20_000;

// The SDK's schema validator (ajv) warns of formats it does not know; the server's schemas must
// give it none to warn of.
const warnings = [];
const warn = console.warn;
console.warn = (...args) => {
  warnings.push(args.join(' '));
  warn(...args);
};

const url = process.argv[2];
if (!url) {
  console.error('usage: node mcp_http.mjs <http://host:port/mcp>');
  process.exit(2);
}

const transport = new StreamableHTTPClientTransport(new URL(url));
const client = new Client({ name: 'jrpc-interop', version: '1.0.0' });
const errors = [];
client.onerror = (err) => errors.push(err);
const watchdog = setTimeout(() => {
  console.error(`mcp http interop: no end after ${LIMIT_MS} ms`);
  process.exit(1);
}, LIMIT_MS);

try {
  await client.connect(transport);
  assert.equal(client.getServerVersion()?.name, 'jrpc-mcp-example');
  assert.deepEqual(client.getServerCapabilities(), { logging: {}, tools: { listChanged: true } });
  assert.match(transport.sessionId ?? '', /^[0-9a-f]{32}$/);
  assert.equal(transport.protocolVersion, LATEST_PROTOCOL_VERSION);

  const { tools } = await client.listTools();
  assert.equal(JSON.stringify(tools).includes('"format"'), false, 'no format on numbers');
  assert.deepEqual(tools.map((tool) => tool.name), ['add', 'count']);
  assert.equal(tools[1].inputSchema.type, 'object');
  assert.equal(tools[1].inputSchema.properties.n.type, 'integer');
  assert.deepEqual(tools[1].inputSchema.required, ['n']);

  const sum = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
  assert.notEqual(sum.isError, true);
  assert.deepEqual(sum.content, [{ type: 'text', text: '5' }]);

  // Progress arrives on the call's SSE answer, before its result.
  const progress = [];
  let resultSeen = false;
  const counted = await client.callTool(
    { name: 'count', arguments: { n: 3 } },
    undefined,
    {
      onprogress: (update) => {
        assert.equal(resultSeen, false, 'progress after the result');
        progress.push(update);
      },
    },
  );
  resultSeen = true;
  assert.deepEqual(counted.content, [{ type: 'text', text: '3' }]);
  assert.deepEqual(
    progress.map(({ progress: p, total }) => [p, total]),
    [[1, 3], [2, 3], [3, 3]],
  );

  assert.deepEqual(await client.ping(), {});

  const sessionId = transport.sessionId;
  await transport.terminateSession();
  assert.equal(transport.sessionId, undefined);
  // The ended session's id is now unknown to the server.
  const after = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }),
  });
  assert.equal(after.status, 404);

  await client.close();
  assert.deepEqual(warnings.filter((w) => /unknown format/.test(w)), []);
  clearTimeout(watchdog);
  // Aborting the GET stream on close is reported as an error by some SDK versions; nothing else
  // may be.
  const unexpected = errors.filter((err) => !/abort/i.test(String(err)));
  assert.deepEqual(unexpected, []);
  console.log('mcp http interop: ok');
  process.exit(0);
} catch (err) {
  console.error('mcp http interop: FAILED:', err, errors);
  await transport.close().catch(() => {});
  process.exit(1);
}
