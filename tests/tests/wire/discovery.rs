//! Service discovery in-process: what each method's description says (from `#[rpc_service]` and
//! from hand-made registrations), the OpenRPC document built from a table, and `rpc.discover`.

use jrpc_runtime::{
    Context, MethodDoc, Methods, ParamDoc, ParamStructure, RegisterError, RpcError, SchemaDoc,
    ServiceInfo, rpc_service,
};
use serde_json::{Value, json};

/// A shape of one's own.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Point {
    /// Across.
    pub x: f64,
    /// Up; zero when left out.
    #[serde(default)]
    pub y: Option<f64>,
}

/// Geometry, described with JSON Schemas.
#[rpc_service(schema, namespace = "geo", rename_all = "camelCase")]
pub trait Geometry {
    /// Moves a point.
    ///
    /// The offset is optional;
    /// it defaults to nothing.
    ///
    /// Second paragraph.
    async fn move_by(&self, point: Point, #[rpc(name = "by")] offset: Option<f64>) -> Point;
    /// The length of a vector, read by name from the whole params.
    #[rpc(params = whole)]
    async fn norm(&self, point: Point) -> Result<f64, RpcError>;
    /// Sums any number of values.
    #[rpc(params = whole)]
    async fn total(&self, values: Vec<f64>) -> f64;
    /// Which transport.
    async fn whoami(&self, ctx: &Context) -> String;
    /// Old.
    #[deprecated = "use move_by"]
    async fn shift(&self, dx: f64) -> f64;
    /// Something happened.
    #[notification]
    async fn changed(&self, at: Point);
}

/// The same kind of service without `schema`: the document lists it all with `{}` schemas.
#[rpc_service]
trait Plain {
    /// Adds.
    async fn add(&self, a: i64, b: Option<i64>) -> i64;
    #[notification]
    async fn ping(&self);
}

struct Geo;

impl Geometry for Geo {
    async fn move_by(&self, point: Point, offset: Option<f64>) -> Point {
        let by = offset.unwrap_or(0.0);
        Point {
            x: point.x + by,
            y: point.y.map(|y| y + by),
        }
    }
    async fn norm(&self, point: Point) -> Result<f64, RpcError> {
        Ok(point.x.hypot(point.y.unwrap_or(0.0)))
    }
    async fn total(&self, values: Vec<f64>) -> f64 {
        values.iter().sum()
    }
    async fn whoami(&self, ctx: &Context) -> String {
        ctx.transport().to_string()
    }
    async fn shift(&self, dx: f64) -> f64 {
        dx
    }
    async fn changed(&self, _at: Point) {}
}

struct Flat;

impl Plain for Flat {
    async fn add(&self, a: i64, b: Option<i64>) -> i64 {
        a + b.unwrap_or(0)
    }
    async fn ping(&self) {}
}

fn info() -> ServiceInfo {
    ServiceInfo::new("geometry", "2.1.0")
}

/// The document of `methods`, and its method objects by name.
fn document(methods: &Methods) -> (Value, Vec<Value>) {
    let doc = methods.openrpc(&info());
    let list = doc["methods"].as_array().cloned().unwrap_or_default();
    (doc, list)
}

fn method<'a>(methods: &'a [Value], name: &str) -> &'a Value {
    methods
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not in {methods:?}"))
}

fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(fut)
}

