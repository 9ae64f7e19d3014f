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

use jrpc_examples::{Args, CalculatorClient};
use jrpc_runtime::{Caller, Client, ClientError, ClientTls};

#[tokio::main]
async fn main() {
    let mut args = Args::from_env(
        "calculator_client",
        "calculator_client [--url http(s)://HOST:PORT/rpc | ws(s)://HOST:PORT/ws | unix:PATH] [--ca CERT.pem]",
    );
    let url = args
        .value("--url")
        .unwrap_or_else(|| "http://127.0.0.1:8080/rpc".to_owned());
    let ca = args.value("--ca");
    args.finish();
    let mut tls = ClientTls::new();
    if let Some(ca) = ca {
        tls = tls.ca_file(ca);
    }
    let result = match Client::builder(url).tls(tls).connect().await {
        Ok(client) => run(CalculatorClient::new(client)).await,
        Err(err) => Err(err),
    };
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
