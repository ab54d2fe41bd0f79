//! The admission floor of a Volcano cell, evaluated in process: tenant pods must name
//! `schedulerName: volcano` and their own queue and may tolerate only their own pools' taints,
//! carry no `volcano.sh/` keys, and every PodGroup names the tenant's queue and priority and
//! leaves its status to the scheduler ([docs/volcano.md](../docs/volcano.md)).
//!
//! Consumes: a variant of the frozen fixture fleet (`tests/fixtures/fleet/`) whose one edit is
//! `scheduler "volcano"` in cell `eu-west-4b`; the admitted pod fixtures of that cell
//! (`tests/policy/admitted/eu-west-4b/`), made Volcano's by one stated change (no Kueue labels,
//! `schedulerName: volcano`, the tenant's queue annotation); the PodGroups of
//! `tests/policy/volcano/eu-west-4b/`; and the denied objects made from them, each trying one
//! bypass as an attacker would (all in `tests/policy/volcano_cases.rs`, which the conformance
//! check `volcano_floor_judges_like_the_offline_evaluator` replays). Produces: pass or fail.
//!
//! Invariants held here: every expression of both policies compiles; every admitted object is
//! admitted; every denied object is denied by exactly the validation it targets; weakening any
//! Volcano validation lets one of them through; the Kueue floor's Kueue rules are gone from the
//! Volcano floor and its Volcano rules absent from the Kueue floor.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // Test code: a panic is a failed test.

#[path = "policy/cases.rs"]
mod policy_cases;

#[path = "policy/volcano_cases.rs"]
mod volcano_cases;

mod support;

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::core::v1::ConfigMap;
use policy_cases::{PINNED_WEIGHTS, admitted_fixtures, denied_rules, namespace_of};
use serde_json::{Value as Json, json};
use tenantc::lower::admission::{self, PODGROUP_RULES, Rule};
use tenantc::model::Scheduler;
use tenantc::plan::{CellPlan, Plan, TenantPlan};
use tenantc::policy::{self, Outcome, Request};
use volcano_cases::{CELL, Case, admitted, cases, fixture, objects};

/// The frozen fleet with its one edit, `scheduler "volcano"` in cell `eu-west-4b`.
fn plan() -> Plan {
    support::compile_variant(volcano_cases::write_variant, "the Volcano variant")
}

fn cell(plan: &Plan) -> &CellPlan {
    plan.cells.iter().find(|cell| cell.name == CELL).unwrap()
}

fn tenant_of<'a>(cell: &'a CellPlan, namespace: &str) -> &'a TenantPlan {
    cell.tenants
        .iter()
        .find(|t| t.namespaces.iter().any(|ns| ns.name == namespace))
        .unwrap_or_else(|| panic!("no tenant owns namespace {namespace}"))
}

/// The params and the two bindings of the tenant owning `namespace`, weights pinned as in
/// `tests/policy.rs`.
fn bindings(
    cell: &CellPlan,
    namespace: &str,
) -> (
    ConfigMap,
    ValidatingAdmissionPolicyBinding,
    ValidatingAdmissionPolicyBinding,
) {
    let tenant = tenant_of(cell, namespace);
    let mut params = admission::params_config_map(tenant, cell);
    params
        .data
        .as_mut()
        .unwrap()
        .insert("weightDigests".to_string(), PINNED_WEIGHTS.to_string());
    (
        params,
        admission::binding(tenant),
        admission::podgroup_binding(tenant),
    )
}

/// A request by a member of the tenant that owns `namespace`.
fn member(cell: &CellPlan, namespace: &str, mut request: Request) -> Request {
    request.groups =
        vec![tenant_of(cell, namespace).groups[&tenantc::model::TenantRole::Member].clone()];
    request
}

/// A CREATE of `object` by a member of its tenant.
fn create(cell: &CellPlan, object: Json) -> Request {
    let namespace = namespace_of(&object);
    member(cell, &namespace, Request::create(&namespace, object))
}

/// The verdict of the policy that judges the request's kind: the PodGroup policy for a
/// PodGroup, the floor for everything else.
fn judge_under(
    floor: &ValidatingAdmissionPolicy,
    podgroups: &ValidatingAdmissionPolicy,
    cell: &CellPlan,
    request: &Request,
) -> Outcome {
    let (params, floor_binding, podgroup_binding) = bindings(cell, &request.namespace);
    let subject = if request.object.is_null() {
        request.old_object.as_ref().unwrap()
    } else {
        &request.object
    };
    if subject["kind"] == "PodGroup" {
        // The floor does not match PodGroups.
        assert!(matches!(
            policy::evaluate(floor, &floor_binding, Some(&params), request),
            Outcome::NotMatched(_)
        ));
        policy::evaluate(podgroups, &podgroup_binding, Some(&params), request)
    } else {
        assert!(matches!(
            policy::evaluate(podgroups, &podgroup_binding, Some(&params), request),
            Outcome::NotMatched(_)
        ));
        policy::evaluate(floor, &floor_binding, Some(&params), request)
    }
}

