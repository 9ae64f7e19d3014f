//! The macro's decisions, seen on the wire: a return type is a `Result` by
//! its type (an alias answers `Err` as an error; a type named `Result` that
//! is not one answers as a value), the stub's name and absence, methods
//! sharing a wire name under exclusive `#[cfg]`s, lifetime parameters, a
//! type of one's own named `Context`, `'static` borrows without a stub,
//! supertraits served by merging, and sixteen parameters.
#![deny(warnings)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use jrpc_runtime::{ClientError, Context, Methods, ParamEncoding, RpcError, rpc_service};
use serde_json::{Value, json};

async fn call(methods: &Methods, method: &str, params: Value) -> Value {
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let answer = methods
        .handle(&request.to_string())
        .await
        .expect("a call is answered");
    serde_json::from_str(&answer).expect("the answer is JSON")
}

// ---------------------------------------------------------------------------
// Results, decided by the type.

type Answer = Result<u8, RpcError>;

/// A value that happens to be named `Result`.
mod wrapped {
    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq, Eq)]
    pub struct Result<T> {
        pub value: T,
    }
}

struct Calc;

#[rpc_service]
impl Calc {
    fn five(&self) -> Answer {
        Ok(5)
    }
    fn fail(&self) -> Answer {
        Err(RpcError::new(7, "seven"))
    }
    async fn fail_later(&self) -> Answer {
        Err(RpcError::new(8, "eight"))
    }
    fn wrapped(&self) -> wrapped::Result<u8> {
        wrapped::Result { value: 5 }
    }
}

#[tokio::test]
async fn an_aliased_result_answers_err_as_an_error() {
    let m = Calc.into_methods();
    assert_eq!(call(&m, "five", json!([])).await["result"], 5);
    for (method, code) in [("fail", 7), ("fail_later", 8)] {
        let answer = call(&m, method, json!([])).await;
        assert_eq!(answer["error"]["code"], code, "{answer}");
        assert!(answer.get("result").is_none(), "{answer}");
    }
}

#[tokio::test]
async fn a_type_named_result_answers_as_a_value() {
    let m = Calc.into_methods();
    assert_eq!(
        call(&m, "wrapped", json!([])).await["result"],
        json!({"value": 5})
    );
}

/// An error of the crate.
#[derive(Debug)]
pub struct Missing(String);

impl From<Missing> for RpcError {
    fn from(err: Missing) -> Self {
        RpcError::new(-32004, format!("no {}", err.0))
    }
}

/// A crate's own one-argument `Result`, as `io::Result` is.
mod store {
    pub type Result<T> = std::result::Result<T, super::Missing>;
}

/// A `Result` alias naming its success type: the stub can use it.
#[rpc_service]
pub trait Store {
    /// Finds a value.
    fn find(&self, key: String) -> store::Result<u32>;
}

/// Answers the alias without a stub.
#[rpc_service(client = false)]
pub trait Aliased {
    /// Through an alias that hides the success type.
    fn five(&self) -> Answer;
}

struct Shelf;

impl Store for Shelf {
    fn find(&self, key: String) -> store::Result<u32> {
        if key == "apples" {
            Ok(3)
        } else {
            Err(Missing(key))
        }
    }
}

impl Aliased for Shelf {
    fn five(&self) -> Answer {
        Err(RpcError::new(5, "five"))
    }
}

#[tokio::test]
async fn a_one_argument_alias_works_through_the_stub() {
    let client = StoreClient::new(Store::into_methods(Shelf));
    assert_eq!(client.find("apples".into()).await.unwrap(), 3);
    let err = client.find("pears".into()).await.unwrap_err();
    let ClientError::Failed(err) = err else {
        panic!("{err:?}");
    };
    assert_eq!(err.code().code(), -32004);
    assert_eq!(err.message(), "no pears");
}

#[tokio::test]
async fn a_trait_without_a_stub_may_use_any_alias() {
    let m = Aliased::into_methods(Shelf);
    assert_eq!(call(&m, "five", json!([])).await["error"]["code"], 5);
}

