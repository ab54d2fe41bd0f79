//! The security audit of the storage IAM that a build emits.
//!
//! Consumes: the rendered output tree (the bytes `out/` receives), the plan and the fleet.
//! Produces: an `iam-grant-too-broad` error, at the tenant's declaration, for every grant in
//! `<cell>/iam/<tenant>/` that gives the tenant another tenant's prefix, a wildcard action or a
//! resource beyond its own prefixes, a write to anything but its own `checkpoints/<tenant>/`
//! (so no write to models, and none at all for `infer`), a ListBucket without a prefix
//! condition, or trust in anything but the workload's own ServiceAccount.
//!
//! Invariants:
//! - The audit reads the emitted bytes back into the typed documents of `kube/iam.rs` and
//!   judges them by rules of its own (prefix sets and exact identities), never by comparing them
//!   with what the generator would produce, so a bug in `lower/iam.rs` or a hand edit is caught.
//! - A file the audit cannot read or does not know is itself a finding: nothing unaudited
//!   leaves the build.

use crate::diag::{Code, Diagnostic};
use crate::emit::OutputTree;
use crate::facts::cloud::{
    checkpoints_prefix, google_account_email, models_prefix, oidc_provider_arn, role_arn,
};
use crate::kube::iam::{
    GCP_READ_ROLE, GCP_WORKLOAD_IDENTITY_ROLE, GCP_WRITE_ROLE, GcpPolicy, LIST_ACTION,
    PodIdentityAssociation, PolicyDocument, READ_ACTIONS, Statement, WRITE_ACTIONS,
};
use crate::model::Fleet;
use crate::plan::storage::{
    IdentityPlan, StoragePlan, service_account_subject, workload_identity_member,
};
use crate::plan::{CellPlan, NamespacePlan, Plan, TenantPlan};
use crate::source::Span;

/// The only workload kind that may write, and only its own checkpoints.
const WRITER: &str = "train";

/// Audits every IAM document of the tree.
pub fn audit(tree: &OutputTree, plan: &Plan, fleet: &Fleet) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    for (path, contents) in tree {
        let parts: Vec<&str> = path.split('/').collect();
        let [cell_name, "iam", tenant_name, file] = parts.as_slice() else {
            if path.split('/').nth(1) == Some("iam") {
                report_unplaced(fleet, path, &mut diagnostics);
            }
            continue;
        };
        let cell = plan.cells.iter().find(|cell| cell.name == *cell_name);
        let tenant = cell.and_then(|cell| cell.tenants.iter().find(|t| t.name == *tenant_name));
        let (Some(cell), Some(tenant), Some(storage)) =
            (cell, tenant, cell.and_then(|cell| cell.storage.as_ref()))
        else {
            report_unplaced(fleet, path, &mut diagnostics);
            continue;
        };
        let span = fleet
            .tenants
            .iter()
            .find(|declared| declared.name.value == tenant.name)
            .map(|declared| declared.name.span);
        let Some(span) = span else {
            continue;
        };
        let mut problems = Vec::new();
        let context = Context {
            cell,
            storage,
            tenant,
            fleet,
        };
        context.file(file, contents, &mut problems);
        for problem in problems {
            diagnostics.push(
                Diagnostic::error(
                    Code::IamGrantTooBroad,
                    span,
                    format!(
                        "storage IAM of tenant `{}` in cell `{}` grants more than its own prefixes and ServiceAccounts",
                        tenant.name, cell.name
                    ),
                )
                .with_label(problem)
                .with_note(format!("in `out/{path}`"))
                .with_help("the IAM documents are generated: rebuild instead of editing them, and report the finding as a tenantc bug if a build made it"),
            );
        }
    }
    diagnostics
}

/// Reports an IAM file outside any known tenant folder, at the first cell's name.
fn report_unplaced(fleet: &Fleet, path: &str, diagnostics: &mut Vec<Diagnostic>) {
    let span: Option<Span> = fleet.cells.first().map(|cell| cell.name.span);
    if let Some(span) = span {
        diagnostics.push(
            Diagnostic::error(
                Code::IamGrantTooBroad,
                span,
                format!("`{path}` is not the IAM of a tenant of a cell with storage"),
            )
            .with_label("an IAM document the audit cannot attribute")
            .with_help(
                "IAM documents live in `<cell>/iam/<tenant>/` of cells that declare `storage`",
            ),
        );
    }
}

/// What one tenant's IAM folder is judged against.
struct Context<'a> {
    cell: &'a CellPlan,
    storage: &'a StoragePlan,
    tenant: &'a TenantPlan,
    /// The declarations, whose shared-base grants the audit reads itself.
    fleet: &'a Fleet,
}

