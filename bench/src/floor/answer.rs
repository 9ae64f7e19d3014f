//! The floor's JSON-RPC: the answer to one body (a request or a batch) for the one method it
//! serves, `add(a, b)`. The path the benchmark takes (a well-formed call with positional params)
//! is one typed serde_json parse and one typed serialize; everything else (another method, named
//! or bad params, an invalid request, not JSON) is answered as the contract says, on a slower
//! path that looks at the request again.

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// A well-formed call of `add` with positional params, as the fast path reads it.
struct Call<'a> {
    jsonrpc: &'a str,
    method: &'a str,
    params: (i64, i64),
    /// `None` for a notification (no `id` member); `"id": null` is `Some`.
    id: Option<&'a RawValue>,
}

impl<'de> Deserialize<'de> for Call<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Not derived: a derived struct also accepts a JSON array (its fields by position),
        // which the contract answers -32600.
        deserializer.deserialize_map(CallVisitor)
    }
}

struct CallVisitor;

impl<'de> Visitor<'de> for CallVisitor {
    type Value = Call<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC request object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Call<'de>, A::Error> {
        let (mut jsonrpc, mut method, mut params, mut id) = (None, None, None, None);
        while let Some(key) = map.next_key::<&str>()? {
            match key {
                "jsonrpc" => jsonrpc = Some(map.next_value()?),
                "method" => method = Some(map.next_value()?),
                "params" => params = Some(map.next_value()?),
                "id" => id = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Call {
            jsonrpc: jsonrpc.ok_or_else(|| de::Error::missing_field("jsonrpc"))?,
            method: method.ok_or_else(|| de::Error::missing_field("method"))?,
            params: params.ok_or_else(|| de::Error::missing_field("params"))?,
            id,
        })
    }
}

/// `add`'s params by name.
#[derive(Deserialize)]
struct Named {
    a: i64,
    b: i64,
}

#[derive(Serialize)]
struct Success<'a> {
    jsonrpc: &'static str,
    result: i64,
    id: &'a RawValue,
}

#[derive(Serialize)]
struct Failure<'a> {
    jsonrpc: &'static str,
    error: ErrorObject,
    id: Option<&'a RawValue>,
}

#[derive(Serialize)]
struct ErrorObject {
    code: i32,
    message: &'static str,
}

/// One element's answer.
#[derive(Serialize)]
#[serde(untagged)]
enum Reply<'a> {
    Success(Success<'a>),
    Failure(Failure<'a>),
}

fn success(result: i64, id: &RawValue) -> Reply<'_> {
    Reply::Success(Success {
        jsonrpc: "2.0",
        result,
        id,
    })
}

fn failure<'a>(code: i32, message: &'static str, id: Option<&'a RawValue>) -> Reply<'a> {
    Reply::Failure(Failure {
        jsonrpc: "2.0",
        error: ErrorObject { code, message },
        id,
    })
}

fn invalid_request(id: Option<&RawValue>) -> Reply<'_> {
    failure(-32600, "Invalid Request", id)
}

/// An id the contract echoes: a string, a number or null (an object, array or boolean is not).
fn valid_id(id: &RawValue) -> bool {
    matches!(id.get().as_bytes()[0], b'"' | b'-' | b'0'..=b'9' | b'n')
}

/// Whether the fast path answers `call` (else the slow path does).
fn fast(call: &Call<'_>) -> bool {
    call.jsonrpc == "2.0" && call.method == "add" && call.id.is_none_or(valid_id)
}

/// The fast path's answer to `call`: none for a notification.
fn reply<'a>(call: &Call<'a>) -> Option<Reply<'a>> {
    let result = call.params.0.wrapping_add(call.params.1);
    call.id.map(|id| success(result, id))
}

/// The answer to one element (or a lone request) that is valid JSON; `None` for a notification.
fn element(raw: &RawValue) -> Option<Reply<'_>> {
    if raw.get().starts_with('{')
        && let Ok(call) = serde_json::from_str::<Call<'_>>(raw.get())
        && fast(&call)
    {
        return reply(&call);
    }
    judged(raw)
}

/// The slow path: what the contract answers to anything but a well-formed positional `add`.
fn judged(raw: &RawValue) -> Option<Reply<'_>> {
    let Ok(members) = serde_json::from_str::<HashMap<String, &RawValue>>(raw.get()) else {
        return Some(invalid_request(None));
    };
    let id = match members.get("id") {
        Some(id) if valid_id(id) => Some(*id),
        // An invalid id is answered with a null one, notification or not.
        Some(_) => return Some(invalid_request(None)),
        None => None,
    };
    let method = members
        .get("method")
        .and_then(|m| serde_json::from_str::<String>(m.get()).ok());
    let params = members.get("params").map(|p| p.get());
    let well_formed = members.get("jsonrpc").map(|v| v.get()) == Some(r#""2.0""#)
        && method.is_some()
        && params.is_none_or(|p| p.starts_with('[') || p.starts_with('{'));
    if !well_formed {
        // Answered even without an id: it is not a notification if it is not a request.
        return Some(invalid_request(id));
    }
    let id = id?;
    if method.as_deref() != Some("add") {
        return Some(failure(-32601, "Method not found", Some(id)));
    }
    let sum = match params {
        Some(p) if p.starts_with('{') => serde_json::from_str::<Named>(p).map(|n| (n.a, n.b)).ok(),
        Some(p) => serde_json::from_str::<(i64, i64)>(p).ok(),
        None => None,
    };
    Some(match sum {
        Some((a, b)) => success(a.wrapping_add(b), id),
        None => failure(-32602, "Invalid params", Some(id)),
    })
}

