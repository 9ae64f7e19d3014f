//! Calls a calculator through the generated `CalculatorClient`, over HTTP or WebSocket (the URL's
//! scheme picks), against any JSON-RPC server with these methods.
//!
//! ```text
//! cargo run --example calculator_client -- --url http://127.0.0.1:8080/rpc
//! cargo run --example calculator_client -- --url ws://127.0.0.1:8080/ws
//! ```

use jrpc_examples::CalculatorClient;
use jrpc_runtime::{Caller, Client, ClientError, Methods};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = args
        .iter()
        .position(|arg| arg == "--url")
        .and_then(|at| args.get(at + 1))
        .map_or("http://127.0.0.1:8080/rpc", String::as_str);
    let result = match Client::connect(url, Methods::new()).await {
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
