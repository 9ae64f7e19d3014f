//! Encodes and decodes Base64, strictly: the standard alphabet with padding (binary content,
//! resource blobs, the `=?base64?...?=` form of an HTTP header value) and the URL-safe one without
//! (cursors, the state a multi round-trip request hands the client). Decoding refuses what encoding
//! would not write: another alphabet's characters, missing or extra padding, bits left over.

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Encodes `bytes` in the standard alphabet, padded.
pub(crate) fn encode(bytes: &[u8]) -> String {
    encode_with(bytes, STANDARD, true)
}

/// Encodes `bytes` in the URL-safe alphabet, unpadded.
pub(crate) fn encode_url(bytes: &[u8]) -> String {
    encode_with(bytes, URL_SAFE, false)
}

/// Decodes standard, padded base64 `text`; `None` when it is not exactly that.
#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "HTTP's header values")
)]
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    let body = text.as_bytes();
    if !body.len().is_multiple_of(4) {
        return None;
    }
    let padding = body.iter().rev().take_while(|&&b| b == b'=').count();
    if padding > 2 {
        return None;
    }
    decode_with(&body[..body.len() - padding], STANDARD, padding)
}

/// Decodes URL-safe, unpadded base64 `text`; `None` when it is not exactly that.
pub(crate) fn decode_url(text: &str) -> Option<Vec<u8>> {
    let padding = match text.len() % 4 {
        0 => 0,
        2 => 2,
        3 => 1,
        _ => return None,
    };
    decode_with(text.as_bytes(), URL_SAFE, padding)
}

fn encode_with(bytes: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        let chars = chunk.len() + 1;
        for i in 0..4 {
            if i < chars {
                out.push(char::from(alphabet[(n >> (18 - 6 * i)) as usize & 63]));
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes `body` (no padding in it) that had `padding` characters of padding after it.
fn decode_with(body: &[u8], alphabet: &[u8; 64], padding: usize) -> Option<Vec<u8>> {
    if !(body.len() + padding).is_multiple_of(4) {
        return None;
    }
    let value = |c: u8| alphabet.iter().position(|&a| a == c).map(|v| v as u32);
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    for chunk in body.chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= value(*c)? << (18 - 6 * i);
        }
        let bytes = chunk.len() - 1;
        // Bits the last character carries past its bytes must be zero: one text per value.
        if bytes < 3 && n & (0x00ff_ffff >> (8 * bytes)) != 0 {
            return None;
        }
        for i in 0..bytes {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_both_alphabets() {
        for text in [
            "",
            "f",
            "fo",
            "foo",
            "foob",
            "fooba",
            "foobar",
            "\u{ff}\u{fe}?>",
        ] {
            let bytes = text.as_bytes();
            assert_eq!(decode(&encode(bytes)).as_deref(), Some(bytes), "{text}");
            assert_eq!(decode_url(&encode_url(bytes)).as_deref(), Some(bytes));
        }
        assert_eq!(encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(encode(b"fo"), "Zm8=");
        assert_eq!(encode_url(&[0xfb, 0xff]), "-_8");
    }

    #[test]
    fn anything_else_is_refused() {
        assert_eq!(decode("SGVsbG8=").as_deref(), Some(&b"Hello"[..]));
        for bad in [
            "SGVsbG8",
            "SGVs!!!bG8=",
            "SGVsbG9=",
            "S===",
            "Zm8==",
            "-_8=",
        ] {
            assert_eq!(decode(bad), None, "{bad}");
        }
        for bad in ["a", "Zm8=", "+/8", "Zm9"] {
            assert_eq!(decode_url(bad), None, "{bad}");
        }
    }
}