#[test]
fn the_macro_describes_names_docs_params_and_results() {
    let (doc, methods) = document(&Geo.into_methods());
    assert_eq!(doc["openrpc"], "1.3.2");
    assert_eq!(
        doc["info"],
        json!({ "title": "geometry", "version": "2.1.0" })
    );
    let names: Vec<&str> = methods.iter().filter_map(|m| m["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "geo.moveBy",
            "geo.norm",
            "geo.total",
            "geo.whoami",
            "geo.shift",
            "geo.changed"
        ],
        "every method, in declaration order, by its wire name"
    );

    let move_by = method(&methods, "geo.moveBy");
    assert_eq!(move_by["summary"], "Moves a point.");
    assert_eq!(
        move_by["description"],
        "The offset is optional;\nit defaults to nothing.\n\nSecond paragraph."
    );
    assert_eq!(move_by.get("paramStructure"), None, "either, the default");
    let params = move_by["params"].as_array().unwrap();
    assert_eq!(params.len(), 2);
    assert_eq!(params[0]["name"], "point");
    assert_eq!(params[0]["required"], true);
    assert_eq!(
        params[0]["schema"],
        json!({ "$ref": "#/components/schemas/Point" })
    );
    assert_eq!(params[1]["name"], "by", "the parameter's wire name");
    assert_eq!(params[1].get("required"), None, "an Option is not required");
    assert_eq!(
        move_by["result"]["schema"],
        json!({ "$ref": "#/components/schemas/Point" })
    );

    let point = &doc["components"]["schemas"]["Point"];
    assert_eq!(point["type"], "object");
    assert_eq!(point["properties"]["x"]["type"], "number");
    assert_eq!(point["required"], json!(["x"]));

    assert_eq!(
        method(&methods, "geo.whoami")["params"],
        json!([]),
        "the context is not a parameter"
    );
    assert_eq!(method(&methods, "geo.shift")["deprecated"], true);
    assert_eq!(method(&methods, "geo.norm").get("deprecated"), None);
    let changed = method(&methods, "geo.changed");
    assert_eq!(changed.get("result"), None, "a notification has no result");
    assert_eq!(changed["params"][0]["name"], "at");
}

#[test]
fn whole_params_are_described_as_the_whole_value() {
    let (_, methods) = document(&Geo.into_methods());
    // An object of known properties: by name, a parameter per property.
    let norm = method(&methods, "geo.norm");
    assert_eq!(norm["paramStructure"], "by-name");
    assert_eq!(norm.get("x-jrpc-params"), None);
    let params = norm["params"].as_array().unwrap();
    let summary: Vec<(&str, bool)> = params
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["required"] == true))
        .collect();
    assert_eq!(summary, [("x", true), ("y", false)]);
    assert_eq!(params[0]["description"], "Across.");
    assert_eq!(norm["result"]["schema"]["type"], "number");

    // Anything else: one parameter standing for the whole params.
    let total = method(&methods, "geo.total");
    assert_eq!(total["x-jrpc-params"], "whole");
    assert_eq!(total["params"].as_array().unwrap().len(), 1);
    assert_eq!(total["params"][0]["name"], "values");
    assert_eq!(total["params"][0]["schema"]["type"], "array");
    assert_eq!(
        total["params"][0].get("required"),
        None,
        "absent params decode as []"
    );
}

#[test]
fn without_schema_every_method_is_listed_with_empty_schemas() {
    let (doc, methods) = document(&Flat.into_methods());
    assert_eq!(doc.get("components"), None);
    let add = method(&methods, "add");
    assert_eq!(
        add["params"],
        json!([
            { "name": "a", "required": true, "schema": {} },
            { "name": "b", "schema": {} },
        ])
    );
    assert_eq!(add["result"], json!({ "name": "result", "schema": {} }));
    assert_eq!(add["summary"], "Adds.");
    let ping = method(&methods, "ping");
    assert_eq!(ping.get("result"), None);
    assert_eq!(ping.get("summary"), None, "no doc comment, no summary");
}

#[test]
fn a_merged_table_is_described_whole_in_registration_order() {
    let mut methods = Flat.into_methods();
    methods.merge(Geo.into_methods()).unwrap();
    let (doc, list) = document(&methods);
    let names: Vec<&str> = list.iter().filter_map(|m| m["name"].as_str()).collect();
    assert_eq!(names[..3], ["add", "ping", "geo.moveBy"]);
    assert_eq!(names.len(), 8);
    assert!(doc["components"]["schemas"]["Point"].is_object());
}

