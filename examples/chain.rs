//! A made-up Ethereum chain, over HTTP and WebSocket: the methods an Ethereum client calls on a
//! node, and `newHeads` subscriptions, enough for ethers, viem, web3.py and jsonrpsee to use it
//! as a node.
//!
//! ```text
//! cargo run --example chain                                        # http://127.0.0.1:8545/rpc and ws://127.0.0.1:8545/ws
//! cargo run --example chain -- --listen 127.0.0.1:0 --block-ms 50  # any free port (the real one is printed), 20 blocks a second
//! ```
//!
//! It prints `listening on http://ADDR` once it accepts, then makes a block every `--block-ms`
//! milliseconds (default 1000), from block 0 at start. Blocks hold no transactions; their hashes
//! are made up from their numbers (the same on every run), with the sizes of real ones. It
//! answers:
//!
//! | method | answer |
//! | --- | --- |
//! | `eth_chainId` | `"0x539"` (1337, the id of local development chains) |
//! | `net_version` | `"1337"` |
//! | `web3_clientVersion` | `"jrpc-chain/VERSION"` |
//! | `eth_syncing` | `false` |
//! | `eth_blockNumber` | the latest block's number, as a hex quantity |
//! | `eth_getBlockByNumber(tag, full)` | the block (`"latest"`, `"earliest"`, `"pending"`, `"safe"`, `"finalized"` or a hex number), `null` for a number not made yet |
//! | `eth_getBlockByHash(hash, full)` | the block, if among the latest 1 024; else `null` |
//! | `eth_subscribe("newHeads")` | an id; then `eth_subscription` `{"subscription": ID, "result": HEADER}` for each new block |
//! | `eth_unsubscribe(id)` | `true` for a live subscription of the caller's connection, else `false` |
//!
//! The service is one `#[rpc_service]` trait, [`Eth`], in which `eth_subscribe` is declared with
//! `#[subscription]`: the runtime answers it with the subscription's id, sends the notifications
//! and serves `eth_unsubscribe`. `eth_subscribe` of another kind is `-32602`. Subscriptions need
//! a connection (WebSocket): over a plain HTTP `POST`, `eth_subscribe` is answered `-32000`. A
//! subscriber that falls behind loses its oldest heads, never its connection: only the latest
//! head matters to a client. Ctrl-C drains in-flight calls before it exits.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jrpc_examples::Args;
use jrpc_runtime::http::HttpServer;
use jrpc_runtime::server::Topics;
use jrpc_runtime::ws::WsSettings;
use jrpc_runtime::{ErrorCode, Items, RpcError, WhenFull, rpc_service};
use serde::{Deserialize, Serialize};
use serde_json::Value;

const USAGE: &str = "chain [--listen ADDR] [--block-ms N]";

/// The chain's id: 1337, that of local development chains (anvil, ganache, hardhat's own is
/// 31337).
const CHAIN_ID: u64 = 1337;

/// The topic each new head is published to, encoded once for every subscriber.
const NEW_HEADS: &str = "newHeads";

/// How many heads a subscriber may leave unread before its oldest are dropped.
const HEADS_BOUND: usize = 16;

#[tokio::main]
async fn main() {
    jrpc_examples::log_to_stderr();
    let mut args = Args::from_env("chain", USAGE);
    let listen = args.value("--listen");
    let block_ms = args.value("--block-ms");
    args.finish();
    let block_ms = match block_ms.map(|ms| ms.parse::<u64>()) {
        None => 1000,
        Some(Ok(ms)) if ms > 0 => ms,
        Some(_) => {
            eprintln!(
                "chain: `--block-ms` takes a number of milliseconds, at least 1\nusage: {USAGE}"
            );
            std::process::exit(2);
        }
    };
    let listen = listen.as_deref().unwrap_or("127.0.0.1:8545");
    if let Err(err) = serve(listen, Duration::from_millis(block_ms)).await {
        eprintln!("chain: {err}");
        std::process::exit(1);
    }
}

/// Serves a chain making a block `every` on `listen`, until Ctrl-C.
async fn serve(listen: &str, every: Duration) -> Result<(), String> {
    let chain = Chain::new(every);
    let server = HttpServer::builder(chain.clone().into_methods())
        .websocket(WsSettings::new())
        .build()
        .map_err(|err| err.to_string())?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|err| format!("cannot listen on {listen}: {err}"))?;
    let addr = listener.local_addr().map_err(|err| err.to_string())?;
    println!("listening on http://{addr}");
    let _ = std::io::stdout().flush();
    let producing = tokio::spawn(chain.clone().produce());
    let shutdown = server.shutdown_handle();
    let serving = tokio::spawn(async move { server.serve(listener).await });
    let _ = tokio::signal::ctrl_c().await;
    eprintln!("chain: shutting down");
    producing.abort();
    let drained = shutdown.shutdown().await;
    eprintln!("chain: {drained:?}");
    let _ = serving.await;
    Ok(())
}

