//! Conformance of a DRA cell's floor: the real API server (1.36, which serves
//! `resource.k8s.io/v1`) judges the DRA policy tests' objects exactly as tenantc's in-process
//! evaluator does ([docs/dra.md](../../docs/dra.md#what-the-floor-holds)), with the tenant roles of
//! the cell, which let members write ResourceClaims and ResourceClaimTemplates there.
//!
//! Consumes: the variant of the fixture fleet with `devices "dra"` in `us-east-1a`
//! (`tests/policy/dra_cases.rs`), applied as a cell (its DeviceClasses, ResourceClaimTemplates,
//! roles, both policies, the bindings and params); the admitted objects and denied cases of
//! `dra_cases.rs`. Produces: pass or fail, and a line with the counts.
//!
//! Invariants:
//! - Every object is created by server-side dry-run as a member of its tenant (impersonated);
//!   nothing of the tenant is stored.
//! - An admitted object must be admitted; a denied case must be refused with the binding's
//!   `denied request:` followed by the first message of the offline evaluator, which must deny
//!   it too; a case the API server refuses in its own validation first (`earlier`) must be
//!   refused by both, whatever the message.
//! - The objects only the DRA variant has are deleted and the fixture fleet's cell is applied
//!   again at the end, so the checks after this one find the floor they expect.

use super::admission::install_node_runtime_classes;
use super::dra_cases::{CELL, admitted, cases, object};
use super::quota::{as_member, fixture_fleet, fleet_at, member_group, set_up_cell};
use super::volcano::{offline, online, until_agreed, verdict_problem};
use super::*;

use tenantc::lower::admission;
use tenantc::plan::CellPlan;

/// Every disagreement between the API server and the offline evaluator, and the count judged.
fn disagreements(cluster: &Cluster, cell: &CellPlan) -> (usize, Vec<String>) {
    let mut requests: Vec<(String, Value, bool, bool)> = admitted()
        .into_iter()
        .map(|(name, object)| (name, object, false, false))
        .collect();
    for case in cases() {
        requests.push((case.name.to_string(), object(&case), true, case.earlier));
    }
    let mut problems = Vec::new();
    for (what, after, denied, earlier) in &requests {
        let expected = offline(cell, None, after);
        if expected.is_some() != *denied {
            problems.push(format!("{what}: the offline evaluator says {expected:?}"));
            continue;
        }
        let namespace = super::policy_cases::namespace_of(after);
        let tenant = cell
            .tenants
            .iter()
            .find(|tenant| tenant.namespaces.iter().any(|ns| ns.name == namespace))
            .expect("a tenant owns the namespace");
        let claim = after["kind"] == "ResourceClaim" || after["kind"] == "ResourceClaimTemplate";
        let (policy, binding) = if claim {
            (
                admission::DEVICE_CLAIMS_POLICY_NAME,
                admission::device_claims_binding_name(&tenant.name),
            )
        } else {
            (
                admission::POLICY_NAME,
                admission::binding_name(&tenant.name),
            )
        };
        problems.extend(verdict_problem(
            what,
            online(cluster, cell, None, after),
            expected,
            (policy, &binding),
            *earlier,
        ));
    }
    (requests.len(), problems)
}

/// What the API server says a member of each tenant may do with claims in each of its
/// namespaces, against the cell's roles: write ResourceClaims and ResourceClaimTemplates, never a
/// claim's status, and no DeviceClass (cluster-scoped).
fn access_problems(cluster: &Cluster, cell: &CellPlan) -> Vec<String> {
    let mut problems = Vec::new();
    for tenant in &cell.tenants {
        let member = as_member(&member_group(tenant));
        for namespace in &tenant.namespaces {
            for (verb, resource, subresource, allowed) in [
                ("create", "resourceclaims.resource.k8s.io", None, true),
                (
                    "create",
                    "resourceclaimtemplates.resource.k8s.io",
                    None,
                    true,
                ),
                (
                    "update",
                    "resourceclaims.resource.k8s.io",
                    Some("status"),
                    false,
                ),
                (
                    "patch",
                    "resourceclaims.resource.k8s.io",
                    Some("status"),
                    false,
                ),
                ("create", "deviceclasses.resource.k8s.io", None, false),
            ] {
                let mut args: Vec<String> = ["auth", "can-i", verb, resource, "-n"]
                    .iter()
                    .map(|arg| (*arg).to_string())
                    .collect();
                args.push(namespace.name.clone());
                if let Some(subresource) = subresource {
                    args.push(format!("--subresource={subresource}"));
                }
                args.extend(member.iter().cloned());
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let run = cluster.kubectl(&args, "");
                let answer = run.stdout.trim() == "yes";
                if answer != allowed {
                    problems.push(format!(
                        "a member of {} may{} {verb} {resource}{} in {}",
                        tenant.name,
                        if answer { "" } else { " not" },
                        subresource.map(|s| format!("/{s}")).unwrap_or_default(),
                        namespace.name
                    ));
                }
            }
        }
    }
    problems
}

pub(super) fn dra_floor_judges_like_the_offline_evaluator(cluster: &Cluster) {
    install_crds(cluster);
    install_node_runtime_classes(cluster);
    let root = tempfile::tempdir().expect("a scratch folder");
    super::dra_cases::write_variant(root.path());
    let fleet = fleet_at(root.path());
    let cell = fleet
        .plan
        .cells
        .iter()
        .find(|cell| cell.name == CELL)
        .expect("the DRA cell");
    let applied = set_up_cell(cluster, &fleet, cell);
    for kind in [
        "DeviceClass",
        "ResourceClaimTemplate",
        "ValidatingAdmissionPolicy",
    ] {
        assert!(
            applied.iter().any(|object| object.kind == kind),
            "the DRA cell applied no {kind}"
        );
    }
    let mut problems = access_problems(cluster, cell);
    let (count, judged) = until_agreed(|| disagreements(cluster, cell));
    problems.extend(judged);
    println!(
        "  cell {CELL} with DRA: {count} objects judged alike by the API server and tenantc ({} disagree)",
        problems.len()
    );
    // The fixture fleet's own cell again, without what only the DRA variant has.
    let plugin = fixture_fleet();
    let plugin_objects = plugin.cell_objects(CELL);
    let kept: BTreeSet<(String, Option<String>, String)> = plugin_objects
        .iter()
        .map(|object| {
            (
                object.kind.clone(),
                object.namespace.clone(),
                object.name.clone(),
            )
        })
        .collect();
    for object in &applied {
        let key = (
            object.kind.clone(),
            object.namespace.clone(),
            object.name.clone(),
        );
        if kept.contains(&key) {
            continue;
        }
        let target = format!("{}/{}", object.kind.to_lowercase(), object.name);
        let mut args = vec!["delete", target.as_str(), "--wait=false"];
        if let Some(namespace) = &object.namespace {
            args.extend(["-n", namespace.as_str()]);
        }
        let run = cluster.kubectl(&args, "");
        assert!(run.ok, "deleting {target} failed: {}", run.stderr);
    }
    let plugin_cell = plugin
        .plan
        .cells
        .iter()
        .find(|cell| cell.name == CELL)
        .expect("the fixture cell");
    set_up_cell(cluster, &plugin, plugin_cell);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