#[test]
fn hand_made_methods_are_described_by_their_registration_and_by_describe() {
    let mut methods = Methods::new();
    methods
        .register(
            "scale",
            &["factor", "offset"],
            |(f, o): (f64, Option<f64>), _| async move { Ok::<_, RpcError>(f + o.unwrap_or(0.0)) },
        )
        .unwrap()
        .register_raw("raw", |params, _| async move {
            Ok::<_, RpcError>(params.get().map(str::len))
        })
        .unwrap()
        .register_notification("poke", &[], |(): (), _| async {})
        .unwrap();

    let scale = methods.description("scale").unwrap();
    assert_eq!(scale.structure, ParamStructure::Either);
    let params: Vec<(&str, bool)> = scale
        .params
        .iter()
        .map(|p| (&*p.name, p.required))
        .collect();
    assert_eq!(params, [("factor", true), ("offset", false)]);
    assert!(scale.result.is_some());
    let raw = methods.description("raw").unwrap();
    assert_eq!(raw.structure, ParamStructure::Whole);
    assert!(!raw.params[0].required);
    assert!(methods.description("poke").unwrap().result.is_none());

    let mut doc = MethodDoc::new().with_doc_comment("Scales.\n\nBy a factor.");
    doc.params = vec![
        ParamDoc::new("factor", SchemaDoc::of::<f64>()),
        ParamDoc::new("offset", SchemaDoc::json(json!({ "type": "number" }))).optional(),
    ];
    doc.result = Some(SchemaDoc::of::<f64>());
    methods.describe("scale", doc).unwrap();
    assert_eq!(
        methods.describe("nothing", MethodDoc::new()).unwrap_err(),
        RegisterError::Unknown("nothing".into())
    );

    let (_, list) = document(&methods);
    let scale = method(&list, "scale");
    assert_eq!(scale["summary"], "Scales.");
    assert_eq!(scale["description"], "By a factor.");
    assert_eq!(scale["params"][0]["schema"]["type"], "number");
    assert_eq!(
        scale["params"][1],
        json!({ "name": "offset", "schema": { "type": "number" } })
    );
    assert_eq!(method(&list, "raw")["x-jrpc-params"], "whole");
    assert_eq!(method(&list, "raw")["params"][0]["name"], "params");
}

#[test]
fn params_schema_is_the_params_value_on_its_own() {
    let methods = Geo.into_methods();
    let norm = methods.description("geo.norm").unwrap();
    let schema = norm.params_schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["x"]["description"], "Across.");
    assert_eq!(schema["required"], json!(["x"]));
    assert_eq!(schema.get("$schema"), None);

    let move_by = methods.description("geo.moveBy").unwrap();
    let schema = move_by.params_schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["point"]));
    assert_eq!(
        schema["properties"]["point"],
        json!({ "$ref": "#/$defs/Point" })
    );
    assert_eq!(schema["$defs"]["Point"]["type"], "object");
    assert_eq!(
        move_by.result_schema().unwrap()["title"],
        "Point",
        "a result on its own is inlined"
    );
    assert_eq!(
        methods.description("geo.changed").unwrap().result_schema(),
        None
    );
}

