//! Decodes `params` straight into Rust types, by position or by name.
//!
//! [`FromParams`] is implemented for tuples of up to 16 owned, deserializable types (one element
//! per parameter), for [`Whole`] (the whole `params` value into one type) and for [`Params`] (the
//! raw value, decoded by the handler). The rules:
//!
//! - an array fills the parameters by position; trailing parameters that accept a missing value
//!   (`Option<T>`) may be left out; more values than parameters is an error;
//! - an object fills them by name; unknown members are ignored; `Option<T>` may be left out;
//! - absent `params` count as an empty array.
//!
//! Every failure is `-32602 Invalid params` whose `data` says where and gives serde's reason:
//!
//! - params of parameters (a tuple) name the parameter by its wire name, the name a client uses
//!   in by-name params: `parameter "b": invalid type: string "x", expected i64`,
//!   `parameter "textDocument" is missing`;
//! - params decoded whole ([`Whole`], [`Params::parse`]) have no parameter name on the wire: the
//!   path into the value takes its place, from `params`:
//!   ``params.textDocument: missing field `uri` ``,
//!   `params.position.line: invalid type: string "x", expected u32`, `params[2]: ...`, and
//!   `params: missing` for absent params the type needs.
//!
//! The path costs nothing until a decode fails: it is read back from where serde_json says the
//! failure was, in the params' text.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserializer as _;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::value::RawValue;

use crate::dispatch::describe::MethodDoc;
use crate::dispatch::describe::ParamDoc;
use crate::dispatch::schema::SchemaDoc;
use crate::wire::RpcError;

mod path;

/// Decodes a parameter list from a request's `params`.
///
/// `names` are the wire names of the elements, in order: they match members of a by-name `params`
/// object and name the parameter in error messages.
pub trait FromParams: Sized + Send + 'static {
    /// Decodes `params` (`None` when the request has none).
    ///
    /// # Errors
    ///
    /// `-32602 Invalid params`, naming the parameter at fault.
    fn from_params(
        params: Option<&RawValue>,
        names: &'static [&'static str],
    ) -> Result<Self, RpcError>;

    /// Describes a method taking these params (see [`MethodDoc`]): by default as one
    /// `params` value of any kind, which is all that can be said without knowing the type.
    fn describe(names: &'static [&'static str]) -> MethodDoc {
        let _ = names;
        MethodDoc::whole(ParamDoc::new("params", SchemaDoc::any()).optional())
    }

    /// Says whether [`deserialize_params`](Self::deserialize_params) decodes these params, so that
    /// they are decoded while the request is read, in one pass (tuples do). `false` by default.
    #[doc(hidden)]
    const ONE_PASS: bool = false;

    /// Decodes params from the value `deserializer` is at, while the request is read; called only
    /// when [`ONE_PASS`](Self::ONE_PASS) is `true`, and only for params present. Its errors are
    /// shown to no one: the request is then read again and decoded with
    /// [`from_params`](Self::from_params), whose error is the answer.
    ///
    /// # Errors
    ///
    /// When the params do not decode (by default, always).
    #[doc(hidden)]
    fn deserialize_params<'de, D: de::Deserializer<'de>>(
        deserializer: D,
        names: &'static [&'static str],
    ) -> Result<Self, D::Error> {
        let _ = (deserializer, names);
        Err(de::Error::custom("not decoded in one pass"))
    }
}

/// Holds the raw `params` of a request, decoded by the handler itself.
///
/// ```
/// use jrpc_runtime::Params;
///
/// let params = Params::from_json(r#"[1, 2]"#).unwrap();
/// let (a, b): (i64, i64) = params.parse().unwrap();
/// assert_eq!(a + b, 3);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Params(Option<Box<RawValue>>);

impl Params {
    /// Reads params from their JSON text.
    ///
    /// # Errors
    ///
    /// When `json` is not valid JSON.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        RawValue::from_string(json.to_owned()).map(|raw| Self(Some(raw)))
    }

    /// Returns the params' JSON text, `None` when the request had none.
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref().map(RawValue::get)
    }

    /// Returns whether the request had no params.
    pub fn is_none(&self) -> bool {
        self.0.is_none()
    }

    /// Decodes the whole params value into `T` (absent params decode as `null`).
    ///
    /// # Errors
    ///
    /// `-32602 Invalid params` with the path to the part that failed and serde's reason
    /// (`params.position.line: invalid type: ...`).
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, RpcError> {
        let text = self.get().unwrap_or("null");
        serde_json::from_str(text).map_err(|err| whole_error(text, &err))
    }

    /// Returns the raw value, when there is one.
    pub fn into_raw(self) -> Option<Box<RawValue>> {
        self.0
    }
}

