//! A service with `schema`: every parameter and result type has a JSON Schema, whatever the shape
//! of the method, and the context, errors and notifications need none.
#![deny(warnings)]

use jrpc_runtime::{Context, RpcError, rpc_service};

/// A type of one's own, described by schemars.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Point {
    /// Across.
    pub x: f64,
    /// Up.
    pub y: f64,
}

/// An error type of one's own, which needs no schema.
pub struct Fault;

impl From<Fault> for RpcError {
    fn from(_: Fault) -> Self {
        RpcError::new(1, "fault")
    }
}

type Answer = Result<Point, RpcError>;

#[rpc_service(schema)]
pub trait Geometry {
    /// Positional, one optional.
    async fn scale(&self, point: Point, by: Option<f64>) -> Point;
    /// The whole params.
    #[rpc(params = whole)]
    async fn norm(&self, point: Point) -> Result<f64, Fault>;
    /// The context, and no result.
    async fn reset(&self, ctx: &Context);
    /// A notification.
    #[notification]
    async fn moved(&self, to: Point);
}

/// On an inherent `impl` block too.
pub struct Shapes;

#[rpc_service(schema)]
impl Shapes {
    /// Counts.
    fn count(&self, names: Vec<String>) -> usize {
        names.len()
    }

    /// A result behind an alias (no stub reads it here).
    fn origin(&self) -> Answer {
        Ok(Point { x: 0.0, y: 0.0 })
    }
}

fn main() {
    let _ = Shapes.into_methods();
}
