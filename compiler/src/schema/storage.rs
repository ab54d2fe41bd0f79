//! Reads a cell's storage: buckets, shared-base grants and the cloud identities that reach them.

use super::reader::{Ctx, Obj, choice, string};
use super::{check_name, check_text};
use crate::diag::{Code, Diagnostic};
use crate::model::{
    AwsIdentity, AwsMode, CloudIdentity, GcpIdentity, SharedBaseGrant, Spanned, Storage,
};
use crate::names;
use crate::parse::Node;

const AWS_MODES: &[(&str, AwsMode)] = &[
    ("pod-identity", AwsMode::PodIdentity),
    ("irsa", AwsMode::Irsa),
];

/// Reads `storage { bucket "…"; aws …; }` or `gcp …` of a cell.
pub(super) fn storage(ctx: &Ctx, node: &Node) -> Option<Storage> {
    let mut obj = Obj::new(ctx, node, "storage")?;
    let bucket_nodes = obj.items("bucket", "buckets");
    if bucket_nodes.is_empty() {
        obj.missing("bucket", "buckets", "bucket \"<bucket>\"");
    }
    let buckets: Vec<Option<Spanned<String>>> = bucket_nodes
        .into_iter()
        .map(|node| {
            let bucket = string(ctx, node, "bucket")?;
            check_text(
                ctx,
                &bucket,
                "bucket",
                crate::names::bucket_name_ok,
                "3 to 63 lowercase letters, digits, `.` and `-`, starting and ending with a letter or digit",
            )
            .then_some(bucket)
        })
        .collect();
    let grants: Vec<Option<SharedBaseGrant>> = obj
        .items("shared-base", "shared-bases")
        .into_iter()
        .map(|node| shared_base_grant(ctx, node))
        .collect();
    let aws_node = obj.field("aws");
    let gcp_node = obj.field("gcp");
    if aws_node.is_none() && gcp_node.is_none() {
        obj.missing(
            "aws",
            "aws",
            "aws account=\"123456789012\" identity=\"pod-identity\"",
        );
    }
    let span = obj.span;
    obj.finish();
    let aws = aws_node.and_then(|node| aws_identity(ctx, node));
    let gcp = gcp_node.and_then(|node| gcp_identity(ctx, node));
    let identity = match (aws, gcp) {
        (Some(aws), None) if gcp_node.is_none() => CloudIdentity::Aws(aws),
        (None, Some(gcp)) if aws_node.is_none() => CloudIdentity::Gcp(gcp),
        (Some(_), Some(gcp)) => {
            ctx.push(
                Diagnostic::error(
                    Code::StorageIdentityMismatch,
                    gcp.span,
                    "storage declares both an `aws` and a `gcp` identity",
                )
                .with_label("a second identity")
                .with_help("keep the identity of the cell's own cloud"),
            );
            return None;
        }
        _ => return None,
    };
    let buckets: Vec<Spanned<String>> = buckets.into_iter().collect::<Option<_>>()?;
    let shared_bases: Vec<SharedBaseGrant> = grants.into_iter().collect::<Option<_>>()?;
    (!buckets.is_empty()).then_some(Storage {
        span,
        buckets,
        identity,
        shared_bases,
    })
}

/// The `tenants "a" "b"` list of a node (an org's members, a shared base's readers), each a
/// tenant name; `None` when the node has no list, and `None` items where a name is invalid.
pub(super) fn tenant_names(
    ctx: &Ctx,
    obj: &mut Obj<'_, '_>,
) -> Option<Vec<Option<Spanned<String>>>> {
    obj.values("tenants").map(|nodes| {
        nodes
            .into_iter()
            .map(|node| {
                string(ctx, node, "tenants")
                    .filter(|tenant| check_name(ctx, tenant, "tenant", names::dns_label))
            })
            .collect()
    })
}

/// Reads `shared-base "shared/…/" { tenants "a" "b"; }` of a cell's storage (YAML
/// `{prefix: …, tenants: […]}`); the prefix is checked like a tenant's `shared-base`.
fn shared_base_grant(ctx: &Ctx, node: &Node) -> Option<SharedBaseGrant> {
    let mut obj = Obj::new(ctx, node, "shared-base")?;
    let prefix = obj.req_arg_str(
        0,
        "prefix",
        "shared-base \"shared/<path>/\" { tenants \"<tenant>\"; }",
    );
    let tenants = tenant_names(ctx, &mut obj);
    if tenants.is_none() {
        obj.missing("tenants", "tenants", "tenants \"<tenant>\"");
    }
    let span = obj.span;
    obj.finish();
    let prefix = prefix?;
    let tenants: Vec<Spanned<String>> = tenants?.into_iter().collect::<Option<_>>()?;
    Some(SharedBaseGrant {
        span,
        prefix,
        tenants,
    })
}

