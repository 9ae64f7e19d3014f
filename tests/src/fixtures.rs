//! Methods several tests register, each added to a test's own `Methods`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use jrpc_runtime::http::BearerAuth;
use jrpc_runtime::layers::Authorize;
use jrpc_runtime::{Caller as _, Context, Methods, RpcError};
use serde_json::value::RawValue;
use tokio::sync::{Semaphore, mpsc};

/// `add [a, b]`: the sum of two integers, answered at once.
pub fn add(methods: &mut Methods) {
    methods
        .register("add", &["a", "b"], |(a, b): (i64, i64), _| async move {
            Ok::<_, RpcError>(a + b)
        })
        .unwrap();
}

/// `sleep [ms]`: answers `ms` after sleeping that many milliseconds on Tokio's clock (virtual
/// under a paused clock).
pub fn sleep(methods: &mut Methods) {
    methods
        .register("sleep", &["ms"], |(ms,): (u64,), _| async move {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            Ok::<_, RpcError>(ms)
        })
        .unwrap();
}

/// `watch [topic]`: subscribes the caller's connection to `topic` in the registry its context
/// carries, and answers (`true` if it was not subscribed yet) once what other replicas publish
/// reaches it.
pub fn watch(methods: &mut Methods) {
    methods
        .register(
            "watch",
            &["topic"],
            |(topic,): (String,), ctx: Context| async move {
                let added = ctx.subscribe(&topic)?;
                if let Some(topics) = ctx.topics() {
                    topics.ready(&topic).await;
                }
                Ok::<_, RpcError>(added)
            },
        )
        .unwrap();
}

/// `news [text]`: a notification whose text lands in the channel returned.
pub fn news(methods: &mut Methods) -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    methods
        .register_notification("news", &["text"], move |(text,): (String,), _| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(text);
            }
        })
        .unwrap();
    rx
}

/// `big [n]`: a string of `n` `x`s, for answers of a chosen size.
///
/// Each answer is a copy of its size's JSON text, made once: encoding megabytes of string in a
/// debug build (serde_json's escape check, byte by byte) is most of what the memory tests would
/// otherwise spend, and the runtime's work per answer (its text written, buffered, sent) is the
/// same for a raw value.
pub fn big(methods: &mut Methods) {
    methods
        .register("big", &["n"], |(n,): (usize,), _| async move {
            Ok::<_, RpcError>(big_text(n))
        })
        .unwrap();
}

/// The JSON text of a string of `n` `x`s.
fn big_text(n: usize) -> Box<RawValue> {
    static MADE: Mutex<BTreeMap<usize, Box<RawValue>>> = Mutex::new(BTreeMap::new());
    let mut made = MADE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    made.entry(n)
        .or_insert_with(|| {
            let text = format!("\"{}\"", "x".repeat(n));
            RawValue::from_string(text).expect("a JSON string")
        })
        .clone()
}

/// `ping`: a notification that counts itself in `pings`.
pub fn count_pings(methods: &mut Methods, pings: &Arc<AtomicUsize>) {
    let pings = Arc::clone(pings);
    methods
        .register_notification("ping", &[], move |(): (), _| {
            let pings = Arc::clone(&pings);
            async move {
                pings.fetch_add(1, Ordering::SeqCst);
            }
        })
        .unwrap();
}

/// `ticks [n]`: `n` notifications `tick {"n": i}` on the caller's connection ([`Context::peer`]),
/// then `n`; an error `2 "no peer"` where the transport cannot push.
pub fn ticks(methods: &mut Methods) {
    methods
        .register("ticks", &["n"], |(n,): (u32,), ctx: Context| async move {
            let peer = ctx.peer().ok_or_else(|| RpcError::new(2, "no peer"))?;
            for i in 1..=n {
                peer.notify("tick", serde_json::json!({ "n": i }))
                    .await
                    .map_err(|err| RpcError::new(3, err.to_string()))?;
            }
            Ok::<_, RpcError>(n)
        })
        .unwrap();
}

/// `ask [q]`: calls the client's `answer [q]` on the caller's connection and answers what the
/// client answered.
pub fn ask(methods: &mut Methods) {
    methods
        .register("ask", &["q"], |(q,): (String,), ctx: Context| async move {
            let peer = ctx.peer().ok_or_else(|| RpcError::new(2, "no peer"))?;
            let answer: String = peer
                .call("answer", [q])
                .await
                .map_err(|err| RpcError::new(3, err.to_string()))?;
            Ok::<_, RpcError>(answer)
        })
        .unwrap();
}

