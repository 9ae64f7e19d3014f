//! Holds the items the client stubs of the expansion name.

use std::io::Write as _;
use std::marker::PhantomData;
use std::ops::Deref;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::Kind;
use crate::batch::{Batch, Slot};
use crate::caller::ParamEncoding;
use crate::dispatch::Context;
use crate::error::ClientError;

/// Says that the name a client stub was given is its own: implemented by the macro for its stub,
/// checked where the stub's name is used in the service's module.
#[diagnostic::on_unimplemented(
    message = "the name of the client stub is taken by `{Self}`",
    label = "the client stub of this service has this name",
    note = "another type of this name is in scope here: name the stub with `#[rpc_service(client = \"...\")]`, or leave it out with `#[rpc_service(client = false)]`"
)]
pub trait StubName {
    /// Checks that a stub's name names the stub (a trait's own method: rustc reports an unmet
    /// `StubName` with no note into the runtime).
    #[inline]
    fn check(&self) {}
}

/// Marks the parameter types of a client stub. No supertrait (as `RpcParam`): the stub encodes
/// through its methods, which the expansion calls at the type as written.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a parameter of the client stub",
    label = "this type does not implement `serde::Serialize`",
    note = "the client stub encodes parameters into the request: derive `serde::Serialize` for `{Self}`, or leave the stub out with `#[rpc_service(client = false)]`"
)]
pub trait StubParam {
    /// Adds this value as the parameter `name`.
    ///
    /// # Errors
    ///
    /// [`ClientError::Encode`] when the value cannot be encoded.
    fn push_to(&self, params: &mut ParamsBuilder, name: &'static str) -> Result<(), ClientError>;

    /// Returns this value as the whole params of a `params = whole` method.
    ///
    /// # Errors
    ///
    /// [`ClientError::Encode`] when the value cannot be encoded.
    fn to_whole(&self) -> StubParams;
}
#[diagnostic::do_not_recommend]
impl<T: Serialize + ?Sized> StubParam for T {
    #[inline]
    fn push_to(&self, params: &mut ParamsBuilder, name: &'static str) -> Result<(), ClientError> {
        params.push(name, self)
    }

    #[inline]
    fn to_whole(&self) -> StubParams {
        ParamsBuilder::whole(self)
    }
}

/// Marks the success types of a client stub. No supertrait (as [`StubParam`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a result of the client stub",
    label = "this type does not implement `serde::Deserialize` (owned)",
    note = "the client stub decodes the result from the response: derive `serde::Deserialize` for `{Self}` and give it no borrowed fields, or leave the stub out with `#[rpc_service(client = false)]`"
)]
pub trait StubResult: Sized {
    /// Decodes a call's result.
    ///
    /// # Errors
    ///
    /// [`ClientError::Malformed`] when the result does not decode.
    fn decode(raw: &RawValue) -> Result<Self, ClientError>;

    /// Runs the check the expansion makes first, at the success type as written (as
    /// `RpcResult::check`).
    #[inline]
    fn check(_ok: PhantomData<Self>) {}
}
#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned> StubResult for T {
    #[inline]
    fn decode(raw: &RawValue) -> Result<T, ClientError> {
        decode_result(raw)
    }
}

/// Holds a stub's parameter of a type named `Context`, taken by value: when it is the runtime's
/// `Context` (a mistake the method table reports, once), the stub adds no second error; any
/// other type is pushed as usual. Method lookup tries `ContextArg<Context>` before its `Deref`
/// target.
pub struct ContextArg<'a, T: ?Sized>(AnyArg<'a, T>);

/// Holds a parameter of any other type: what [`ContextArg`] dereferences to.
pub struct AnyArg<'a, T: ?Sized>(&'a T);

impl<'a, T: ?Sized> ContextArg<'a, T> {
    /// Wraps the parameter's value.
    #[inline]
    pub fn new(value: &'a T) -> Self {
        Self(AnyArg(value))
    }
}

impl<'a, T: ?Sized> Deref for ContextArg<'a, T> {
    type Target = AnyArg<'a, T>;

    #[inline]
    fn deref(&self) -> &AnyArg<'a, T> {
        &self.0
    }
}

impl ContextArg<'_, Context> {
    /// Pushes nothing for the runtime's context: it is never sent (the method table does not
    /// compile).
    ///
    /// # Errors
    ///
    /// Never.
    #[inline]
    pub fn push(
        &self,
        _params: &mut ParamsBuilder,
        _name: &'static str,
    ) -> Result<(), ClientError> {
        Ok(())
    }
}

impl<T: ?Sized> AnyArg<'_, T> {
    /// Adds the parameter.
    ///
    /// # Errors
    ///
    /// [`ClientError::Encode`] when the value cannot be encoded.
    #[inline]
    pub fn push(&self, params: &mut ParamsBuilder, name: &'static str) -> Result<(), ClientError>
    where
        T: StubParam,
    {
        self.0.push_to(params, name)
    }
}

