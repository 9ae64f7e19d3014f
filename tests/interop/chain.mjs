// Drives the chain example as Ethereum clients drive a node, with libraries nobody here wrote:
// ethers 6's WebSocketProvider (`on("block")`, `off`, `getBlockNumber`, `getBlock`) and viem's
// public client on its webSocket transport (`watchBlocks` with `poll: false`, unwatch).
//
//   node tests/interop/chain.mjs ethers|viem 127.0.0.1:PORT
//
// Exits 0 when every step behaved, 1 with the reason otherwise. Each wait is for an event (a
// block, an answer); only the whole run is bounded in time.

import assert from 'node:assert/strict';
import { WebSocketProvider } from 'ethers';
import { createPublicClient, webSocket } from 'viem';
import WebSocket from 'ws';

const LIMIT_MS = 30_000;
/** How many new blocks each client waits for. */
const BLOCKS = 3;

const [client, addr] = process.argv.slice(2);
if (!['ethers', 'viem'].includes(client) || !addr) {
  console.error('usage: node chain.mjs ethers|viem <host:port of the chain>');
  process.exit(2);
}
const url = `ws://${addr}/ws`;

const watchdog = setTimeout(() => {
  console.error(`chain interop (${client}): no end after ${LIMIT_MS} ms`);
  process.exit(1);
}, LIMIT_MS);

const tick = () => new Promise((resolve) => setTimeout(resolve, 10));

/** Resolves once `count()` reaches `n`. */
async function until(n, count) {
  while (count() < n) await tick();
}

/** Checks what a node's block looks like, as a library decoded it. */
function checkHashes(block) {
  for (const hash of [block.hash, block.parentHash, block.stateRoot, block.receiptsRoot]) {
    assert.match(hash, /^0x[0-9a-f]{64}$/, `a 32-byte hash: ${hash}`);
  }
  assert.match(block.miner, /^0x[0-9a-fA-F]{40}$/, `an address: ${block.miner}`);
}

/** Every frame of one `ws` socket, both ways, as JSON. */
function recorded() {
  const frames = { sent: [], received: [] };
  const create = () => {
    const socket = new WebSocket(url);
    const send = socket.send.bind(socket);
    socket.send = (data, ...rest) => {
      frames.sent.push(JSON.parse(data));
      return send(data, ...rest);
    };
    socket.on('message', (data) => frames.received.push(JSON.parse(data.toString('utf8'))));
    return socket;
  };
  return { frames, create };
}

async function ethers() {
  const { frames, create } = recorded();
  const provider = new WebSocketProvider(create);
  const network = await provider.getNetwork();
  assert.equal(network.chainId, 1337n);

  const numbers = [];
  await provider.on('block', (number) => numbers.push(number));
  await until(BLOCKS, () => numbers.length);
  for (let i = 1; i < numbers.length; i++) {
    assert.ok(numbers[i] > numbers[i - 1], `increasing: ${numbers}`);
  }

  const latest = await provider.getBlockNumber();
  assert.ok(latest >= numbers[BLOCKS - 1], `${latest} after ${numbers}`);
  const block = await provider.getBlock(numbers[1]);
  assert.equal(block.number, numbers[1]);
  checkHashes(block);
  const parent = await provider.getBlock(numbers[1] - 1);
  assert.equal(block.parentHash, parent.hash);
  assert.ok(block.timestamp >= parent.timestamp);
  assert.equal(block.transactions.length, 0);
  assert.equal(await provider.getBlock(latest + 1_000_000), null);

  // `off` unsubscribes: the server answers true, and sends that subscription nothing more.
  await provider.off('block');
  const unsubscribe = await answered(frames, 'eth_unsubscribe');
  assert.equal(unsubscribe.answer.result, true, JSON.stringify(unsubscribe));
  const subscription = unsubscribe.request.params[0];
  const seen = numbers.length;
  // Sent on the same connection after the answer, so behind anything sent before it.
  const after = (await provider.getBlockNumber()) + 2;
  while (Number(await provider.send('eth_blockNumber', [])) < after) await tick();
  assert.equal(numbers.length, seen, `blocks after off: ${numbers.slice(seen)}`);
  const late = frames.received
    .slice(unsubscribe.at)
    .filter((frame) => frame.params?.subscription === subscription);
  assert.deepEqual(late, [], 'notifications after the unsubscribe answer');
  provider.destroy();
  return `blocks ${numbers.join(', ')}; called ${called(frames)}`;
}

/** Waits for the answer to the first `method` call among `frames`. */
async function answered(frames, method) {
  for (;;) {
    const request = frames.sent.find((m) => m.method === method);
    if (request) {
      const at = frames.received.findIndex((m) => m.id === request.id && !m.method);
      if (at >= 0) return { request, answer: frames.received[at], at: at + 1 };
    }
    await tick();
  }
}

/** The methods a client called, each once, in the order first called. */
function called(frames) {
  return [...new Set(frames.sent.map((m) => m.method))].join(' ');
}

async function viem() {
  const client = createPublicClient({ transport: webSocket(url) });
  assert.equal(await client.getChainId(), 1337);

  const blocks = [];
  const errors = [];
  const unwatch = client.watchBlocks({
    poll: false,
    onBlock: (block) => blocks.push(block),
    onError: (err) => errors.push(err),
  });
  await until(BLOCKS, () => blocks.length + errors.length);
  assert.deepEqual(errors, []);
  for (let i = 1; i < blocks.length; i++) {
    assert.ok(blocks[i].number > blocks[i - 1].number, 'increasing numbers');
  }
  for (const block of blocks) {
    assert.equal(typeof block.number, 'bigint');
    assert.equal(typeof block.baseFeePerGas, 'bigint');
    checkHashes(block);
  }

  // Unwatched, it is called no more, while the chain goes on.
  unwatch();
  const seen = blocks.length;
  const after = (await client.getBlockNumber({ cacheTime: 0 })) + 3n;
  while ((await client.getBlockNumber({ cacheTime: 0 })) < after) await tick();
  assert.equal(blocks.length, seen, 'blocks after unwatch');

  const block = await client.getBlock({ blockNumber: blocks[0].number });
  assert.equal(block.hash, blocks[0].hash);
  await (await client.transport.getRpcClient()).close();
  return `blocks ${blocks.map((block) => block.number).join(', ')}`;
}

try {
  const summary = client === 'ethers' ? await ethers() : await viem();
  clearTimeout(watchdog);
  console.log(`chain interop (${client}): ok: ${summary}`);
  process.exit(0);
} catch (err) {
  console.error(`chain interop (${client}): FAILED:`, err);
  process.exit(1);
}
