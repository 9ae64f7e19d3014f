//! Signs the state a multi round-trip request hands the client (`requestState`) so that the
//! client can read it but not change it: `base64url(payload) "." base64url(HMAC-SHA256(key,
//! "jrpc-mcp-state/1\n" payload))`, the payload JSON naming the request it belongs to (method,
//! name, a digest of the arguments), when it expires, and the answers of earlier rounds.
//!
//! It is not encrypted: put nothing secret in it. Every replica that may serve a retry needs the
//! same key.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jrpc_runtime::ConfigError;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::base64;

/// Prefixes what the signature covers besides the payload: a version, so that another format never
/// verifies as this one.
const DOMAIN: &[u8] = b"jrpc-mcp-state/1\n";

/// Holds one key that states are signed with (at least 32 bytes).
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

    /// Returns the key's bytes.
    #[cfg_attr(not(feature = "redis"), allow(dead_code, reason = "Redis stores keys"))]
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.0
    }

    fn mac(&self) -> Hmac<Sha256> {
        // HMAC takes a key of any length.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        mac.update(DOMAIN);
        mac
    }
}

/// Holds the keys that sign and check the state a multi round-trip request hands the client
/// (`requestState`): the newest key in effect signs, and every key checks, so that keys can be
/// rotated without refusing the states signed with the one before. Clones share the keys.
///
/// Every replica that may serve a retry needs the same keys: give each the same ones
/// ([`McpBuilder::request_state_keys`](crate::McpBuilder::request_state_keys)), or share a
/// ring a store keeps (with `redis`, `RedisStore::state_keys`, which every replica reads and
/// which `RedisStore::rotate_state_key` rotates).
///
/// ```
/// use jrpc_mcp::{Mcp, StateKeyRing};
///
/// // Rotating by hand: first deploy every replica with both keys, the old one first (it still
/// // signs); then with the new one first; then drop the old one once its states expired.
/// let ring = StateKeyRing::new([vec![1u8; 32], vec![2u8; 32]])?;
/// let mcp = Mcp::builder("server", "1.0.0").request_state_key_ring(ring.clone()).build()?;
/// ring.replace([vec![2u8; 32], vec![1u8; 32]])?;
/// # drop(mcp);
/// # Ok::<(), jrpc_runtime::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct StateKeyRing(Arc<RwLock<Ring>>);

/// Holds the keys, newest first, each with when it may start signing.
struct Ring(Vec<(StateKey, u64)>);

impl std::fmt::Debug for StateKeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateKeyRing")
            .field("keys", &self.key_count())
            .finish_non_exhaustive()
    }
}

impl StateKeyRing {
    /// Returns a ring of `keys`: the first signs, every one checks.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] (key `request_state_key`) for no key, or a key shorter than 32 bytes.
    pub fn new<I, K>(keys: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = K>,
        K: Into<Vec<u8>>,
    {
        Ok(Self::of(checked(keys)?))
    }

    /// Returns a ring of one random key.
    pub(crate) fn random() -> Result<Self, String> {
        Ok(Self::of(vec![(StateKey::random()?, 0)]))
    }

    /// Returns a ring of `keys`, newest first, each signing from its time (milliseconds since the
    /// Unix epoch).
    pub(crate) fn of(keys: Vec<(StateKey, u64)>) -> Self {
        Self(Arc::new(RwLock::new(Ring(keys))))
    }

    /// Replaces the keys with `keys`: the first signs, every one checks.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new); the keys are then left as they were.
    pub fn replace<I, K>(&self, keys: I) -> Result<(), ConfigError>
    where
        I: IntoIterator<Item = K>,
        K: Into<Vec<u8>>,
    {
        let keys = checked(keys)?;
        self.set(keys);
        Ok(())
    }

    /// Returns how many keys the ring holds: one signs, every one checks. A ring a store keeps
    /// holds two from a rotation until the older is dropped.
    pub fn key_count(&self) -> usize {
        self.read().0.len()
    }

    /// Returns a handle that does not keep the keys alive (a store's refresher holds one).
    #[cfg_attr(
        not(feature = "redis"),
        allow(dead_code, reason = "Redis refreshes rings")
    )]
    pub(crate) fn downgrade(&self) -> WeakRing {
        WeakRing(Arc::downgrade(&self.0))
    }

    /// Replaces the keys with `keys`, newest first, each signing from its time.
    pub(crate) fn set(&self, keys: Vec<(StateKey, u64)>) {
        if !keys.is_empty() {
            *self.0.write().unwrap_or_else(PoisonError::into_inner) = Ring(keys);
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Ring> {
        self.0.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Returns the key that signs at `now` (milliseconds since the Unix epoch): the newest in
    /// effect, or the oldest when none is yet.
    fn signing(&self, now: u64) -> Option<StateKey> {
        let ring = self.read();
        ring.0
            .iter()
            .find(|(_, from)| *from <= now)
            .or_else(|| ring.0.last())
            .map(|(key, _)| key.clone())
    }

    /// Returns whether one of the keys made `tag` over `json`.
    fn verifies(&self, json: &[u8], tag: &[u8]) -> bool {
        self.read().0.iter().any(|(key, _)| {
            let mut mac = key.mac();
            mac.update(json);
            mac.verify_slice(tag).is_ok()
        })
    }
}

/// Holds a [`StateKeyRing`] without keeping it alive.
#[cfg_attr(
    not(feature = "redis"),
    allow(dead_code, reason = "Redis refreshes rings")
)]
pub(crate) struct WeakRing(std::sync::Weak<RwLock<Ring>>);