/// Builds a stub's `params`, positional or named.
pub struct ParamsBuilder {
    encoding: ParamEncoding,
    out: Vec<u8>,
    count: usize,
}

impl ParamsBuilder {
    /// Returns an empty parameter list.
    pub fn new(encoding: ParamEncoding, capacity: usize) -> Self {
        Self {
            encoding,
            out: Vec::with_capacity(16 * capacity + 2),
            count: 0,
        }
    }

    /// Adds one parameter; a named `None` is left out.
    ///
    /// # Errors
    ///
    /// [`ClientError::Encode`] when the value cannot be encoded.
    pub fn push<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<(), ClientError> {
        let mark = self.out.len();
        self.out
            .push(if self.count == 0 { self.open() } else { b',' });
        if self.encoding == ParamEncoding::Named {
            let _ = write!(self.out, "{}:", serde_json::Value::from(name));
        }
        let start = self.out.len();
        serde_json::to_writer(&mut self.out, value)
            .map_err(|err| ClientError::Encode(format!("parameter \"{name}\": {err}")))?;
        if self.encoding == ParamEncoding::Named && &self.out[start..] == b"null" {
            self.out.truncate(mark);
            return Ok(());
        }
        self.count += 1;
        Ok(())
    }

    fn open(&self) -> u8 {
        match self.encoding {
            ParamEncoding::Named => b'{',
            _ => b'[',
        }
    }

    /// Returns the params; `None` when there are no parameters at all.
    pub fn finish(mut self, declared: usize) -> Option<Box<RawValue>> {
        if declared == 0 {
            return None;
        }
        if self.count == 0 {
            self.out.clear();
            self.out.push(self.open());
        }
        self.out.push(match self.encoding {
            ParamEncoding::Named => b'}',
            _ => b']',
        });
        String::from_utf8(self.out)
            .ok()
            .and_then(|text| RawValue::from_string(text).ok())
    }

    /// Returns the whole params value of a `params = whole` method.
    ///
    /// # Errors
    ///
    /// [`ClientError::Encode`] when the value cannot be encoded.
    pub fn whole<T: Serialize + ?Sized>(value: &T) -> Result<Option<Box<RawValue>>, ClientError> {
        serde_json::value::to_raw_value(value)
            .map(Some)
            .map_err(|err| ClientError::Encode(format!("params: {err}")))
    }
}

/// Decodes a call's result into `T`.
///
/// # Errors
///
/// [`ClientError::Malformed`] when the result does not decode into `T`.
pub fn decode_result<T: DeserializeOwned>(raw: &RawValue) -> Result<T, ClientError> {
    crate::caller::decode_result(raw)
}

/// Decodes a call's result into the success type of `kind` (the probe of the method's return
/// type); the stub then takes it as the type it names, with [`OkOf::from_kind`](super::OkOf::from_kind).
///
/// # Errors
///
/// [`ClientError::Malformed`] when the result does not decode.
pub fn decode_answer<K>(_kind: K, raw: &RawValue) -> Result<K::Ok, ClientError>
where
    K: Kind,
    K::Ok: StubResult,
{
    K::Ok::decode(raw)
}

/// Holds a stub's encoded params, or why they could not be encoded.
pub type StubParams = Result<Option<Box<RawValue>>, ClientError>;

/// Adds a stub method's call to a typed batch.
#[inline]
pub fn batch_call<T>(batch: &mut Batch, method: &str, params: StubParams) -> Slot<T> {
    batch.push_call(method.to_owned(), params)
}

/// Adds a stub method's notification to a typed batch.
#[inline]
pub fn batch_notify(batch: &mut Batch, method: &str, params: StubParams) {
    batch.push_notification(method.to_owned(), params);
}

/// Marks the error type of a stub made with `#[rpc_service(client_error = E)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the stub's error type",
    label = "`{Self}` does not implement `From<ClientError>`",
    note = "the stub's methods return `Result<T, {Self}>`: implement `From<jrpc_runtime::ClientError>` for `{Self}`, mapping the server's codes (`ClientError::rpc_error`) to your variants and keeping the rest in one"
)]
pub trait StubError: Sized {
    /// Converts a stub's failure into this error type (a trait's own method, which the
    /// expansion calls at the type as written: rustc reports an unmet `StubError` there with no
    /// note into the runtime).
    fn from_client(err: ClientError) -> Self;
}
#[diagnostic::do_not_recommend]
impl<E: From<ClientError>> StubError for E {
    #[inline]
    fn from_client(err: ClientError) -> E {
        E::from(err)
    }
}
