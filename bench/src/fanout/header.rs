//! The block header every fan-out server publishes: an Ethereum `newHeads` item of about 600 bytes
//! once encoded, the same type for jrpc, jsonrpsee and the floor. Its `extraData` carries the
//! moment it was made (CLOCK_MONOTONIC, in nanoseconds, as 16 hex digits), which the load
//! generator, another process on the same machine, reads delivery latency from.

use serde::{Deserialize, Serialize};

/// The topic, and the subscription kind, headers are published under.
pub const NEW_HEADS: &str = "newHeads";

/// A block header, as `eth_subscription` carries it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    pub number: String,
    pub hash: String,
    pub parent_hash: String,
    pub sha3_uncles: String,
    pub miner: String,
    pub state_root: String,
    pub transactions_root: String,
    pub difficulty: String,
    pub gas_limit: String,
    pub gas_used: String,
    pub timestamp: String,
    pub extra_data: String,
    pub base_fee_per_gas: String,
}

/// The keccak of an empty uncle list, which every post-merge header carries.
const EMPTY_UNCLES: &str = "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347";

impl Header {
    /// Returns block `number`'s header, made at `stamp` (CLOCK_MONOTONIC nanoseconds). The hashes
    /// are made up from the number: 64 hex digits, as real ones.
    pub fn new(number: u64, stamp: u64) -> Self {
        let hash = |n: u64, salt: u64| {
            let a = mix(n ^ salt);
            let (b, c, d) = (mix(a), mix(a ^ 1), mix(a ^ 2));
            format!("0x{a:016x}{b:016x}{c:016x}{d:016x}")
        };
        Self {
            number: format!("0x{number:x}"),
            hash: hash(number, 0),
            parent_hash: hash(number.wrapping_sub(1), 0),
            sha3_uncles: EMPTY_UNCLES.to_owned(),
            miner: format!("0x{:016x}{:016x}{:08x}", mix(7), mix(8), 9),
            state_root: hash(number, 3),
            transactions_root: hash(number, 4),
            difficulty: "0x0".to_owned(),
            gas_limit: "0x1c9c380".to_owned(),
            gas_used: "0x0".to_owned(),
            timestamp: format!("0x{:x}", 1_700_000_000 + number * 12),
            extra_data: format!("0x{stamp:016x}"),
            base_fee_per_gas: "0x7".to_owned(),
        }
    }
}

/// Scrambles `n` (splitmix64's finalizer): made-up hashes that look random.
pub fn mix(n: u64) -> u64 {
    let mut z = n.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_encodes_to_about_600_bytes() {
        let text = serde_json::to_string(&Header::new(1_234_567, u64::MAX / 3)).unwrap();
        assert!(
            (580..680).contains(&text.len()),
            "{} bytes: {text}",
            text.len()
        );
    }
}
