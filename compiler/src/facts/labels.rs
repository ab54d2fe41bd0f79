//! Which label keys may hold user data, and which a tenant may not declare: the one rule that
//! the admission floor's `forbidden-labels` params (`plan/admission.rs`) and the check of a
//! tenant's declared chargeback labels (`validate/labels.rs`) both read, so the two can never
//! disagree about a key.
//!
//! Consumes: label keys. Produces: the built-in forbidden list, the match of a key against a
//! forbidden list, the reserved prefixes of a declared label, and the form in which two keys are
//! the same.
//!
//! Invariants: a key and a forbidden entry are compared the way the floor's CEL compares them
//! (`lower/admission.rs`, variable `badLabelKeys`, whose text a test there holds to
//! [`cel_normalized`]): in ASCII lower case without the [`SEPARATORS`], the whole key and its
//! name after the last `/`; pure and deterministic.

/// Label keys that no tenant pod, workload or declared chargeback label may carry, because they
/// would copy user data (prompts, email addresses, user and session ids) into every monitoring
/// and billing system that reads labels; a cell adds its own with `forbidden-label-keys`.
/// Free text cannot reach a label under any key: a label value is at most 63 letters, digits,
/// `-`, `_` and `.`.
pub const FORBIDDEN_LABEL_KEYS: &[&str] =
    &["email", "prompt", "session-id", "user-email", "user-id"];

/// The characters a key is compared without, so that `user_email`, `User.Email` and
/// `userEmail` are all `user-email`.
pub const SEPARATORS: [char; 3] = ['-', '_', '.'];

/// The label prefixes tenantc owns: a tenant may declare no chargeback label under them, nor
/// one that reads like them once case, `-`, `_`, `.` and `/` are ignored.
pub const TENANTC_PREFIXES: [&str; 3] = [
    crate::kube::labels::LABEL_PREFIX,
    "tenantc.io",
    "app.kubernetes.io",
];

/// The label prefixes Kubernetes reserves for its components, whose labels set behaviour (a
/// `pod-security.kubernetes.io/` label sets a namespace's Pod Security level): a tenant may
/// declare no chargeback label under them or under a subdomain of them.
pub const KUBERNETES_PREFIXES: [&str; 2] = ["kubernetes.io", "k8s.io"];

/// A key as the floor compares it: ASCII lower case, without `-`, `_` and `.`.
pub fn normalized(key: &str) -> String {
    key.chars()
        .filter(|ch| !SEPARATORS.contains(ch))
        .map(|ch| ch.to_ascii_lowercase())
        .collect()
}

/// The CEL the floor compares a key by: `expression` in ASCII lower case without each of the
/// [`SEPARATORS`], as [`normalized`] computes it in Rust.
pub fn cel_normalized(expression: &str) -> String {
    let mut cel = format!("{expression}.lowerAscii()");
    for separator in SEPARATORS {
        cel.push_str(&format!(".replace('{separator}', '')"));
    }
    cel
}

/// Whether the forbidden `entry` forbids `key`: the normalised entry equals the normalised key,
/// or the normalised name after the key's last `/`, so that `acme.io/User_Id` is forbidden by
/// `user-id`.
pub fn forbids(entry: &str, key: &str) -> bool {
    let entry = normalized(entry);
    let name = key.rsplit_once('/').map_or(key, |(_, name)| name);
    entry == normalized(key) || entry == normalized(name)
}

/// The first entry of `forbidden` that forbids `key`, if any.
pub fn forbidding<'a, T: AsRef<str>>(key: &str, forbidden: &'a [T]) -> Option<&'a T> {
    forbidden.iter().find(|entry| forbids(entry.as_ref(), key))
}

/// The built-in entry that forbids `key`, if any.
pub fn forbidden_by_default(key: &str) -> Option<&'static str> {
    forbidding(key, FORBIDDEN_LABEL_KEYS).copied()
}

/// The reserved prefix a key is under, if any: its prefix before `/` is one of
/// [`TENANTC_PREFIXES`] or [`KUBERNETES_PREFIXES`] or a subdomain of one; or the key, without case, `-`, `_`, `.` and
/// `/`, begins like a prefix of tenantc's, so that neither `tenant-platform/org` nor an
/// unprefixed `tenant_platform_org` reaches kube-state-metrics as tenantc's own
/// `label_tenant_platform_org`.
pub fn reserved_prefix(key: &str) -> Option<&'static str> {
    if let Some((prefix, _)) = key.split_once('/') {
        let prefix = prefix.to_ascii_lowercase();
        let under = TENANTC_PREFIXES
            .into_iter()
            .chain(KUBERNETES_PREFIXES)
            .find(|reserved| {
                prefix == *reserved
                    || prefix
                        .strip_suffix(*reserved)
                        .is_some_and(|sub| sub.ends_with('.'))
            });
        if under.is_some() {
            return under;
        }
    }
    let same = same_key(key);
    TENANTC_PREFIXES
        .into_iter()
        .find(|reserved| same.starts_with(&same_key(reserved)))
}

