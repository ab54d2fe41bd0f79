//! Conformance of a Volcano cell's floor: the real API server, with the vendored Volcano CRDs
//! installed, judges the Volcano policy tests' objects exactly as tenantc's in-process evaluator
//! does ([docs/volcano.md](../../docs/volcano.md#the-floor)).
//!
//! Consumes: the variant of the fixture fleet with `scheduler "volcano"` in `eu-west-4b`
//! (`tests/policy/volcano_cases.rs`), applied as a cell (its Volcano Queues, both policies, the
//! bindings and params); the admitted objects and denied cases of `volcano_cases.rs`. Produces:
//! pass or fail, and a line with the counts.
//!
//! Invariants:
//! - Every object is created by server-side dry-run as a member of its tenant (impersonated); an
//!   UPDATE case's object is first created for real by the admin, then patched by dry-run as the
//!   member; nothing of the tenant is stored.
//! - An admitted object must be admitted; a denied case must be refused with the binding's
//!   `denied request:` followed by the first message of the offline evaluator, which must deny
//!   it too.
//! - The cell's Kueue objects of the fixture fleet are applied again at the end, so the checks
//!   after this one find the floor they expect.

use super::admission::{
    PROPAGATION_TIMEOUT, dry_run, dry_run_patch, ensure_service_account,
    install_node_runtime_classes, remove_service_account,
};
use super::quota::{as_member, fixture_fleet, fleet_at, member_group, set_up_cell};
use super::volcano_cases::{CELL, admitted, cases, objects};
use super::*;

use std::time::Duration;

use tenantc::lower::admission;
use tenantc::plan::CellPlan;
use tenantc::policy::{Outcome, Request};

/// The offline verdict on a member's request: `None` admitted, else its first message.
pub(super) fn offline(cell: &CellPlan, before: Option<&Value>, after: &Value) -> Option<String> {
    let mut request = Request::create(&super::policy_cases::namespace_of(after), after.clone());
    if let Some(before) = before {
        request.operation = "UPDATE".to_string();
        request.old_object = Some(before.clone());
    }
    match tenantc::policy::check_object(cell, &request) {
        Some((_, Outcome::Denied(denials))) => denials.first().map(|denial| denial.message.clone()),
        Some((_, Outcome::Admitted)) => None,
        other => panic!("not judged offline: {other:?}"),
    }
}

/// The API server's answer to a member's request: `Ok` when admitted, else its message.
pub(super) fn online(
    cluster: &Cluster,
    cell: &CellPlan,
    before: Option<&Value>,
    after: &Value,
) -> Result<(), String> {
    let Some(before) = before else {
        let created = ensure_service_account(cluster, after);
        let answer = dry_run(cluster, cell, after);
        if let Some(account) = created {
            remove_service_account(cluster, &super::policy_cases::namespace_of(after), &account);
        }
        return answer;
    };
    let namespace = super::policy_cases::namespace_of(before);
    let target = format!(
        "{}/{}",
        before["kind"].as_str().unwrap_or_default().to_lowercase(),
        before["metadata"]["name"].as_str().unwrap_or_default()
    );
    let created = cluster.kubectl(&["create", "-f", "-"], &before.to_string());
    if !created.ok {
        return Err(format!(
            "creating it as the admin failed: {}",
            created.stderr
        ));
    }
    let tenant = cell
        .tenants
        .iter()
        .find(|tenant| tenant.namespaces.iter().any(|ns| ns.name == namespace))
        .expect("a tenant owns the namespace");
    let run = dry_run_patch(
        cluster,
        &cluster.user_kubeconfig,
        before,
        after,
        &as_member(&member_group(tenant)),
    );
    let deleted = cluster.kubectl(&["delete", &target, "-n", &namespace, "--wait=false"], "");
    assert!(deleted.ok, "deleting {target} failed: {}", deleted.stderr);
    if run.ok {
        Ok(())
    } else {
        Err(run.stderr.trim().to_string())
    }
}

