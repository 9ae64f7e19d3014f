//! The client side of a generated stub: typed batches over every caller (in-process, HTTP,
//! WebSocket, a `Peer`, a Unix socket, `dyn DynCaller`), and typed errors (`client_error = E`,
//! `RpcError::data_as`).

use std::sync::Arc;

use jrpc_runtime::http::HttpServer;
use jrpc_runtime::server::SocketServer;
use jrpc_runtime::ws::WsClient;
use jrpc_runtime::{
    Batch, Caller, Client, ClientError, Context, DynCaller, Methods, Peer, PeerConfig, RpcError,
    rpc_service,
};
use jrpc_tests::bounded;
use jrpc_tests::servers::serve_http;
use serde::{Deserialize, Serialize};

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Shortfall {
    needed: u64,
    available: u64,
}

#[rpc_service]
trait Bank {
    async fn balance(&self) -> u64;
    async fn withdraw(&self, amount: u64) -> Result<u64, RpcError>;
    async fn transport(&self, ctx: &Context) -> String;
    #[notification]
    async fn audit(&self, note: String);
}

struct Account;

impl Bank for Account {
    async fn balance(&self) -> u64 {
        100
    }
    async fn withdraw(&self, amount: u64) -> Result<u64, RpcError> {
        if amount > 100 {
            let shortfall = Shortfall {
                needed: amount,
                available: 100,
            };
            return Err(RpcError::new(1001, "insufficient funds").with_data(&shortfall));
        }
        if amount == 0 {
            return Err(RpcError::new(1002, "nothing to withdraw"));
        }
        Ok(100 - amount)
    }
    async fn transport(&self, ctx: &Context) -> String {
        ctx.transport().to_string()
    }
    async fn audit(&self, _note: String) {}
}

/// One batch through the stub: three calls of three types, a notification between them, and
/// each answer (an error included) taken by its slot.
async fn typed_batch<C: Caller>(client: &BankClient<C>, transport: &str) {
    let mut batch = client.batch();
    let balance = batch.balance();
    batch.audit("checked".to_owned());
    let refused = batch.withdraw(500);
    let left = batch.withdraw(30);
    let seen = batch.transport();
    let mut answers = batch.await.unwrap();
    assert_eq!(answers.len(), 4, "{transport}");
    assert_eq!(answers.take(left).unwrap(), 70, "{transport}");
    assert_eq!(answers.take(balance).unwrap(), 100, "{transport}");
    assert_eq!(answers.take(seen).unwrap(), transport);
    let err = answers.take(refused).unwrap_err();
    let rpc = err.rpc_error().unwrap();
    assert_eq!(rpc.code().code(), 1001, "{transport}");
    let data = rpc.data_as::<Shortfall>().unwrap().unwrap();
    assert_eq!(
        data,
        Shortfall {
            needed: 500,
            available: 100
        }
    );
    assert!(answers.is_empty());
}

#[tokio::test]
async fn typed_batches_over_every_caller() {
    bounded(async {
        // In-process.
        typed_batch(&BankClient::new(Account.into_methods()), "in-process").await;

        // HTTP (one JSON-RPC batch) and WebSocket (a Peer: separate messages in one write).
        let (addr, _serving) =
            serve_http(HttpServer::builder(Account.into_methods()).build().unwrap()).await;
        let http = Client::connect(&format!("http://{addr}/rpc"))
            .await
            .unwrap();
        typed_batch(&BankClient::new(http), "http").await;
        let ws = WsClient::connect(&format!("ws://{addr}/ws"), Methods::new())
            .await
            .unwrap();
        typed_batch(&BankClient::new(ws), "ws").await;

        // A Peer over a byte stream of its own.
        let (near, far) = tokio::io::duplex(4096);
        let (_server, driver) = Peer::connect(far, Account.into_methods(), PeerConfig::default());
        tokio::spawn(driver);
        let (peer, driver) = Peer::connect(near, Methods::new(), PeerConfig::default());
        tokio::spawn(driver);
        typed_batch(&BankClient::new(peer.clone()), "stream").await;

        // Behind `dyn DynCaller`.
        let any: Arc<dyn DynCaller> = Arc::new(peer);
        typed_batch(&BankClient::new(any), "stream").await;
    })
    .await;
}

