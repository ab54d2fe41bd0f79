//! The names tenantc derives for a tenant in the clouds: its object prefixes in a bucket, the
//! IAM role of each workload and its ARN, and each workload's Google service account.
//!
//! Consumes: tenant names, workload kinds and the cell's account or project. Produces: names.
//!
//! Invariant: every name is a pure function of its arguments, so `validate` (which refuses
//! colliding Google accounts), `plan` (the ServiceAccount annotations), `lower/iam.rs` (the
//! documents) and the audit (which judges them) read the same names.

/// The workload kind whose identity may write checkpoints.
pub const WRITER_KIND: &str = "train";

/// The prefix of a tenant's model weights inside a bucket.
pub fn models_prefix(tenant: &str) -> String {
    format!("models/{tenant}/")
}

/// The prefix of a tenant's training checkpoints inside a bucket.
pub fn checkpoints_prefix(tenant: &str) -> String {
    format!("checkpoints/{tenant}/")
}

/// The IAM path of the roles of a cell, so two cells in one account never share a role.
pub fn role_path(cell: &str) -> String {
    format!("/tenantc/{cell}/")
}

/// The IAM role name of a tenant workload: at most 63 characters, since the namespace
/// `<tenant>-<kind>` is a DNS label.
pub fn role_name(tenant: &str, kind: &str) -> String {
    format!("{tenant}-{kind}")
}

/// The ARN of a tenant workload's role.
pub fn role_arn(account: &str, cell: &str, tenant: &str, kind: &str) -> String {
    format!(
        "arn:aws:iam::{account}:role{}{}",
        role_path(cell),
        role_name(tenant, kind)
    )
}

/// The ARN of an IRSA OIDC provider.
pub fn oidc_provider_arn(account: &str, provider: &str) -> String {
    format!("arn:aws:iam::{account}:oidc-provider/{provider}")
}

/// The account id of a tenant workload's Google service account: `<tenant>-<kind>` when it
/// fits the 30 characters Google allows, otherwise a prefix of it and a hash of the whole; the
/// hash is only 32 bits, so `validate/iam.rs` refuses two tenants whose ids collide.
pub fn google_account_id(tenant: &str, kind: &str) -> String {
    let full = format!("{tenant}-{kind}");
    if crate::names::project_id_ok(&full) {
        return full;
    }
    // FNV-1a: stable across platforms and releases, unlike the standard hasher.
    let mut hash: u32 = 0x811c_9dc5;
    for byte in full.bytes() {
        hash = (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193);
    }
    let head: String = full.chars().take(20).collect();
    let head = head.trim_end_matches('-');
    // An id starts with a letter; 1 + 20 + 1 + 8 characters stay within Google's 30.
    let letter = if head.starts_with(|ch: char| ch.is_ascii_lowercase()) {
        ""
    } else {
        "t"
    };
    format!("{letter}{head}-{hash:08x}")
}

/// The e-mail of a tenant workload's Google service account.
pub fn google_account_email(project: &str, tenant: &str, kind: &str) -> String {
    format!(
        "{}@{project}.iam.gserviceaccount.com",
        google_account_id(tenant, kind)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn google_account_ids_fit_googles_rules_and_stay_distinct() {
        let short = google_account_id("acme-research", "train");
        assert_eq!(short, "acme-research-train");
        let long_a = google_account_id("a-very-long-tenant-name-for-testing-one", "train");
        let long_b = google_account_id("a-very-long-tenant-name-for-testing-two", "train");
        assert_ne!(long_a, long_b);
        for id in [
            short,
            long_a,
            long_b,
            google_account_id("a", "infer"),
            google_account_id("1abc", "train"),
            google_account_id(&"9".repeat(57), "infer"),
        ] {
            assert!(
                crate::names::project_id_ok(&id),
                "{id} is not a valid account id"
            );
        }
    }
}
