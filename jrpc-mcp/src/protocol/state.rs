//! Signs the state a multi round-trip request hands the client (`requestState`) so that the
//! client can read it but not change it: `base64url(payload) "." base64url(HMAC-SHA256(key,
//! "jrpc-mcp-state/1\n" payload))`, the payload JSON naming the request it belongs to (method,
//! name, a digest of the arguments), when it expires, and the answers of earlier rounds.
//!
//! It is not encrypted: put nothing secret in it. Every replica that may serve a retry needs the
//! same key.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::base64;

/// What the signature covers besides the payload: a version, so that another format never
/// verifies as this one.
const DOMAIN: &[u8] = b"jrpc-mcp-state/1\n";

/// Holds the key that states are signed with (at least 32 bytes).
#[derive(Clone)]
pub(crate) struct StateKey(Vec<u8>);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

impl StateKey {
    /// Gives the fewest bytes a key may hold.
    pub(crate) const MIN_LEN: usize = 32;

    /// Returns a key of these bytes.
    pub(crate) fn new(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// Returns a key of 32 random bytes from the operating system.
    pub(crate) fn random() -> Result<Self, String> {
        let mut bytes = vec![0u8; Self::MIN_LEN];
        getrandom::fill(&mut bytes).map_err(|err| err.to_string())?;
        Ok(Self(bytes))
    }

    fn mac(&self) -> Hmac<Sha256> {
        // HMAC takes a key of any length.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        mac.update(DOMAIN);
        mac
    }
}

/// Names the request a state belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Bound {
    /// The method (`tools/call`, `prompts/get`, `resources/read`).
    #[serde(rename = "m")]
    pub(crate) method: String,
    /// The tool's or prompt's name, or the resource's URI.
    #[serde(rename = "n")]
    pub(crate) name: String,
    /// The digest of the arguments ([`digest`]).
    #[serde(rename = "h")]
    pub(crate) digest: String,
}

/// A state's payload.
#[derive(Serialize, Deserialize)]
struct Payload {
    v: u8,
    /// When it expires, in seconds since the Unix epoch.
    exp: u64,
    #[serde(flatten)]
    bound: Bound,
    /// The answers of earlier rounds, by key.
    a: Map<String, Value>,
    /// Sixteen random bytes: no two states are the same text.
    nonce: String,
}

/// Returns the digest of a request's arguments, as a state binds them: SHA-256 of their compact
/// JSON with the members of every object sorted by name, in base64url.
pub(crate) fn digest(arguments: &Value) -> String {
    let mut text = Vec::new();
    write_sorted(arguments, &mut text);
    base64::encode_url(&Sha256::digest(&text))
}