/// The methods of an Ethereum node that clients call on connecting, and to follow new blocks.
/// Served only: no client stub is generated.
#[rpc_service(client = false)]
pub trait Eth {
    /// Returns the chain's id: `"0x539"`.
    #[rpc(name = "eth_chainId")]
    async fn chain_id(&self) -> String;
    /// Returns the network's id, in decimal: `"1337"`.
    #[rpc(name = "net_version")]
    async fn net_version(&self) -> String;
    /// Returns the node's name and version.
    #[rpc(name = "web3_clientVersion")]
    async fn client_version(&self) -> String;
    /// Returns `false`: the chain is made here, never synced.
    #[rpc(name = "eth_syncing")]
    async fn syncing(&self) -> bool;
    /// Returns the latest block's number, as a hex quantity.
    #[rpc(name = "eth_blockNumber")]
    async fn block_number(&self) -> String;
    /// Returns the block `tag` names, or `null` when it is not made yet. The blocks hold no
    /// transactions, so `full` changes nothing.
    #[rpc(name = "eth_getBlockByNumber")]
    async fn block_by_number(&self, tag: BlockTag, full: Option<bool>) -> Option<Block>;
    /// Returns the block whose hash is `hash` among the latest 1 024, or `null`.
    #[rpc(name = "eth_getBlockByHash")]
    async fn block_by_hash(&self, hash: String, full: Option<bool>) -> Option<Block>;
    /// Subscribes to events of `kind`: `newHeads` only, with no `params`. Each new block's
    /// header goes out as an `eth_subscription` notification until `eth_unsubscribe(id)`.
    #[subscription(
        name = "eth_subscribe",
        notification = "eth_subscription",
        unsubscribe = "eth_unsubscribe"
    )]
    async fn subscribe(
        &self,
        kind: String,
        params: Option<Value>,
    ) -> Result<Items<Header>, RpcError>;
}

/// A made-up chain: its latest block, and the topic its heads go out on.
#[derive(Clone, Debug)]
struct Chain(Arc<State>);

#[derive(Debug)]
struct State {
    latest: AtomicU64,
    every: Duration,
    /// Block 0's timestamp, in seconds since the Unix epoch.
    genesis: u64,
    heads: Topics,
}

impl Chain {
    /// Returns a chain at block 0, made now, which makes a block `every` once
    /// [`produce`](Self::produce) runs.
    fn new(every: Duration) -> Self {
        let genesis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        Self(Arc::new(State {
            latest: AtomicU64::new(0),
            every,
            genesis,
            heads: Topics::new(),
        }))
    }

    /// Returns the latest block's number.
    fn latest(&self) -> u64 {
        self.0.latest.load(Ordering::Acquire)
    }

    /// Makes a block every `every`, for ever: each is the latest (for calls) before its head is
    /// published to the subscribers, so a client told of a head finds its block.
    async fn produce(self) {
        let mut ticks = tokio::time::interval(self.0.every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            let number = self.0.latest.fetch_add(1, Ordering::AcqRel) + 1;
            if let Err(err) = self
                .0
                .heads
                .publish(NEW_HEADS, NEW_HEADS, self.header(number))
            {
                eprintln!("chain: block {number}'s head was not published: {err}");
            }
        }
    }

    /// Returns block `number`'s header; `number` must be made already.
    fn header(&self, number: u64) -> Header {
        let every = u64::try_from(self.0.every.as_millis()).unwrap_or(u64::MAX);
        Header {
            number: quantity(number),
            hash: block_hash(number),
            parent_hash: match number {
                0 => hex32([0; 4]),
                _ => block_hash(number - 1),
            },
            nonce: "0x0000000000000000".to_owned(),
            mix_hash: made_up(number, 1),
            sha3_uncles: EMPTY_UNCLES.to_owned(),
            logs_bloom: format!("0x{}", "0".repeat(512)),
            transactions_root: EMPTY_TRIE.to_owned(),
            state_root: made_up(number, 2),
            receipts_root: EMPTY_TRIE.to_owned(),
            miner: MINER.to_owned(),
            difficulty: quantity(0),
            extra_data: EXTRA_DATA.to_owned(),
            gas_limit: quantity(30_000_000),
            gas_used: quantity(0),
            timestamp: quantity(self.0.genesis + number.saturating_mul(every) / 1000),
            base_fee_per_gas: quantity(1_000_000_000),
        }
    }

    /// Returns block `number`, if it is made.
    fn block(&self, number: u64) -> Option<Block> {
        (number <= self.latest()).then(|| Block {
            header: self.header(number),
            total_difficulty: quantity(0),
            size: quantity(BLOCK_SIZE),
            transactions: Vec::new(),
            uncles: Vec::new(),
        })
    }
}

impl Eth for Chain {
    async fn chain_id(&self) -> String {
        quantity(CHAIN_ID)
    }

    async fn net_version(&self) -> String {
        CHAIN_ID.to_string()
    }

