//! What the fuzz targets share: a runtime to run async code on, the table they serve, and the
//! checks every answer must pass (an oracle written against `serde_json`, not against the code
//! under test).

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::sync::OnceLock;

use jrpc_runtime::{Methods, RpcError};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// Runs `fut` to its end on one current-thread runtime, made once.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime")
        })
        .block_on(fut)
}

/// The table the targets serve: instant handlers of each kind (positional and named params, a
/// whole-params echo, an error, a notification).
pub fn methods() -> Methods {
    let mut methods = Methods::new();
    methods
        .register("add", &["a", "b"], |(a, b): (i64, i64), _| async move {
            Ok::<_, RpcError>(a.wrapping_add(b))
        })
        .expect("a fresh name");
    methods
        .register(
            "subtract",
            &["minuend", "subtrahend"],
            |(a, b): (i64, i64), _| async move { Ok::<_, RpcError>(a.wrapping_sub(b)) },
        )
        .expect("a fresh name");
    methods
        .register(
            "echo",
            &["params"],
            |jrpc_runtime::Whole(params): jrpc_runtime::Whole<Box<RawValue>>, _| async move {
                Ok::<_, RpcError>(params)
            },
        )
        .expect("a fresh name");
    methods
        .register("fail", &[], |(): (), _| async move {
            Err::<(), _>(RpcError::new(7, "failed on purpose"))
        })
        .expect("a fresh name");
    methods
        .register_notification(
            "update",
            &["values"],
            |_: jrpc_runtime::Whole<Value>, _| async {},
        )
        .expect("a fresh name");
    methods
}

/// The six members the specification gives meaning to.
const MEMBERS: [&str; 6] = ["jsonrpc", "method", "params", "id", "result", "error"];

/// The top-level members of a JSON object, as raw text, and whether one of [`MEMBERS`] is
/// written twice.
pub struct Object {
    pub members: Vec<(String, Box<RawValue>)>,
    pub repeated: bool,
}

impl Object {
    /// The raw value of member `name` (the first one).
    pub fn get(&self, name: &str) -> Option<&RawValue> {
        self.members
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| &**value)
    }
}

impl<'de> serde::Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Object;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object, A::Error> {
                let mut members = Vec::new();
                let mut seen = HashSet::new();
                let mut repeated = false;
                while let Some(key) = map.next_key::<String>()? {
                    let value = map.next_value::<Box<RawValue>>()?;
                    if MEMBERS.contains(&key.as_str()) && !seen.insert(key.clone()) {
                        repeated = true;
                    }
                    members.push((key, value));
                }
                Ok(Object { members, repeated })
            }
        }
        deserializer.deserialize_map(Members)
    }
}

/// Reads `text` as one JSON object, if it is one.
pub fn object(text: &str) -> Option<Object> {
    serde_json::from_str(text).ok()
}

/// What a valid request object (per the specification, read by `serde_json`) looks like: its id
/// member's raw text (`None` for a notification).
pub enum Oracle {
    /// A valid call or notification.
    Request { id: Option<String> },
    /// Anything else.
    Other,
}

/// Classifies one message the way the specification does.
pub fn classify(text: &str) -> Oracle {
    let Some(obj) = object(text) else {
        return Oracle::Other;
    };
    if obj.repeated {
        return Oracle::Other;
    }
    let version_ok = obj
        .get("jsonrpc")
        .is_some_and(|v| serde_json::from_str::<String>(v.get()).is_ok_and(|v| v == "2.0"));
    let method_ok = obj
        .get("method")
        .is_some_and(|v| serde_json::from_str::<String>(v.get()).is_ok());
    // The member is valid JSON already; only its kind matters. (Reading it as a `Value` would
    // also refuse a number out of `f64`'s range, which JSON allows.)
    let params_ok = obj
        .get("params")
        .is_none_or(|raw| matches!(raw.get().as_bytes().first(), Some(b'[' | b'{')));
    let id = obj.get("id");
    let id_ok = id.is_none_or(|raw| id_kind(raw.get()).is_some());
    if version_ok && method_ok && params_ok && id_ok {
        Oracle::Request {
            id: id.map(|raw| raw.get().to_owned()),
        }
    } else {
        Oracle::Other
    }
}

