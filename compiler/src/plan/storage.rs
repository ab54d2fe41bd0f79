//! The storage IAM plan of a cell: its buckets, its workload identity, and the cloud names
//! derived from them per tenant and workload kind.
//!
//! Consumes: a validated [`Cell`]. Produces: a [`StoragePlan`], and the ServiceAccount annotation
//! of each tenant workload, from the cloud names of `facts/cloud.rs` that `lower/iam.rs` and the
//! audit of `validate/audit.rs` use too.
//!
//! Invariant: every name is a pure function of the cell, the tenant and the workload kind, so
//! the annotation on a ServiceAccount and the identity IAM trusts can never drift apart.

use serde::Serialize;

use super::{NamespacePlan, TenantPlan};
use crate::facts::cloud::{
    WRITER_KIND, checkpoints_prefix, google_account_email, models_prefix, role_arn,
};
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

/// The prefixes a workload may read in `bucket`: its models, the shared bases granted to it on
/// that bucket and, for the writer, its own checkpoints (to resume from them).
pub fn read_prefixes(tenant: &TenantPlan, kind: &str, bucket: &str) -> Vec<String> {
    let mut prefixes = vec![models_prefix(&tenant.name)];
    prefixes.extend(
        tenant
            .shared_bases
            .iter()
            .filter(|base| base.on(bucket))
            .map(|base| base.prefix.clone()),
    );
    if kind == WRITER_KIND {
        prefixes.push(checkpoints_prefix(&tenant.name));
    }
    prefixes.sort();
    prefixes.dedup();
    prefixes
}

/// The prefixes a workload may write: its checkpoints, for the writer only.
pub fn write_prefixes(tenant: &TenantPlan, kind: &str) -> Vec<String> {
    if kind == WRITER_KIND {
        vec![checkpoints_prefix(&tenant.name)]
    } else {
        Vec::new()
    }
}

/// `system:serviceaccount:<namespace>:<name>`.
pub fn service_account_subject(namespace: &NamespacePlan) -> String {
    format!(
        "system:serviceaccount:{}:{}",
        namespace.name, namespace.service_account
    )
}

/// The Workload Identity member of a Kubernetes ServiceAccount.
pub fn workload_identity_member(pool: &str, namespace: &NamespacePlan) -> String {
    format!(
        "serviceAccount:{pool}[{}/{}]",
        namespace.name, namespace.service_account
    )
}
