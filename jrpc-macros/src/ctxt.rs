//! The error collector shared by the phases.
//!
//! Every rule reports into one [`Ctxt`] and keeps going, so a user sees all
//! of the mistakes in a service after one build, not one mistake per build.

use std::fmt::Display;

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};

/// Gathers every error found while parsing and validating one service.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: Option<syn::Error>,
    /// Errors that hold only under a `cfg` predicate, rendered as
    /// `#[cfg(predicate)] compile_error!(...)`: the macro cannot evaluate
    /// `cfg`, the compiler can.
    conditional: TokenStream,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// An error spanning `tokens` (from their first to their last token).
    pub(crate) fn error_spanned(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// An error at one span.
    pub(crate) fn error_at(&mut self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// An error at `span` when the crate is built with `predicate` true.
    pub(crate) fn error_if(&mut self, predicate: TokenStream, span: Span, message: impl Display) {
        let error = syn::Error::new(span, message).to_compile_error();
        self.conditional.extend(quote! {
            #[cfg(#predicate)]
            #error
        });
    }

    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.errors {
            Some(errors) => errors.combine(error),
            None => self.errors = Some(error),
        }
    }

    /// All errors, combined into one (each still reported at its own span),
    /// and the conditional ones, rendered.
    pub(crate) fn finish(self) -> (Result<(), syn::Error>, TokenStream) {
        let result = match self.errors {
            Some(errors) => Err(errors),
            None => Ok(()),
        };
        (result, self.conditional)
    }
}
