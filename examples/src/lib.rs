//! Runnable examples of jrpc, and the service they share: the calculator's trait (from which
//! `#[rpc_service]` makes both the server's method table and the client stub) and its
//! implementation.

use std::time::Duration;

use jrpc_runtime::layers::Authorize;
use jrpc_runtime::server::{SubscribeError, Topics};
use jrpc_runtime::{Caller as _, Context, ErrorCode, Methods, RpcError, ServiceInfo, rpc_service};
use serde_json::Value;
use serde_json::value::RawValue;

/// A calculator, and the methods the JSON-RPC 2.0 specification's examples call.
#[cfg_attr(feature = "schema", rpc_service(schema))]
#[cfg_attr(not(feature = "schema"), rpc_service)]
pub trait Calculator {
    /// Adds two integers.
    async fn add(&self, a: i64, b: i64) -> i64;
    /// Subtracts `subtrahend` from `minuend`.
    async fn subtract(&self, minuend: i64, subtrahend: i64) -> i64;
    /// Sums all the numbers given.
    #[rpc(params = whole)]
    async fn sum(&self, numbers: Vec<i64>) -> i64;
    /// Answers `["hello", 5]`.
    #[rpc(name = "get_data")]
    async fn data(&self) -> (String, u32);
    /// Divides; a zero divisor is the application error `1: division by zero`.
    async fn divide(&self, dividend: f64, divisor: f64) -> Result<f64, RpcError>;
    /// Answers its params unchanged, numbers exactly as sent.
    #[rpc(params = whole)]
    async fn echo(&self, params: Box<RawValue>) -> Box<RawValue>;
    /// Sleeps `ms` milliseconds, then answers `ms`.
    async fn sleep(&self, ms: u64) -> u64;
    /// The transport the call came over: `stdio`, `http`, `ws`, `unix` or `in-process`.
    async fn whoami(&self, ctx: &Context) -> String;
    /// Sends `count` notifications `tick {"n": i}` on the caller's connection, then answers
    /// `count`; an error where the transport cannot push (HTTP without an SSE answer).
    async fn ticks(&self, ctx: &Context, count: u32) -> Result<u32, RpcError>;
    /// Subscribes the caller's connection to `topic`'s announcements (a second watch of one
    /// topic changes nothing); answers once announcements from every replica reach it. An error
    /// where the transport cannot push (HTTP).
    async fn watch(&self, ctx: &Context, topic: String) -> Result<(), RpcError>;
    /// Sends the notification `announcement {"topic": topic, "text": text}` to every connection
    /// watching `topic`, on every replica sharing this one's Redis.
    async fn announce(&self, topic: String, text: String) -> Result<(), RpcError>;
    /// Accepts anything; does nothing visible.
    #[notification]
    #[rpc(params = whole)]
    async fn update(&self, values: Value);
    /// Accepts anything; does nothing visible.
    #[notification]
    #[rpc(params = whole)]
    async fn notify_hello(&self, values: Value);
    /// Accepts anything; does nothing visible.
    #[notification]
    #[rpc(params = whole)]
    async fn notify_sum(&self, values: Value);
}

/// The params of the notification `announcement`, members in this order.
#[derive(serde::Serialize)]
struct Announcement<'a> {
    topic: &'a str,
    text: &'a str,
}

/// The calculator's implementation; its topics are local to the process unless it is made
/// with a registry shared through Redis ([`Calc::with_topics`]).
#[derive(Clone, Debug, Default)]
pub struct Calc {
    topics: Topics,
}

impl Calc {
    /// A calculator whose `watch` and `announce` use `topics`.
    pub fn with_topics(topics: Topics) -> Self {
        Self { topics }
    }
}

/// What the calculator's OpenRPC document says of the service.
pub fn calculator_info() -> ServiceInfo {
    ServiceInfo::new("calculator", env!("CARGO_PKG_VERSION")).with_description(
        "A calculator, and the methods the JSON-RPC 2.0 specification's examples call.",
    )
}

/// What a bearer token lets its holder call: everything, or everything but what changes what
/// others see (`announce`, `watch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Every method.
    Full,
    /// Every method but `announce` and `watch`.
    Read,
}

/// Refuses `announce` and `watch` (`-32003`) to calls whose context holds [`Access::Read`], each
/// element of a batch on its own; calls without an [`Access`] (no token asked) may call anything.
pub fn read_only(methods: &mut Methods) {
    methods.layer(Authorize::new(|method, ctx: &Context| {
        ctx.extension::<Access>() != Some(&Access::Read) || !matches!(method, "announce" | "watch")
    }));
}

/// The method table of `calc`, answering `rpc.discover` as well.
pub fn calculator_methods(calc: Calc) -> Methods {
    let mut methods = calc.into_methods();
    methods.discovery(calculator_info());
    methods
}

impl Calculator for Calc {
    async fn add(&self, a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }

    async fn subtract(&self, minuend: i64, subtrahend: i64) -> i64 {
        minuend.wrapping_sub(subtrahend)
    }

