// rustc reports the syntax error; the service is still generated, so
// neither `into_methods` nor `#[rpc]` add errors of their own.
use jrpc_runtime::{Methods, rpc_service};

#[rpc_service]
trait Calculator {
    #[rpc(name = "five")]
    fn number(&self) -> u8 {
        let x = ;
        5
    }
}

struct Calc;

impl Calculator for Calc {}

fn main() {
    let _: Methods = Calc.into_methods();
    let _ = CalculatorClient::new(Methods::new());
}