impl FromParams for Params {
    fn from_params(
        params: Option<&RawValue>,
        _names: &'static [&'static str],
    ) -> Result<Self, RpcError> {
        Ok(Self(params.map(ToOwned::to_owned)))
    }
}

/// Decodes the whole `params` value into one type (`#[rpc(params = whole)]`).
///
/// Absent params decode as a missing value (`None` for an `Option`), else as `[]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Whole<T>(pub T);

impl<T: DeserializeOwned + Send + 'static> FromParams for Whole<T> {
    /// Decodes the whole value; a failure's `data` gives the path into it, from `params`.
    fn from_params(
        params: Option<&RawValue>,
        _names: &'static [&'static str],
    ) -> Result<Self, RpcError> {
        let Some(raw) = params else {
            return match missing::<T>("params") {
                Ok(value) => Ok(Self(value)),
                Err(_) => serde_json::from_str("[]")
                    .map(Self)
                    .map_err(|_| RpcError::invalid_params("params: missing")),
            };
        };
        let text = raw.get();
        serde_json::from_str(text)
            .map(Self)
            .map_err(|err| whole_error(text, &err))
    }

    /// Describes the one parameter, required unless absent params decode.
    fn describe(names: &'static [&'static str]) -> MethodDoc {
        let param = ParamDoc::new(name_at(names, 0), SchemaDoc::any());
        MethodDoc::whole(match Self::from_params(None, names) {
            Ok(_) => param.optional(),
            Err(_) => param,
        })
    }
}

impl FromParams for () {
    fn from_params(
        params: Option<&RawValue>,
        _names: &'static [&'static str],
    ) -> Result<Self, RpcError> {
        match params.map(RawValue::get) {
            Some(text) if text.starts_with('[') => {
                match serde_json::from_str::<[IgnoredAny; 0]>(text) {
                    Ok(_) => Ok(()),
                    Err(_) => Err(RpcError::invalid_params(
                        "too many parameters: expected none",
                    )),
                }
            }
            _ => Ok(()),
        }
    }

    fn describe(_names: &'static [&'static str]) -> MethodDoc {
        MethodDoc::new()
    }

    const ONE_PASS: bool = true;

    #[inline]
    fn deserialize_params<'de, D: de::Deserializer<'de>>(
        deserializer: D,
        _names: &'static [&'static str],
    ) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NoParams)
    }
}

/// Reads the params of a method that takes none in one pass: an empty array, or an object
/// whose members are ignored. Anything else is read again by [`FromParams::from_params`].
struct NoParams;

impl<'de> Visitor<'de> for NoParams {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no parameters")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        match seq.next_element::<IgnoredAny>()? {
            None => Ok(()),
            Some(_) => Err(de::Error::custom("too many parameters: expected none")),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(())
    }
}

/// Runs `visitor` over `text`.
fn decode_any<'de, V: Visitor<'de>>(
    text: &'de str,
    visitor: V,
) -> Result<V::Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    (&mut de).deserialize_any(visitor)
}

/// Returns the `-32602` for a failed decode: the parameter-specific reason when one was recorded.
fn params_error(err: &serde_json::Error, reason: Option<String>) -> RpcError {
    RpcError::invalid_params(reason.unwrap_or_else(|| strip_position(&err.to_string()).to_owned()))
}

/// Returns the reason for a part of the params that did not read and belongs to no parameter.
fn unreadable(what: &str, err: &impl fmt::Display) -> String {
    format!(
        "{what} could not be read: {}",
        strip_position(&err.to_string())
    )
}

/// Returns the `-32602` of params decoded whole: `data` is the path to where `err` was found in
/// `text` and serde's reason (``params.textDocument: missing field `uri` ``).
#[cold]
fn whole_error(text: &str, err: &serde_json::Error) -> RpcError {
    RpcError::invalid_params(format!(
        "{}: {}",
        path::path_at(text, err),
        strip_position(&err.to_string())
    ))
}

fn name_at(names: &'static [&'static str], index: usize) -> &'static str {
    names.get(index).copied().unwrap_or("?")
}

