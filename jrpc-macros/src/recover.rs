//! Reading an item that syn cannot parse.
//!
//! rustc parses the item before it runs the attribute, so a syntax error in
//! it has already been reported; reporting syn's view of it again would be
//! a second error for one mistake. What is left to do is to keep the item
//! working: when the error is inside a method's body, the signatures are
//! read with each body set aside, the service is expanded as usual, and the
//! bodies are put back, as written, in the output. Otherwise the item is
//! emitted as written, with the helper attributes taken out.

use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream, TokenTree};

const PLACEHOLDER: &str = "__jrpc_body_";

/// `item` with every brace-delimited group at the top level of its body (a
/// method's body, a constant's block, a macro's braces) replaced by a
/// placeholder, and those groups, in order.
pub(crate) fn set_bodies_aside(item: &TokenStream) -> (TokenStream, Vec<Group>) {
    let mut trees: Vec<TokenTree> = item.clone().into_iter().collect();
    let mut bodies = Vec::new();
    if let Some(TokenTree::Group(body)) = trees.last_mut()
        && body.delimiter() == Delimiter::Brace
    {
        let inner = body
            .stream()
            .into_iter()
            .map(|tree| match tree {
                TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => {
                    let ident = Ident::new(
                        &format!("{PLACEHOLDER}{}", bodies.len()),
                        Span::call_site().located_at(group.span()),
                    );
                    let mut placeholder =
                        Group::new(Delimiter::Brace, TokenTree::Ident(ident).into());
                    placeholder.set_span(group.span());
                    bodies.push(group);
                    TokenTree::Group(placeholder)
                }
                other => other,
            })
            .collect();
        let mut group = Group::new(Delimiter::Brace, inner);
        group.set_span(body.span());
        *body = group;
    }
    (trees.into_iter().collect(), bodies)
}

/// `tokens` with each placeholder group replaced by the body it stands for.
/// Only groups holding a placeholder are rebuilt: a rebuilt group's
/// delimiters lose their own spans.
pub(crate) fn restore(tokens: TokenStream, bodies: &[Group]) -> TokenStream {
    if bodies.is_empty() {
        return tokens;
    }
    restore_in(tokens, bodies).0
}

fn restore_in(tokens: TokenStream, bodies: &[Group]) -> (TokenStream, bool) {
    let mut changed = false;
    let out = tokens
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Group(group) => {
                if let Some(body) = placeholder_of(&group).and_then(|i| bodies.get(i)) {
                    changed = true;
                    return TokenTree::Group(body.clone());
                }
                let (stream, inner_changed) = restore_in(group.stream(), bodies);
                if !inner_changed {
                    return TokenTree::Group(group);
                }
                changed = true;
                let mut inner = Group::new(group.delimiter(), stream);
                inner.set_span(group.span());
                TokenTree::Group(inner)
            }
            other => other,
        })
        .collect();
    (out, changed)
}

/// Returns the index of the body a `{ __jrpc_body_N }` group stands for.
fn placeholder_of(group: &Group) -> Option<usize> {
    if group.delimiter() != Delimiter::Brace {
        return None;
    }
    let mut trees = group.stream().into_iter();
    let (Some(TokenTree::Ident(ident)), None) = (trees.next(), trees.next()) else {
        return None;
    };
    ident.to_string().strip_prefix(PLACEHOLDER)?.parse().ok()
}

/// `item` with `#[rpc(...)]`, `#[notification]` and `#[subscription(...)]` taken out of its own
/// attributes, its body's items' and their parameters' (never out of a
/// body), so rustc does not add "cannot find attribute" to the syntax error
/// it reported.
pub(crate) fn strip_helpers(item: TokenStream) -> TokenStream {
    strip_level(item, 0)
}

/// Depth 0: the item; 1: its body; 2: a parameter list in the body. Only
/// groups that lose an attribute are rebuilt (a rebuilt group's delimiters
/// lose their own spans, where rustc may report the syntax error).
fn strip_level(tokens: TokenStream, depth: u8) -> TokenStream {
    strip_in(tokens, depth).0
}

fn strip_in(tokens: TokenStream, depth: u8) -> (TokenStream, bool) {
    let mut out = Vec::new();
    let mut changed = false;
    let mut trees = tokens.into_iter().peekable();
    while let Some(tree) = trees.next() {
        match tree {
            TokenTree::Punct(p) if p.as_char() == '#' => {
                if let Some(TokenTree::Group(g)) = trees.peek()
                    && g.delimiter() == Delimiter::Bracket
                    && is_helper(g)
                {
                    trees.next();
                    changed = true;
                    continue;
                }
                out.push(TokenTree::Punct(p));
            }
            TokenTree::Group(g) => {
                let descend = match (depth, g.delimiter()) {
                    (0, Delimiter::Brace) => Some(1),
                    (1, Delimiter::Parenthesis) => Some(2),
                    _ => None,
                };
                let stripped = descend.map(|depth| strip_in(g.stream(), depth));
                match stripped {
                    Some((stream, true)) => {
                        changed = true;
                        let mut inner = Group::new(g.delimiter(), stream);
                        inner.set_span(g.span());
                        out.push(TokenTree::Group(inner));
                    }
                    _ => out.push(TokenTree::Group(g)),
                }
            }
            other => out.push(other),
        }
    }
    (out.into_iter().collect(), changed)
}

fn is_helper(attr: &Group) -> bool {
    matches!(
        attr.stream().into_iter().next(),
        Some(TokenTree::Ident(ident))
            if ident == "rpc" || ident == "notification" || ident == "subscription"
    )
}
