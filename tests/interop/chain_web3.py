"""Drives the chain example with web3.py (pinned in requirements.txt) as it drives a node: an
AsyncWeb3 on a WebSocketProvider with its defaults (requests in binary frames), `eth.subscribe`
of `newHeads`, a few heads read, `eth.unsubscribe`.

  python chain_web3.py ws://127.0.0.1:PORT/ws

Exits 0 when every step behaved, 1 with the reason otherwise. Each wait is for a message; only
the whole run is bounded in time.
"""

import asyncio
import sys

from web3 import AsyncWeb3, WebSocketProvider

LIMIT_S = 30
HEADS = 3


async def main(url: str) -> None:
    provider = WebSocketProvider(url)
    # The default this test is about: web3.py sends its requests in binary frames.
    assert provider.use_text_frames is False, provider.use_text_frames
    async with AsyncWeb3(provider) as w3:
        assert await w3.eth.chain_id == 1337
        subscription = await w3.eth.subscribe("newHeads")
        assert subscription.startswith("0x"), subscription
        heads = []
        async for message in w3.socket.process_subscriptions():
            assert message["subscription"] == subscription, message
            heads.append(message["result"])
            if len(heads) == HEADS:
                break
        numbers = [head["number"] for head in heads]
        assert numbers == sorted(set(numbers)), numbers
        for head in heads:
            assert len(head["hash"]) == 32 and len(head["parentHash"]) == 32, head
            assert len(head["logsBloom"]) == 256, head
        assert await w3.eth.unsubscribe(subscription) is True
        # Gone from the server too: a second unsubscribe, sent as is, answers false.
        again = await w3.provider.make_request("eth_unsubscribe", [subscription])
        assert again["result"] is False, again

        block = await w3.eth.get_block(numbers[-1])
        assert block["hash"] == heads[-1]["hash"], (block, heads[-1])
        assert block["number"] == numbers[-1] and block["transactions"] == [], block
        assert await w3.eth.block_number >= numbers[-1]
    print(f"chain web3.py interop: ok: heads {', '.join(map(str, numbers))}")


if __name__ == "__main__":
    try:
        asyncio.run(asyncio.wait_for(main(sys.argv[1]), LIMIT_S))
    except BaseException as err:  # noqa: BLE001 - any failure is reported the same way
        print(f"chain web3.py interop: FAILED: {err!r}", file=sys.stderr)
        sys.exit(1)
