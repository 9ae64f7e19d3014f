//! `rename_all` rules for method wire names.
//!
//! The set of rules and their names are serde's; the input is a Rust method
//! name, which is `snake_case` by convention.

/// One `rename_all` rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RenameRule {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

/// Every rule, under the name the attribute accepts.
pub(crate) const RULES: &[(&str, RenameRule)] = &[
    ("lowercase", RenameRule::Lower),
    ("UPPERCASE", RenameRule::Upper),
    ("PascalCase", RenameRule::Pascal),
    ("camelCase", RenameRule::Camel),
    ("snake_case", RenameRule::Snake),
    ("SCREAMING_SNAKE_CASE", RenameRule::ScreamingSnake),
    ("kebab-case", RenameRule::Kebab),
    ("SCREAMING-KEBAB-CASE", RenameRule::ScreamingKebab),
];

impl RenameRule {
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        RULES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, rule)| *rule)
    }

    /// The rule whose name matches `name` but for letter case and `-`/`_`,
    /// to suggest it (`camelcase` -> `camelCase`).
    pub(crate) fn suggest(name: &str) -> Option<&'static str> {
        let fold = |s: &str| -> String {
            s.chars()
                .filter(|c| *c != '_' && *c != '-')
                .flat_map(char::to_lowercase)
                .collect()
        };
        let wanted = fold(name);
        let mut candidates = RULES.iter().filter(|(n, _)| fold(n) == wanted);
        match (candidates.next(), candidates.next()) {
            (Some((n, _)), None) => Some(n),
            _ => None,
        }
    }

    pub(crate) fn apply(self, name: &str) -> String {
        match self {
            Self::Lower => name.to_lowercase(),
            Self::Snake => name.to_owned(),
            Self::Upper | Self::ScreamingSnake => name.to_uppercase(),
            Self::Pascal => pascal(name),
            Self::Camel => {
                let pascal = pascal(name);
                let mut chars = pascal.chars();
                match chars.next() {
                    Some(first) => first.to_lowercase().chain(chars).collect(),
                    None => pascal,
                }
            }
            Self::Kebab => name.replace('_', "-"),
            Self::ScreamingKebab => name.to_uppercase().replace('_', "-"),
        }
    }
}

fn pascal(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut capitalize = true;
    for c in name.chars() {
        if c == '_' {
            capitalize = true;
        } else if capitalize {
            out.extend(c.to_uppercase());
            capitalize = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::RenameRule::{self, *};

    #[test]
    fn rules() {
        let cases: &[(RenameRule, &str)] = &[
            (Lower, "get_user_data"),
            (Upper, "GET_USER_DATA"),
            (Pascal, "GetUserData"),
            (Camel, "getUserData"),
            (Snake, "get_user_data"),
            (ScreamingSnake, "GET_USER_DATA"),
            (Kebab, "get-user-data"),
            (ScreamingKebab, "GET-USER-DATA"),
        ];
        for (rule, want) in cases {
            assert_eq!(rule.apply("get_user_data"), *want, "{rule:?}");
        }
        assert_eq!(Camel.apply("add"), "add");
        assert_eq!(Camel.apply(""), "");
        assert_eq!(Pascal.apply("_x"), "X");
        assert_eq!(Camel.apply("é_t"), "éT");
    }

    #[test]
    fn suggestions() {
        assert_eq!(RenameRule::suggest("camelcase"), Some("camelCase"));
        assert_eq!(RenameRule::suggest("kebab_case"), Some("kebab-case"));
        assert_eq!(RenameRule::suggest("banana"), None);
    }
}