/// serde_json appends ` at line L column C`; the position means nothing to a client that sent the
/// params as part of a larger body.
fn strip_position(message: &str) -> &str {
    match message.rfind(" at line ") {
        Some(at)
            if message[at + 9..]
                .split_once(" column ")
                .is_some_and(|(l, c)| is_digits(l) && is_digits(c)) =>
        {
            &message[..at]
        }
        _ => message,
    }
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Returns a parameter that was not given: `Option<T>` (and anything else that accepts a missing
/// value) takes its empty value, everything else is an error.
fn missing<T: DeserializeOwned>(name: &str) -> Result<T, String> {
    T::deserialize(Missing)
        .map_err(|_: de::value::Error| format!("parameter \"{name}\" is missing"))
}

struct Missing;

impl<'de> de::Deserializer<'de> for Missing {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("missing"))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_none()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// Decodes params of type `P` in the pass that reads the request
/// ([`FromParams::deserialize_params`]).
pub(super) struct ParamsSeed<P> {
    names: &'static [&'static str],
    marker: PhantomData<fn() -> P>,
}

// By hand: a derive would ask for `P: Copy`.
impl<P> Clone for ParamsSeed<P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for ParamsSeed<P> {}

impl<P> ParamsSeed<P> {
    pub(super) fn new(names: &'static [&'static str]) -> Self {
        Self {
            names,
            marker: PhantomData,
        }
    }
}

impl<'de, P: FromParams> DeserializeSeed<'de> for ParamsSeed<P> {
    type Value = P;

    #[inline]
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<P, D::Error> {
        P::deserialize_params(deserializer, self.names)
    }
}

/// Reads a member name of by-name params as the index of the parameter it names (`None` for an
/// unknown member) without copying it.
struct KeyIndex(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for KeyIndex {
    type Value = Option<usize>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyIndex {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a parameter name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        // Lengths first, then bytes in a loop: names are short, and a call of `memcmp` for each
        // costs more than comparing them.
        let same = |name: &&str| {
            name.len() == key.len() && name.bytes().zip(key.bytes()).all(|(a, b)| a == b)
        };
        Ok(self.0.iter().position(same))
    }
}

/// One parameter's value; a failure records which parameter it was.
struct ParamSeed<'r, T> {
    name: &'static str,
    reason: &'r mut Option<String>,
    marker: PhantomData<T>,
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for ParamSeed<'_, T> {
    type Value = T;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        T::deserialize(deserializer).inspect_err(|err| {
            *self.reason = Some(format!(
                "parameter \"{}\": {}",
                self.name,
                strip_position(&err.to_string())
            ));
        })
    }
}

/// Visits a tuple of parameters: each slot filled from an array by position or from an
/// object by name; a failure records the reason, naming the parameter.
struct TupleVisitor<'r, T> {
    names: &'static [&'static str],
    reason: &'r mut Option<String>,
    marker: PhantomData<T>,
}

impl<'r, T> TupleVisitor<'r, T> {
    fn new(names: &'static [&'static str], reason: &'r mut Option<String>) -> Self {
        Self {
            names,
            reason,
            marker: PhantomData,
        }
    }
}

