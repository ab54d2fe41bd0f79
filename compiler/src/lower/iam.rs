//! Storage IAM per tenant and cell, by the cell's cloud.
//!
//! Consumes: a cell's [`StoragePlan`] and a tenant's plan in it. Produces: the JSON documents of
//! `out/<cell>/iam/<tenant>/`, for Terraform or the cloud console (they are not Kubernetes
//! objects and no kustomization lists them):
//! - AWS, per workload kind: `<kind>-permissions.json` (the role's identity policy),
//!   `<kind>-trust.json` (its trust policy, for EKS Pod Identity or IRSA) and, for Pod Identity,
//!   `<kind>-pod-identity-association.json` (the input of `aws eks
//!   create-pod-identity-association`);
//! - GCP, per workload kind: `<kind>-bucket-<bucket>.json` (conditional bindings for the bucket's
//!   IAM policy) and `<kind>-workload-identity.json` (the Google service account's IAM policy);
//! - `identities.json`: the generated-code header and, per workload kind, the namespace,
//!   ServiceAccount and cloud identity.
//!
//! Invariants:
//! - Read grants name only `models/<tenant>/`, the tenant's `shared/…/` prefixes on the buckets
//!   the plan grants each on (`SharedBasePlan::buckets`) and, for its own use,
//!   `checkpoints/<tenant>/`; write grants name only `checkpoints/<tenant>/`, and only
//!   the `train` identity has them; ListBucket always carries an `s3:prefix` condition.
//! - Trust names exactly the workload's own ServiceAccount with `StringEquals`, never a pattern.
//! - Every document is typed (`kube/iam.rs`: [`PolicyDocument`], [`GcpPolicy`], …) and written
//!   with sorted keys, so the audit of `validate/audit.rs` reads back the same types from the
//!   bytes.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::emit::{Extra, InternalError};
use crate::facts::cloud::{google_account_email, oidc_provider_arn, role_arn};
use crate::kube::iam::{
    Conditions, GCP_READ_ROLE, GCP_WORKLOAD_IDENTITY_ROLE, GCP_WRITE_ROLE, GcpBinding,
    GcpCondition, GcpPolicy, Identities, Identity, LIST_ACTION, POLICY_VERSION,
    PodIdentityAssociation, PolicyDocument, READ_ACTIONS, Statement, WRITE_ACTIONS,
};
use crate::plan::storage::{
    IdentityPlan, StoragePlan, read_prefixes, service_account_subject, workload_identity_member,
    write_prefixes,
};
use crate::plan::{NamespacePlan, TenantPlan};

/// The object ARN pattern covering every key under `prefix` in `bucket`.
pub fn object_arn(bucket: &str, prefix: &str) -> String {
    format!("arn:aws:s3:::{bucket}/{prefix}*")
}

/// The ARN of a bucket.
pub fn bucket_arn(bucket: &str) -> String {
    format!("arn:aws:s3:::{bucket}")
}

/// The CEL condition that limits a Google binding to the objects under `prefix`.
pub fn gcs_prefix_condition(bucket: &str, prefix: &str) -> String {
    format!("resource.name.startsWith(\"projects/_/buckets/{bucket}/objects/{prefix}\")")
}

