//! Kubernetes name and label rules.
//!
//! Consumes: strings. Produces: `Err(reason)` when a string is not valid where it will be used,
//! with the reason phrased for a diagnostic label.
//!
//! Invariant: the rules are those of the API server's validation (`IsDNS1123Label`,
//! `IsDNS1123Subdomain`, `IsQualifiedName`, `IsValidLabelValue`), so a name accepted here is
//! accepted by the cluster. [`forbidden_char`] is the one rule for every string of a
//! declaration: no string the model accepts holds a control, bidirectional-formatting,
//! separator or noncharacter code point.

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

/// The first character of `text` that no declaration string may hold, with what kind it is.
///
/// Refused: C0 controls except tab, line feed and a carriage return before a line feed (text
/// may span lines), DEL and the C1 controls (U+0080 to U+009F, among them U+0085, which YAML 1.1
/// reads as a line break); the bidirectional embeddings, overrides and isolates U+202A to U+202E
/// and U+2066 to U+2069, which reorder text so that a reviewer sees something else than the
/// compiler reads; the line and paragraph separators U+2028 and U+2029, which some editors and
/// YAML 1.1 break lines at; the zero-width no-break space U+FEFF (a byte order mark); and the
/// noncharacters U+FDD0 to U+FDEF and U+xFFFE, U+xFFFF of every plane, which YAML does not print.
pub fn forbidden_char(text: &str) -> Option<(char, &'static str)> {
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\t' | '\n' => continue,
            '\r' if chars.peek() == Some(&'\n') => continue,
            _ => {}
        }
        if let Some(kind) = char_kind_forbidden(ch) {
            return Some((ch, kind));
        }
    }
    None
}

/// What kind of character `ch` is, if no declaration may hold it anywhere (tab and line feed
/// included: the callers decide where those are fine).
pub fn char_kind_forbidden(ch: char) -> Option<&'static str> {
    Some(match ch {
        '\u{0}'..='\u{1f}' | '\u{7f}' => "a control character",
        '\u{80}'..='\u{9f}' => "a C1 control character",
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}' => {
            "a bidirectional formatting character"
        }
        // Invisible characters that make two different names look the same in review. The
        // joiners U+200C and U+200D stay allowed: scripts such as Persian and emoji need them.
        '\u{ad}'
        | '\u{180e}'
        | '\u{200b}'
        | '\u{2060}'..='\u{2064}'
        | '\u{e0000}'..='\u{e007f}' => "an invisible formatting character",
        '\u{2028}' | '\u{2029}' => "a line or paragraph separator",
        '\u{feff}' => "a zero-width no-break space (byte order mark)",
        '\u{fdd0}'..='\u{fdef}' => "a noncharacter",
        ch if (ch as u32) & 0xfffe == 0xfffe => "a noncharacter",
        _ => return None,
    })
}

/// Whether a bucket name follows the rules both S3 and Cloud Storage share.
pub fn bucket_name_ok(name: &str) -> bool {
    (3..=63).contains(&name.len())
        && name.starts_with(|ch: char| ch.is_ascii_lowercase() || ch.is_ascii_digit())
        && name.ends_with(|ch: char| ch.is_ascii_lowercase() || ch.is_ascii_digit())
        && name
            .chars()
            .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || matches!(ch, '.' | '-'))
        && !name.contains("..")
}

/// Whether an OIDC provider is a host and path without scheme or wildcard.
pub fn oidc_provider_ok(provider: &str) -> bool {
    (1..=255).contains(&provider.len())
        && provider.contains('.')
        && provider
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '.' | '-' | '/'))
        && provider
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

/// Whether a Google Cloud project id is valid: 6 to 30 characters, lowercase letters, digits
/// and `-`, starting with a letter and not ending with `-`.
pub fn project_id_ok(project: &str) -> bool {
    (6..=30).contains(&project.len())
        && project.starts_with(|ch: char| ch.is_ascii_lowercase())
        && !project.ends_with('-')
        && project
            .chars()
            .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-')
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
    fn refuses_controls_bidi_overrides_separators_and_noncharacters() {
        for text in [
            "a\u{0}b",
            "\u{1b}[31m",
            "a\rb",
            "del\u{7f}",
            "\u{85}",
            "grp\u{86}",
            "\u{9f}",
            "\u{202e}evil",
            "\u{2066}x",
            "\u{2069}",
            "line\u{2028}",
            "\u{2029}",
            "\u{feff}bom",
            "\u{fdd0}",
            "\u{fffe}",
            "\u{ffff}",
            "\u{1fffe}",
            "\u{10ffff}",
            "\u{200f}rlm",
            "lrm\u{200e}",
            "\u{61c}alm",
            "zero\u{200b}width",
            "soft\u{ad}hyphen",
            "tag\u{e0001}",
            "word\u{2060}joiner",
        ] {
            assert!(forbidden_char(text).is_some(), "{text:?} must be refused");
        }
        for text in [
            "acme research",
            "two\nlines\n",
            "crlf\r\nlines",
            "tab\there",
            "caf\u{e9} \u{5b57} \u{1f600}",
            "\u{a0}nbsp",
            "\u{fffd}",
            "zwj \u{1f468}\u{200d}\u{1f469} zwnj \u{200c}",
            "\u{e000}private",
            "",
        ] {
            assert_eq!(forbidden_char(text), None, "{text:?} must be accepted");
        }
        assert_eq!(
            forbidden_char("ok\u{86}x\u{0}"),
            Some(('\u{86}', "a C1 control character"))
        );
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

    #[test]
    fn cloud_names_follow_their_rules() {
        assert!(bucket_name_ok("fleet-us-east-1a-models"));
        assert!(!bucket_name_ok("Fleet"));
        assert!(!bucket_name_ok("a*b"));
        assert!(project_id_ok("fleet-eu-prod"));
        assert!(!project_id_ok("fleet"));
        assert!(oidc_provider_ok(
            "oidc.eks.us-east-1.amazonaws.com/id/ABC123"
        ));
        assert!(!oidc_provider_ok(
            "https://oidc.eks.us-east-1.amazonaws.com/id/ABC"
        ));
        assert!(!oidc_provider_ok("oidc.eks.*.amazonaws.com"));
    }
}
