//! The storage IAM plan of a cell: its buckets, its workload identity, and the cloud names
//! derived from them per tenant and workload kind.
//!
//! Consumes: a validated [`Cell`]. Produces: a [`StoragePlan`], and the names (role, role ARN,
//! Google service account) that `lower/iam.rs`, the ServiceAccount annotations of
//! `lower/tenant.rs` and the audit of `validate/audit.rs` must agree on.
//!
//! Invariant: every name is a pure function of the cell, the tenant and the workload kind, so
//! the annotation on a ServiceAccount and the identity IAM trusts can never drift apart.

use serde::Serialize;

use crate::model::{AwsMode, Cell, CloudIdentity};

/// A cell's object storage and workload identity, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoragePlan {
    /// Buckets, in declaration order.
    pub buckets: Vec<String>,
    /// How ServiceAccounts become cloud identities.
    pub identity: IdentityPlan,
}

/// A cell's workload identity, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum IdentityPlan {
    /// EKS Pod Identity: roles trusted by `pods.eks.amazonaws.com`, one association per
    /// ServiceAccount.
    AwsPodIdentity {
        /// The account id.
        account: String,
        /// The EKS cluster name.
        cluster: String,
    },
    /// IRSA: roles trusted by the cluster's OIDC provider, named in a ServiceAccount annotation.
    AwsIrsa {
        /// The account id.
        account: String,
        /// The OIDC provider, without `https://`.
        provider: String,
    },
    /// GKE Workload Identity: one Google service account per tenant workload.
    Gcp {
        /// The project id.
        project: String,
        /// The Workload Identity pool.
        pool: String,
    },
}

/// The storage plan of a cell, when it declares `storage`.
pub fn storage_plan(cell: &Cell) -> Option<StoragePlan> {
    let storage = cell.storage.as_ref()?;
    let identity = match &storage.identity {
        CloudIdentity::Aws(aws) => match aws.mode.value {
            AwsMode::PodIdentity => IdentityPlan::AwsPodIdentity {
                account: aws.account.value.clone(),
                cluster: aws
                    .cluster
                    .as_ref()
                    .map_or_else(|| cell.name.value.clone(), |cluster| cluster.value.clone()),
            },
            AwsMode::Irsa => IdentityPlan::AwsIrsa {
                account: aws.account.value.clone(),
                provider: aws
                    .oidc_provider
                    .as_ref()
                    .map(|provider| provider.value.clone())
                    .unwrap_or_default(),
            },
        },
        CloudIdentity::Gcp(gcp) => IdentityPlan::Gcp {
            project: gcp.project.value.clone(),
            pool: gcp.workload_pool.as_ref().map_or_else(
                || format!("{}.svc.id.goog", gcp.project.value),
                |pool| pool.value.clone(),
            ),
        },
    };
    Some(StoragePlan {
        buckets: storage
            .buckets
            .iter()
            .map(|bucket| bucket.value.clone())
            .collect(),
        identity,
    })
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
/// hash is only 32 bits, so `validate::iam` refuses two tenants whose ids collide.
pub fn google_account_id(tenant: &str, kind: &str) -> String {
    let full = format!("{tenant}-{kind}");
    if crate::validate::iam::project_id_ok(&full) {
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

/// The ServiceAccount annotation that binds a tenant workload to its cloud identity, if the
/// identity kind uses one (Pod Identity binds through an association instead).
pub fn service_account_annotation(
    storage: &StoragePlan,
    cell: &str,
    tenant: &str,
    kind: &str,
) -> Option<(String, String)> {
    match &storage.identity {
        IdentityPlan::AwsPodIdentity { .. } => None,
        IdentityPlan::AwsIrsa { account, .. } => Some((
            "eks.amazonaws.com/role-arn".to_string(),
            role_arn(account, cell, tenant, kind),
        )),
        IdentityPlan::Gcp { project, .. } => Some((
            "iam.gke.io/gcp-service-account".to_string(),
            google_account_email(project, tenant, kind),
        )),
    }
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
                crate::validate::iam::project_id_ok(&id),
                "{id} is not a valid account id"
            );
        }
    }
}