fn judge(cell: &CellPlan, request: &Request) -> Outcome {
    judge_under(
        &admission::policy_for(Scheduler::Volcano),
        &admission::podgroup_policy(),
        cell,
        request,
    )
}

fn rules_for(object: &Json) -> Vec<Rule> {
    if object["kind"] == "PodGroup" {
        PODGROUP_RULES.to_vec()
    } else {
        admission::rules(Scheduler::Volcano)
    }
}

/// The request of a case, by a member of its tenant.
fn request(cell: &CellPlan, case: &Case) -> Request {
    let (before, after) = objects(case);
    let mut request = create(cell, after);
    if let Some(before) = before {
        request.operation = "UPDATE".to_string();
        request.old_object = Some(before);
    }
    request
}

#[test]
fn every_expression_of_both_policies_compiles() {
    let mut expressions = vec![
        admission::MATCH_CONDITION.1,
        admission::PODGROUP_MATCH_CONDITION.1,
    ];
    expressions.extend(
        admission::variables(Scheduler::Volcano)
            .iter()
            .map(|(_, expression)| *expression),
    );
    expressions.extend(
        admission::PODGROUP_VARIABLES
            .iter()
            .map(|(_, expression)| *expression),
    );
    for rule in admission::rules(Scheduler::Volcano)
        .iter()
        .chain(PODGROUP_RULES)
    {
        expressions.extend([rule.expression, rule.message_expression]);
    }
    for expression in expressions {
        policy::compiles(expression).unwrap_or_else(|error| panic!("{expression}: {error}"));
    }
}

#[test]
fn the_volcano_floor_replaces_the_kueue_rules_and_keeps_the_others() {
    let kueue: Vec<&str> = admission::rules(Scheduler::Kueue)
        .iter()
        .map(|rule| rule.name)
        .collect();
    let volcano: Vec<&str> = admission::rules(Scheduler::Volcano)
        .iter()
        .map(|rule| rule.name)
        .collect();
    for name in admission::KUEUE_ONLY {
        assert!(kueue.contains(name) && !volcano.contains(name), "{name}");
    }
    for rule in admission::VOLCANO_RULES {
        assert!(volcano.contains(&rule.name) && !kueue.contains(&rule.name));
    }
    // Every other validation of the floor holds in both, with the same expression.
    for rule in admission::rules(Scheduler::Kueue) {
        if admission::KUEUE_ONLY.contains(&rule.name) {
            continue;
        }
        let twin = admission::rules(Scheduler::Volcano)
            .into_iter()
            .find(|other| other.name == rule.name)
            .unwrap_or_else(|| panic!("{} is missing from the Volcano floor", rule.name));
        assert_eq!(twin.expression, rule.expression, "{}", rule.name);
        assert!(
            !twin.message.contains("Kueue") && !twin.message_expression.contains("Kueue"),
            "{}",
            rule.name
        );
    }
    // The Volcano floor carries no variable that only a Kueue rule reads.
    let variables: Vec<&str> = admission::variables(Scheduler::Volcano)
        .iter()
        .map(|(name, _)| *name)
        .collect();
    assert!(!variables.contains(&"kueueReleases"), "{variables:?}");
    assert!(variables.contains(&"gpuPod"));
}

#[test]
fn every_admitted_object_is_admitted() {
    let plan = plan();
    let cell = cell(&plan);
    let objects = admitted();
    assert!(objects.len() >= 8, "{}", objects.len());
    for (name, object) in &objects {
        let outcome = judge(cell, &create(cell, object.clone()));
        assert_eq!(outcome, Outcome::Admitted, "{name}");
    }
    // Each tenant of the cell has an admitted GPU pod, job and PodGroup.
    for tenant in &cell.tenants {
        for kind in ["Pod", "Job", "PodGroup"] {
            assert!(
                objects.iter().any(|(_, object)| object["kind"] == kind
                    && tenant
                        .namespaces
                        .iter()
                        .any(|ns| ns.name == namespace_of(object))),
                "no admitted {kind} of {}",
                tenant.name
            );
        }
    }
}

#[test]
fn the_kueue_cells_admitted_pods_are_denied_in_a_volcano_cell() {
    // The same pods, still labelled for Kueue and on the default scheduler: in a Volcano cell
    // they would run outside every queue.
    let plan = plan();
    let cell = cell(&plan);
    for (_, path, object) in admitted_fixtures()
        .into_iter()
        .filter(|(name, _, object)| name == CELL && object["kind"] == "Pod")
    {
        let outcome = judge(cell, &create(cell, object.clone()));
        let rules = rules_for(&object);
        let denied = denied_rules(&outcome, &rules);
        assert!(
            denied.contains(&"volcano-scheduler") && denied.contains(&"volcano-queue"),
            "{}: {denied:?}",
            path.display()
        );
    }
}