macro_rules! tuple_params {
    ($len:literal; $($idx:tt $T:ident),+) => {
        impl<'de, $($T: DeserializeOwned),+> Visitor<'de> for TupleVisitor<'_, ($($T,)+)> {
            type Value = ($(Option<$T>,)+);

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array or an object of parameters")
            }

            fn visit_seq<SeqA: SeqAccess<'de>>(self, mut seq: SeqA) -> Result<Self::Value, SeqA::Error> {
                let mut slots: Self::Value = ($(None::<$T>,)+);
                $(
                    match seq.next_element_seed(ParamSeed::<$T> {
                        name: name_at(self.names, $idx),
                        reason: &mut *self.reason,
                        marker: PhantomData,
                    })? {
                        Some(value) => slots.$idx = Some(value),
                        None => return Ok(slots),
                    }
                )+
                let extra = seq.next_element::<IgnoredAny>().inspect_err(|err| {
                    *self.reason = Some(unreadable("a parameter past the last", err));
                })?;
                if extra.is_some() {
                    let message = format!("too many parameters: expected at most {}", $len);
                    *self.reason = Some(message.clone());
                    return Err(de::Error::custom(message));
                }
                Ok(slots)
            }

            fn visit_map<MapA: MapAccess<'de>>(self, mut map: MapA) -> Result<Self::Value, MapA::Error> {
                let mut slots: Self::Value = ($(None::<$T>,)+);
                // A name or an unknown member that does not read is no parameter's fault: say
                // what it was, as the parameters' own failures do.
                while let Some(index) = map
                    .next_key_seed(KeyIndex(self.names))
                    .inspect_err(|err| *self.reason = Some(unreadable("a parameter name", err)))?
                {
                    match index {
                        $(
                            Some($idx) => {
                                slots.$idx = Some(map.next_value_seed(ParamSeed::<$T> {
                                    name: name_at(self.names, $idx),
                                    reason: &mut *self.reason,
                                    marker: PhantomData,
                                })?);
                            }
                        )+
                        _ => {
                            map.next_value::<IgnoredAny>().inspect_err(|err| {
                                *self.reason = Some(unreadable("an unknown parameter's value", err));
                            })?;
                        }
                    }
                }
                Ok(slots)
            }
        }

        impl<$($T: DeserializeOwned),+> TupleVisitor<'_, ($($T,)+)> {
            /// Returns the parameters, each one not given taking its missing value (or failing).
            fn complete(slots: ($(Option<$T>,)+), names: &'static [&'static str]) -> Result<($($T,)+), String> {
                Ok(($(
                    match slots.$idx {
                        Some(value) => value,
                        None => missing::<$T>(name_at(names, $idx))?,
                    },
                )+))
            }
        }

        impl<$($T: DeserializeOwned + Send + 'static),+> FromParams for ($($T,)+) {
            fn from_params(params: Option<&RawValue>, names: &'static [&'static str]) -> Result<Self, RpcError> {
                let mut reason = None;
                let slots: ($(Option<$T>,)+) = match params {
                    Some(raw) => {
                        let visitor = TupleVisitor::<Self>::new(names, &mut reason);
                        decode_any(raw.get(), visitor).map_err(|err| params_error(&err, reason.take()))?
                    }
                    None => ($(None::<$T>,)+),
                };
                TupleVisitor::<Self>::complete(slots, names).map_err(RpcError::invalid_params)
            }

            /// One parameter per element, required unless its type accepts a missing value.
            fn describe(names: &'static [&'static str]) -> MethodDoc {
                let mut doc = MethodDoc::new();
                $(
                    let param = ParamDoc::new(name_at(names, $idx), SchemaDoc::any());
                    doc.params.push(match missing::<$T>("") {
                        Ok(_) => param.optional(),
                        Err(_) => param,
                    });
                )+
                doc
            }

            const ONE_PASS: bool = true;

            #[inline]
            fn deserialize_params<'de, De: de::Deserializer<'de>>(
                deserializer: De,
                names: &'static [&'static str],
            ) -> Result<Self, De::Error> {
                let mut reason = None;
                let slots = deserializer.deserialize_any(TupleVisitor::<Self>::new(names, &mut reason))?;
                TupleVisitor::<Self>::complete(slots, names).map_err(de::Error::custom)
            }
        }
    };
}

tuple_params!(1; 0 A);
tuple_params!(2; 0 A, 1 B);
tuple_params!(3; 0 A, 1 B, 2 C);
tuple_params!(4; 0 A, 1 B, 2 C, 3 D);
tuple_params!(5; 0 A, 1 B, 2 C, 3 D, 4 E);
tuple_params!(6; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F);
tuple_params!(7; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G);
tuple_params!(8; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H);
tuple_params!(9; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I);
tuple_params!(10; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J);
tuple_params!(11; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K);
tuple_params!(12; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L);
tuple_params!(13; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M);
tuple_params!(14; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M, 13 N);
tuple_params!(15; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M, 13 N, 14 O);
tuple_params!(16; 0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M, 13 N, 14 O, 15 P);

#[cfg(test)]
mod tests {
    use super::*;

