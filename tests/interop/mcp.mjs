// Drives the mcp_server example with the official MCP TypeScript SDK client over stdio, as an MCP
// host would.
//
//   node tests/interop/mcp.mjs target/debug/examples/mcp_server
//
// Exits 0 when every step behaved, 1 with the reason otherwise.

import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
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

const binary = process.argv[2];
if (!binary) {
  console.error('usage: node mcp.mjs <path to mcp_server>');
  process.exit(2);
}

const transport = new StdioClientTransport({ command: binary, args: [], stderr: 'inherit' });
const client = new Client({ name: 'jrpc-interop', version: '1.0.0' });
// The client hands the agreed version to transports that take it (HTTP ones); stdio does not, so
// this hook is only for the check below.
let negotiated;
transport.setProtocolVersion = (version) => {
  negotiated = version;
};
const watchdog = setTimeout(() => {
  console.error(`mcp interop: no end after ${LIMIT_MS} ms`);
  transport.close().finally(() => process.exit(1));
}, LIMIT_MS);

try {
  await client.connect(transport);
  assert.equal(client.getServerVersion()?.name, 'jrpc-mcp-example');
  assert.deepEqual(client.getServerCapabilities(), { logging: {}, tools: { listChanged: true } });
  // The SDK asks for its newest version; the server knows it and agrees.
  assert.equal(negotiated, LATEST_PROTOCOL_VERSION);

  const { tools } = await client.listTools();
  assert.equal(JSON.stringify(tools).includes('"format"'), false, 'no format on numbers');
  assert.deepEqual(tools.map((tool) => tool.name), ['add', 'count']);
  assert.equal(tools[0].inputSchema.type, 'object');
  assert.deepEqual(tools[0].inputSchema.required, ['a', 'b']);

  const sum = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
  assert.notEqual(sum.isError, true);
  assert.deepEqual(sum.content, [{ type: 'text', text: '5' }]);

  // An unknown tool is a protocol error naming it, not a tool's failure.
  await assert.rejects(
    client.callTool({ name: 'multiply', arguments: { a: 2, b: 3 } }),
    (err) => err.code === -32602 && /Unknown tool: multiply/.test(err.message),
  );

  const bad = await client.callTool({ name: 'add', arguments: { a: 'two' } });
  assert.equal(bad.isError, true);

  assert.deepEqual(await client.ping(), {});

  assert.deepEqual(warnings.filter((w) => /unknown format/.test(w)), []);
  clearTimeout(watchdog);
  await client.close();
  console.log('mcp interop: ok');
  process.exit(0);
} catch (err) {
  console.error('mcp interop: FAILED:', err);
  await transport.close().catch(() => {});
  process.exit(1);
}
