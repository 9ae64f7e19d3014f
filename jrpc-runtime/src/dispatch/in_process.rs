//! Makes in-process calls: a [`Methods`] table is a [`Caller`] of its own methods.

use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::value::RawValue;

use super::Methods;
use super::trace::TraceContext;
use crate::caller::BatchResults;
use crate::caller::{BatchCall, Caller};
use crate::error::ClientError;
use crate::transport::Transport;
use crate::wire::write;
use crate::wire::{Id, Message};

/// Ids for in-process calls; they only need to be distinct while a call runs.
static NEXT_ID: AtomicI64 = AtomicI64::new(1);

impl Methods {
    /// [`handle`](Methods::handle), for a call made in process: one made while a traced request
    /// is served carries that trace (see [`TraceContext::outgoing`]) to the handler it calls, as a
    /// call over a transport would.
    async fn handle_outgoing(&self, body: &str) -> Option<String> {
        match TraceContext::outgoing() {
            None => self.handle(body).await,
            Some(trace) => {
                let ctx = self.inner.in_process.clone().with_trace(trace);
                self.handle_in(body, &ctx).await
            }
        }
    }
}

/// In-process calls: the request goes through [`Methods::handle`] as text, exactly as it would
/// arrive over a transport, and handlers see [`Transport::InProcess`](crate::transport::Transport::InProcess).
impl Caller for Methods {
    async fn call_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<Box<RawValue>, ClientError> {
        let id = Id::from(NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let body = write::call_text(Some(&id), method, params.as_deref());
        crate::caller::traced(method, &id, Transport::InProcess, async {
            match self.handle_outgoing(&body).await {
                Some(answer) => Message::parse(&answer)?.into_result(),
                None => Err(ClientError::Malformed("no answer to a call".into())),
            }
        })
        .await
    }

    /// One batch, answered by the table as it would answer one arriving over a transport (its
    /// batch limit applies).
    async fn batch_raw(&self, calls: Vec<BatchCall>) -> Result<BatchResults, ClientError> {
        if calls.is_empty() {
            return Ok(Vec::new());
        }
        let next_id = || Id::from(NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let (body, ids) = crate::caller::batch_body(&calls, next_id);
        let Some(answer) = self.handle_outgoing(&body).await else {
            return Ok(Vec::new());
        };
        crate::caller::match_answers(ids, &answer)
    }

    async fn notify_raw(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> Result<(), ClientError> {
        let body = write::call_text(None::<&Id>, method, params.as_deref());
        self.handle_outgoing(&body).await;
        Ok(())
    }
}