    async fn client_version(&self) -> String {
        concat!("jrpc-chain/", env!("CARGO_PKG_VERSION")).to_owned()
    }

    async fn syncing(&self) -> bool {
        false
    }

    async fn block_number(&self) -> String {
        quantity(self.latest())
    }

    async fn block_by_number(&self, tag: BlockTag, _full: Option<bool>) -> Option<Block> {
        self.block(match tag {
            BlockTag::Latest => self.latest(),
            BlockTag::Earliest => 0,
            BlockTag::Number(number) => number,
        })
    }

    async fn block_by_hash(&self, hash: String, _full: Option<bool>) -> Option<Block> {
        // Hashes are made from numbers, not kept: look among the latest blocks only.
        let latest = self.latest();
        (latest.saturating_sub(1023)..=latest)
            .rev()
            .find(|&number| block_hash(number).eq_ignore_ascii_case(&hash))
            .and_then(|number| self.block(number))
    }

    async fn subscribe(
        &self,
        kind: String,
        params: Option<Value>,
    ) -> Result<Items<Header>, RpcError> {
        if kind != NEW_HEADS {
            return Err(RpcError::new(
                ErrorCode::INVALID_PARAMS,
                format!("unsupported subscription kind {kind:?}"),
            )
            .with_data(&serde_json::json!({ "supported": [NEW_HEADS] })));
        }
        if params.is_some_and(|params| !params.is_null()) {
            return Err(RpcError::new(
                ErrorCode::INVALID_PARAMS,
                "newHeads takes no params",
            ));
        }
        Ok(self
            .0
            .heads
            .items(NEW_HEADS)
            .bound(HEADS_BOUND, 64 * 1024)
            .when_full(WhenFull::DropOldest))
    }
}

/// Names a block: by number, or by a tag. `pending`, `safe` and `finalized` are the latest
/// block: nothing is pending, and every block is final once made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum BlockTag {
    /// `latest`, `pending`, `safe`, `finalized`.
    Latest,
    /// `earliest`: block 0.
    Earliest,
    /// A hex quantity.
    Number(u64),
}

impl TryFrom<String> for BlockTag {
    type Error = String;

    fn try_from(tag: String) -> Result<Self, String> {
        match tag.as_str() {
            "latest" | "pending" | "safe" | "finalized" => Ok(Self::Latest),
            "earliest" => Ok(Self::Earliest),
            _ => tag
                .strip_prefix("0x")
                .filter(|digits| !digits.is_empty())
                .and_then(|digits| u64::from_str_radix(digits, 16).ok())
                .map(Self::Number)
                .ok_or_else(|| {
                    format!("{tag:?} is no block: a hex number, \"latest\" or \"earliest\"")
                }),
        }
    }
}

/// Holds a block's header, as Ethereum nodes send it in `newHeads` notifications.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    number: String,
    hash: String,
    parent_hash: String,
    nonce: String,
    mix_hash: String,
    sha3_uncles: String,
    logs_bloom: String,
    transactions_root: String,
    state_root: String,
    receipts_root: String,
    miner: String,
    difficulty: String,
    extra_data: String,
    gas_limit: String,
    gas_used: String,
    timestamp: String,
    base_fee_per_gas: String,
}

/// Holds a block, as `eth_getBlockByNumber` answers it: its header's fields and its own.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Block {
    #[serde(flatten)]
    header: Header,
    total_difficulty: String,
    size: String,
    transactions: Vec<String>,
    uncles: Vec<String>,
}

/// The uncles' hash of a block without uncles: Keccak-256 of the RLP of an empty list.
const EMPTY_UNCLES: &str = "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347";

/// The root of an empty trie: a block without transactions has it as its transactions' and
/// receipts' roots.
const EMPTY_TRIE: &str = "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421";

/// The address every block's reward goes to.
const MINER: &str = "0x00000000000000000000000000000000000a11ce";

/// `jrpc chain`, in hex.
const EXTRA_DATA: &str = "0x6a72706320636861696e";

/// The size of an empty block, as RLP, about.
const BLOCK_SIZE: u64 = 0x220;

/// Returns `n` as an Ethereum hex quantity: `0x` and no leading zeros (`0x0` for zero).
fn quantity(n: u64) -> String {
    format!("{n:#x}")
}

/// Returns block `number`'s hash.
fn block_hash(number: u64) -> String {
    made_up(number, 0)
}

/// Returns 32 bytes of hex made up from `number` and `field`, the same on every run.
fn made_up(number: u64, field: u64) -> String {
    let seed = number.wrapping_mul(4).wrapping_add(field << 62);
    hex32([0, 1, 2, 3].map(|word| splitmix64(seed ^ (word << 56))))
}

fn hex32(words: [u64; 4]) -> String {
    format!(
        "0x{:016x}{:016x}{:016x}{:016x}",
        words[0], words[1], words[2], words[3]
    )
}

/// Mixes `x` into 64 bits that look random: SplitMix64's output function.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
