//! Builds typed batches: calls sent together over any [`Caller`], each answer decoded into its own
//! type through the [`Slot`] its call returned.

use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::caller::{BatchCall, Caller};
use crate::caller::{decode_result, encode_params};
use crate::error::ClientError;

/// Collects calls and notifications to send together, each call's answer typed by the [`Slot`] it
/// returns. A generated stub's `batch()` fills one through methods named as the service's
/// (`batch.add(1, 2)`); by hand, [`call`](Self::call) and [`notify`](Self::notify) do.
///
/// [`send`](Self::send) goes through [`Caller::batch_raw`]: one JSON-RPC batch over HTTP and
/// in-process, separate messages in one write over a [`Peer`](crate::peer::Peer) (WebSocket, Unix
/// socket, stdio).
///
/// ```
/// use jrpc_runtime::{Batch, Methods, RpcError};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut methods = Methods::new();
/// methods.register("neg", &["x"], |(x,): (i64,), _| async move { Ok::<_, RpcError>(-x) }).unwrap();
/// methods.register("name", &[], |(): (), _| async { Ok::<_, RpcError>("calc") }).unwrap();
///
/// let mut batch = Batch::new();
/// let neg = batch.call::<i64>("neg", [5]);
/// let name = batch.call::<String>("name", ());
/// let mut answers = batch.send(&methods).await.unwrap();
/// assert_eq!(answers.take(neg).unwrap(), -5);
/// assert_eq!(answers.take(name).unwrap(), "calc");
/// # });
/// ```
///
/// Decisions: params that cannot be encoded fail [`send`](Self::send) with
/// [`ClientError::Encode`] before anything is sent, as a single call does; an empty batch
/// sends nothing (JSON-RPC has no empty batch) and has no answers.
pub struct Batch {
    id: u64,
    calls: Vec<BatchCall>,
    slots: usize,
    unencodable: Option<ClientError>,
}

/// Points at one call's answer in a batch's [`BatchAnswers`], and names the type it decodes into.
#[must_use = "a slot is how its call's answer is taken"]
pub struct Slot<T> {
    batch: u64,
    index: usize,
    result: PhantomData<fn() -> T>,
}

/// Holds the answers of a sent [`Batch`]: each taken once, by its call's [`Slot`].
pub struct BatchAnswers {
    batch: u64,
    results: Vec<Option<Result<Box<RawValue>, ClientError>>>,
}

impl Default for Batch {
    fn default() -> Self {
        // Tells one batch's slots from another's.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Self {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            calls: Vec::new(),
            slots: 0,
            unencodable: None,
        }
    }
}

impl fmt::Debug for Batch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch")
            .field("calls", &self.slots)
            .field("notifications", &(self.calls.len() - self.slots))
            .finish()
    }
}

impl<T> fmt::Debug for Slot<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Slot").field(&self.index).finish()
    }
}

impl fmt::Debug for BatchAnswers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchAnswers")
            .field("left", &self.results.iter().flatten().count())
            .finish()
    }
}

impl Batch {
    /// Returns an empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a call of `method`; its answer, decoded into `T`, is taken with the slot returned.
    /// `params` that encode as `null` (such as `()`) are left out.
    pub fn call<T: DeserializeOwned>(
        &mut self,
        method: impl Into<String>,
        params: impl Serialize,
    ) -> Slot<T> {
        let params = encode_params(&params);
        self.push_call(method.into(), params)
    }

    /// Adds the notification `method`: sent with the rest, never answered.
    pub fn notify(&mut self, method: impl Into<String>, params: impl Serialize) {
        let params = encode_params(&params);
        self.push_notification(method.into(), params);
    }

    /// Returns how many elements (calls and notifications) the batch holds.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Returns whether the batch holds nothing.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Sends the batch through `caller` and waits for every call's answer.
    ///
    /// # Errors
    ///
    /// [`ClientError::Encode`] when an element's params could not be encoded (nothing was
    /// sent), or the failure of the whole exchange ([`Caller::batch_raw`]). Each call's own
    /// failure is its entry's, taken with [`BatchAnswers::take`].
    pub async fn send<C: Caller + ?Sized>(self, caller: &C) -> Result<BatchAnswers, ClientError> {
        if let Some(err) = self.unencodable {
            return Err(err);
        }
        let results = if self.calls.is_empty() {
            Vec::new()
        } else {
            caller.batch_raw(self.calls).await?
        };
        if results.len() != self.slots {
            return Err(ClientError::Malformed(format!(
                "{} answers to a batch of {} calls",
                results.len(),
                self.slots
            )));
        }
        Ok(BatchAnswers {
            batch: self.id,
            results: results.into_iter().map(Some).collect(),
        })
    }

    pub(crate) fn push_call<T>(
        &mut self,
        method: String,
        params: Result<Option<Box<RawValue>>, ClientError>,
    ) -> Slot<T> {
        let index = self.slots;
        self.slots += 1;
        match params {
            Ok(params) => self.calls.push(BatchCall::call(method, params)),
            Err(err) => self.keep_first(err),
        }
        Slot {
            batch: self.id,
            index,
            result: PhantomData,
        }
    }

    pub(crate) fn push_notification(
        &mut self,
        method: String,
        params: Result<Option<Box<RawValue>>, ClientError>,
    ) {
        match params {
            Ok(params) => self.calls.push(BatchCall::notification(method, params)),
            Err(err) => self.keep_first(err),
        }
    }

    fn keep_first(&mut self, err: ClientError) {
        self.unencodable.get_or_insert(err);
    }
}

impl BatchAnswers {
    /// Returns the answer of the call that returned `slot`, decoded into its type.
    ///
    /// # Errors
    ///
    /// The call's own failure ([`ClientError::Failed`] with the server's error object, or the
    /// transport's for that call), [`ClientError::Malformed`] when the result does not decode
    /// into `T`, or when `slot` is another batch's.
    pub fn take<T: DeserializeOwned>(&mut self, slot: Slot<T>) -> Result<T, ClientError> {
        let entry = (slot.batch == self.batch)
            .then(|| self.results.get_mut(slot.index))
            .flatten()
            .and_then(Option::take);
        match entry {
            Some(raw) => decode_result(&raw?),
            None => Err(ClientError::Malformed(
                "a slot of another batch was given".into(),
            )),
        }
    }

    /// Returns how many answers are left to take.
    pub fn len(&self) -> usize {
        self.results.iter().flatten().count()
    }

    /// Returns whether every answer was taken (or the batch had no calls).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
