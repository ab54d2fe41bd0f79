//! The cloud IAM documents tenantc writes under `<cell>/iam/<tenant>/`, typed: AWS identity and
//! trust policies, the input of an EKS Pod Identity association, Google IAM policy fragments
//! and the folder's summary of identities.
//!
//! Consumes: nothing; `lower/iam.rs` builds these structs and the audit of `validate/audit.rs`
//! reads them back from the emitted bytes. Produces: values that serialize through serde to the
//! JSON the clouds' tools accept.
//!
//! Invariant: every struct refuses unknown fields when read back, so a file the audit reads
//! holds nothing it does not judge; the actions and roles a grant may use are named here once.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The IAM policy language version.
pub const POLICY_VERSION: &str = "2012-10-17";
/// Actions that read objects.
pub const READ_ACTIONS: [&str; 1] = ["s3:GetObject"];
/// The action that lists a bucket, always limited by an `s3:prefix` condition.
pub const LIST_ACTION: &str = "s3:ListBucket";
/// Actions that write checkpoints (multipart uploads included).
pub const WRITE_ACTIONS: [&str; 4] = [
    "s3:AbortMultipartUpload",
    "s3:DeleteObject",
    "s3:ListMultipartUploadParts",
    "s3:PutObject",
];
/// The Google role that reads objects.
pub const GCP_READ_ROLE: &str = "roles/storage.objectViewer";
/// The Google role that reads and writes objects.
pub const GCP_WRITE_ROLE: &str = "roles/storage.objectUser";
/// The Google role that lets a Kubernetes ServiceAccount act as a Google service account.
pub const GCP_WORKLOAD_IDENTITY_ROLE: &str = "roles/iam.workloadIdentityUser";
/// An AWS IAM policy document (identity or trust policy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyDocument {
    /// Always [`POLICY_VERSION`].
    #[serde(rename = "Version")]
    pub version: String,
    /// The statements.
    #[serde(rename = "Statement")]
    pub statement: Vec<Statement>,
}

/// Condition operator → condition key → values.
pub type Conditions = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// One statement of an AWS policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Statement {
    /// A name for reviews.
    #[serde(rename = "Sid")]
    pub sid: String,
    /// `Allow` (tenantc emits nothing else).
    #[serde(rename = "Effect")]
    pub effect: String,
    /// Who may assume the role (trust policies only).
    #[serde(rename = "Principal", default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<BTreeMap<String, String>>,
    /// Actions.
    #[serde(rename = "Action")]
    pub action: Vec<String>,
    /// Resources (identity policies only).
    #[serde(rename = "Resource", default, skip_serializing_if = "Vec::is_empty")]
    pub resource: Vec<String>,
    /// Conditions.
    #[serde(
        rename = "Condition",
        default,
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub condition: Conditions,
}

/// The input of `aws eks create-pod-identity-association --cli-input-json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PodIdentityAssociation {
    /// The EKS cluster.
    pub cluster_name: String,
    /// The tenant namespace.
    pub namespace: String,
    /// The workload's ServiceAccount.
    pub service_account: String,
    /// The role it assumes.
    pub role_arn: String,
}

/// A Google IAM policy fragment: bindings to add to a bucket's or service account's policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GcpPolicy {
    /// The bindings.
    pub bindings: Vec<GcpBinding>,
    /// Policy version 3, which conditional bindings need.
    pub version: u32,
}

/// One Google IAM binding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GcpBinding {
    /// The role.
    pub role: String,
    /// Who holds it.
    pub members: Vec<String>,
    /// When it applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<GcpCondition>,
}

/// A Google IAM condition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GcpCondition {
    /// A short name.
    pub title: String,
    /// The CEL expression.
    pub expression: String,
}

/// The summary file of a tenant's IAM folder, with the generated-code header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identities {
    /// The generated-code header.
    #[serde(rename = "$comment")]
    pub comment: String,
    /// Per workload kind, what its identity is.
    pub identities: Vec<Identity>,
}

/// One workload kind's identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    /// Train or infer.
    pub workload: String,
    /// The namespace.
    pub namespace: String,
    /// The ServiceAccount.
    pub service_account: String,
    /// The AWS role ARN or the Google service account e-mail.
    pub cloud_identity: String,
    /// Whether it may write checkpoints.
    pub writes_checkpoints: bool,
}