fn aws_identity(ctx: &Ctx, node: &Node) -> Option<AwsIdentity> {
    let mut obj = Obj::new(ctx, node, "aws")?;
    let account = obj.req_str("account", "account=\"123456789012\"");
    let mode = match obj.field("identity") {
        Some(node) => choice(ctx, node, "identity", AWS_MODES),
        None => {
            obj.missing("identity", "identity", "identity=\"pod-identity\"");
            None
        }
    };
    let oidc_provider = obj.opt_str("oidc-provider");
    let cluster = obj.opt_str("cluster");
    let span = obj.span;
    obj.finish();
    let account = account?;
    let mode = mode?;
    let mut ok = check_text(
        ctx,
        &account,
        "AWS account",
        |text| text.len() == 12 && text.bytes().all(|byte| byte.is_ascii_digit()),
        "12 digits",
    );
    if let Some(provider) = &oidc_provider {
        ok &= check_text(
            ctx,
            provider,
            "OIDC provider",
            crate::names::oidc_provider_ok,
            "a host and path such as `oidc.eks.us-east-1.amazonaws.com/id/<id>`, without `https://`",
        );
    }
    if let Some(cluster) = &cluster {
        ok &= check_text(
            ctx,
            cluster,
            "EKS cluster",
            |text| {
                (1..=100).contains(&text.len())
                    && text.starts_with(|ch: char| ch.is_ascii_alphanumeric())
                    && text
                        .chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_'))
            },
            "1 to 100 letters, digits, `-` and `_`, starting with a letter or digit",
        );
    }
    match (mode.value, &oidc_provider, &cluster) {
        (AwsMode::Irsa, None, _) => {
            ctx.push(
                Diagnostic::error(
                    Code::FieldMissing,
                    mode.span,
                    "`identity=\"irsa\"` needs `oidc-provider`",
                )
                .with_label("IRSA trusts the cluster's OIDC provider")
                .with_help("add `oidc-provider=\"oidc.eks.<region>.amazonaws.com/id/<id>\"`, from `aws eks describe-cluster`"),
            );
            return None;
        }
        (AwsMode::Irsa, _, Some(cluster)) | (AwsMode::PodIdentity, Some(cluster), _) => {
            let other = if mode.value == AwsMode::Irsa {
                "`cluster` is for Pod Identity"
            } else {
                "`oidc-provider` is for IRSA"
            };
            ctx.push(
                Diagnostic::error(
                    Code::StorageIdentityMismatch,
                    cluster.span,
                    format!(
                        "{other}, not for `identity=\"{}\"`",
                        match mode.value {
                            AwsMode::Irsa => "irsa",
                            AwsMode::PodIdentity => "pod-identity",
                        }
                    ),
                )
                .with_label("not used by this identity")
                .with_help("remove it, or change `identity`"),
            );
            return None;
        }
        _ => {}
    }
    ok.then_some(AwsIdentity {
        span,
        account,
        mode,
        oidc_provider,
        cluster,
    })
}

fn gcp_identity(ctx: &Ctx, node: &Node) -> Option<GcpIdentity> {
    let mut obj = Obj::new(ctx, node, "gcp")?;
    let project = obj.req_str("project", "project=\"<project id>\"");
    let workload_pool = obj.opt_str("workload-pool");
    let span = obj.span;
    obj.finish();
    let project = project?;
    let mut ok = check_text(
        ctx,
        &project,
        "Google Cloud project",
        crate::names::project_id_ok,
        "6 to 30 lowercase letters, digits and `-`, starting with a letter",
    );
    if let Some(pool) = &workload_pool {
        ok &= check_text(
            ctx,
            pool,
            "Workload Identity pool",
            |text| {
                text.strip_suffix(".svc.id.goog")
                    .is_some_and(crate::names::project_id_ok)
            },
            "`<project id>.svc.id.goog`",
        );
    }
    ok.then_some(GcpIdentity {
        span,
        project,
        workload_pool,
    })
}