/// The request header `name` a handler's context holds, if its transport has headers and the
/// value is text.
pub fn request_header(ctx: &Context, name: &str) -> Option<String> {
    ctx.headers()
        .and_then(|h| h.get(name))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Holds the calls of the `gate` method (see [`gate`]) until the test lets them through.
pub struct Gate {
    /// How many `gate` calls have started.
    pub entered: AtomicUsize,
    /// Each `gate` call takes a permit to finish.
    pub release: Semaphore,
    /// How many `gate` calls have finished.
    pub passed: AtomicUsize,
}

impl Gate {
    /// A closed gate, nothing entered yet.
    pub fn shared() -> Arc<Gate> {
        Arc::new(Gate {
            entered: AtomicUsize::new(0),
            release: Semaphore::new(0),
            passed: AtomicUsize::new(0),
        })
    }
}

/// `gate`: counts itself in `gate.entered`, waits for a permit of `gate.release`, counts itself
/// in `gate.passed`, and answers `"through"`.
pub fn gate(methods: &mut Methods, gate: &Arc<Gate>) {
    let g = Arc::clone(gate);
    methods
        .register("gate", &[], move |(): (), _| {
            let g = Arc::clone(&g);
            async move {
                g.entered.fetch_add(1, Ordering::SeqCst);
                g.release.acquire().await.unwrap().forget();
                g.passed.fetch_add(1, Ordering::SeqCst);
                Ok::<_, RpcError>("through")
            }
        })
        .unwrap();
}

/// What [`guarded`]'s layer saw: each call's method and id (`None` for a notification), in the
/// order it saw them.
pub type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A batch for a [`guarded`] table: a call of `add`, a call of `secret` (refused), and a
/// notification of `add`.
pub const GUARDED_BATCH: &str = concat!(
    r#"[{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1},"#,
    r#"{"jsonrpc":"2.0","method":"secret","id":2},"#,
    r#"{"jsonrpc":"2.0","method":"add","params":[3,4]}]"#,
);

/// The answer to [`GUARDED_BATCH`].
pub const GUARDED_ANSWER: &str = concat!(
    r#"[{"jsonrpc":"2.0","result":3,"id":1},"#,
    r#"{"jsonrpc":"2.0","error":{"code":-32003,"message":"Forbidden","data":{"method":"secret"}},"id":2}]"#,
);

/// What [`guarded`]'s layer sees of [`GUARDED_BATCH`].
pub fn guarded_batch_seen() -> Vec<(String, Option<String>)> {
    vec![
        ("add".to_owned(), Some("1".to_owned())),
        ("secret".to_owned(), Some("2".to_owned())),
        ("add".to_owned(), None),
    ]
}

/// `add` and `secret`, behind a call layer that records every call it sees and refuses
/// `secret` (`-32003`): what shows that a transport runs the layers for each element of a batch.
pub fn guarded(methods: &mut Methods) -> Seen {
    add(methods);
    methods
        .register("secret", &[], |(): (), _| async {
            Ok::<_, RpcError>("leaked")
        })
        .unwrap();
    let seen = Seen::default();
    let sink = Arc::clone(&seen);
    methods.layer(Authorize::new(move |method, ctx: &Context| {
        let id = ctx.id().map(ToString::to_string);
        sink.lock().unwrap().push((method.to_owned(), id));
        method != "secret"
    }));
    seen
}

/// What a bearer token of [`access`] gives.
#[derive(Clone, Debug, PartialEq)]
pub enum Access {
    /// Every method.
    Full,
    /// Every method but `write`.
    Read,
}

/// `whoami` (the [`Access`] in the context, shown as `Some(Read)`) and `write`, which an
/// `Authorize` layer lets only [`Access::Full`] call; and the bearer authentication that gives
/// the tokens `full` and `read` their access.
pub fn access(methods: &mut Methods) -> BearerAuth {
    methods
        .register("whoami", &[], |(): (), ctx: Context| async move {
            Ok::<_, RpcError>(format!("{:?}", ctx.extension::<Access>()))
        })
        .unwrap();
    methods
        .register("write", &[], |(): (), _| async {
            Ok::<_, RpcError>("written")
        })
        .unwrap();
    methods.layer(Authorize::new(|method, ctx: &Context| {
        ctx.extension::<Access>() == Some(&Access::Full) || method != "write"
    }));
    BearerAuth::tokens([("full", Access::Full), ("read", Access::Read)])
}

/// Counts itself in a shared number while it lives: held by a subscription's producer, it shows
/// when the producer was dropped.
pub struct Alive(Arc<std::sync::atomic::AtomicUsize>);

impl Alive {
    /// Counts one more in `count`, until dropped.
    pub fn new(count: &Arc<std::sync::atomic::AtomicUsize>) -> Self {
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Self(Arc::clone(count))
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}