impl Context<'_> {
    fn file(&self, file: &str, contents: &[u8], problems: &mut Vec<String>) {
        if file == "identities.json" {
            return;
        }
        let Some((kind, rest)) = file.split_once('-') else {
            problems.push(format!("`{file}` is not a document the audit knows"));
            return;
        };
        let Some(namespace) = self
            .tenant
            .namespaces
            .iter()
            .find(|ns| ns.workload.as_str() == kind)
        else {
            problems.push(format!(
                "`{file}` is for workload `{kind}`, which the tenant does not declare"
            ));
            return;
        };
        let aws = !matches!(self.storage.identity, IdentityPlan::Gcp { .. });
        let parsed = match rest {
            "permissions.json" if aws => serde_json::from_slice(contents)
                .map(|document| self.permissions(kind, &document, problems)),
            "trust.json" if aws => serde_json::from_slice(contents)
                .map(|document| self.trust(namespace, &document, problems)),
            "pod-identity-association.json" if aws => serde_json::from_slice(contents)
                .map(|document| self.association(namespace, &document, problems)),
            "workload-identity.json" if !aws => serde_json::from_slice(contents)
                .map(|document| self.workload_identity(namespace, &document, problems)),
            _ => match rest
                .strip_prefix("bucket-")
                .and_then(|rest| rest.strip_suffix(".json"))
            {
                Some(bucket) if !aws => serde_json::from_slice(contents)
                    .map(|document| self.bucket(kind, bucket, &document, problems)),
                _ => {
                    problems.push(format!("`{file}` is not a document the audit knows"));
                    return;
                }
            },
        };
        if let Err(error) = parsed {
            problems.push(format!(
                "`{file}` cannot be read as an IAM document: {error}"
            ));
        }
    }

    /// Names another tenant whose `models/` or `checkpoints/` prefix `prefix` lies in.
    fn other_tenant(&self, prefix: &str) -> Option<String> {
        let mut parts = prefix.splitn(3, '/');
        let (Some(root @ ("models" | "checkpoints")), Some(owner), Some(_)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        (!owner.is_empty() && owner != self.tenant.name)
            .then(|| format!("`{root}/{owner}/` of another tenant"))
    }

    /// Why a prefix may not be granted in `bucket` for reading (`write` false) or writing.
    fn prefix_problem(
        &self,
        kind: &str,
        bucket: &str,
        prefix: &str,
        write: bool,
    ) -> Option<String> {
        if prefix.contains(['*', '?', '$']) {
            return Some(format!(
                "the resource `{prefix}` holds a wildcard or variable"
            ));
        }
        if let Some(other) = self.other_tenant(prefix) {
            return Some(format!("grants {other}: `{prefix}`"));
        }
        // The allowed sets are the audit's own, from the layout rules, not from `lower/iam.rs`.
        let own_checkpoints = checkpoints_prefix(&self.tenant.name);
        let writable: Vec<String> = if kind == WRITER {
            vec![own_checkpoints.clone()]
        } else {
            Vec::new()
        };
        if write {
            if writable.iter().any(|allowed| allowed == prefix) {
                return None;
            }
            return Some(if prefix.starts_with("models/") {
                format!("writes to models: `{prefix}`")
            } else if writable.is_empty() {
                format!("the `{kind}` identity writes `{prefix}`, but only `train` may write")
            } else {
                format!("writes `{prefix}`, outside `{}`", writable.join("`, `"))
            });
        }
        if prefix == models_prefix(&self.tenant.name)
            || (kind == WRITER && prefix == own_checkpoints)
        {
            return None;
        }
        if !self.declares_shared_base(prefix) {
            return Some(format!(
                "reads `{prefix}`, which the `{kind}` identity may not read"
            ));
        }
        (!self.base_granted_on(bucket, prefix)).then(|| {
            format!("reads the shared base `{prefix}` in bucket `{bucket}`, where no grant names the tenant")
        })
    }

    /// Whether the tenant itself declares `prefix` as a shared base.
    fn declares_shared_base(&self, prefix: &str) -> bool {
        self.fleet
            .tenants
            .iter()
            .filter(|declared| declared.name.value == self.tenant.name)
            .flat_map(|declared| &declared.shared_bases)
            .any(|base| base.value == prefix)
    }

    /// The audit's own reading of the grants: a bucket is its cloud and name; its grants are
    /// those of every cell whose storage, on that cloud, declares it; a base is granted on it
    /// when it has no grants, or when one names the tenant and holds the base.
    fn base_granted_on(&self, bucket: &str, base: &str) -> bool {
        let cloud = match self.storage.identity {
            IdentityPlan::AwsPodIdentity { .. } | IdentityPlan::AwsIrsa { .. } => "aws",
            IdentityPlan::Gcp { .. } => "gcp",
        };
        let mut grants = self
            .fleet
            .cells
            .iter()
            .filter_map(|cell| cell.storage.as_ref())
            .filter(|storage| {
                storage.identity.cloud() == cloud
                    && storage
                        .buckets
                        .iter()
                        .any(|declared| declared.value == bucket)
            })
            .flat_map(|storage| &storage.shared_bases)
            .peekable();
        if grants.peek().is_none() {
            return true;
        }
        grants.any(|grant| {
            base.starts_with(&grant.prefix.value)
                && grant
                    .tenants
                    .iter()
                    .any(|reader| reader.value == self.tenant.name)
        })
    }

    fn permissions(&self, kind: &str, document: &PolicyDocument, problems: &mut Vec<String>) {
        for statement in &document.statement {
            self.permission_statement(kind, statement, problems);
        }
    }

    fn permission_statement(&self, kind: &str, statement: &Statement, problems: &mut Vec<String>) {
        let sid = &statement.sid;
        if statement.effect == "Deny" {
            return;
        }
        if statement.effect != "Allow" || statement.principal.is_some() {
            problems.push(format!("statement `{sid}` is not a plain `Allow`"));
            return;
        }
        let mut writes = false;
        let mut lists = false;
        for action in &statement.action {
            if action.contains(['*', '?']) {
                problems.push(format!(
                    "statement `{sid}` has the wildcard action `{action}`"
                ));
            } else if WRITE_ACTIONS.contains(&action.as_str()) {
                writes = true;
            } else if action == LIST_ACTION {
                lists = true;
            } else if !READ_ACTIONS.contains(&action.as_str()) {
                problems.push(format!("statement `{sid}` grants `{action}`, which is not a storage action tenantc grants"));
            }
        }
        for resource in &statement.resource {
            let Some(rest) = resource.strip_prefix("arn:aws:s3:::") else {
                problems.push(format!(
                    "statement `{sid}` names `{resource}`, which is not an S3 resource"
                ));
                continue;
            };
            let (bucket, key) = rest
                .split_once('/')
                .map_or((rest, None), |(b, k)| (b, Some(k)));
            if !self.storage.buckets.iter().any(|known| known == bucket) {
                problems.push(format!(
                    "statement `{sid}` names bucket `{bucket}`, which is not a bucket of the cell"
                ));
                continue;
            }
            match key {
                None => {
                    if writes || statement.action.iter().any(|action| action != LIST_ACTION) {
                        problems.push(format!(
                            "statement `{sid}` grants object actions on the whole bucket `{bucket}`"
                        ));
                    }
                }
                Some(key) => {
                    let Some(prefix) = key.strip_suffix('*') else {
                        problems.push(format!(
                            "statement `{sid}` names `{resource}`, which is not a prefix grant"
                        ));
                        continue;
                    };
                    if lists {
                        problems.push(format!(
                            "statement `{sid}` lists an object resource `{resource}`"
                        ));
                    }
                    if let Some(problem) = self.prefix_problem(kind, bucket, prefix, writes) {
                        problems.push(format!("statement `{sid}` {problem}"));
                    }
                }
            }
        }
        if lists {
            let prefixes = statement
                .condition
                .iter()
                .filter(|(operator, _)| *operator == "StringLike" || *operator == "StringEquals")
                .filter_map(|(_, keys)| keys.get("s3:prefix"))
                .next();
            let only_prefix = statement.condition.len() == 1
                && statement.condition.values().all(|keys| keys.len() == 1);
            match prefixes {
                Some(values) if only_prefix && !values.is_empty() => {
                    // A listed prefix must be readable in every bucket the statement lists.
                    let buckets = statement
                        .resource
                        .iter()
                        .filter_map(|resource| resource.strip_prefix("arn:aws:s3:::"))
                        .filter(|rest| !rest.contains('/'));
                    for bucket in buckets {
                        for value in values {
                            let prefix = value.strip_suffix('*').unwrap_or(value);
                            if let Some(problem) = self.prefix_problem(kind, bucket, prefix, false)
                            {
                                problems.push(format!("statement `{sid}` lists: {problem}"));
                            }
                        }
                    }
                }
                _ => problems.push(format!(
                    "statement `{sid}` grants `s3:ListBucket` without one `s3:prefix` condition"
                )),
            }
        }
    }

    fn trust(
        &self,
        namespace: &NamespacePlan,
        document: &PolicyDocument,
        problems: &mut Vec<String>,
    ) {
        for statement in &document.statement {
            let sid = &statement.sid;
            if statement.effect != "Allow" {
                continue;
            }
            let principal_ok = match (&self.storage.identity, &statement.principal) {
                (IdentityPlan::AwsPodIdentity { .. }, Some(principal)) => {
                    principal.len() == 1
                        && principal.get("Service").map(String::as_str)
                            == Some("pods.eks.amazonaws.com")
                }
                (IdentityPlan::AwsIrsa { account, provider }, Some(principal)) => {
                    principal.len() == 1
                        && principal.get("Federated") == Some(&oidc_provider_arn(account, provider))
                }
                _ => false,
            };
            if !principal_ok {
                problems.push(format!("trust statement `{sid}` trusts a principal other than the cell's workload identity"));
            }
            for operator in statement.condition.keys() {
                if operator != "StringEquals" {
                    problems.push(format!("trust statement `{sid}` uses `{operator}`; only `StringEquals` names exact ServiceAccounts"));
                }
            }
            let exact = |key: &str, expected: &str| {
                statement
                    .condition
                    .get("StringEquals")
                    .and_then(|keys| keys.get(key))
                    .is_some_and(|values| {
                        values.len() == 1 && values.iter().all(|value| value == expected)
                    })
            };
            let bound = match &self.storage.identity {
                IdentityPlan::AwsPodIdentity { .. } => {
                    exact("aws:RequestTag/kubernetes-namespace", &namespace.name)
                        && exact(
                            "aws:RequestTag/kubernetes-service-account",
                            &namespace.service_account,
                        )
                }
                IdentityPlan::AwsIrsa { provider, .. } => exact(
                    &format!("{provider}:sub"),
                    &service_account_subject(namespace),
                ),
                IdentityPlan::Gcp { .. } => false,
            };
            if !bound {
                problems.push(format!(
                    "trust statement `{sid}` is not bound to exactly `{}`",
                    service_account_subject(namespace)
                ));
            }
        }
    }

    fn association(
        &self,
        namespace: &NamespacePlan,
        association: &PodIdentityAssociation,
        problems: &mut Vec<String>,
    ) {
        let IdentityPlan::AwsPodIdentity { account, .. } = &self.storage.identity else {
            return;
        };
        if association.namespace != namespace.name
            || association.service_account != namespace.service_account
            || association.role_arn
                != role_arn(
                    account,
                    &self.cell.name,
                    &self.tenant.name,
                    namespace.workload.as_str(),
                )
        {
            problems.push(format!(
                "the pod identity association does not bind `{}` to its own role",
                service_account_subject(namespace)
            ));
        }
    }

    fn bucket(&self, kind: &str, bucket: &str, policy: &GcpPolicy, problems: &mut Vec<String>) {
        let IdentityPlan::Gcp { project, .. } = &self.storage.identity else {
            return;
        };
        if !self.storage.buckets.iter().any(|known| known == bucket) {
            problems.push(format!(
                "bindings for bucket `{bucket}`, which is not a bucket of the cell"
            ));
            return;
        }
        let member = format!(
            "serviceAccount:{}",
            google_account_email(project, &self.tenant.name, kind)
        );
        let head = format!("resource.name.startsWith(\"projects/_/buckets/{bucket}/objects/");
        for binding in &policy.bindings {
            let role = &binding.role;
            if binding.members.iter().any(|granted| *granted != member) {
                problems.push(format!(
                    "`{role}` on `{bucket}` is granted to a member other than `{member}`"
                ));
            }
            let write = match role.as_str() {
                GCP_READ_ROLE => false,
                GCP_WRITE_ROLE => true,
                _ => {
                    problems.push(format!("`{role}` is not a storage role tenantc grants"));
                    continue;
                }
            };
            let prefix = binding.condition.as_ref().and_then(|condition| {
                condition
                    .expression
                    .strip_prefix(&head)
                    .and_then(|rest| rest.strip_suffix("\")"))
            });
            match prefix {
                Some(prefix) if !prefix.contains(['"', '\\', ')', '|', '&']) => {
                    if let Some(problem) = self.prefix_problem(kind, bucket, prefix, write) {
                        problems.push(format!("`{role}` on `{bucket}` {problem}"));
                    }
                }
                _ => problems.push(format!(
                    "`{role}` on `{bucket}` is not limited to one object prefix by its condition"
                )),
            }
        }
    }

    fn workload_identity(
        &self,
        namespace: &NamespacePlan,
        policy: &GcpPolicy,
        problems: &mut Vec<String>,
    ) {
        let IdentityPlan::Gcp { pool, .. } = &self.storage.identity else {
            return;
        };
        let member = workload_identity_member(pool, namespace);
        for binding in &policy.bindings {
            if binding.role != GCP_WORKLOAD_IDENTITY_ROLE
                || binding.members.iter().any(|granted| *granted != member)
            {
                problems.push(format!(
                    "the Workload Identity policy grants `{}` to a member other than `{member}`",
                    binding.role
                ));
            }
        }
    }
}
