//! The admission floor of a DRA cell, evaluated in process: a tenant's ResourceClaims and
//! ResourceClaimTemplates name only the device classes its namespace reserves devices of and
//! never ask for admin access, and pods that claim devices pass the whole pod floor (runtime
//! class, their pools' taints only) as device plugin pods do ([docs/dra.md](../docs/dra.md)).
//!
//! Consumes: a variant of the frozen fixture fleet (`tests/fixtures/fleet/`) whose one edit is
//! `devices "dra"` in cell `us-east-1a`; that cell's admitted fixtures made DRA pods by one stated
//! change; the claims and templates of `tests/policy/dra/us-east-1a/`; and the denied objects
//! made from them, each trying one bypass as an attacker would (all in
//! `tests/policy/dra_cases.rs`, which the conformance check
//! `dra_floor_judges_like_the_offline_evaluator` replays). Produces: pass or fail.
//!
//! Invariants held here: every expression of the device claims policy compiles; every admitted
//! object is admitted; every denied object is denied by exactly the validation it targets;
//! weakening either device claims validation lets one of them through; the policy is bound with
//! the tenant's own params, which decide; a controller's update of a claim that no longer
//! matches the tenant's classes (a finalizer) is not judged; a device plugin cell has no device
//! claims policy and its roles write no claims.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // Test code: a panic is a failed test.

#[path = "policy/cases.rs"]
mod policy_cases;

#[path = "policy/dra_cases.rs"]
mod dra_cases;

mod support;

use dra_cases::{CELL, WHOLE_H100, admitted, cases, fixture, object, requests};
use policy_cases::{PINNED_WEIGHTS, denied_rules, namespace_of};
use serde_json::{Value as Json, json};
use tenantc::lower::admission::{self, DEVICE_CLAIMS_RULES, Rule};
use tenantc::model::{DeviceMode, Scheduler};
use tenantc::plan::{CellPlan, Plan, TenantPlan};
use tenantc::policy::{self, Outcome, Request};