#[test]
fn rpc_discover_is_served_only_when_turned_on() {
    block_on(async {
        let call = r#"{"jsonrpc":"2.0","method":"rpc.discover","id":1}"#;
        let mut methods = Geo.into_methods();
        let off: Value = serde_json::from_str(&methods.handle(call).await.unwrap()).unwrap();
        assert_eq!(off["error"]["code"], -32601);

        methods.discovery(info());
        let on: Value = serde_json::from_str(&methods.handle(call).await.unwrap()).unwrap();
        assert_eq!(on["result"], methods.openrpc(&info()));
        assert!(
            !on["result"]["methods"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["name"] == "rpc.discover"),
            "the document lists the service's own methods"
        );

        // Registered after discovery was turned on: in the document all the same.
        methods
            .register("late", &[], |(): (), _| async { Ok::<_, RpcError>(1) })
            .unwrap();
        let later: Value = serde_json::from_str(&methods.handle(call).await.unwrap()).unwrap();
        assert_eq!(later["result"]["methods"].as_array().unwrap().len(), 7);

        for empty in ["[]", "{}"] {
            let body =
                format!(r#"{{"jsonrpc":"2.0","method":"rpc.discover","params":{empty},"id":2}}"#);
            let answer: Value =
                serde_json::from_str(&methods.handle(&body).await.unwrap()).unwrap();
            assert!(answer["result"].is_object(), "{empty}: {answer}");
        }
        let body = r#"{"jsonrpc":"2.0","method":"rpc.discover","params":[1],"id":3}"#;
        let answer: Value = serde_json::from_str(&methods.handle(body).await.unwrap()).unwrap();
        assert_eq!(answer["error"]["code"], -32602);
        let notification = r#"{"jsonrpc":"2.0","method":"rpc.discover"}"#;
        assert_eq!(methods.handle(notification).await, None);

        // The name stays reserved for methods of one's own.
        assert_eq!(
            methods
                .register("rpc.discover", &[], |(): (), _| async {
                    Ok::<_, RpcError>(0)
                })
                .map(|_| ())
                .unwrap_err(),
            RegisterError::Reserved("rpc.discover".into())
        );
    });
}

#[test]
fn a_subscription_is_described_by_its_subscribe_and_unsubscribe_methods() {
    use futures_util::stream;
    use jrpc_runtime::{Items, SubscriptionDoc};

    let mut methods = Methods::new();
    for (subscribe, notification) in [("subscribe_count", "count"), ("subscribe_ticks", "tick")] {
        methods
            .register_subscription(
                subscribe,
                &["to"],
                notification,
                "unsubscribe",
                |(to,): (Option<u64>,), _| async move {
                    Ok::<_, RpcError>(Items::new(stream::iter(0..to.unwrap_or(3))))
                },
            )
            .unwrap();
    }
    let (doc, list) = document(&methods);
    // The unsubscribe method is registered once, for both.
    let names: Vec<&str> = list.iter().filter_map(|m| m["name"].as_str()).collect();
    assert_eq!(names, ["subscribe_count", "unsubscribe", "subscribe_ticks"]);

    let count = method(&list, "subscribe_count");
    assert_eq!(count["params"], json!([{ "name": "to", "schema": {} }]));
    assert_eq!(
        count["result"],
        json!({ "name": "subscription", "schema": { "type": ["string", "integer"] } })
    );
    assert_eq!(
        count["x-subscription"],
        json!({
            "notification": "count",
            "unsubscribe": "unsubscribe",
            "item": { "name": "result", "schema": {} },
        })
    );
    assert_eq!(
        method(&list, "subscribe_ticks")["x-subscription"]["notification"],
        "tick"
    );
    let unsubscribe = method(&list, "unsubscribe");
    assert_eq!(
        unsubscribe["params"],
        json!([{ "name": "subscription", "required": true, "schema": { "type": ["string", "integer"] } }])
    );
    assert_eq!(
        unsubscribe["result"],
        json!({ "name": "result", "schema": { "type": "boolean" } })
    );
    assert_eq!(
        unsubscribe["summary"],
        "Ends a subscription of this connection, given its id."
    );
    assert!(unsubscribe.get("x-subscription").is_none());

    // `x-subscription` is declared once, as an OpenRPC Specification Extension on method objects.
    let extensions = doc["x-extensions"].as_array().expect("x-extensions");
    assert_eq!(extensions.len(), 1);
    let declared = &extensions[0];
    assert_eq!(declared["name"], "x-subscription");
    assert_eq!(declared["openrpcExtension"], "0.0.0-development");
    assert_eq!(declared["restricted"], json!(["methodObject"]));
    assert_eq!(
        declared["schema"]["required"],
        json!(["notification", "unsubscribe", "item"])
    );

    // A description of one's own gives the item a schema.
    let mut described = methods.description("subscribe_count").unwrap().clone();
    let subscription = described.subscription.take().unwrap();
    assert_eq!(subscription.notification, "count");
    described.subscription = Some(
        SubscriptionDoc::new("count", "unsubscribe")
            .with_item(SchemaDoc::json(json!({ "type": "integer" }))),
    );
    methods.describe("subscribe_count", described).unwrap();
    let (_, list) = document(&methods);
    assert_eq!(
        method(&list, "subscribe_count")["x-subscription"]["item"],
        json!({ "name": "result", "schema": { "type": "integer" } })
    );
}
