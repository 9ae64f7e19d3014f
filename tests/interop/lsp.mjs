// Drives the lsp_server example with vscode-jsonrpc (the JSON-RPC layer of VS Code's language
// client) over the server's stdin and stdout, as an editor would.
//
//   node tests/interop/lsp.mjs target/debug/examples/lsp_server
//
// Exits 0 when every step behaved, 1 with the reason otherwise.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from 'vscode-jsonrpc/node';

const LIMIT_MS = 20_000;

const binary = process.argv[2];
if (!binary) {
  console.error('usage: node lsp.mjs <path to lsp_server>');
  process.exit(2);
}

const child = spawn(binary, [], { stdio: ['pipe', 'pipe', 'inherit'] });
const exited = once(child, 'exit');
const watchdog = setTimeout(() => {
  console.error(`lsp interop: no end after ${LIMIT_MS} ms`);
  child.kill('SIGKILL');
  process.exit(1);
}, LIMIT_MS);

const connection = createMessageConnection(
  new StreamMessageReader(child.stdout),
  new StreamMessageWriter(child.stdin),
);

const logs = [];
const logWaiters = [];
connection.onNotification('window/logMessage', (params) => {
  logs.push(params);
  for (const waiter of logWaiters.splice(0)) waiter();
});
const configurationAsks = [];
connection.onRequest('workspace/configuration', (params) => {
  configurationAsks.push(params);
  return [{ greeting: 'hello from vscode-jsonrpc' }];
});
connection.listen();

/** Waits until a logged message satisfies `test`. */
async function logged(test) {
  while (!logs.some((log) => test(log.message))) {
    await new Promise((resolve) => logWaiters.push(resolve));
  }
}

const uri = 'file:///tmp/interop.txt';
const hover = (line, character) =>
  connection.sendRequest('textDocument/hover', {
    textDocument: { uri },
    position: { line, character },
  });

try {
  const init = await connection.sendRequest('initialize', {
    processId: process.pid,
    rootUri: null,
    clientInfo: { name: 'jrpc-interop', version: '1' },
    capabilities: { workspace: { configuration: true } },
  });
  assert.deepEqual(init.capabilities, { textDocumentSync: 1, hoverProvider: true });
  assert.equal(init.serverInfo.name, 'jrpc-lsp-example');

  await connection.sendNotification('initialized', {});
  await logged((message) => message.includes('hello from vscode-jsonrpc'));
  assert.deepEqual(configurationAsks, [{ items: [{ section: 'example' }] }]);
  assert.equal(logs[0].type, 3);

  await connection.sendNotification('textDocument/didOpen', {
    textDocument: { uri, languageId: 'plaintext', version: 1, text: 'hello jrpc world\n  x = 1' },
  });
  assert.deepEqual(await hover(0, 8), { contents: { kind: 'markdown', value: '`jrpc`' } });
  assert.equal((await hover(0, 5)).contents.value, '`hello`', 'the end of a word still hovers it');
  assert.equal(await hover(1, 0), null, 'no word under leading spaces');

  await connection.sendNotification('textDocument/didChange', {
    textDocument: { uri, version: 2 },
    contentChanges: [{ text: 'goodbye\nrust_analyzer' }],
  });
  assert.equal((await hover(1, 4)).contents.value, '`rust_analyzer`');
  assert.equal((await hover(0, 0)).contents.value, '`goodbye`');

  assert.equal(await connection.sendRequest('shutdown'), null);
  await connection.sendNotification('exit');
  const [code, signal] = await exited;
  assert.equal(signal, null);
  assert.equal(code, 0, 'exit after shutdown ends with status 0');
  clearTimeout(watchdog);
  connection.dispose();
  console.log('lsp interop: ok');
  process.exit(0);
} catch (err) {
  console.error('lsp interop: FAILED:', err);
  child.kill('SIGKILL');
  process.exit(1);
}