/// The identity policy of a workload's AWS role: what it reads and lists in each bucket (one
/// pair of statements for the buckets that share a set of prefixes, so a shared base granted
/// on one bucket is neither read nor listed on another) and, for the writer, its checkpoints.
pub fn permissions(storage: &StoragePlan, tenant: &TenantPlan, kind: &str) -> PolicyDocument {
    let write = write_prefixes(tenant, kind);
    let strings = |items: &[&str]| items.iter().map(|item| item.to_string()).collect();
    // Buckets grouped by what the workload reads in them, in declaration order of the first.
    let mut groups: Vec<(Vec<String>, Vec<&String>)> = Vec::new();
    for bucket in &storage.buckets {
        let read = read_prefixes(tenant, kind, bucket);
        match groups.iter_mut().find(|(prefixes, _)| *prefixes == read) {
            Some((_, buckets)) => buckets.push(bucket),
            None => groups.push((read, vec![bucket])),
        }
    }
    let mut statement = Vec::new();
    for (idx, (read, buckets)) in groups.iter().enumerate() {
        // The first group keeps the names of a one-group policy.
        let suffix = if idx == 0 {
            String::new()
        } else {
            (idx + 1).to_string()
        };
        let mut listed: Vec<String> = read.iter().map(|prefix| format!("{prefix}*")).collect();
        listed.extend(write.iter().map(|prefix| format!("{prefix}*")));
        listed.sort();
        listed.dedup();
        statement.push(Statement {
            sid: format!("ReadModels{suffix}"),
            effect: "Allow".into(),
            principal: None,
            action: strings(&READ_ACTIONS),
            resource: buckets
                .iter()
                .flat_map(|bucket| read.iter().map(|prefix| object_arn(bucket, prefix)))
                .collect(),
            condition: Conditions::new(),
        });
        statement.push(Statement {
            sid: format!("ListOwnPrefixes{suffix}"),
            effect: "Allow".into(),
            principal: None,
            action: vec![LIST_ACTION.to_string()],
            resource: buckets.iter().map(|bucket| bucket_arn(bucket)).collect(),
            condition: Conditions::from([(
                "StringLike".to_string(),
                BTreeMap::from([("s3:prefix".to_string(), listed)]),
            )]),
        });
    }
    if !write.is_empty() {
        statement.push(Statement {
            sid: "WriteCheckpoints".into(),
            effect: "Allow".into(),
            principal: None,
            action: strings(&WRITE_ACTIONS),
            resource: storage
                .buckets
                .iter()
                .flat_map(|bucket| write.iter().map(|prefix| object_arn(bucket, prefix)))
                .collect(),
            condition: Conditions::new(),
        });
    }
    PolicyDocument {
        version: POLICY_VERSION.into(),
        statement,
    }
}

/// The trust policy of a workload's AWS role, naming exactly its ServiceAccount.
pub fn trust(storage: &StoragePlan, namespace: &NamespacePlan) -> Option<PolicyDocument> {
    let statement = match &storage.identity {
        IdentityPlan::AwsPodIdentity { account, cluster } => Statement {
            sid: "EksPodIdentity".into(),
            effect: "Allow".into(),
            principal: Some(BTreeMap::from([(
                "Service".to_string(),
                "pods.eks.amazonaws.com".to_string(),
            )])),
            action: vec!["sts:AssumeRole".into(), "sts:TagSession".into()],
            resource: Vec::new(),
            condition: Conditions::from([(
                "StringEquals".to_string(),
                BTreeMap::from([
                    ("aws:SourceAccount".to_string(), vec![account.clone()]),
                    (
                        "aws:RequestTag/eks-cluster-name".to_string(),
                        vec![cluster.clone()],
                    ),
                    (
                        "aws:RequestTag/kubernetes-namespace".to_string(),
                        vec![namespace.name.clone()],
                    ),
                    (
                        "aws:RequestTag/kubernetes-service-account".to_string(),
                        vec![namespace.service_account.clone()],
                    ),
                ]),
            )]),
        },
        IdentityPlan::AwsIrsa { account, provider } => Statement {
            sid: "Irsa".into(),
            effect: "Allow".into(),
            principal: Some(BTreeMap::from([(
                "Federated".to_string(),
                oidc_provider_arn(account, provider),
            )])),
            action: vec!["sts:AssumeRoleWithWebIdentity".into()],
            resource: Vec::new(),
            condition: Conditions::from([(
                "StringEquals".to_string(),
                BTreeMap::from([
                    (
                        format!("{provider}:aud"),
                        vec!["sts.amazonaws.com".to_string()],
                    ),
                    (
                        format!("{provider}:sub"),
                        vec![service_account_subject(namespace)],
                    ),
                ]),
            )]),
        },
        IdentityPlan::Gcp { .. } => return None,
    };
    Some(PolicyDocument {
        version: POLICY_VERSION.into(),
        statement: vec![statement],
    })
}

/// The conditional bindings of a workload's Google service account on one bucket.
pub fn bucket_bindings(bucket: &str, project: &str, tenant: &TenantPlan, kind: &str) -> GcpPolicy {
    let member = format!(
        "serviceAccount:{}",
        google_account_email(project, &tenant.name, kind)
    );
    let binding = |role: &str, prefix: &str, verb: &str| GcpBinding {
        role: role.to_string(),
        members: vec![member.clone()],
        condition: Some(GcpCondition {
            title: format!("{verb} {prefix}"),
            expression: gcs_prefix_condition(bucket, prefix),
        }),
    };
    let mut bindings: Vec<GcpBinding> = read_prefixes(tenant, kind, bucket)
        .iter()
        .filter(|prefix| !write_prefixes(tenant, kind).contains(prefix))
        .map(|prefix| binding(GCP_READ_ROLE, prefix, "read"))
        .collect();
    bindings.extend(
        write_prefixes(tenant, kind)
            .iter()
            .map(|prefix| binding(GCP_WRITE_ROLE, prefix, "write")),
    );
    GcpPolicy {
        bindings,
        version: 3,
    }
}