/// The form in which two label keys are the same key: ASCII lower case without `-`, `_`, `.`
/// and `/`. kube-state-metrics exports a label `k` as `label_<k>` with every character that is
/// not a letter, digit or `_` written `_`, so two keys of one form could reach one metric label.
pub fn same_key(key: &str) -> String {
    normalized(key).chars().filter(|ch| *ch != '/').collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;

    /// Every spelling of `words` joined by `separator`, the letters cased by `mask`.
    fn spelled(words: &[&str], separator: &str, mask: u64) -> String {
        let mut key = String::new();
        let mut bit = 0;
        for (idx, word) in words.iter().enumerate() {
            if idx > 0 {
                key.push_str(separator);
            }
            for ch in word.chars() {
                key.push(if mask >> (bit % 64) & 1 == 1 {
                    ch.to_ascii_uppercase()
                } else {
                    ch
                });
                bit += 1;
            }
        }
        key
    }

    #[test]
    fn refuses_every_spelling_of_a_built_in_key_with_or_without_a_prefix() {
        let families: &[&[&str]] = &[
            &["user", "email"],
            &["user", "id"],
            &["session", "id"],
            &["prompt"],
            &["email"],
            &["e", "mail"],
            &["user", "e", "mail"],
        ];
        let mut checked = 0;
        for words in families {
            for separator in ["-", "_", ".", "", "-_", "._."] {
                for mask in [0, u64::MAX, 0b1010_1010, 0b0110_0111_0001, 1, 1 << 4] {
                    for prefix in ["", "acme.io/", "a.b.c/", "example.com/"] {
                        let key = format!("{prefix}{}", spelled(words, separator, mask));
                        assert!(
                            forbidden_by_default(&key).is_some(),
                            "{key} slipped through"
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 900, "{checked}");
    }

    #[test]
    fn names_the_entry_that_forbids_a_key() {
        assert_eq!(forbidden_by_default("acme.io/user-id"), Some("user-id"));
        assert_eq!(forbidden_by_default("User_Email"), Some("user-email"));
        assert_eq!(forbidden_by_default("userEmail"), Some("user-email"));
        assert_eq!(forbidden_by_default("PROMPT"), Some("prompt"));
        let cell = ["customer".to_string(), "acme.io/owner".to_string()];
        assert_eq!(
            forbidding("example.com/Customer", &cell).map(String::as_str),
            Some("customer")
        );
        assert_eq!(
            forbidding("acme-io/owner", &cell).map(String::as_str),
            Some("acme.io/owner")
        );
    }

    #[test]
    fn admits_keys_that_only_share_words_with_a_forbidden_one() {
        for key in [
            "cost-center",
            "acme.io/cost-center",
            "user-group",
            "session",
            "prompt-cache",
            "emails",
            "user-id/x",
            "project",
        ] {
            assert_eq!(forbidden_by_default(key), None, "{key}");
        }
    }

    #[test]
    fn the_cel_comparison_is_the_rust_one() {
        assert_eq!(
            cel_normalized("k"),
            "k.lowerAscii().replace('-', '').replace('_', '').replace('.', '')"
        );
    }

    #[test]
    fn reserves_tenantc_and_kubernetes_prefixes_and_their_look_alikes() {
        for (key, prefix) in [
            ("tenant.platform/tenant", "tenant.platform"),
            ("Tenant.Platform/x", "tenant.platform"),
            ("tenantc.io/sync-step", "tenantc.io"),
            ("app.kubernetes.io/name", "app.kubernetes.io"),
            ("kubernetes.io/metadata.name", "kubernetes.io"),
            ("pod-security.kubernetes.io/enforce", "kubernetes.io"),
            ("node.k8s.io/x", "k8s.io"),
            ("tenant-platform/org", "tenant.platform"),
            ("tenant_platform_org", "tenant.platform"),
            ("tenantc-io-sync", "tenantc.io"),
            ("app-kubernetes-io/name", "app.kubernetes.io"),
        ] {
            assert_eq!(reserved_prefix(key), Some(prefix), "{key}");
        }
        for key in [
            "cost-center",
            "acme.io/cost-center",
            "mykubernetes.io/x",
            "tenant/x",
            "platform/x",
        ] {
            assert_eq!(reserved_prefix(key), None, "{key}");
        }
    }

    #[test]
    fn keys_that_reach_one_metric_label_are_the_same_key() {
        let metric = |key: &str| -> String {
            key.chars()
                .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' })
                .collect::<String>()
                .to_ascii_lowercase()
        };
        let keys = [
            "cost-center",
            "cost_center",
            "cost.center",
            "a.b/c",
            "a-b/c",
            "a/b-c",
            "Cost-Center",
            "costcenter",
        ];
        for first in keys {
            for second in keys {
                if metric(first) == metric(second) {
                    assert_eq!(same_key(first), same_key(second), "{first} {second}");
                }
            }
        }
        assert_eq!(same_key("a.b/c"), same_key("a/b-c"));
    }
}
