//! The client's response and batch-answer parser (`Message::parse`, `Message::parse_many`): no
//! input panics, and what it reads writes back as text that reads the same.
#![no_main]

use jrpc_runtime::Message;
use libfuzzer_sys::fuzz_target;

fn round_trip(message: &Message) {
    let text = message.to_json();
    let again = Message::parse(&text).unwrap_or_else(|err| panic!("{text} did not parse: {err}"));
    assert_eq!(again.to_json(), text);
    if let Message::Response { .. } | Message::ErrorResponse { .. } = message {
        let _ = message.clone().into_result();
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(message) = Message::parse(text) {
        round_trip(&message);
    }
    if let Ok(messages) = Message::parse_many(text) {
        for message in &messages {
            round_trip(message);
        }
        if !text.trim_start().starts_with('[') {
            assert_eq!(messages.len(), 1);
        }
    }
});