/// Writes `value` as compact JSON, the members of every object sorted by name. Sorted here, not
/// by serde_json's map: a build in which any crate turns on serde_json's `preserve_order` (the
/// ACP schema crate does) keeps members in arrival order, and a retry whose client orders them
/// otherwise would no longer match its state.
fn write_sorted(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(members) => {
            let mut members: Vec<_> = members.iter().collect();
            members.sort_unstable_by_key(|&(name, _)| name);
            out.push(b'{');
            for (i, (name, member)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let _ = serde_json::to_writer(&mut *out, name);
                out.push(b':');
                write_sorted(member, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_sorted(item, out);
            }
            out.push(b']');
        }
        // A string, number, boolean or null, as serde_json writes it (into a `Vec`, it cannot
        // fail; nor can a name above).
        scalar => {
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

/// Seconds since the Unix epoch.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// Seals the state of a request `bound`, holding `answers`, valid for `ttl`.
pub(crate) fn seal(
    key: &StateKey,
    bound: &Bound,
    answers: &Map<String, Value>,
    ttl: Duration,
) -> String {
    let mut nonce = [0u8; 16];
    // A nonce that is not random only makes two states of the same answers the same text.
    let _ = getrandom::fill(&mut nonce);
    let payload = Payload {
        v: 1,
        exp: now().saturating_add(ttl.as_secs()),
        bound: bound.clone(),
        a: answers.clone(),
        nonce: base64::encode_url(&nonce),
    };
    let json = serde_json::to_vec(&payload).unwrap_or_default();
    let mut mac = key.mac();
    mac.update(&json);
    let tag = mac.finalize().into_bytes();
    format!("{}.{}", base64::encode_url(&json), base64::encode_url(&tag))
}

/// Returns the answers a state holds, when it is one this key signed, for the request `bound`, and
/// not expired; `None` otherwise (the same for every failure: a client learns nothing from it).
pub(crate) fn open(key: &StateKey, state: &str, bound: &Bound) -> Option<Map<String, Value>> {
    open_at(key, state, bound, now())
}

/// [`open`], at the time `now` (seconds since the Unix epoch).
fn open_at(key: &StateKey, state: &str, bound: &Bound, now: u64) -> Option<Map<String, Value>> {
    let (json, tag) = state.split_once('.')?;
    let json = base64::decode_url(json)?;
    let tag = base64::decode_url(tag)?;
    let mut mac = key.mac();
    mac.update(&json);
    mac.verify_slice(&tag).ok()?;
    let payload: Payload = serde_json::from_slice(&json).ok()?;
    (payload.v == 1 && payload.exp >= now && payload.bound == *bound).then_some(payload.a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bound(name: &str) -> Bound {
        Bound {
            method: "tools/call".into(),
            name: name.into(),
            digest: digest(&json!({ "b": 1, "a": [2] })),
        }
    }

    #[test]
    fn a_state_opens_for_its_request_alone_and_unchanged() {
        let key = StateKey::new(vec![7; 32]);
        let answers = json!({ "step1": { "action": "accept" } });
        let answers = answers.as_object().unwrap().clone();
        let state = seal(&key, &bound("t"), &answers, Duration::from_secs(60));
        assert_eq!(open(&key, &state, &bound("t")), Some(answers.clone()));
        assert_ne!(
            state,
            seal(&key, &bound("t"), &answers, Duration::from_secs(60))
        );
        assert_eq!(open(&key, &state, &bound("other")), None, "another tool");
        assert_eq!(open(&key, &format!("{state}-TAMPERED"), &bound("t")), None);
        assert_eq!(open(&StateKey::new(vec![8; 32]), &state, &bound("t")), None);
        let (json, tag) = state.split_once('.').unwrap();
        let mut forged = base64::decode_url(json).unwrap();
        forged[5] ^= 1;
        assert_eq!(
            open(
                &key,
                &format!("{}.{tag}", base64::encode_url(&forged)),
                &bound("t")
            ),
            None
        );
        let later = now() + 61;
        assert_eq!(open_at(&key, &state, &bound("t"), later), None, "expired");
    }

    #[test]
    fn the_digest_is_of_sorted_members() {
        let one: Value = serde_json::from_str(r#"{"b":1,"a":{"y":1,"x":2}}"#).unwrap();
        let two: Value = serde_json::from_str(r#"{"a":{"x":2,"y":1},"b":1}"#).unwrap();
        assert_eq!(digest(&one), digest(&two));
        assert_ne!(digest(&one), digest(&json!({ "b": 2 })));
        // What is hashed: compact JSON, sorted at every depth, whatever order serde_json keeps.
        let mut text = Vec::new();
        write_sorted(&two, &mut text);
        assert_eq!(text, br#"{"a":{"x":2,"y":1},"b":1}"#);
        let mut text = Vec::new();
        write_sorted(
            &json!([{"z": "\u{e9}\n", "m": [null, true, 1.5]}]),
            &mut text,
        );
        assert_eq!(
            text,
            "[{\"m\":[null,true,1.5],\"z\":\"\u{e9}\\n\"}]".as_bytes()
        );
    }
}