#[test]
fn every_bypass_is_denied_by_its_validation_with_a_message_that_names_the_fix() {
    let plan = plan();
    let cell = cell(&plan);
    for case in cases() {
        let request = request(cell, &case);
        let outcome = judge(cell, &request);
        let rules = rules_for(&request.object);
        assert_eq!(
            denied_rules(&outcome, &rules),
            [case.rule],
            "{}: {outcome:?}",
            case.name
        );
        let Outcome::Denied(denials) = &outcome else {
            unreachable!()
        };
        let rule = rules.iter().find(|rule| rule.name == case.rule).unwrap();
        assert_ne!(
            denials[0].message, rule.message,
            "{}: the message expression failed",
            case.name
        );
    }
}

#[test]
fn the_scheduler_and_controllers_may_write_what_a_member_may_not() {
    let plan = plan();
    let cell = cell(&plan);
    // Volcano's scheduler moves a PodGroup to Inqueue and Running.
    let before = fixture("initech-notebooks-podgroup");
    let mut after = before.clone();
    after["status"] = json!({"phase": "Running", "running": 1});
    let mut request = Request::create("initech-notebooks-infer", after.clone());
    request.operation = "UPDATE".to_string();
    request.old_object = Some(before);
    request.username = "system:serviceaccount:volcano-system:volcano-scheduler".to_string();
    request.groups = vec!["system:serviceaccounts".to_string()];
    assert_eq!(judge(cell, &request), Outcome::Admitted);
    // Its PodGroup controller creates the PodGroup of a bare pod, pending, in the pod's queue.
    let mut created = fixture("globex-vision-podgroup");
    created["status"] = json!({"phase": "Pending"});
    let mut request = Request::create("globex-vision-train", created);
    request.username = "system:serviceaccount:volcano-system:volcano-controllers".to_string();
    request.groups = vec!["system:serviceaccounts".to_string()];
    assert_eq!(judge(cell, &request), Outcome::Admitted);
    // But not in another tenant's queue, whoever asks.
    let mut foreign = fixture("globex-vision-podgroup");
    foreign["spec"]["queue"] = json!("tenant-acme-research");
    request.object = foreign;
    assert!(judge(cell, &request).is_denied());
}

#[test]
fn weakening_any_volcano_validation_lets_a_bypass_through() {
    let plan = plan();
    let cell = cell(&plan);
    let floor_rules = admission::rules(Scheduler::Volcano);
    let weakened_names: Vec<&str> = admission::VOLCANO_RULES
        .iter()
        .chain(PODGROUP_RULES)
        .map(|rule| rule.name)
        .chain(["pool-tolerations"])
        .collect();
    for name in weakened_names {
        let mut floor = admission::policy_for(Scheduler::Volcano);
        let mut podgroups = admission::podgroup_policy();
        let (policy, idx) = match floor_rules.iter().position(|rule| rule.name == name) {
            Some(idx) => (&mut floor, idx),
            None => (
                &mut podgroups,
                PODGROUP_RULES
                    .iter()
                    .position(|rule| rule.name == name)
                    .unwrap(),
            ),
        };
        policy.spec.as_mut().unwrap().validations.as_mut().unwrap()[idx].expression =
            "true".to_string();
        let escaped: Vec<&str> = cases()
            .iter()
            .filter(|case| case.rule == name)
            .filter(|case| !judge_under(&floor, &podgroups, cell, &request(cell, case)).is_denied())
            .map(|case| case.name)
            .collect();
        assert!(!escaped.is_empty(), "weakening {name} changes no outcome");
    }
}

#[test]
fn another_tenants_params_admit_what_this_tenants_deny() {
    // The PodGroup binding of globex-vision names its own params; with acme-research's, the
    // PodGroup in acme-research's queue would pass, so the params are what decide.
    let plan = plan();
    let cell = cell(&plan);
    let mut object = fixture("globex-vision-podgroup");
    object["spec"]["queue"] = json!("tenant-acme-research");
    let request = create(cell, object);
    let research = cell
        .tenants
        .iter()
        .find(|tenant| tenant.name == "acme-research")
        .unwrap();
    let own = judge(cell, &request);
    assert!(own.is_denied());
    let (_, _, binding) = bindings(cell, "globex-vision-train");
    let swapped = policy::evaluate(
        &admission::podgroup_policy(),
        &binding,
        Some(&admission::params_config_map(research, cell)),
        &request,
    );
    assert_eq!(swapped, Outcome::Admitted);
}
