//! Namespace checks: tenant namespaces never overlap platform namespaces or each other.
//!
//! Consumes: the [`Fleet`]. Produces: `namespace-collision` diagnostics.
//!
//! A tenant gets the namespace `<tenant>-<workload>` in every cell where it has a quota.
//! Platform namespaces are the ones a cell names for its add-ons (the GPU Operator's, where the
//! MIG and device-plugin ConfigMaps go, and the DNS and metrics namespaces that network policies
//! trust), the
//! namespaces Kubernetes creates (`default`, `kube-system`, `kube-public`, `kube-node-lease`),
//! and every namespace with a prefix that Kubernetes or OpenShift reserves (`kube-`,
//! `openshift-`, and `openshift` itself).
//!
//! Invariants: pure; a tenant namespace that equals a cell's add-on namespace is reported at both
//! declarations, one diagnostic in each file, so whoever edits either file sees it; two tenants
//! never share a namespace in one cell.

use std::collections::BTreeMap;

use crate::diag::{Code, Diagnostic};
use crate::facts::gpu::operator_namespace;
use crate::facts::naming::namespace_name;
use crate::model::{Cell, Fleet, Tenant, Workload};
use crate::source::Span;

/// Namespaces that Kubernetes creates in every cluster.
pub const KUBERNETES_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Namespace prefixes reserved for the platform: Kubernetes' own and OpenShift's.
pub const RESERVED_PREFIXES: [&str; 2] = ["kube-", "openshift-"];

/// The namespace of one workload of a tenant, as `lower` names it.
pub fn tenant_namespace(tenant: &Tenant, workload: &Workload) -> String {
    namespace_name(&tenant.name.value, workload.kind.value)
}

/// Why a namespace is reserved for the platform in every cluster, if it is.
pub fn reserved_reason(namespace: &str) -> Option<String> {
    if KUBERNETES_NAMESPACES.contains(&namespace) {
        return Some(format!("`{namespace}` is created by Kubernetes"));
    }
    if namespace == "openshift" {
        return Some("`openshift` is reserved by OpenShift".to_owned());
    }
    RESERVED_PREFIXES
        .iter()
        .find(|prefix| namespace.starts_with(*prefix))
        .map(|prefix| format!("the `{prefix}` prefix is reserved for platform namespaces"))
}

/// An add-on namespace a cell names, with what it is for.
struct PlatformNamespace<'a> {
    name: &'a str,
    span: Option<Span>,
    what: &'static str,
}

fn platform_namespaces(cell: &Cell) -> Vec<PlatformNamespace<'_>> {
    let mut found = vec![PlatformNamespace {
        name: operator_namespace(cell),
        span: cell.gpu_operator_namespace.as_ref().map(|ns| ns.span),
        what: "the GPU Operator namespace",
    }];
    if let Some(dns) = &cell.dns.namespace {
        found.push(PlatformNamespace {
            name: &dns.value,
            span: Some(dns.span),
            what: "the DNS namespace",
        });
    }
    if let Some(metrics) = &cell.metrics {
        found.push(PlatformNamespace {
            name: &metrics.namespace.value,
            span: Some(metrics.namespace.span),
            what: "the metrics namespace",
        });
    }
    found
}

/// Checks every tenant namespace against the reserved names, the add-on namespaces of each cell
/// the tenant runs in, and the other tenants' namespaces in that cell.
pub(super) fn check(fleet: &Fleet, diagnostics: &mut Vec<Diagnostic>) {
    for tenant in &fleet.tenants {
        for workload in &tenant.workloads {
            let namespace = tenant_namespace(tenant, workload);
            if let Some(reason) = reserved_reason(&namespace) {
                diagnostics.push(
                    Diagnostic::error(
                        Code::NamespaceCollision,
                        tenant.name.span,
                        format!("tenant namespace `{namespace}` is a platform namespace"),
                    )
                    .with_label(reason)
                    .with_secondary(workload.kind.span, "this workload gets the namespace")
                    .with_help("rename the tenant; its namespaces are `<tenant>-<workload>`"),
                );
            }
        }
    }
    for cell in &fleet.cells {
        check_cell(fleet, cell, diagnostics);
    }
}

fn check_cell(fleet: &Fleet, cell: &Cell, diagnostics: &mut Vec<Diagnostic>) {
    let platform = platform_namespaces(cell);
    let mut owners: BTreeMap<String, (&Tenant, &Workload)> = BTreeMap::new();
    for tenant in &fleet.tenants {
        let Some(quota) = tenant.quota_in(&cell.name.value) else {
            continue;
        };
        for workload in &tenant.workloads {
            let namespace = tenant_namespace(tenant, workload);
            for addon in platform.iter().filter(|addon| addon.name == namespace) {
                collide_with_addon(cell, addon, tenant, workload, quota.cell.span, diagnostics);
            }
            match owners.get(&namespace) {
                Some((first, first_workload)) if first.name.value != tenant.name.value => {
                    diagnostics.push(
                        Diagnostic::error(
                            Code::NamespaceCollision,
                            workload.kind.span,
                            format!(
                                "tenants `{}` and `{}` both get namespace `{namespace}` in cell `{}`",
                                first.name.value, tenant.name.value, cell.name.value
                            ),
                        )
                        .with_label(format!("`{}` gets `{namespace}` from this workload", tenant.name.value))
                        .with_secondary(first_workload.kind.span, format!("`{}` gets it from this workload", first.name.value))
                        .with_help("rename one tenant; two tenants must never share a namespace, quota or RoleBindings"),
                    );
                }
                Some(_) => {}
                None => {
                    owners.insert(namespace, (tenant, workload));
                }
            }
        }
    }
}