/// What is wrong with the API server's answer `online` to a member's request (`what`) that
/// tenantc's offline evaluator answers `expected` (`None`: admitted) under `policy` and its
/// binding; a refusal `earlier` than the admission policies (the API server's own validation)
/// need not carry tenantc's message.
pub(super) fn verdict_problem(
    what: &str,
    online: Result<(), String>,
    expected: Option<String>,
    (policy, binding): (&str, &str),
    earlier: bool,
) -> Option<String> {
    match (online, expected) {
        (Ok(()), None) => None,
        (Err(_), Some(_)) if earlier => None,
        (Err(message), Some(expected)) => {
            let wanted = format!(
                "ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {expected}"
            );
            (!message.contains(&wanted)).then(|| {
                format!(
                    "{what}: the API server refused it with\n    {message}\n  but tenantc expects\n    {wanted}"
                )
            })
        }
        (Ok(()), Some(expected)) => Some(format!(
            "{what}: the API server admitted it; tenantc denies it with: {expected}"
        )),
        (Err(message), None) => Some(format!(
            "{what}: the API server refused it; tenantc admits it:\n    {message}"
        )),
    }
}

/// `judge` (the count judged and the disagreements) run again every 2 s until nothing
/// disagrees or [`PROPAGATION_TIMEOUT`] has passed: a new policy or binding reaches the API
/// server's admission a little after it is created.
pub(super) fn until_agreed(
    mut judge: impl FnMut() -> (usize, Vec<String>),
) -> (usize, Vec<String>) {
    let started = Instant::now();
    loop {
        let (count, problems) = judge();
        if problems.is_empty() || started.elapsed() > PROPAGATION_TIMEOUT {
            return (count, problems);
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// Every disagreement between the API server and the offline evaluator.
fn disagreements(cluster: &Cluster, cell: &CellPlan) -> (usize, Vec<String>) {
    let mut requests: Vec<(String, Option<Value>, Value, bool)> = admitted()
        .into_iter()
        .map(|(name, object)| (name, None, object, false))
        .collect();
    // The API server defaults a missing `schedulerName` before admission, so its message names
    // `default-scheduler`; the case that sets it so stands for this one here.
    for case in cases()
        .into_iter()
        .filter(|case| case.name != "a GPU pod that names no scheduler")
    {
        let (before, after) = objects(&case);
        requests.push((case.name.to_string(), before, after, true));
    }
    let mut problems = Vec::new();
    for (what, before, after, denied) in &requests {
        let expected = offline(cell, before.as_ref(), after);
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
        let (policy, binding) = if after["kind"] == "PodGroup" {
            (
                admission::PODGROUP_POLICY_NAME,
                admission::podgroup_binding_name(&tenant.name),
            )
        } else {
            (
                admission::POLICY_NAME,
                admission::binding_name(&tenant.name),
            )
        };
        problems.extend(verdict_problem(
            what,
            online(cluster, cell, before.as_ref(), after),
            expected,
            (policy, &binding),
            false,
        ));
    }
    (requests.len(), problems)
}

pub(super) fn volcano_floor_judges_like_the_offline_evaluator(cluster: &Cluster) {
    install_crds(cluster);
    install_node_runtime_classes(cluster);
    let root = tempfile::tempdir().expect("a scratch folder");
    super::volcano_cases::write_variant(root.path());
    let fleet = fleet_at(root.path());
    let cell = fleet
        .plan
        .cells
        .iter()
        .find(|cell| cell.name == CELL)
        .expect("the Volcano cell");
    set_up_cell(cluster, &fleet, cell);
    let (count, problems) = until_agreed(|| disagreements(cluster, cell));
    println!(
        "  cell {CELL} on Volcano: {count} objects judged alike by the API server and tenantc ({} disagree)",
        problems.len()
    );
    // The fixture fleet's own cell again, for the checks that follow.
    let kueue = fixture_fleet();
    let kueue_cell = kueue
        .plan
        .cells
        .iter()
        .find(|cell| cell.name == CELL)
        .expect("the fixture cell");
    set_up_cell(cluster, &kueue, kueue_cell);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
