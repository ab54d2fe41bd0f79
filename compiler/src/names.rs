//! Kubernetes name and label rules.
//!
//! Consumes: strings. Produces: `Err(reason)` when a string is not valid where it will be used,
//! with the reason phrased for a diagnostic label.
//!
//! Invariant: the rules are those of the API server's validation (`IsDNS1123Label`,
//! `IsDNS1123Subdomain`, `IsQualifiedName`, `IsValidLabelValue`), so a name accepted here is
//! accepted by the cluster.

/// A DNS-1123 label: lowercase alphanumerics and `-`, starting and ending alphanumeric, at most
/// 63 characters. Namespace, tenant, cell and pool names.
pub fn dns_label(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > 63 {
        return Err(format!(
            "is {} characters long, the limit is 63",
            name.len()
        ));
    }
    if !name
        .chars()
        .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-')
    {
        return Err("may contain only lowercase letters, digits and `-`".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err("must start and end with a letter or digit".into());
    }
    Ok(())
}

/// A DNS-1123 subdomain: dot-separated labels, at most 253 characters. Object names such as
/// PriorityClass and ServiceAccount names.
pub fn dns_subdomain(name: &str) -> Result<(), String> {
    if name.len() > 253 {
        return Err(format!(
            "is {} characters long, the limit is 253",
            name.len()
        ));
    }
    for part in name.split('.') {
        dns_label(part).map_err(|reason| {
            if name.contains('.') {
                format!("part `{part}` {reason}")
            } else {
                reason
            }
        })?;
    }
    Ok(())
}

fn is_label_char(ch: char) -> bool {
    ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.')
}

/// A label value: empty, or at most 63 characters of alphanumerics, `-`, `_` and `.`, starting
/// and ending alphanumeric.
pub fn label_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    if value.len() > 63 {
        return Err(format!(
            "is {} characters long, the limit is 63",
            value.len()
        ));
    }
    if !value.chars().all(is_label_char) {
        return Err("may contain only letters, digits, `-`, `_` and `.`".into());
    }
    let edge_ok = |ch: Option<char>| ch.is_some_and(|ch| ch.is_ascii_alphanumeric());
    if !edge_ok(value.chars().next()) || !edge_ok(value.chars().last()) {
        return Err("must start and end with a letter or digit".into());
    }
    Ok(())
}

/// A qualified name such as a label key: an optional DNS subdomain prefix and `/`, then a name
/// of at most 63 characters.
pub fn qualified_name(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        dns_subdomain(prefix).map_err(|reason| format!("prefix `{prefix}` {reason}"))?;
    }
    if name.is_empty() {
        return Err("name part must not be empty".into());
    }
    label_value(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_and_rejects_dns_labels_like_the_api_server() {
        assert!(dns_label("acme-research").is_ok());
        assert!(dns_label("a1").is_ok());
        assert!(dns_label("Acme").is_err());
        assert!(dns_label("-a").is_err());
        assert!(dns_label("a_b").is_err());
        assert!(dns_label("").is_err());
        assert!(dns_label(&"a".repeat(63)).is_ok());
        assert!(dns_label(&"a".repeat(64)).is_err());
    }

    #[test]
    fn subdomains_allow_dots_between_labels() {
        assert!(dns_subdomain("batch.high").is_ok());
        assert!(dns_subdomain("a..b").is_err());
    }

    #[test]
    fn label_keys_and_values() {
        assert!(qualified_name("tenant.platform/org").is_ok());
        assert!(qualified_name("pool").is_ok());
        assert!(qualified_name("nvidia.com/").is_err());
        assert!(label_value("train_exclusive.v1").is_ok());
        assert!(label_value("has space").is_err());
        assert!(label_value("").is_ok());
    }
}
