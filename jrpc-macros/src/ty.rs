//! What a type mentions, for the rules and for stand-ins, and the span it
//! covers, for errors rustc reports at it.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::visit::{self, Visit};
use syn::{Lifetime, ParenthesizedGenericArguments, PathSegment, Type, TypeBareFn};

/// The parts of a type the rules care about.
#[derive(Default)]
pub(crate) struct Scan<'a> {
    /// `&T` and `&mut T`, outermost first.
    pub(crate) refs: Vec<&'a syn::TypeReference>,
    /// `impl Trait`.
    pub(crate) impls: Vec<&'a syn::TypeImplTrait>,
    /// `Self`, as a type or a path's first segment.
    pub(crate) selfs: Vec<&'a PathSegment>,
    /// Lifetimes other than `'static`.
    pub(crate) lifetimes: Vec<&'a Lifetime>,
    /// `_` or a macro in type position: a type only rustc can read.
    pub(crate) opaque: bool,
}

impl<'a> Scan<'a> {
    pub(crate) fn of(ty: &'a Type) -> Self {
        let mut scan = Self::default();
        scan.visit_type(ty);
        scan
    }

    /// Whether the type can be repeated, as written, in a signature of its
    /// own (a stand-in's): no `impl`, no `Self`, no lifetime but `'static`.
    pub(crate) fn is_plain(&self) -> bool {
        self.impls.is_empty() && self.selfs.is_empty() && self.lifetimes.is_empty() && !self.opaque
    }
}

impl<'a> Visit<'a> for Scan<'a> {
    fn visit_type_reference(&mut self, r: &'a syn::TypeReference) {
        self.refs.push(r);
        visit::visit_type_reference(self, r);
    }

    fn visit_type_impl_trait(&mut self, i: &'a syn::TypeImplTrait) {
        self.impls.push(i);
        visit::visit_type_impl_trait(self, i);
    }

    fn visit_type_infer(&mut self, _: &'a syn::TypeInfer) {
        self.opaque = true;
    }

    fn visit_type_macro(&mut self, _: &'a syn::TypeMacro) {
        self.opaque = true;
    }

    fn visit_path_segment(&mut self, segment: &'a PathSegment) {
        if segment.ident == "Self" {
            self.selfs.push(segment);
        }
        visit::visit_path_segment(self, segment);
    }

    fn visit_lifetime(&mut self, lifetime: &'a Lifetime) {
        if lifetime.ident != "static" {
            self.lifetimes.push(lifetime);
        }
    }

    // A function pointer's or a closure trait's arguments borrow nothing of
    // the params; only their lifetimes and `Self` matter.
    fn visit_type_bare_fn(&mut self, f: &'a TypeBareFn) {
        let mut inner = Scan::default();
        visit::visit_type_bare_fn(&mut inner, f);
        self.absorb_signature(inner);
    }

    fn visit_parenthesized_generic_arguments(&mut self, args: &'a ParenthesizedGenericArguments) {
        let mut inner = Scan::default();
        visit::visit_parenthesized_generic_arguments(&mut inner, args);
        self.absorb_signature(inner);
    }
}

impl<'a> Scan<'a> {
    fn absorb_signature(&mut self, inner: Scan<'a>) {
        self.impls.extend(inner.impls);
        self.selfs.extend(inner.selfs);
        self.lifetimes.extend(inner.lifetimes);
        self.opaque |= inner.opaque;
    }
}

/// The spans of the first and the last token of `tokens`: an expression
/// whose first token is at the one and last token at the other covers what
/// `tokens` covers, so rustc reports there what it would report at them.
pub(crate) fn range(tokens: &impl ToTokens) -> (Span, Span) {
    let tokens: TokenStream = tokens.to_token_stream();
    let mut trees = tokens.into_iter();
    let Some(first) = trees.next() else {
        return (Span::call_site(), Span::call_site());
    };
    let last = trees.last();
    let start = match &first {
        TokenTree::Group(g) => g.span_open(),
        other => other.span(),
    };
    let end = match last.as_ref().unwrap_or(&first) {
        TokenTree::Group(g) => g.span_close(),
        other => other.span(),
    };
    (start, end)
}