#[cfg_attr(
    not(feature = "redis"),
    allow(dead_code, reason = "Redis refreshes rings")
)]
impl WeakRing {
    /// Returns the ring, while someone holds it.
    pub(crate) fn upgrade(&self) -> Option<StateKeyRing> {
        self.0.upgrade().map(StateKeyRing)
    }
}

/// Returns the keys of `keys`, each signing at once, checked.
fn checked<I, K>(keys: I) -> Result<Vec<(StateKey, u64)>, ConfigError>
where
    I: IntoIterator<Item = K>,
    K: Into<Vec<u8>>,
{
    let keys: Vec<(StateKey, u64)> = keys
        .into_iter()
        .map(|key| (StateKey::new(key.into()), 0))
        .collect();
    if keys.is_empty() {
        return Err(ConfigError::new("request_state_key", "no key given"));
    }
    if let Some((short, _)) = keys.iter().find(|(key, _)| key.0.len() < StateKey::MIN_LEN) {
        return Err(ConfigError::new(
            "request_state_key",
            format!(
                "{} bytes: at least {} are needed",
                short.0.len(),
                StateKey::MIN_LEN
            ),
        ));
    }
    Ok(keys)
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

/// Holds a state's payload.
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
    now_ms() / 1000
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// Seals the state of a request `bound`, holding `answers`, valid for `ttl`.
pub(crate) fn seal(
    keys: &StateKeyRing,
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
    let Some(key) = keys.signing(now_ms()) else {
        return String::new();
    };
    let mut mac = key.mac();
    mac.update(&json);
    let tag = mac.finalize().into_bytes();
    format!("{}.{}", base64::encode_url(&json), base64::encode_url(&tag))
}

/// Returns the answers a state holds, when it is one a key of `keys` signed, for the request
/// `bound`, and not expired; `None` otherwise (the same for every failure: a client learns
/// nothing from it).
pub(crate) fn open(keys: &StateKeyRing, state: &str, bound: &Bound) -> Option<Map<String, Value>> {
    open_at(keys, state, bound, now())
}

/// [`open`], at the time `now` (seconds since the Unix epoch).
fn open_at(
    keys: &StateKeyRing,
    state: &str,
    bound: &Bound,
    now: u64,
) -> Option<Map<String, Value>> {
    let (json, tag) = state.split_once('.')?;
    let json = base64::decode_url(json)?;
    let tag = base64::decode_url(tag)?;
    keys.verifies(&json, &tag).then_some(())?;
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
        let key = StateKeyRing::new([vec![7; 32]]).unwrap();
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
        let other = StateKeyRing::new([vec![8; 32]]).unwrap();
        assert_eq!(open(&other, &state, &bound("t")), None);
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
    fn a_rotated_ring_checks_states_of_the_key_before() {
        let answers = Map::new();
        let ring = StateKeyRing::new([vec![1; 32]]).unwrap();
        let old = seal(&ring, &bound("t"), &answers, Duration::from_secs(60));
        ring.replace([vec![2; 32], vec![1; 32]]).unwrap();
        let new = seal(&ring, &bound("t"), &answers, Duration::from_secs(60));
        assert!(
            open(&ring, &old, &bound("t")).is_some(),
            "the previous key checks"
        );
        assert!(open(&ring, &new, &bound("t")).is_some());
        let only_new = StateKeyRing::new([vec![2; 32]]).unwrap();
        assert!(
            open(&only_new, &new, &bound("t")).is_some(),
            "the new key signed"
        );
        assert!(open(&only_new, &old, &bound("t")).is_none());
        // A key that signs only later: the one before it signs meanwhile.
        let later = StateKeyRing::of(vec![
            (StateKey::new(vec![3; 32]), now_ms() + 60_000),
            (StateKey::new(vec![2; 32]), 0),
        ]);
        let signed = seal(&later, &bound("t"), &answers, Duration::from_secs(60));
        assert!(open(&only_new, &signed, &bound("t")).is_some());
        assert_eq!(
            StateKeyRing::new([vec![1; 31]])
                .map(drop)
                .unwrap_err()
                .key(),
            "request_state_key"
        );
        assert!(StateKeyRing::new(Vec::<Vec<u8>>::new()).is_err());
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
