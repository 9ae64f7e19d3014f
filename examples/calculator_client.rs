//! Calls a calculator through the generated `CalculatorClient`, over HTTP, WebSocket or a Unix
//! socket (the URL's scheme picks), against any JSON-RPC server with these methods.
//!
//! ```text
//! cargo run --example calculator_client -- --url http://127.0.0.1:8080/rpc
//! cargo run --example calculator_client -- --url ws://127.0.0.1:8080/ws
//! cargo run --example calculator_client -- --url https://127.0.0.1:8443/rpc --ca cert.pem
//! cargo run --example calculator_client -- --url wss://127.0.0.1:8443/ws --ca cert.pem
//! cargo run --example calculator_client -- --url unix:/tmp/calc.sock
//! ```
//!
//! `--ca` trusts the CA certificates of a PEM file (a self-signed server's own certificate) besides
//! the system's roots.
//!
//! Its calls are one trace: each carries W3C trace context (over HTTP a `traceparent` header,
//! over WebSocket the upgrade's), of a new trace, or of `--traceparent VALUE`'s.

use jrpc_examples::{Args, CalculatorClient};
use jrpc_runtime::{Caller, Client, ClientError, ClientTls, TraceContext};

#[tokio::main]
async fn main() {
    let mut args = Args::from_env(
        "calculator_client",
        "calculator_client [--url http(s)://HOST:PORT/rpc | ws(s)://HOST:PORT/ws | unix:PATH] [--ca CERT.pem] [--traceparent VALUE]",
    );
    let url = args
        .value("--url")
        .unwrap_or_else(|| "http://127.0.0.1:8080/rpc".to_owned());
    let ca = args.value("--ca");
    let traceparent = args.value("--traceparent");
    args.finish();
    let trace = match traceparent {
        None => TraceContext::root(true),
        Some(value) => TraceContext::parse(&value, None).unwrap_or_else(|| {
            eprintln!("calculator_client: `--traceparent` takes a W3C traceparent value");
            std::process::exit(2);
        }),
    };
    let mut tls = ClientTls::new();
    if let Some(ca) = ca {
        tls = tls.ca_file(ca);
    }
    // Connecting (a WebSocket's upgrade) and every call are in the trace.
    let result = trace
        .scope(async {
            match Client::builder(url).tls(tls).connect().await {
                Ok(client) => run(CalculatorClient::new(client)).await,
                Err(err) => Err(err),
            }
        })
        .await;
    if let Err(err) = result {
        eprintln!("calculator_client: {err}");
        std::process::exit(1);
    }
}

async fn run<C: Caller>(calc: CalculatorClient<C>) -> Result<(), ClientError> {
    println!("add(2, 3) = {}", calc.add(2, 3).await?);
    println!("subtract(42, 23) = {}", calc.subtract(42, 23).await?);
    let data = calc.data().await?;
    let json =
        serde_json::to_string(&data).map_err(|err| ClientError::Malformed(err.to_string()))?;
    println!("get_data() = {json}");
    match calc.divide(1.0, 0.0).await {
        Ok(quotient) => println!("divide(1, 0) = {quotient}"),
        Err(ClientError::Failed(err)) => {
            println!("divide(1, 0) = error {}: {}", err.code(), err.message());
        }
        Err(err) => return Err(err),
    }
    calc.update(serde_json::json!([1, 2, 3])).await?;
    println!("update([1, 2, 3]) sent");
    Ok(())
}
