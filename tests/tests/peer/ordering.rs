//! The ordering rules of a `Peer`: a notification's handler finishes before the next message is
//! read, a running call does not hold up reading, and a handler's pushes arrive before its
//! answer.

use std::sync::{Arc, Mutex};

use jrpc_runtime::{Caller as _, Context, Framing, Methods, PeerConfig, RpcError};

use crate::duplex::{SHORT, bounded, calling, holding, pair, spawn_call};

#[tokio::test(start_paused = true)]
async fn a_notification_handler_finishes_before_the_next_message_is_read() {
    bounded(async {
        let log = Arc::new(Mutex::new(Vec::<&'static str>::new()));
        let mut methods = Methods::new();
        let note_log = Arc::clone(&log);
        methods
            .register_notification("note", &[], move |(): (), _ctx| {
                let log = Arc::clone(&note_log);
                async move {
                    log.lock().unwrap().push("note started");
                    // On the paused clock this ends only once nothing else can run: the call
                    // below, had it been read, would have run first.
                    tokio::time::sleep(SHORT).await;
                    log.lock().unwrap().push("note finished");
                }
            })
            .unwrap();
        let mark_log = Arc::clone(&log);
        methods
            .register("mark", &[], move |(): (), _ctx| {
                let log = Arc::clone(&mark_log);
                async move {
                    log.lock().unwrap().push("mark");
                    Ok::<_, RpcError>(())
                }
            })
            .unwrap();
        let (a, _b) = calling(methods);
        a.peer.notify("note", ()).await.unwrap();
        a.peer.call::<()>("mark", ()).await.unwrap();
        assert_eq!(
            *log.lock().unwrap(),
            ["note started", "note finished", "mark"]
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_call_does_not_hold_up_reading() {
    bounded(async {
        let (mut methods, gate, mut rx) = holding();
        let open = Arc::clone(&gate);
        methods
            .register_notification("open", &[], move |(): (), _ctx| {
                let gate = Arc::clone(&open);
                async move { gate.add_permits(1) }
            })
            .unwrap();
        let (a, _b) = calling(methods);
        let held = spawn_call::<String>(&a.peer, "hold");
        assert_eq!(rx.recv().await.as_deref(), Some("started"));
        // Only a message read after the call started can release it.
        a.peer.notify("open", ()).await.unwrap();
        assert_eq!(held.await.unwrap().unwrap(), "released");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handlers_pushes_arrive_before_its_answer() {
    bounded(async {
        let mut server = Methods::new();
        server
            .register(
                "work",
                &["steps"],
                |(steps,): (u32,), ctx: Context| async move {
                    let peer = ctx.peer().expect("a peer connection");
                    for step in 1..=steps {
                        peer.notify("progress", [step])
                            .await
                            .map_err(|err| RpcError::new(1, err.to_string()))?;
                    }
                    Ok::<_, RpcError>("done")
                },
            )
            .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut client = Methods::new();
        let log = Arc::clone(&seen);
        client
            .register_notification("progress", &["step"], move |(step,): (u32,), _ctx| {
                let log = Arc::clone(&log);
                async move { log.lock().unwrap().push(step) }
            })
            .unwrap();
        let (a, _b) = pair(
            Framing::Lines,
            (client, PeerConfig::default()),
            (server, PeerConfig::default()),
        );
        for round in 0..10 {
            seen.lock().unwrap().clear();
            let done: String = a.peer.call("work", [round + 1]).await.unwrap();
            assert_eq!(done, "done");
            let expected: Vec<u32> = (1..=round + 1).collect();
            assert_eq!(*seen.lock().unwrap(), expected, "round {round}");
        }
    })
    .await;
}
