//! Oversize, garbled and cut-off input to a `Peer`: what is answered with an error while the
//! connection goes on, and what closes it.

use jrpc_runtime::{ClientError, Methods, PeerConfig, RpcError};
use jrpc_tests::fixtures::add;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;

use crate::duplex::{bounded, hang, lines_peer, lsp_peer, spawn_call};

#[tokio::test]
async fn an_oversize_line_is_answered_with_an_error_and_the_next_is_served() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        let (_a, mut raw) = lines_peer(
            methods,
            PeerConfig::builder().max_message_size(64).build().unwrap(),
        );
        let padding = "x".repeat(200);
        raw.send_json(
            json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 1, "pad": padding}),
        )
        .await;
        let answer = raw.recv().await;
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert_eq!(answer["id"], Value::Null);
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 2}))
            .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": 3, "id": 2})
        );
    })
    .await;
}

#[tokio::test]
async fn a_line_that_is_not_json_is_answered_and_the_next_is_served() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        let (_a, mut raw) = lines_peer(methods, PeerConfig::default());
        raw.send("this is not json").await;
        let answer = raw.recv().await;
        assert_eq!(answer["error"]["code"], -32700, "{answer}");
        assert_eq!(answer["id"], Value::Null);
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 2}))
            .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": 3, "id": 2})
        );
    })
    .await;
}

#[tokio::test]
async fn an_invalid_object_without_an_id_is_still_answered() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        let (_a, mut raw) = lines_peer(methods, PeerConfig::default());
        // Each has a `method` and no `id`, so it looks like a notification, but none is a valid
        // request: each is answered -32600 with a null id, as `Methods::handle` answers it.
        for invalid in [
            json!({"jsonrpc": "1.0", "method": "add", "params": [1, 2]}),
            json!({"method": "add", "params": [1, 2]}),
            json!({"jsonrpc": "2.0", "method": "add", "params": 3}),
            json!({"jsonrpc": "2.0", "method": 5}),
        ] {
            raw.send_json(invalid.clone()).await;
            let answer = raw.recv().await;
            assert_eq!(answer["error"]["code"], -32600, "{invalid} got {answer}");
            assert_eq!(answer["id"], Value::Null);
        }
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 2}))
            .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": 3, "id": 2})
        );
    })
    .await;
}

#[tokio::test]
async fn a_request_with_a_repeated_member_never_holds_up_the_loop() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        hang(&mut methods);
        let (_a, mut raw) = lines_peer(methods, PeerConfig::default());
        // A member written twice: the loop cannot read this as it reads other messages. It must
        // not run `hang` in the loop's own task, which would stop the connection for good.
        raw.send(r#"{"jsonrpc":"2.0","method":"hang","id":1,"result":1,"result":2}"#)
            .await;
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 2}))
            .await;
        let answer = raw.recv().await;
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert_eq!(answer["id"], 1);
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": 3, "id": 2})
        );
    })
    .await;
}

#[tokio::test]
async fn a_result_written_over_several_lines_goes_out_as_one() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        methods
            .register("pretty", &[], |(): (), _| async {
                serde_json::value::RawValue::from_string("{\n  \"a\": [1,\r\n 2]\n}".into())
                    .map_err(|_| RpcError::internal())
            })
            .unwrap();
        let (_a, mut raw) = lines_peer(methods, PeerConfig::default());
        // A raw newline in JSON text can only be white space: the line framing must not split
        // the message there, nor give up the connection over it.
        raw.send_json(json!({"jsonrpc": "2.0", "method": "pretty", "id": 1}))
            .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": {"a": [1, 2]}, "id": 1})
        );
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 2}))
            .await;
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": 3, "id": 2})
        );
    })
    .await;
}

#[tokio::test]
async fn an_oversize_content_length_body_is_skipped() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        let (_a, mut raw) = lsp_peer(
            methods,
            PeerConfig::builder().max_message_size(64).build().unwrap(),
        );
        let padding = "x".repeat(200);
        raw.send_json(
            json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 1, "pad": padding}),
        )
        .await;
        raw.send_json(json!({"jsonrpc": "2.0", "method": "add", "params": [1, 2], "id": 2}))
            .await;
        let skipped = raw.recv().await;
        assert_eq!(skipped["error"]["code"], -32600, "{skipped}");
        assert_eq!(skipped["id"], Value::Null);
        assert_eq!(
            raw.recv().await,
            json!({"jsonrpc": "2.0", "result": 3, "id": 2})
        );
    })
    .await;
}

#[tokio::test]
async fn a_garbage_header_closes_the_connection() {
    bounded(async {
        let (a, mut raw) = lsp_peer(Methods::new(), PeerConfig::default());
        let pending = spawn_call::<Value>(&a.peer, "initialize");
        assert_eq!(raw.recv().await["method"], "initialize");
        raw.send_bytes(b"Content-Lenght 12\r\n\r\n{}").await;
        let err = a.driver.await.unwrap().unwrap_err();
        assert!(err.to_string().contains("header"), "{err}");
        let err = pending.await.unwrap().unwrap_err();
        assert!(
            matches!(&err, ClientError::Closed { method } if method == "initialize"),
            "{err:?}"
        );
        assert_eq!(raw.next().await, None, "the stream is closed");
    })
    .await;
}

#[tokio::test]
async fn a_peer_gone_mid_frame_breaks_the_connection() {
    bounded(async {
        let (a, mut raw) = lsp_peer(Methods::new(), PeerConfig::default());
        let pending = spawn_call::<Value>(&a.peer, "shutdown");
        assert_eq!(raw.recv().await["method"], "shutdown");
        raw.send_bytes(b"Content-Length: 100\r\n\r\n{\"jsonrpc\":")
            .await;
        drop(raw);
        let err = a.driver.await.unwrap().unwrap_err();
        assert!(err.to_string().contains("ended"), "{err}");
        let err = pending.await.unwrap().unwrap_err();
        assert!(
            matches!(&err, ClientError::Closed { method } if method == "shutdown"),
            "{err:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_line_cut_off_by_the_end_of_input_is_still_read() {
    bounded(async {
        let mut methods = Methods::new();
        add(&mut methods);
        let (a, mut raw) = lines_peer(methods, PeerConfig::default());
        raw.writer
            .write_all(br#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#)
            .await
            .unwrap();
        raw.writer.write_all(br#"{"jsonrpc":"2.0","#).await.unwrap();
        raw.writer.shutdown().await.unwrap();
        // The whole is one unterminated line: not JSON.
        let answer = raw.recv().await;
        assert_eq!(answer["error"]["code"], -32700, "{answer}");
        assert_eq!(raw.next().await, None);
        a.driver.await.unwrap().unwrap();
    })
    .await;
}