/// The answer to one body, a request or a batch; `None` when nothing is answered (a
/// notification, or a batch of them).
pub fn answer(body: &[u8]) -> Option<Vec<u8>> {
    match body.first() {
        Some(b'{') => {
            if let Ok(call) = serde_json::from_slice::<Call<'_>>(body)
                && fast(&call)
            {
                return reply(&call).map(|reply| written(&reply));
            }
        }
        Some(b'[') => {
            // Typed in one pass when every element is a good call; element by element if not.
            if let Ok(calls) = serde_json::from_slice::<Vec<Call<'_>>>(body)
                && !calls.is_empty()
                && calls.iter().all(fast)
            {
                let replies: Vec<Reply<'_>> = calls.iter().filter_map(reply).collect();
                return (!replies.is_empty()).then(|| written(&replies));
            }
        }
        _ => {}
    }
    let Ok(raw) = serde_json::from_slice::<&RawValue>(body) else {
        return Some(written(&failure(-32700, "Parse error", None)));
    };
    if !raw.get().starts_with('[') {
        return element(raw).map(|reply| written(&reply));
    }
    let elements: Vec<&RawValue> = serde_json::from_str(raw.get()).unwrap_or_default();
    if elements.is_empty() {
        return Some(written(&invalid_request(None)));
    }
    let replies: Vec<Reply<'_>> = elements.iter().filter_map(|raw| element(raw)).collect();
    (!replies.is_empty()).then(|| written(&replies))
}

fn written(value: &impl Serialize) -> Vec<u8> {
    // These types always serialize into a `Vec`.
    serde_json::to_vec(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::answer;

    fn text(body: &str) -> Option<String> {
        answer(body.as_bytes()).map(|bytes| String::from_utf8(bytes).unwrap())
    }

    #[test]
    fn a_call_is_answered_with_its_id_as_written() {
        assert_eq!(
            text(r#"{"jsonrpc":"2.0","method":"add","params":[2,3],"id":1.0}"#).as_deref(),
            Some(r#"{"jsonrpc":"2.0","result":5,"id":1.0}"#)
        );
        assert_eq!(
            text(r#"{"id":null,"params":{"b":3,"a":2},"method":"add","jsonrpc":"2.0"}"#).as_deref(),
            Some(r#"{"jsonrpc":"2.0","result":5,"id":null}"#)
        );
    }

    #[test]
    fn a_batch_is_answered_in_order_without_its_notifications() {
        assert_eq!(
            text(
                r#"[{"jsonrpc":"2.0","method":"add","params":[2,3],"id":"a"},{"jsonrpc":"2.0","method":"add","params":[1,1]},{"jsonrpc":"2.0","method":"x","params":[1,2],"id":2}]"#
            )
            .as_deref(),
            Some(
                r#"[{"jsonrpc":"2.0","result":5,"id":"a"},{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":2}]"#
            )
        );
        assert_eq!(
            text(r#"[{"jsonrpc":"2.0","method":"add","params":[1,1]}]"#),
            None
        );
    }

    #[test]
    fn the_awkward_corners_are_answered_as_the_contract_says() {
        let error = |code: i32, id: &str| {
            let message = match code {
                -32700 => "Parse error",
                -32600 => "Invalid Request",
                -32601 => "Method not found",
                _ => "Invalid params",
            };
            Some(format!(
                r#"{{"jsonrpc":"2.0","error":{{"code":{code},"message":"{message}"}},"id":{id}}}"#
            ))
        };
        assert_eq!(text(""), error(-32700, "null"));
        assert_eq!(text("{"), error(-32700, "null"));
        assert_eq!(text("[]"), error(-32600, "null"));
        assert_eq!(text("1"), error(-32600, "null"));
        assert_eq!(
            text(r#"[["2.0","add",[1,2],1]]"#),
            Some(format!("[{}]", error(-32600, "null").unwrap()))
        );
        assert_eq!(
            text(r#"{"jsonrpc":"1.0","method":"add","params":[1,2],"id":7}"#),
            error(-32600, "7")
        );
        assert_eq!(
            text(r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":[7]}"#),
            error(-32600, "null")
        );
        assert_eq!(
            text(r#"{"jsonrpc":"2.0","method":"add","params":null,"id":7}"#),
            error(-32600, "7")
        );
        assert_eq!(
            text(r#"{"jsonrpc":"2.0","method":"add","params":[1],"id":7}"#),
            error(-32602, "7")
        );
        assert_eq!(
            text(r#"{"jsonrpc":"2.0","method":"sub","params":[1,2],"id":"x"}"#),
            error(-32601, r#""x""#)
        );
        assert_eq!(
            text(r#"{"jsonrpc":"2.0","method":"sub","params":[1,2]}"#),
            None
        );
        assert_eq!(
            text(r#"{"jsonrpc":"2.0","method":"add","params":[1,2]}"#),
            None
        );
    }
}