// ---------------------------------------------------------------------------
// The stub's name.

/// A type of the name the stub would have had.
#[derive(Debug, PartialEq, Eq)]
pub struct CalculatorClient(u8);

/// Its stub named otherwise.
#[rpc_service(client = "Remote")]
pub trait Calculator {
    /// Adds.
    async fn add(&self, a: i64, b: i64) -> i64;
}

/// No stub: the stub's own names are free for methods.
#[rpc_service(client = false)]
pub trait Builder {
    /// A method named like the stub's constructor.
    #[allow(clippy::new_ret_no_self, clippy::wrong_self_convention)]
    fn new(&self) -> u32;
    /// And like its accessor.
    fn caller(&self) -> u32;
}

struct Adder;

impl Calculator for Adder {
    async fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }
}

impl Builder for Adder {
    #[allow(clippy::new_ret_no_self, clippy::wrong_self_convention)]
    fn new(&self) -> u32 {
        1
    }
    fn caller(&self) -> u32 {
        2
    }
}

#[tokio::test]
async fn a_renamed_stub_calls_its_service() {
    assert_eq!(CalculatorClient(1), CalculatorClient(1));
    let client = Remote::new(Calculator::into_methods(Adder));
    assert_eq!(client.add(2, 3).await.unwrap(), 5);
    let client = client.with_encoding(ParamEncoding::Named);
    assert_eq!(client.add(4, 5).await.unwrap(), 9);
}

#[tokio::test]
async fn without_a_stub_its_names_are_methods() {
    let m = Builder::into_methods(Adder);
    assert_eq!(call(&m, "new", json!([])).await["result"], 1);
    assert_eq!(call(&m, "caller", json!([])).await["result"], 2);
}

// ---------------------------------------------------------------------------
// One wire name under exclusive `#[cfg]`s.

/// One `os` method in any build.
#[rpc_service]
pub trait System {
    /// On Unix.
    #[cfg(unix)]
    #[rpc(name = "os")]
    fn os_unix(&self) -> String;
    /// Elsewhere.
    #[cfg(not(unix))]
    #[rpc(name = "os")]
    fn os_other(&self) -> String;
}

impl System for Adder {
    #[cfg(unix)]
    fn os_unix(&self) -> String {
        "unix".to_owned()
    }
    #[cfg(not(unix))]
    fn os_other(&self) -> String {
        "other".to_owned()
    }
}

#[tokio::test]
async fn exclusive_cfgs_share_a_wire_name() {
    let m = System::into_methods(Adder);
    let expected = if cfg!(unix) { "unix" } else { "other" };
    assert_eq!(call(&m, "os", json!([])).await["result"], expected);
    let client = SystemClient::new(m);
    #[cfg(unix)]
    assert_eq!(client.os_unix().await.unwrap(), "unix");
    #[cfg(not(unix))]
    assert_eq!(client.os_other().await.unwrap(), "other");
}

// ---------------------------------------------------------------------------
// Lifetimes, a `Context` of one's own, `'static` borrows.

mod own {
    /// A type of one's own named `Context`.
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct Context {
        /// Who.
        pub user: String,
    }
}

/// Lifetimes and contexts. (The lifetimes are written out on purpose; the
/// lints allowed on the trait and its methods are copied onto the stub.)
#[rpc_service]
#[allow(clippy::len_without_is_empty)]
pub trait Session {
    /// A named receiver lifetime.
    #[allow(clippy::needless_lifetimes)]
    fn len<'a>(&'a self) -> usize;
    /// The runtime's context, with a lifetime.
    #[allow(clippy::needless_lifetimes)]
    fn transport<'c>(&self, ctx: &'c Context) -> String;
    /// A `Context` of one's own, by value: a parameter like any other.
    fn greet(&self, ctx: own::Context) -> String;
}

struct Desk;

#[allow(clippy::needless_lifetimes)]
impl Session for Desk {
    fn len<'a>(&'a self) -> usize {
        3
    }
    fn transport<'c>(&self, ctx: &'c Context) -> String {
        ctx.transport().to_string()
    }
    fn greet(&self, ctx: own::Context) -> String {
        format!("hello {}", ctx.user)
    }
}