/// The IAM policy of a workload's Google service account: its Kubernetes ServiceAccount only.
pub fn workload_identity(pool: &str, namespace: &NamespacePlan) -> GcpPolicy {
    GcpPolicy {
        bindings: vec![GcpBinding {
            role: GCP_WORKLOAD_IDENTITY_ROLE.to_string(),
            members: vec![workload_identity_member(pool, namespace)],
            condition: None,
        }],
        version: 1,
    }
}

/// Writes a typed document as JSON with keys sorted at every level and a final newline.
pub fn to_json<T: Serialize>(document: &T) -> Result<Vec<u8>, InternalError> {
    let value = serde_json::to_value(document)
        .map_err(|error| InternalError(format!("an IAM document cannot be written: {error}")))?;
    let mut text = serde_json::to_string_pretty(&sorted(value))
        .map_err(|error| InternalError(format!("an IAM document cannot be written: {error}")))?;
    text.push('\n');
    Ok(text.into_bytes())
}

/// Rebuilds a JSON value with the keys of every object in sorted order, whatever map the
/// `serde_json` features select.
fn sorted(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let entries: BTreeMap<String, serde_json::Value> = map
                .into_iter()
                .map(|(key, value)| (key, sorted(value)))
                .collect();
            serde_json::Value::Object(entries.into_iter().collect())
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.into_iter().map(sorted).collect())
        }
        other => other,
    }
}

/// The folder of a tenant's IAM documents in the output tree.
pub fn folder(cell: &str, tenant: &str) -> String {
    format!("{cell}/iam/{tenant}")
}

/// Every IAM file of a tenant in a cell, as output-tree paths and contents.
pub fn files(
    cell: &str,
    storage: &StoragePlan,
    tenant: &TenantPlan,
    header: &str,
) -> Result<Vec<Extra>, InternalError> {
    let folder = folder(cell, &tenant.name);
    let mut files = Vec::new();
    let mut identities = Vec::new();
    let mut put = |name: String, contents: Vec<u8>| {
        files.push(Extra {
            path: format!("{folder}/{name}"),
            contents,
        });
    };
    for namespace in &tenant.namespaces {
        let kind = namespace.workload.as_str();
        let cloud_identity = match &storage.identity {
            IdentityPlan::AwsPodIdentity { account, cluster } => {
                let arn = role_arn(account, cell, &tenant.name, kind);
                put(
                    format!("{kind}-pod-identity-association.json"),
                    to_json(&PodIdentityAssociation {
                        cluster_name: cluster.clone(),
                        namespace: namespace.name.clone(),
                        service_account: namespace.service_account.clone(),
                        role_arn: arn.clone(),
                    })?,
                );
                arn
            }
            IdentityPlan::AwsIrsa { account, .. } => role_arn(account, cell, &tenant.name, kind),
            IdentityPlan::Gcp { project, pool } => {
                for bucket in &storage.buckets {
                    put(
                        format!("{kind}-bucket-{bucket}.json"),
                        to_json(&bucket_bindings(bucket, project, tenant, kind))?,
                    );
                }
                put(
                    format!("{kind}-workload-identity.json"),
                    to_json(&workload_identity(pool, namespace))?,
                );
                google_account_email(project, &tenant.name, kind)
            }
        };
        if let Some(trust) = trust(storage, namespace) {
            put(format!("{kind}-trust.json"), to_json(&trust)?);
            put(
                format!("{kind}-permissions.json"),
                to_json(&permissions(storage, tenant, kind))?,
            );
        }
        identities.push(Identity {
            workload: kind.to_string(),
            namespace: namespace.name.clone(),
            service_account: namespace.service_account.clone(),
            cloud_identity,
            writes_checkpoints: !write_prefixes(tenant, kind).is_empty(),
        });
    }
    put(
        "identities.json".to_string(),
        to_json(&Identities {
            comment: header.trim_start_matches("# ").trim_end().to_string(),
            identities,
        })?,
    );
    Ok(files)
}
