//! The table `into_methods` builds, and the method names given by an expression
//! (`#[rpc(name = EXPR)]`), which the expansion evaluates in constants.

use crate::dispatch::Methods;
use crate::error::RegisterError;

/// Holds the method table `into_methods` builds, with the Rust method each wire name was registered
/// for: a clash the macro could not see (a name given by an expression) then names both methods.
pub struct Table {
    methods: Methods,
    service: &'static str,
    owners: Vec<(&'static str, Owner)>,
}

/// Holds what registered a wire name: the Rust method, and which of its names it is.
#[derive(Clone, Copy)]
struct Owner {
    method: &'static str,
    role: Role,
}

/// Says which name of a method a wire name is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A method's (`#[rpc(name = ...)]`).
    Method,
    /// A subscription's subscribe method's (`#[subscription(name = ...)]`).
    Subscribe,
    /// A subscription's unsubscribe method's (`#[subscription(unsubscribe = ...)]`).
    Unsubscribe,
}

impl Owner {
    fn new(method: &'static str, role: Role) -> Self {
        Self { method, role }
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.role {
            Role::Unsubscribe => write!(f, "the unsubscribe method of `{}`", self.method),
            Role::Method | Role::Subscribe => write!(f, "method `{}`", self.method),
        }
    }
}

impl Table {
    /// Starts the table of the service `service` (the trait's or the type's name, for messages).
    #[must_use]
    pub fn new(service: &'static str) -> Self {
        Self {
            methods: Methods::new(),
            service,
            owners: Vec::new(),
        }
    }

    /// Gives the table built.
    #[must_use]
    pub fn finish(self) -> Methods {
        self.methods
    }

    /// Gives the table to register into.
    pub(super) fn methods(&mut self) -> &mut Methods {
        &mut self.methods
    }

    /// Records that `method` registered `name`.
    ///
    /// # Panics
    ///
    /// When the registration failed: the name is another method's too, or starts with `rpc.`.
    /// Names the macro knows are checked at compile time, and so are a name constant's
    /// emptiness and prefix: only a clash with a name given by an expression gets here, a
    /// mistake in the service's definition, reported where the table is built, naming both
    /// methods.
    #[track_caller]
    pub(super) fn registered(
        &mut self,
        result: Result<(), RegisterError>,
        name: &'static str,
        method: &'static str,
    ) {
        match result {
            Ok(()) => self.owners.push((name, Owner::new(method, Role::Method))),
            Err(err) => self.refused(&err, Owner::new(method, Role::Method)),
        }
    }

    /// Records that the subscription of `method` registered `subscribe` and `unsubscribe` (which
    /// other subscriptions may share).
    ///
    /// # Panics
    ///
    /// As [`registered`](Self::registered), when either name is another method's too.
    #[track_caller]
    pub(super) fn subscribed(
        &mut self,
        result: Result<(), RegisterError>,
        subscribe: &'static str,
        unsubscribe: &'static str,
        method: &'static str,
    ) {
        let subscribing = Owner::new(method, Role::Subscribe);
        let unsubscribing = Owner::new(method, Role::Unsubscribe);
        match result {
            Ok(()) => {
                self.owners.push((subscribe, subscribing));
                if !self.owners.iter().any(|(name, _)| *name == unsubscribe) {
                    self.owners.push((unsubscribe, unsubscribing));
                }
            }
            Err(RegisterError::Duplicate(_)) if subscribe == unsubscribe => panic!(
                "jrpc service `{}`: the subscribe and unsubscribe methods of `{method}` have the \
                 same wire name `{subscribe}`; give `unsubscribe` another name in \
                 `#[subscription(...)]`",
                self.service
            ),
            Err(err) => {
                let second = match &err {
                    RegisterError::Duplicate(name) if name == unsubscribe => unsubscribing,
                    _ => subscribing,
                };
                self.refused(&err, second);
            }
        }
    }

    #[cold]
    #[track_caller]
    fn refused(&self, err: &RegisterError, second: Owner) -> ! {
        let service = self.service;
        match err {
            RegisterError::Duplicate(name) => {
                let first = self
                    .owners
                    .iter()
                    .find(|(registered, _)| registered == name)
                    .map(|(_, first)| *first);
                match first {
                    Some(first) if first.role != Role::Method || second.role != Role::Method => {
                        panic!(
                            "jrpc service `{service}`: {first} and {second} have the same wire name \
                         `{name}`; give one of them another name, with `#[rpc(name = ...)]` or in \
                         `#[subscription(...)]`"
                        )
                    }
                    _ => panic!(
                        "jrpc service `{service}`: methods `{}` and `{}` have the same wire name \
                         `{name}`; give one of them another name with `#[rpc(name = ...)]`",
                        first.map_or("another method", |first| first.method),
                        second.method
                    ),
                }
            }
            _ => panic!(
                "jrpc service `{service}`: method `{}` cannot be registered: {err}",
                second.method
            ),
        }
    }
}