    async fn sum(&self, numbers: Vec<i64>) -> i64 {
        numbers.into_iter().fold(0, i64::wrapping_add)
    }

    async fn data(&self) -> (String, u32) {
        ("hello".to_owned(), 5)
    }

    async fn divide(&self, dividend: f64, divisor: f64) -> Result<f64, RpcError> {
        if divisor == 0.0 {
            return Err(RpcError::new(1, "division by zero"));
        }
        Ok(dividend / divisor)
    }

    async fn echo(&self, params: Box<RawValue>) -> Box<RawValue> {
        params
    }

    async fn sleep(&self, ms: u64) -> u64 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        ms
    }

    async fn whoami(&self, ctx: &Context) -> String {
        ctx.transport().as_str().to_owned()
    }

    async fn ticks(&self, ctx: &Context, count: u32) -> Result<u32, RpcError> {
        let peer = ctx.peer().ok_or_else(|| {
            RpcError::new(
                2,
                "ticks needs a connection that stays open (stdio or WebSocket), or over HTTP `Accept: text/event-stream`",
            )
        })?;
        for n in 1..=count {
            peer.notify("tick", serde_json::json!({ "n": n }))
                .await
                .map_err(|err| RpcError::new(3, err.to_string()))?;
        }
        Ok(count)
    }

    async fn watch(&self, ctx: &Context, topic: String) -> Result<(), RpcError> {
        match self.topics.subscribe(ctx, &topic) {
            Ok(_) => {}
            Err(SubscribeError::NoConnection) => {
                return Err(RpcError::new(
                    ErrorCode::SERVER_ERROR,
                    "watch needs a connection that stays open (WebSocket or stdio): \
                     announcements cannot be pushed over HTTP",
                ));
            }
            Err(err) => return Err(err.into()),
        }
        self.topics.ready(&topic).await;
        Ok(())
    }

    async fn announce(&self, topic: String, text: String) -> Result<(), RpcError> {
        let params = Announcement {
            topic: &topic,
            text: &text,
        };
        self.topics
            .publish(&topic, "announcement", params)
            .map_err(|err| RpcError::new(4, format!("announce failed: {err}")))?;
        Ok(())
    }

    async fn update(&self, _values: Value) {}

    async fn notify_hello(&self, _values: Value) {}

    async fn notify_sum(&self, _values: Value) {}
}

/// An example's command line: flags and values taken by name, in any order; whatever is left is
/// an error that prints the usage line. Each example names what it takes, then calls
/// [`finish`](Args::finish):
///
/// ```no_run
/// let mut args = jrpc_examples::Args::from_env("calculator", "calculator [--listen ADDR]");
/// let listen = args.value("--listen");
/// args.finish();
/// ```
#[derive(Debug)]
pub struct Args {
    program: &'static str,
    usage: &'static str,
    args: Vec<String>,
    problem: Option<String>,
}

impl Args {
    /// The process's arguments, for `program`, whose usage is `usage` (without `usage: `).
    pub fn from_env(program: &'static str, usage: &'static str) -> Self {
        Self::new(program, usage, std::env::args().skip(1).collect())
    }

    /// `args` for `program`.
    pub fn new(program: &'static str, usage: &'static str, args: Vec<String>) -> Self {
        Self {
            program,
            usage,
            args,
            problem: None,
        }
    }

    /// Whether the flag `name` was given (taken off the list).
    pub fn flag(&mut self, name: &str) -> bool {
        match self.args.iter().position(|arg| arg == name) {
            Some(at) => {
                self.args.remove(at);
                true
            }
            None => false,
        }
    }

    /// The value after `name` (both taken off the list); `None` when `name` is not given. A
    /// `name` with no value after it is an error [`finish`](Self::finish) reports.
    pub fn value(&mut self, name: &str) -> Option<String> {
        let at = self.args.iter().position(|arg| arg == name)?;
        self.args.remove(at);
        if at < self.args.len() && !self.args[at].starts_with("--") {
            return Some(self.args.remove(at));
        }
        self.problem
            .get_or_insert_with(|| format!("`{name}` needs a value"));
        None
    }

    /// Ends the parsing: `--help` prints the usage and exits 0; a missing value or an argument
    /// nobody took prints what is wrong and the usage on stderr, and exits 2.
    pub fn finish(mut self) {
        if self.flag("--help") || self.flag("-h") {
            println!("usage: {}", self.usage);
            std::process::exit(0);
        }
        let problem = self.problem.take().or_else(|| {
            self.args
                .first()
                .map(|arg| format!("unknown argument `{arg}`"))
        });
        if let Some(problem) = problem {
            eprintln!("{}: {problem}\nusage: {}", self.program, self.usage);
            std::process::exit(2);
        }
    }
}

/// Logs to stderr at the levels `RUST_LOG` names (`RUST_LOG=debug` shows one line per request;
/// unset, only errors): stdout carries the protocol over stdio, and `listening on ...` over the
/// network.
pub fn log_to_stderr() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
