// Drives the acp_agent example with the official ACP TypeScript SDK (@agentclientprotocol/sdk)
// as the client, over the agent's stdin and stdout, as an editor would.
//
//   node tests/interop/acp.mjs target/debug/examples/acp_agent
//
// Exits 0 when every step behaved, 1 with the reason otherwise.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';

const LIMIT_MS = 30_000;

const binary = process.argv[2];
if (!binary) {
  console.error('usage: node acp.mjs <path to acp_agent>');
  process.exit(2);
}

const child = spawn(binary, [], { stdio: ['pipe', 'pipe', 'inherit'] });
const exited = once(child, 'exit');
const watchdog = setTimeout(() => {
  console.error(`acp interop: no end after ${LIMIT_MS} ms`);
  child.kill('SIGKILL');
  process.exit(1);
}, LIMIT_MS);

// Every session/update, in arrival order, and who waits for more.
const updates = [];
const waiters = [];
// What the permission requests asked, and the option the user picks next.
const asked = [];
let choice = 'allow';

const client = acp
  .client({ name: 'jrpc-interop' })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params);
    for (const wake of waiters.splice(0)) wake();
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    asked.push(params);
    return { outcome: { outcome: 'selected', optionId: choice } };
  });

/** The texts of the agent's message chunks for `sessionId` since `from` updates. */
function texts(sessionId, from) {
  return updates
    .slice(from)
    .filter((params) => params.sessionId === sessionId)
    .map((params) => {
      assert.equal(params.update.sessionUpdate, 'agent_message_chunk');
      assert.equal(params.update.content.type, 'text');
      return params.update.content.text;
    });
}

/** Waits until the chunks for `sessionId` since `from` include `text`. */
async function chunkArrives(sessionId, from, text) {
  while (!texts(sessionId, from).includes(text)) {
    await new Promise((resolve) => waiters.push(resolve));
  }
}

/** Asserts `chunks` are "1" .. "k" for some k in [min, max]. */
function assertCountedTo(chunks, min, max) {
  assert.ok(chunks.length >= min && chunks.length <= max, `counted ${chunks}`);
  assert.deepEqual(chunks, chunks.map((_, i) => String(i + 1)));
}

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

try {
  await client.connectWith(stream, async (agent) => {
    const prompt = (sessionId, text, options) =>
      agent.request(
        acp.methods.agent.session.prompt,
        { sessionId, prompt: [{ type: 'text', text }] },
        options,
      );
    /** Prompts `text` and asserts the turn ends `end_turn` with exactly the chunks `expected`. */
    const turn = async (sessionId, text, expected) => {
      const from = updates.length;
      const answer = await prompt(sessionId, text);
      assert.equal(answer.stopReason, 'end_turn', text);
      assert.deepEqual(texts(sessionId, from), expected, text);
    };

    const init = await agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {},
      clientInfo: { name: 'jrpc-interop', version: '1' },
    });
    assert.equal(init.protocolVersion, 1);
    assert.equal(init.agentInfo.name, 'acp_agent');

    const { sessionId } = await agent.request(acp.methods.agent.session.new, {
      cwd: process.cwd(),
      mcpServers: [],
    });
    assert.equal(typeof sessionId, 'string');

    // count: the chunks "1" .. "N", then end_turn.
    await turn(sessionId, 'count 3', ['1', '2', '3']);
    console.log('acp interop: count');

    // ask: the two options offered, then the one chosen said.
    for (const option of ['allow', 'reject']) {
      choice = option;
      await turn(sessionId, 'ask', [option]);
      const question = asked.at(-1);
      assert.equal(question.sessionId, sessionId);
      assert.deepEqual(
        question.options.map(({ optionId, kind }) => [optionId, kind]),
        [['allow', 'allow_once'], ['reject', 'reject_once']],
      );
    }
    console.log('acp interop: ask (allow, reject)');

    // session/cancel mid-count: the turn answers `cancelled`, and nothing of it comes after its
    // answer (the next turn's chunks are its own alone).
    {
      const from = updates.length;
      const counting = prompt(sessionId, 'count 10');
      await chunkArrives(sessionId, from, '2');
      await agent.notify(acp.methods.agent.session.cancel, { sessionId });
      const answer = await counting;
      assert.equal(answer.stopReason, 'cancelled');
      assertCountedTo(texts(sessionId, from), 2, 9);
      await turn(sessionId, 'after cancel', ['after cancel']);
    }
    console.log('acp interop: session/cancel');

    // $/cancel_request naming the prompt (the SDK sends it when the signal aborts): -32800.
    {
      const from = updates.length;
      const aborted = new AbortController();
      const counting = prompt(sessionId, 'count 10', { cancellationSignal: aborted.signal });
      await chunkArrives(sessionId, from, '2');
      aborted.abort();
      await assert.rejects(counting, (err) => err.code === -32800);
      assertCountedTo(texts(sessionId, from), 2, 9);
      await turn(sessionId, 'after abort', ['after abort']);
    }
    console.log('acp interop: $/cancel_request');

    // A prompt for a session the agent never opened is an error.
    await assert.rejects(prompt('no-such-session', 'count 1'), (err) => {
      assert.equal(err.code, -32002);
      return true;
    });
    console.log('acp interop: unknown session');
  });

  // The editor closes the agent's input: it ends, with status 0.
  child.stdin.end();
  const [code, signal] = await exited;
  assert.equal(signal, null);
  assert.equal(code, 0, 'the agent exits 0 at the end of its input');
  clearTimeout(watchdog);
  console.log('acp interop: ok');
  process.exit(0);
} catch (err) {
  console.error('acp interop: FAILED:', err);
  child.kill('SIGKILL');
  process.exit(1);
}