/// The frozen fleet with its one edit, `devices "dra"` in cell `us-east-1a`.
fn plan() -> Plan {
    support::compile_variant(dra_cases::write_variant, "the DRA variant")
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

/// Whether the device claims policy, not the pod floor, judges `object`.
fn is_claim(object: &Json) -> bool {
    object["kind"] == "ResourceClaim" || object["kind"] == "ResourceClaimTemplate"
}

/// The verdict on a member's CREATE of `object` under the two policies given (the pod floor
/// and the device claims policy), with the tenant's params (weights pinned as in
/// `tests/policy.rs`); the policy that does not match the kind must say so.
fn judge_under(
    floor: &k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy,
    claims: &k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy,
    cell: &CellPlan,
    request: &Request,
) -> Outcome {
    let tenant = tenant_of(cell, &request.namespace);
    let mut params = admission::params_config_map(tenant, cell);
    params
        .data
        .as_mut()
        .unwrap()
        .insert("weightDigests".to_string(), PINNED_WEIGHTS.to_string());
    let floor_binding = admission::binding(tenant);
    let claims_binding = admission::device_claims_binding(tenant);
    let subject = if request.object.is_null() {
        request.old_object.as_ref().unwrap()
    } else {
        &request.object
    };
    let (judge, other) = if is_claim(subject) {
        (
            policy::evaluate(claims, &claims_binding, Some(&params), request),
            policy::evaluate(floor, &floor_binding, Some(&params), request),
        )
    } else {
        (
            policy::evaluate(floor, &floor_binding, Some(&params), request),
            policy::evaluate(claims, &claims_binding, Some(&params), request),
        )
    };
    assert!(matches!(other, Outcome::NotMatched(_)), "{other:?}");
    judge
}

fn judge(cell: &CellPlan, request: &Request) -> Outcome {
    judge_under(
        &admission::policy_for(Scheduler::Kueue),
        &admission::device_claims_policy(),
        cell,
        request,
    )
}

/// A CREATE of `object` by a member of its tenant.
fn create(cell: &CellPlan, object: Json) -> Request {
    let namespace = namespace_of(&object);
    let mut request = Request::create(&namespace, object);
    request.groups =
        vec![tenant_of(cell, &namespace).groups[&tenantc::model::TenantRole::Member].clone()];
    request
}

fn rules_for(object: &Json) -> Vec<Rule> {
    if is_claim(object) {
        DEVICE_CLAIMS_RULES.to_vec()
    } else {
        admission::rules(Scheduler::Kueue)
    }
}

#[test]
fn every_expression_of_the_device_claims_policy_compiles() {
    let mut expressions = vec![admission::DEVICE_CLAIMS_MATCH_CONDITION.1];
    expressions.extend(
        admission::DEVICE_CLAIMS_VARIABLES
            .iter()
            .map(|(_, expression)| *expression),
    );
    for rule in DEVICE_CLAIMS_RULES {
        expressions.extend([rule.expression, rule.message_expression]);
    }
    for expression in expressions {
        policy::compiles(expression).unwrap_or_else(|error| panic!("{expression}: {error}"));
    }
}

#[test]
fn every_admitted_object_is_admitted() {
    let plan = plan();
    let cell = cell(&plan);
    let objects = admitted();
    let claiming_pods = objects
        .iter()
        .filter(|(_, object)| {
            !is_claim(object)
                && serde_json::to_string(object)
                    .unwrap()
                    .contains("resourceClaimTemplateName")
        })
        .count();
    assert!(claiming_pods >= 4, "{claiming_pods} pods claim devices");
    for (name, object) in &objects {
        let outcome = judge(cell, &create(cell, object.clone()));
        assert_eq!(outcome, Outcome::Admitted, "{name}");
    }
    // The templates tenantc emits for the cell are admitted too.
    let output = support::compile_root(&{
        let root = tempfile::tempdir().unwrap();
        dra_cases::write_variant(root.path());
        root.keep()
    })
    .output
    .unwrap();
    let mut emitted = 0;
    for (path, bytes) in output.iter() {
        if !path.starts_with(&format!("{CELL}/")) || !path.contains("/resourceclaimtemplate-") {
            continue;
        }
        let object = policy::object_from_yaml(std::str::from_utf8(bytes).unwrap()).unwrap();
        assert_eq!(
            judge(cell, &create(cell, object)),
            Outcome::Admitted,
            "{path}"
        );
        emitted += 1;
    }
    assert!(emitted >= 4, "{emitted} emitted templates");
}

#[test]
fn every_bypass_is_denied_by_its_validation_with_a_message_that_names_the_fix() {
    let plan = plan();
    let cell = cell(&plan);
    for case in cases() {
        let object = object(&case);
        let outcome = judge(cell, &create(cell, object.clone()));
        let rules = rules_for(&object);
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
fn the_message_names_the_foreign_class_and_the_namespaces_own() {
    let plan = plan();
    let cell = cell(&plan);
    let case = cases()
        .into_iter()
        .find(|case| case.name == "a claim whose fallback is another tenant's whole GPUs")
        .unwrap();
    let Outcome::Denied(denials) = judge(cell, &create(cell, object(&case))) else {
        panic!("admitted")
    };
    assert_eq!(
        denials[0].message,
        format!(
            "ResourceClaim shared-slice names device class {WHOLE_H100}, which namespace \
             acme-serving-infer of tenant acme-serving reserves no devices of; it may claim \
             [mig-1g.10gb-h100-80gb-sxm, mig-3g.40gb-h100-80gb-sxm]"
        )
    );
}

#[test]
fn weakening_either_device_claims_validation_lets_a_bypass_through() {
    let plan = plan();
    let cell = cell(&plan);
    let floor = admission::policy_for(Scheduler::Kueue);
    for (idx, rule) in DEVICE_CLAIMS_RULES.iter().enumerate() {
        let mut claims = admission::device_claims_policy();
        claims.spec.as_mut().unwrap().validations.as_mut().unwrap()[idx].expression =
            "true".to_string();
        let escaped: Vec<&str> = cases()
            .iter()
            .filter(|case| case.rule == rule.name)
            .filter(|case| {
                !judge_under(&floor, &claims, cell, &create(cell, object(case))).is_denied()
            })
            .map(|case| case.name)
            .collect();
        assert!(
            !escaped.is_empty(),
            "weakening {} changes no outcome",
            rule.name
        );
    }
}

#[test]
fn another_tenants_params_admit_what_this_tenants_deny() {
    // globex-vision's claim of acme-research's whole GPUs: its own params deny it, acme-research's
    // would admit it (for acme-research's namespace), so the binding's params are what decide.
    let plan = plan();
    let cell = cell(&plan);
    let mut object = fixture("globex-vision-claim");
    requests(&mut object)[0]["exactly"]["deviceClassName"] = json!(WHOLE_H100);
    assert!(judge(cell, &create(cell, object.clone())).is_denied());
    let research = cell
        .tenants
        .iter()
        .find(|tenant| tenant.name == "acme-research")
        .unwrap();
    object["metadata"]["namespace"] = json!("acme-research-train");
    let request = create(cell, object.clone());
    let own = policy::evaluate(
        &admission::device_claims_policy(),
        &admission::device_claims_binding(research),
        Some(&admission::params_config_map(research, cell)),
        &request,
    );
    assert_eq!(own, Outcome::Admitted);
    let vision = tenant_of(cell, "globex-vision-infer");
    let swapped = policy::evaluate(
        &admission::device_claims_policy(),
        &admission::device_claims_binding(research),
        Some(&admission::params_config_map(vision, cell)),
        &request,
    );
    assert!(swapped.is_denied(), "{swapped:?}");
}

#[test]
fn a_controllers_update_of_a_claim_that_is_no_longer_entitled_is_not_judged() {
    // A claim made while the namespace reserved whole H100s; the reservation is gone, and the
    // resource claim controller removes its finalizer: the spec is unchanged, so the policy
    // does not judge the update and the claim can be deleted.
    let plan = plan();
    let cell = cell(&plan);
    let mut before = fixture("globex-vision-claim");
    requests(&mut before)[0]["exactly"]["deviceClassName"] = json!(WHOLE_H100);
    before["metadata"]["finalizers"] = json!(["resource.kubernetes.io/delete-protection"]);
    let mut after = before.clone();
    after["metadata"]["finalizers"] = json!([]);
    let mut request = Request::create("globex-vision-infer", after.clone());
    request.operation = "UPDATE".to_string();
    request.old_object = Some(before.clone());
    request.username = "system:serviceaccount:kube-system:resource-claim-controller".to_string();
    request.groups = vec!["system:serviceaccounts".to_string()];
    assert!(matches!(judge(cell, &request), Outcome::NotMatched(_)));
    // A changed spec is judged, whoever writes it.
    let mut changed = before.clone();
    requests(&mut changed)[0]["exactly"]["count"] = json!(2);
    request.object = changed;
    assert!(judge(cell, &request).is_denied());
}

#[test]
fn check_object_judges_claims_by_the_device_claims_policy_only_in_a_dra_cell() {
    let plan = plan();
    let dra = cell(&plan);
    assert_eq!(dra.backends.devices, DeviceMode::Dra);
    let case = &cases()[0];
    let request = Request::create("acme-serving-infer", object(case));
    let Some((tenant, Outcome::Denied(denials))) = policy::check_object(dra, &request) else {
        panic!("a foreign class is not denied in the DRA cell")
    };
    assert_eq!(tenant, "acme-serving");
    assert!(denials[0].message.contains(WHOLE_H100), "{denials:?}");
    // In the device plugin cell of the frozen fleet the floor has no device claims policy, and
    // no tenant role writes claims at all (RBAC refuses them before admission).
    let root = tempfile::tempdir().unwrap();
    support::copy_fleet(root.path());
    let frozen = support::compile_root(root.path()).plan.unwrap();
    let plugin = frozen.cells.iter().find(|cell| cell.name == CELL).unwrap();
    assert_eq!(plugin.backends.devices, DeviceMode::DevicePlugin);
    assert!(
        admission::floor_policies(Scheduler::Kueue, DeviceMode::DevicePlugin)
            .iter()
            .all(|policy| policy.metadata.name.as_deref()
                != Some(admission::DEVICE_CLAIMS_POLICY_NAME))
    );
    assert!(
        tenantc::facts::rbac::access(Scheduler::Kueue, DeviceMode::DevicePlugin)
            .iter()
            .all(|row| row.api_group != "resource.k8s.io")
    );
}