/// Reports a tenant namespace that is also an add-on namespace of the cell, in both files.
fn collide_with_addon(
    cell: &Cell,
    addon: &PlatformNamespace<'_>,
    tenant: &Tenant,
    workload: &Workload,
    quota_span: Span,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let message = format!(
        "namespace `{}` is both {} of cell `{}` and a namespace of tenant `{}`",
        addon.name, addon.what, cell.name.value, tenant.name.value
    );
    let help = "give the add-on a namespace of its own; tenant admins may edit everything in their namespaces";
    let mut at_tenant = Diagnostic::error(Code::NamespaceCollision, workload.kind.span, &message)
        .with_label(format!("this workload gets `{}`", addon.name))
        .with_secondary(quota_span, "the tenant runs in the cell here");
    if let Some(span) = addon.span {
        at_tenant = at_tenant.with_secondary(span, format!("{} set here", addon.what));
        diagnostics.push(
            Diagnostic::error(Code::NamespaceCollision, span, &message)
                .with_label(format!("{} is a tenant namespace", addon.what))
                .with_secondary(workload.kind.span, "the tenant workload that gets it")
                .with_help(help),
        );
    }
    diagnostics.push(at_tenant.with_help(help));
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::WorkloadKind;
    use crate::validate::test_support::{CELL, codes, tenant};

    #[test]
    fn reserves_the_kubernetes_namespaces_and_platform_prefixes() {
        for reserved in [
            "default",
            "kube-system",
            "kube-public",
            "kube-node-lease",
            "kube-flannel",
            "openshift",
            "openshift-gpu",
        ] {
            assert!(reserved_reason(reserved).is_some(), "{reserved}");
        }
        for free in [
            "gpu-operator",
            "kubeflow-train",
            "acme-train",
            "openshift2-train",
        ] {
            assert_eq!(reserved_reason(free), None, "{free}");
        }
    }

    #[test]
    fn two_tenants_never_get_the_same_namespace() {
        // Issue 6 item 12: `a-b` + `c` and `a` + `b-c` would collide if workload names were
        // free text. Every DNS label of up to four characters over an alphabet that can spell
        // the workload suffixes, with every workload kind, must name a distinct namespace.
        let alphabet = ['a', 't', 'r', 'i', 'n', '-'];
        let mut names = vec![String::new()];
        let mut labels = Vec::new();
        for _ in 0..4 {
            names = names
                .iter()
                .flat_map(|name| alphabet.iter().map(move |ch| format!("{name}{ch}")))
                .collect();
            labels.extend(
                names
                    .iter()
                    .filter(|name| crate::names::dns_label(name).is_ok())
                    .cloned(),
            );
        }
        let mut owners: BTreeMap<String, (String, WorkloadKind)> = BTreeMap::new();
        for label in &labels {
            for kind in [WorkloadKind::Train, WorkloadKind::Infer] {
                let namespace = namespace_name(label, kind);
                if let Some(first) = owners.insert(namespace.clone(), (label.clone(), kind)) {
                    panic!("{namespace} is made by {first:?} and by {label} {kind:?}");
                }
            }
        }
        assert!(owners.len() > 1000, "{}", owners.len());
    }

    #[test]
    fn reports_a_tenant_namespace_used_by_a_cell_add_on_in_both_files() {
        let cell = CELL.replace(
            "    driver \"570\"\n",
            "    driver \"570\"\n    gpu-operator namespace=\"acme-train\"\n",
        );
        let acme = tenant("acme", "soft", "pool \"train\" reserved=1");
        let found = crate::validate::test_support::compile_files(&[
            ("cells/c1.kdl", &cell),
            ("tenants/acme.kdl", &acme),
        ]);
        let at: Vec<(&str, Code)> = found
            .diagnostics
            .iter()
            .map(|d| (found.sources.path(d.labels[0].span.file), d.code))
            .collect();
        assert_eq!(
            at,
            [
                ("cells/c1.kdl", Code::NamespaceCollision),
                ("tenants/acme.kdl", Code::NamespaceCollision)
            ]
        );
        // A tenant that does not run in the cell shares no cluster with its add-ons.
        let other = CELL.replace("cell \"c1\"", "cell \"c2\"").replace(
            "    driver \"570\"\n",
            "    driver \"570\"\n    gpu-operator namespace=\"acme-train\"\n",
        );
        assert_eq!(
            codes(&[
                ("cells/c1.kdl", CELL),
                ("cells/c2.kdl", &other),
                ("tenants/acme.kdl", &acme)
            ]),
            []
        );
    }

    #[test]
    fn reports_tenants_whose_namespaces_take_a_reserved_prefix() {
        let kube = tenant("kube", "soft", "pool \"train\" reserved=1");
        assert_eq!(
            codes(&[("cells/c1.kdl", CELL), ("tenants/kube.kdl", &kube)]),
            [Code::NamespaceCollision]
        );
    }
}