/// Returns whether a method name starts with `rpc.`, which JSON-RPC 2.0 reserves: the check of a
/// name given by an expression, made in a constant.
#[must_use]
pub const fn is_reserved(name: &str) -> bool {
    let (name, prefix) = (name.as_bytes(), b"rpc.");
    if name.len() < prefix.len() {
        return false;
    }
    let mut i = 0;
    while i < prefix.len() {
        if name[i] != prefix[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Returns the bytes of `prefix` followed by `name`, `N` long (the sum of their lengths): a
/// namespaced name given by an expression, joined in a constant.
#[must_use]
pub const fn join_name<const N: usize>(prefix: &str, name: &str) -> [u8; N] {
    let (prefix, name) = (prefix.as_bytes(), name.as_bytes());
    let mut out = [0; N];
    let mut i = 0;
    while i < prefix.len() {
        out[i] = prefix[i];
        i += 1;
    }
    let mut j = 0;
    while j < name.len() {
        out[i + j] = name[j];
        j += 1;
    }
    out
}

/// Returns the text of a name joined by [`join_name`] (two strings joined are a string).
#[must_use]
pub const fn joined_name(bytes: &'static [u8]) -> &'static str {
    match std::str::from_utf8(bytes) {
        Ok(name) => name,
        Err(_) => panic!("two strings joined are a string"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_join_in_constants() {
        const NAME: &str = "hover";
        const LEN: usize = "text/".len() + NAME.len();
        const BYTES: [u8; LEN] = join_name::<LEN>("text/", NAME);
        const JOINED: &str = joined_name(&BYTES);
        assert_eq!(JOINED, "text/hover");
        const ACCENT: [u8; 3] = join_name::<3>("é", "/");
        assert_eq!(joined_name(&ACCENT), "é/");
    }

    #[test]
    fn only_rpc_dot_is_reserved() {
        assert!(is_reserved("rpc.discover"));
        assert!(is_reserved("rpc."));
        assert!(!is_reserved("rpc"));
        assert!(!is_reserved("rpcx.a"));
        assert!(!is_reserved(""));
    }

    fn table() -> Table {
        let mut table = Table::new("Lsp");
        let result = table
            .methods()
            .register("textDocument/hover", &[], |(): (), _| async {
                Ok::<_, crate::wire::RpcError>(1)
            })
            .map(drop);
        table.registered(result, "textDocument/hover", "hover");
        table
    }

    #[test]
    fn a_clash_names_both_methods() {
        let mut table = table();
        let again = table
            .methods()
            .register("textDocument/hover", &[], |(): (), _| async {
                Ok::<_, crate::wire::RpcError>(2)
            })
            .map(drop);
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            table.registered(again, "textDocument/hover", "hover_again");
        }))
        .expect_err("a clash panics");
        let message = panic.downcast_ref::<String>().expect("a formatted message");
        assert_eq!(
            message,
            "jrpc service `Lsp`: methods `hover` and `hover_again` have the same wire name \
             `textDocument/hover`; give one of them another name with `#[rpc(name = ...)]`"
        );
    }

    /// `table` with a subscription of `ticks`, ended by `unsubscribe`.
    fn subscribe(table: &mut Table, subscribe: &'static str, unsubscribe: &'static str) {
        let result = table
            .methods()
            .register_subscription(subscribe, &[], "tick", unsubscribe, |(): (), _| async {
                Ok::<_, crate::wire::RpcError>(crate::peer::Items::new(futures_util::stream::iter(
                    [1u8],
                )))
            })
            .map(drop);
        table.subscribed(result, subscribe, unsubscribe, "ticks");
    }

    fn panic_message(f: impl FnOnce()) -> String {
        let panic =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("a clash panics");
        panic
            .downcast_ref::<String>()
            .expect("a formatted message")
            .clone()
    }

    #[test]
    fn a_clash_with_a_subscriptions_names_says_which_name_it_is() {
        // A method named as a subscription's unsubscribe method.
        let mut lsp = table();
        subscribe(&mut lsp, "subscribe", "stop");
        let stop = lsp
            .methods()
            .register("stop", &[], |(): (), _| async {
                Ok::<_, crate::wire::RpcError>(true)
            })
            .map(drop);
        assert_eq!(
            panic_message(|| lsp.registered(stop, "stop", "stop")),
            "jrpc service `Lsp`: the unsubscribe method of `ticks` and method `stop` have the same \
             wire name `stop`; give one of them another name, with `#[rpc(name = ...)]` or in \
             `#[subscription(...)]`"
        );

        // A subscription's unsubscribe method named as a method.
        let mut lsp = table();
        assert_eq!(
            panic_message(|| subscribe(&mut lsp, "subscribe", "textDocument/hover")),
            "jrpc service `Lsp`: method `hover` and the unsubscribe method of `ticks` have the \
             same wire name `textDocument/hover`; give one of them another name, with \
             `#[rpc(name = ...)]` or in `#[subscription(...)]`"
        );

        // Its subscribe and unsubscribe methods named alike.
        let mut lsp = table();
        assert_eq!(
            panic_message(|| subscribe(&mut lsp, "ticks", "ticks")),
            "jrpc service `Lsp`: the subscribe and unsubscribe methods of `ticks` have the same \
             wire name `ticks`; give `unsubscribe` another name in `#[subscription(...)]`"
        );

        // Two subscriptions share one unsubscribe method: no clash.
        let mut lsp = table();
        subscribe(&mut lsp, "a", "unsubscribe");
        subscribe(&mut lsp, "b", "unsubscribe");
        let methods = lsp.finish();
        assert!(methods.contains("a") && methods.contains("b"));
        assert!(methods.contains("unsubscribe"));
    }

    #[test]
    fn a_table_without_clashes_is_given_back() {
        let methods = table().finish();
        assert!(methods.description("textDocument/hover").is_some());
    }
}