#[cfg(unix)]
#[tokio::test]
async fn typed_batch_over_a_unix_socket() {
    let path = std::env::temp_dir().join(format!("jrpc-stub-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let server = SocketServer::builder(Account.into_methods())
        .build()
        .unwrap();
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let serving = tokio::spawn({
        let server = server.clone();
        async move { server.serve_unix(listener).await }
    });
    bounded(async {
        let client = Client::connect(&format!("unix:{}", path.display()))
            .await
            .unwrap();
        typed_batch(&BankClient::new(client), "unix").await;
    })
    .await;
    serving.abort();
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn a_batch_fails_whole_when_params_do_not_encode_and_slots_stay_with_their_batch() {
    let methods = Account.into_methods();
    // A map with non-string keys has no JSON form: nothing is sent.
    let mut batch = Batch::new();
    let _balance = batch.call::<u64>("balance", ());
    let mut keys = std::collections::BTreeMap::new();
    keys.insert((1, 2), 3);
    let _bad = batch.call::<u64>("withdraw", [keys]);
    assert!(matches!(
        batch.send(&methods).await,
        Err(ClientError::Encode(_))
    ));

    let mut first = Batch::new();
    let _mine = first.call::<u64>("balance", ());
    let mut second = Batch::new();
    let theirs = second.call::<u64>("balance", ());
    let mut answers = first.send(&methods).await.unwrap();
    assert!(matches!(
        answers.take(theirs),
        Err(ClientError::Malformed(_))
    ));

    // An empty batch sends nothing and has no answers.
    let empty = BankClient::new(&methods).batch().await.unwrap();
    assert!(empty.is_empty());
}

/// What a bank's client handles: the server's codes as variants, the rest kept whole.
#[derive(Debug, thiserror::Error)]
enum BankError {
    #[error("insufficient funds: {0:?}")]
    Insufficient(Option<Shortfall>),
    #[error("nothing to withdraw")]
    Nothing,
    #[error(transparent)]
    Client(ClientError),
}

impl From<ClientError> for BankError {
    fn from(err: ClientError) -> Self {
        match err.rpc_error().map(|rpc| (rpc.code().code(), rpc)) {
            Some((1001, rpc)) => Self::Insufficient(rpc.data_as().and_then(Result::ok)),
            Some((1002, _)) => Self::Nothing,
            _ => Self::Client(err),
        }
    }
}

mod typed {
    use super::{BankError, Context, RpcError, rpc_service};

    /// The same service, its stub failing with `BankError`.
    #[rpc_service(client_error = BankError)]
    pub(super) trait Bank {
        async fn balance(&self) -> u64;
        async fn withdraw(&self, amount: u64) -> Result<u64, RpcError>;
        async fn transport(&self, ctx: &Context) -> String;
        #[notification]
        async fn audit(&self, note: String);
    }
}

#[tokio::test]
async fn a_stub_with_client_error_maps_codes_to_the_users_enum() {
    let client = typed::BankClient::new(Account.into_methods());
    assert_eq!(client.withdraw(30).await.unwrap(), 70);
    match client.withdraw(500).await {
        Err(BankError::Insufficient(Some(shortfall))) => assert_eq!(shortfall.needed, 500),
        other => panic!("{other:?}"),
    }
    assert!(matches!(client.withdraw(0).await, Err(BankError::Nothing)));
    client.audit("ok".to_owned()).await.unwrap();

    // What is not the server's error stays a `ClientError`.
    let mut table = Methods::new();
    table
        .register("withdraw", &["amount"], |(_,): (u64,), _| async {
            Ok::<_, RpcError>("not a number")
        })
        .unwrap();
    let client = typed::BankClient::new(table);
    assert!(matches!(
        client.withdraw(1).await,
        Err(BankError::Client(ClientError::Malformed(_)))
    ));
    assert!(matches!(
        client.balance().await,
        Err(BankError::Client(ClientError::Failed(_)))
    ));
}