    fn decode<P: FromParams>(
        json: Option<&str>,
        names: &'static [&'static str],
    ) -> Result<P, String> {
        let raw = json.map(|j| serde_json::from_str::<&RawValue>(j).unwrap());
        P::from_params(raw, names)
            .map_err(|e| e.data().map(|d| d.get().to_owned()).unwrap_or_default())
    }

    #[test]
    fn positional_and_named() {
        let names = &["a", "b"];
        assert_eq!(decode::<(i64, i64)>(Some("[1, 2]"), names), Ok((1, 2)));
        assert_eq!(
            decode::<(i64, i64)>(Some(r#"{"b": 2, "a": 1, "c": 3}"#), names),
            Ok((1, 2))
        );
    }

    #[test]
    fn wrong_type_names_the_parameter() {
        let err = decode::<(i64, i64)>(Some(r#"[1, "x"]"#), &["a", "b"]).unwrap_err();
        assert_eq!(
            err,
            r#""parameter \"b\": invalid type: string \"x\", expected i64""#
        );
        let err = decode::<(i64, i64)>(Some(r#"{"a": 1, "b": "x"}"#), &["a", "b"]).unwrap_err();
        assert_eq!(
            err,
            r#""parameter \"b\": invalid type: string \"x\", expected i64""#
        );
    }

    #[test]
    fn options_may_be_left_out_but_nothing_else() {
        let names = &["a", "b"];
        assert_eq!(
            decode::<(i64, Option<i64>)>(Some("[1]"), names),
            Ok((1, None))
        );
        assert_eq!(
            decode::<(i64, Option<i64>)>(Some(r#"{"a":1}"#), names),
            Ok((1, None))
        );
        assert_eq!(decode::<(Option<i64>,)>(None, names), Ok((None,)));
        let err = decode::<(i64, i64)>(Some("[1]"), names).unwrap_err();
        assert_eq!(err, r#""parameter \"b\" is missing""#);
        let err = decode::<(i64, i64)>(None, names).unwrap_err();
        assert_eq!(err, r#""parameter \"a\" is missing""#);
    }

    /// Checks that a lone surrogate escape passes JSON's syntax (and so the request's reading) but
    /// no Rust string holds it: where it is not a parameter's value, the reason says where it is.
    #[test]
    fn what_reads_as_no_parameter_is_named_too() {
        let names = &["a", "b"];
        let err = decode::<(i64, i64)>(Some(r#"{"n\ud888-x": 0}"#), names).unwrap_err();
        assert!(err.contains("a parameter name could not be read"), "{err}");
        let err = decode::<(i64, i64)>(Some(r#"{"a": 1, "b": 2, "c": "\ud888-x"}"#), names);
        assert_eq!(
            err,
            Ok((1, 2)),
            "an unknown member's value is skipped unread"
        );
        let err = decode::<(i64,)>(Some(r#"[1, "\ud888-x"]"#), &["a"]).unwrap_err();
        assert!(
            err.starts_with(r#""too many parameters"#) || err.contains("past the last"),
            "{err}"
        );
    }

    #[test]
    fn too_many_positional_values() {
        let err = decode::<(i64,)>(Some("[1, 2]"), &["a"]).unwrap_err();
        assert_eq!(err, r#""too many parameters: expected at most 1""#);
        assert!(decode::<()>(Some("[1]"), &[]).is_err());
        assert_eq!(decode::<()>(Some("[]"), &[]), Ok(()));
        assert_eq!(decode::<()>(Some(r#"{"x":1}"#), &[]), Ok(()));
    }

    #[test]
    fn whole_params() {
        assert_eq!(
            decode::<Whole<Vec<i64>>>(Some("[1,2,3]"), &["n"]),
            Ok(Whole(vec![1, 2, 3]))
        );
        assert_eq!(decode::<Whole<Vec<i64>>>(None, &["n"]), Ok(Whole(vec![])));
        assert_eq!(
            decode::<Whole<Option<Vec<i64>>>>(None, &["n"]),
            Ok(Whole(None))
        );
        let err = decode::<Whole<Vec<i64>>>(Some(r#"{"a":1}"#), &["n"]).unwrap_err();
        assert_eq!(
            err, r#""params: invalid type: map, expected a sequence""#,
            "no parameter name is on the wire: the path starts at `params`"
        );
    }

    #[test]
    fn absent_whole_params_are_missing_unless_the_type_takes_none() {
        let err = decode::<Whole<(i64, i64)>>(None, &["params"]).unwrap_err();
        assert_eq!(err, r#""params: missing""#);
        assert_eq!(
            decode::<Whole<Option<(i64, i64)>>>(None, &["params"]),
            Ok(Whole(None))
        );
    }

    #[test]
    fn raw_params_parsed_name_the_path_too() {
        let params = Params::from_json(r#"{"a": [1, "x"]}"#).unwrap();
        let err = params
            .parse::<std::collections::HashMap<String, Vec<u8>>>()
            .unwrap_err();
        assert_eq!(
            err.data().map(RawValue::get),
            Some(r#""params.a[1]: invalid type: string \"x\", expected u8""#)
        );
    }

    #[test]
    fn strips_only_positions() {
        assert_eq!(strip_position("bad at line 1 column 7"), "bad");
        assert_eq!(strip_position("bad at line one"), "bad at line one");
    }
}