#[tokio::test]
async fn lifetimes_and_contexts() {
    let m = Desk.into_methods();
    assert_eq!(call(&m, "len", json!([])).await["result"], 3);
    assert_eq!(
        call(&m, "transport", json!([])).await["result"],
        "in-process"
    );
    assert_eq!(
        call(&m, "greet", json!([{"user": "ann"}])).await["result"],
        "hello ann"
    );
    assert_eq!(
        call(&m, "greet", json!({"ctx": {"user": "bo"}})).await["result"],
        "hello bo"
    );
    let answer = call(&m, "greet", json!([])).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let client = SessionClient::new(m).with_encoding(ParamEncoding::Named);
    let who = own::Context {
        user: "cy".to_owned(),
    };
    assert_eq!(client.greet(who).await.unwrap(), "hello cy");
    assert_eq!(client.transport().await.unwrap(), "in-process");
}

struct Info;

#[rpc_service]
impl Info {
    fn version(&self) -> &'static str {
        "1.0"
    }
    fn names(&self) -> Vec<&'static str> {
        vec!["a", "b"]
    }
}

#[tokio::test]
async fn static_borrows_without_a_stub() {
    let m = Info.into_methods();
    assert_eq!(call(&m, "version", json!([])).await["result"], "1.0");
    assert_eq!(
        call(&m, "names", json!([])).await["result"],
        json!(["a", "b"])
    );
}

// ---------------------------------------------------------------------------
// Supertraits, and the widest methods.

/// A base service.
#[rpc_service]
pub trait Base {
    /// From the base.
    fn version(&self) -> u32;
}

/// A service extending it: its table has its own methods only.
#[rpc_service]
pub trait Extended: Base + Send + Sync {
    /// Its own.
    fn name(&self) -> String;
}

#[derive(Clone)]
struct Shared(Arc<AtomicU32>);

impl Base for Shared {
    fn version(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
}

impl Extended for Shared {
    fn name(&self) -> String {
        "shared".to_owned()
    }
}

#[tokio::test]
async fn supertraits_are_served_by_merging_their_tables() {
    let shared = Shared(Arc::new(AtomicU32::new(2)));
    let alone = Extended::into_methods(shared.clone());
    assert_eq!(
        call(&alone, "version", json!([])).await["error"]["code"],
        -32601
    );
    let mut m = Extended::into_methods(shared.clone());
    m.merge(Base::into_methods(shared)).unwrap();
    assert_eq!(call(&m, "name", json!([])).await["result"], "shared");
    assert_eq!(call(&m, "version", json!([])).await["result"], 2);
}

/// Sixteen parameters, the most.
#[rpc_service]
pub trait Wide {
    /// Sums sixteen values.
    #[allow(clippy::too_many_arguments)]
    #[rustfmt::skip]
    fn sum(
        &self,
        a: u8, b: u8, c: u8, d: u8, e: u8, f: u8, g: u8, h: u8,
        i: u8, j: u8, k: u8, l: u8, m: u8, n: u8, o: u8, p: u8,
    ) -> u32;
}

impl Wide for Adder {
    #[rustfmt::skip]
    fn sum(
        &self,
        a: u8, b: u8, c: u8, d: u8, e: u8, f: u8, g: u8, h: u8,
        i: u8, j: u8, k: u8, l: u8, m: u8, n: u8, o: u8, p: u8,
    ) -> u32 {
        [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p]
            .iter()
            .map(|&x| u32::from(x))
            .sum()
    }
}

#[tokio::test]
async fn sixteen_parameters() {
    let m = Wide::into_methods(Adder);
    let params: Vec<u8> = (1..=16).collect();
    assert_eq!(call(&m, "sum", json!(params)).await["result"], 136);
    let answer = call(&m, "sum", json!((1..=17).collect::<Vec<u8>>())).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let client = WideClient::new(m);
    assert_eq!(
        client
            .sum(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
            .await
            .unwrap(),
        16
    );
}