/// Asserts that `text` is one well-formed JSON-RPC answer object, and returns its `id` member's
/// raw text.
pub fn check_answer_object(text: &str) -> String {
    let obj = object(text).unwrap_or_else(|| panic!("an answer is not an object: {text}"));
    assert!(!obj.repeated, "an answer repeats a member: {text}");
    assert_eq!(
        obj.get("jsonrpc").map(RawValue::get),
        Some(r#""2.0""#),
        "{text}"
    );
    assert!(
        obj.get("method").is_none(),
        "an answer has a method: {text}"
    );
    match (obj.get("result"), obj.get("error")) {
        (Some(_), None) => {}
        (None, Some(error)) => {
            let error: Value = serde_json::from_str(error.get()).expect("JSON");
            assert!(
                error["code"].is_i64(),
                "an error without an integer code: {text}"
            );
            assert!(
                error["message"].is_string(),
                "an error without a message: {text}"
            );
        }
        _ => panic!("an answer needs exactly one of `result` and `error`: {text}"),
    }
    let id = obj
        .get("id")
        .unwrap_or_else(|| panic!("an answer without an id: {text}"));
    assert!(
        id_kind(id.get()).is_some(),
        "an answer's id is not a valid id: {text}"
    );
    id.get().to_owned()
}

/// Asserts that `text` is a well-formed answer: one answer object, or a non-empty array of them.
/// Returns the number of answer objects.
pub fn check_answer(text: &str) -> usize {
    if text.trim_start().starts_with('[') {
        let elements: Vec<Box<RawValue>> = serde_json::from_str(text)
            .unwrap_or_else(|_| panic!("a batch answer is not an array: {text}"));
        assert!(!elements.is_empty(), "an empty batch answer: {text}");
        for element in &elements {
            check_answer_object(element.get());
        }
        elements.len()
    } else {
        check_answer_object(text);
        1
    }
}

/// What a valid id is: `null`, a number (any JSON number, however large), or a string.
#[derive(Debug, PartialEq, Eq)]
pub enum IdKind {
    Null,
    /// The number's text, as written.
    Number(String),
    /// The string's value.
    Str(String),
    /// A string JSON's syntax allows but no Rust string holds (a lone surrogate escape, such as
    /// `"\udddd"`): its text, as written.
    Unpaired(String),
}

/// The kind of id `raw` (one JSON value, white space around it allowed) is, if it is one.
pub fn id_kind(raw: &str) -> Option<IdKind> {
    let raw = serde_json::from_str::<&RawValue>(raw).ok()?.get();
    match raw.as_bytes().first()? {
        b'n' => Some(IdKind::Null),
        b'"' => Some(match serde_json::from_str::<String>(raw) {
            Ok(value) => IdKind::Str(value),
            Err(_) => IdKind::Unpaired(raw.to_owned()),
        }),
        b'-' | b'0'..=b'9' => Some(IdKind::Number(raw.to_owned())),
        _ => None,
    }
}

/// Whether two raw ids are the same id: numbers byte for byte, strings by their value.
pub fn same_id(sent: &str, echoed: &str) -> bool {
    id_kind(sent).is_some_and(|kind| Some(kind) == id_kind(echoed))
}

/// The answer `methods` gives `text`, checked against the specification:
///
/// - every answer is well-formed;
/// - a valid notification is never answered;
/// - a valid call is answered with one object echoing its id;
/// - a batch is answered with at most one answer per element, or not at all.
pub fn check_handled(text: &str, answer: Option<&str>) {
    match classify(text) {
        Oracle::Request { id: None } => {
            assert_eq!(answer, None, "a notification was answered: {text}");
        }
        Oracle::Request { id: Some(id) } => {
            let answer = answer.unwrap_or_else(|| panic!("a call was not answered: {text}"));
            assert!(!answer.trim_start().starts_with('['), "{answer}");
            let echoed = check_answer_object(answer);
            assert!(same_id(&id, &echoed), "id {id} echoed as {echoed}: {text}");
        }
        Oracle::Other => {
            let elements = serde_json::from_str::<Vec<Box<RawValue>>>(text).ok();
            match (answer, elements) {
                (Some(answer), Some(elements)) if !elements.is_empty() => {
                    let answered = check_answer(answer);
                    assert!(answered <= elements.len(), "{answered} answers to {text}");
                }
                (Some(answer), _) => {
                    check_answer(answer);
                }
                // Only a batch of notifications goes unanswered.
                (None, Some(elements)) => {
                    assert!(!elements.is_empty(), "`[]` was not answered");
                    for element in elements {
                        assert!(
                            matches!(classify(element.get()), Oracle::Request { id: None }),
                            "a batch was not answered, yet holds {}",
                            element.get()
                        );
                    }
                }
                (None, None) => panic!("not answered: {text}"),
            }
        }
    }
}
