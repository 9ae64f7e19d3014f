use jrpc_runtime::rpc_service;

#[derive(Debug)]
enum DivError {
    ByZero,
}

type Answer = Result<f64, DivError>;

struct Calc;

#[rpc_service]
impl Calc {
    fn divide(&self, a: f64, b: f64) -> Answer {
        if b == 0.0 {
            return Err(DivError::ByZero);
        }
        Ok(a / b)
    }
}

fn main() {}
