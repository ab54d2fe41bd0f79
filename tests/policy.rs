//! Policy tests: every CEL expression of the tenant admission floor, evaluated in process.
//!
//! Consumes: the frozen fixture fleet (`tests/fixtures/fleet/`, compiled in memory), the
//! admitted fixtures under `tests/policy/admitted/<cell>/` (objects of its tenants), and denied
//! objects made here from them, one or more per validation, many of them cross-tenant (another
//! tenant's digest, PVC, registry, queue, pool toleration, priority; a runtime class of a weaker
//! trust class). Produces: pass or fail.
//!
//! Invariants held here:
//! - every expression of the policy compiles in the evaluator's environment;
//! - every admitted fixture is admitted, in its tenant's namespace, by every validation;
//! - every denied object is denied by exactly the validation it targets (and the message says
//!   what to change);
//! - every validation has at least one admitted and one denied case;
//! - weakening any validation (its expression replaced by `true`, or its params swapped for
//!   another tenant's) makes at least one denied case pass, so a weaker policy fails this test.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // Test code: a panic is a failed test.

#[path = "policy/cases.rs"]
mod cases;

mod support;

use cases::{
    DIGEST, DeleteCase, KUEUE, PINNED_WEIGHTS, UpdateCase, admitted_fixtures, cases, delete_cases,
    fixture, namespace_of, ownership_cases, pod_annotations, pod_labels, pod_spec, update_cases,
};
use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding;
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{Value as Json, json};
use tenantc::lower::admission::{self, RULES};
use tenantc::plan::{CellPlan, Plan, TenantPlan};
use tenantc::policy::{self, Outcome, Request};

fn plan() -> Plan {
    let loaded = tenantc::load::load(&support::fleet()).unwrap();
    let compilation = tenantc::compile_loaded(&loaded);
    assert!(compilation.output.is_some(), "the fixture fleet compiles");
    compilation.plan.unwrap()
}

fn cell<'a>(plan: &'a Plan, name: &str) -> &'a CellPlan {
    plan.cells.iter().find(|cell| cell.name == name).unwrap()
}

/// The params of the tenant owning `namespace`, with [`PINNED_WEIGHTS`] pinned as the signed
/// weights stage (issue 9) will pin digests.
fn pinned_params(
    cell: &CellPlan,
    namespace: &str,
) -> (ConfigMap, ValidatingAdmissionPolicyBinding) {
    let tenant = cell
        .tenants
        .iter()
        .find(|t| t.namespaces.iter().any(|ns| ns.name == namespace))
        .unwrap_or_else(|| panic!("no tenant owns namespace {namespace}"));
    let mut params = admission::params_config_map(tenant, cell);
    params
        .data
        .as_mut()
        .unwrap()
        .insert("weightDigests".to_string(), PINNED_WEIGHTS.to_string());
    (params, admission::binding(tenant))
}

/// A CREATE of `object` by a member of the tenant that owns `namespace`, as the conformance
/// check impersonates one.
fn member_create(cell: &CellPlan, namespace: &str, object: Json) -> Request {
    let mut request = Request::create(namespace, object);
    request.groups = vec![member_group(cell, namespace)];
    request
}

/// The member group of the tenant owning `namespace`.
fn member_group(cell: &CellPlan, namespace: &str) -> String {
    let tenant = cell
        .tenants
        .iter()
        .find(|t| t.namespaces.iter().any(|ns| ns.name == namespace))
        .unwrap_or_else(|| panic!("no tenant owns namespace {namespace}"));
    tenant.groups[&tenantc::model::TenantRole::Member].clone()
}

/// The request of an update case: `before` into `after`, by a member of the tenant.
fn member_update(cell: &CellPlan, case: &UpdateCase) -> Request {
    let mut before = fixture(case.fixture, case.cell);
    (case.before)(&mut before);
    let mut after = fixture(case.fixture, case.cell);
    (case.after)(&mut after);
    let namespace = namespace_of(&after);
    let mut request = member_create(cell, &namespace, after);
    request.operation = "UPDATE".to_string();
    request.old_object = Some(before);
    request
}

/// The request of a delete case: the fixture deleted with the case's options, by a member of
/// the tenant.
fn member_delete(cell: &CellPlan, case: &DeleteCase) -> Request {
    let object = fixture(case.fixture, case.cell);
    let namespace = namespace_of(&object);
    let mut request = Request::delete(&namespace, object, (case.options)());
    request.groups = vec![member_group(cell, &namespace)];
    request
}

fn verdict(cell: &CellPlan, namespace: &str, object: &Json) -> Outcome {
    judge(cell, &member_create(cell, namespace, object.clone()))
}

/// The floor's verdict on a request, under the params of the tenant owning its namespace.
fn judge(cell: &CellPlan, request: &Request) -> Outcome {
    judge_under(&admission::policy(), cell, request)
}

/// [`judge`] with another policy (a weakened one).
fn judge_under(
    policy: &k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy,
    cell: &CellPlan,
    request: &Request,
) -> Outcome {
    let (params, binding) = pinned_params(cell, &request.namespace);
    policy::evaluate(policy, &binding, Some(&params), request)
}

/// The tenant of that name in the cell.
fn tenant<'a>(cell: &'a CellPlan, name: &str) -> &'a TenantPlan {
    cell.tenants
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tenant {name} in {}", cell.name))
}

fn denied_rules(outcome: &Outcome) -> Vec<&'static str> {
    match outcome {
        Outcome::Denied(denials) => denials
            .iter()
            .map(|denial| {
                denial
                    .validation
                    .and_then(|idx| RULES.get(idx))
                    .map_or("(no validation)", |rule| rule.name)
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The admitted fixtures that are pods or hold a pod template (not PersistentVolumeClaims).
fn pod_fixtures() -> Vec<(String, std::path::PathBuf, Json)> {
    admitted_fixtures()
        .into_iter()
        .filter(|(_, _, object)| object["kind"] != "PersistentVolumeClaim")
        .collect()
}

#[test]
fn every_expression_of_the_policy_compiles() {
    let mut expressions = vec![admission::MATCH_CONDITION.1];
    expressions.extend(
        admission::VARIABLES
            .iter()
            .map(|(_, expression)| *expression),
    );
    for rule in RULES {
        expressions.extend([rule.expression, rule.message_expression]);
    }
    for expression in expressions {
        policy::compiles(expression).unwrap_or_else(|error| panic!("{expression}: {error}"));
    }
}

#[test]
fn every_admitted_fixture_is_admitted_and_every_example_tenant_has_a_pod_and_a_job() {
    let plan = plan();
    let fixtures = admitted_fixtures();
    for (cell_name, path, object) in &fixtures {
        let outcome = verdict(cell(&plan, cell_name), &namespace_of(object), object);
        assert_eq!(outcome, Outcome::Admitted, "{}", path.display());
    }
    for cell in &plan.cells {
        for tenant in &cell.tenants {
            for kind in ["Pod", "Job"] {
                assert!(
                    fixtures
                        .iter()
                        .any(|(cell_name, _, object)| cell_name == &cell.name
                            && object["kind"] == kind
                            && tenant
                                .namespaces
                                .iter()
                                .any(|ns| ns.name == namespace_of(object))),
                    "no admitted {kind} of {} in {}",
                    tenant.name,
                    cell.name
                );
            }
        }
    }
}

#[test]
fn every_denied_case_is_denied_by_its_validation_with_a_message_that_names_the_fix() {
    let plan = plan();
    for case in cases() {
        let mut object = fixture(case.fixture, case.cell);
        (case.mutate)(&mut object);
        let outcome = verdict(cell(&plan, case.cell), &namespace_of(&object), &object);
        assert_eq!(
            denied_rules(&outcome),
            [case.rule],
            "{}: {outcome:?}",
            case.name
        );
        let Outcome::Denied(denials) = &outcome else {
            unreachable!()
        };
        let rule = RULES.iter().find(|rule| rule.name == case.rule).unwrap();
        let message = &denials[0].message;
        assert_ne!(
            message, rule.message,
            "{}: the message expression failed",
            case.name
        );
        assert!(!message.contains("error"), "{}: {message}", case.name);
    }
}

#[test]
fn every_validation_has_denied_cases() {
    let cases = cases();
    let mut updates = update_cases();
    updates.extend(ownership_cases());
    let deletes = delete_cases();
    for rule in RULES {
        assert!(
            cases.iter().any(|case| case.rule == rule.name)
                || updates.iter().any(|case| case.rule == rule.name)
                || deletes.iter().any(|case| case.rule == rule.name),
            "no denied case for {}",
            rule.name
        );
    }
}

/// The policy with one validation replaced, evaluated on the denied cases that `only` names
/// the validation of (all when `None`); returns the cases that the weakened policy admits.
fn escaped_cases(
    plan: &Plan,
    only: Option<&str>,
    weaken: impl Fn(&mut k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy),
) -> Vec<&'static str> {
    let mut policy = admission::policy();
    weaken(&mut policy);
    let mut escaped = Vec::new();
    let mut requests: Vec<(&'static str, &CellPlan, Request)> = Vec::new();
    for case in cases()
        .into_iter()
        .filter(|case| only.is_none_or(|rule| rule == case.rule))
    {
        let cell = cell(plan, case.cell);
        let mut object = fixture(case.fixture, case.cell);
        (case.mutate)(&mut object);
        let namespace = namespace_of(&object);
        requests.push((case.name, cell, member_create(cell, &namespace, object)));
    }
    for case in update_cases()
        .into_iter()
        .chain(ownership_cases())
        .filter(|case| only.is_none_or(|rule| rule == case.rule))
    {
        let cell = cell(plan, case.cell);
        requests.push((case.name, cell, member_update(cell, &case)));
    }
    for case in delete_cases()
        .into_iter()
        .filter(|case| only.is_none_or(|rule| rule == case.rule))
    {
        let cell = cell(plan, case.cell);
        requests.push((case.name, cell, member_delete(cell, &case)));
    }
    for (name, cell, request) in &requests {
        if !judge_under(&policy, cell, request).is_denied() {
            escaped.push(*name);
        }
    }
    escaped
}

#[test]
fn weakening_any_validation_lets_a_denied_case_through() {
    let plan = plan();
    assert!(escaped_cases(&plan, None, |_| {}).is_empty());
    // Every case is denied by exactly its own validation (checked above), so only the cases of
    // the weakened validation can get through.
    for (idx, rule) in RULES.iter().enumerate() {
        let escaped = escaped_cases(&plan, Some(rule.name), |policy| {
            let validations = policy.spec.as_mut().unwrap().validations.as_mut().unwrap();
            validations[idx].expression = "true".to_string();
        });
        assert!(
            !escaped.is_empty(),
            "weakening {} changes no test outcome",
            rule.name
        );
    }
}

#[test]
fn another_tenants_params_admit_what_this_tenants_deny() {
    // A binding that pointed at another tenant's params would admit that tenant's registry,
    // queue-less pods stay denied, but the registry case shows the params are what decide.
    let plan = plan();
    let cell = cell(&plan, "us-east-1a");
    let mut object = fixture("acme-research-pod", "us-east-1a");
    pod_spec(&mut object)["containers"][0]["image"] =
        json!(format!("registry.globex.example/vision/worker@{DIGEST}"));
    let research = tenant(cell, "acme-research");
    let vision = tenant(cell, "globex-vision");
    let request = Request::create("acme-research-train", object);
    let own = policy::evaluate(
        &admission::policy(),
        &admission::binding(research),
        Some(&admission::params_config_map(research, cell)),
        &request,
    );
    assert_eq!(denied_rules(&own), ["images"]);
    let foreign = policy::evaluate(
        &admission::policy(),
        &admission::binding(research),
        Some(&admission::params_config_map(vision, cell)),
        &request,
    );
    assert!(
        denied_rules(&foreign).iter().all(|rule| *rule != "images"),
        "{foreign:?}"
    );
}

#[test]
fn missing_params_deny_and_other_namespaces_are_not_matched() {
    let plan = plan();
    let cell = cell(&plan, "us-east-1a");
    let research = tenant(cell, "acme-research");
    let object = fixture("acme-research-pod", "us-east-1a");
    let outcome = policy::evaluate(
        &admission::policy(),
        &admission::binding(research),
        None,
        &Request::create("acme-research-train", object.clone()),
    );
    assert!(outcome.is_denied());
    let outcome = policy::evaluate(
        &admission::policy(),
        &admission::binding(research),
        Some(&admission::params_config_map(research, cell)),
        &Request::create("acme-serving-infer", object.clone()),
    );
    assert!(matches!(outcome, Outcome::NotMatched(_)), "{outcome:?}");
    // An update that only changes finalizers skips the policy; one that changes the spec runs it.
    let mut old = object.clone();
    old["spec"]["containers"][0]["image"] = json!("registry.globex.example/vision/worker:latest");
    let mut request = Request::create("acme-research-train", old.clone());
    request.operation = "UPDATE".to_string();
    request.old_object = Some(old.clone());
    request.object["metadata"]["finalizers"] = json!(["kueue.x-k8s.io/managed"]);
    let outcome = policy::evaluate(
        &admission::policy(),
        &admission::binding(research),
        Some(&admission::params_config_map(research, cell)),
        &request,
    );
    assert!(matches!(outcome, Outcome::NotMatched(_)), "{outcome:?}");
    request.old_object = Some(object);
    let outcome = policy::evaluate(
        &admission::policy(),
        &admission::binding(research),
        Some(&admission::params_config_map(research, cell)),
        &request,
    );
    assert_eq!(denied_rules(&outcome), ["images"]);
}

#[test]
fn the_emitted_params_pin_no_weight_digest_so_every_pod_that_loads_weights_is_denied() {
    // Fail closed until signed weights (issue 9) pin digests: even the digest the other tests
    // pin is refused under the emitted params.
    let plan = plan();
    let cell = cell(&plan, "us-east-1a");
    let mut object = fixture("acme-serving-pod", "us-east-1a");
    cases::pod_annotations(&mut object)["tenantc.io/weight-digest"] = json!(PINNED_WEIGHTS);
    assert_eq!(
        denied_rules(&verdict(cell, "acme-serving-infer", &object)),
        Vec::<&str>::new()
    );
    let (_, outcome) =
        policy::check_object(cell, &Request::create("acme-serving-infer", object)).unwrap();
    assert_eq!(denied_rules(&outcome), ["weight-digest"]);
}

/// Kubernetes' `Toleration.ToleratesTaint` (k8s.io/api/core/v1/toleration.go), the reference
/// the `pool-tolerations` CEL is checked against.
fn tolerates(toleration: &Json, taint: &tenantc::plan::TaintPlan) -> bool {
    let text = |key: &str| toleration.get(key).and_then(Json::as_str).unwrap_or("");
    if !text("effect").is_empty() && text("effect") != taint.effect {
        return false;
    }
    if !text("key").is_empty() && text("key") != taint.key {
        return false;
    }
    match text("operator") {
        "Exists" => true,
        "" | "Equal" => text("value") == taint.value.as_deref().unwrap_or(""),
        _ => false,
    }
}

#[test]
fn pool_tolerations_follow_kubernetes_toleration_semantics_on_generated_tolerations() {
    // The family of the toleration rule: every operator, empty and missing keys, values and
    // effects, against every pool taint of both example cells; the CEL verdict must equal the
    // reference's: denied exactly when a toleration tolerates a repelling taint of a pool
    // outside the tenant's flavors that no pool of its flavors carries.
    let plan = plan();
    let keys = [
        "",
        "train-exclusive",
        "tenantc.io/pool",
        "other.example.com/x",
    ];
    let values = ["", "true", "h100-infer", "l4-shared", "false"];
    let operators = ["", "Equal", "Exists"];
    let effects = ["", "NoSchedule", "NoExecute", "PreferNoSchedule"];
    let mut rng = support::Rng(0x5eed_1234_abcd_0001);
    let mut next = |bound: usize| usize::try_from(rng.below(bound as u64)).unwrap();
    // Only objects with a pod (template) carry tolerations and pod labels.
    let fixtures = pod_fixtures();
    let (mut denied, mut admitted) = (0, 0);
    for _ in 0..300 {
        let (cell_name, _, base) = &fixtures[next(fixtures.len())];
        let cell = cell(&plan, cell_name);
        let namespace = namespace_of(base);
        let tenant = cell
            .tenants
            .iter()
            .find(|t| t.namespaces.iter().any(|ns| ns.name == namespace))
            .unwrap();
        let own: Vec<&tenantc::plan::PoolPlan> = cell
            .pools
            .iter()
            .filter(|pool| tenant.queue.flavors.iter().any(|f| f.pool == pool.name))
            .collect();
        let forbidden: Vec<&tenantc::plan::TaintPlan> = cell
            .pools
            .iter()
            .filter(|pool| !own.iter().any(|mine| mine.name == pool.name))
            .flat_map(|pool| pool.taints.iter())
            .filter(|taint| taint.repels())
            .filter(|taint| !own.iter().any(|mine| mine.taints.contains(taint)))
            .collect();
        let mut tolerations = Vec::new();
        for _ in 0..=next(3) {
            let mut toleration = serde_json::Map::new();
            for (field, choices) in [
                ("key", &keys[..]),
                ("value", &values[..]),
                ("operator", &operators[..]),
                ("effect", &effects[..]),
            ] {
                let choice = choices[next(choices.len())];
                // An empty choice is left out half of the time, written as "" otherwise.
                if !choice.is_empty() || next(2) == 0 {
                    toleration.insert(field.to_string(), json!(choice));
                }
            }
            // Only tolerations the API server's validation accepts reach admission: an empty
            // key needs `Exists`, and `Exists` takes no value.
            let operator = toleration
                .get("operator")
                .and_then(Json::as_str)
                .unwrap_or("");
            let key = toleration.get("key").and_then(Json::as_str).unwrap_or("");
            if key.is_empty() && operator != "Exists" {
                toleration.insert("operator".to_string(), json!("Exists"));
            }
            if toleration.get("operator").and_then(Json::as_str) == Some("Exists") {
                toleration.remove("value");
            }
            tolerations.push(Json::Object(toleration));
        }
        let expected = tolerations
            .iter()
            .any(|toleration| forbidden.iter().any(|taint| tolerates(toleration, taint)));
        let mut object = base.clone();
        pod_spec(&mut object)["tolerations"] = Json::Array(tolerations.clone());
        let outcome = verdict(cell, &namespace, &object);
        let rules = denied_rules(&outcome);
        assert_eq!(
            rules.contains(&"pool-tolerations"),
            expected,
            "{namespace} in {cell_name}: {tolerations:?} against {forbidden:?}: {outcome:?}"
        );
        if expected {
            denied += 1;
        } else {
            admitted += 1;
        }
    }
    assert!(
        denied > 30 && admitted > 30,
        "{denied} denied, {admitted} admitted"
    );
}

/// The reference for `forbidden-labels`: a key is forbidden when its lower-case form without
/// `-`, `_` and `.`, or that of its name after the prefix, is a forbidden key's.
fn forbidden_by_reference(key: &str, forbidden: &[String]) -> bool {
    let normal = |text: &str| {
        text.to_ascii_lowercase()
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | '.'))
            .collect::<String>()
    };
    let name = key.rsplit_once('/').map_or(key, |(_, name)| name);
    forbidden
        .iter()
        .any(|f| normal(f) == normal(key) || normal(f) == normal(name))
}

#[test]
fn forbidden_label_keys_match_whatever_their_case_separators_and_prefix_on_generated_keys() {
    // The family of the forbidden-label rule: keys built from the words of forbidden and
    // harmless keys, in any case, joined by `-`, `_`, `.` or nothing, with and without a
    // prefix, on the pod template or on the workload itself; the CEL verdict must equal the
    // reference's.
    let plan = plan();
    let words: &[&[&str]] = &[
        &["user", "email"],
        &["session", "id"],
        &["prompt"],
        &["email"],
        &["user", "id"],
        &["user", "group"],
        &["model", "name"],
        &["emails"],
        &["prompt", "cache"],
        &["session"],
        &["user", "e", "mail"],
    ];
    let separators = ["-", "_", ".", ""];
    let prefixes = ["", "example.com/", "tenant.platform/", "a.b.c/"];
    let mut rng = support::Rng(0x1abe_1abe_0000_0007);
    let mut next = |bound: usize| usize::try_from(rng.below(bound as u64)).unwrap();
    // Only objects with a pod (template) carry tolerations and pod labels.
    let fixtures = pod_fixtures();
    let (mut denied, mut admitted) = (0, 0);
    for _ in 0..200 {
        let (cell_name, _, base) = &fixtures[next(fixtures.len())];
        let cell = cell(&plan, cell_name);
        let namespace = namespace_of(base);
        let (params, _) = pinned_params(cell, &namespace);
        let forbidden: Vec<String> = params.data.as_ref().unwrap()["forbiddenLabelKeys"]
            .split(',')
            .map(str::to_string)
            .collect();
        let parts = words[next(words.len())];
        let separator = separators[next(separators.len())];
        let mut name = String::new();
        for (idx, part) in parts.iter().enumerate() {
            if idx > 0 {
                name.push_str(separator);
            }
            for c in part.chars() {
                name.push(if next(3) == 0 {
                    c.to_ascii_uppercase()
                } else {
                    c
                });
            }
        }
        let key = format!("{}{name}", prefixes[next(prefixes.len())]);
        let mut object = base.clone();
        // A workload without labels of its own is queued by its template's (the API server
        // copies them to a Job), so the key goes on the template there.
        let unlabelled = cases::workload_labels(&mut object)
            .as_object()
            .unwrap()
            .is_empty();
        if next(2) == 0 || unlabelled {
            cases::pod_labels(&mut object)[&key] = json!("x");
        } else {
            cases::workload_labels(&mut object)[&key] = json!("x");
        }
        let expected = forbidden_by_reference(&key, &forbidden);
        let outcome = verdict(cell, &namespace, &object);
        assert_eq!(
            denied_rules(&outcome),
            if expected {
                vec!["forbidden-labels"]
            } else {
                Vec::new()
            },
            "{key} on {namespace} in {cell_name}: {outcome:?}"
        );
        if expected {
            denied += 1;
        } else {
            admitted += 1;
        }
    }
    assert!(
        denied > 40 && admitted > 40,
        "{denied} denied, {admitted} admitted"
    );
}

/// The fixture fleet with a tenant `acme` added, whose name is a prefix of `acme-research`'s
/// and `acme-serving`'s: the fleet a name-prefix rule gets wrong.
fn plan_with_prefix_tenant() -> Plan {
    let mut loaded = tenantc::load::load(&support::fleet()).unwrap();
    loaded.inputs.push(tenantc::InputFile {
        path: "tenants/acme.kdl".to_string(),
        contents: br#"tenant "acme" {
    org "acme-platform"
    team "platform"
    trust "soft"
    groups admin="acme-admins" member="acme"
    quota cell="us-east-1a" cpu="8" memory="32Gi" pods=10 storage="1Ti" persistent-volume-claims=10
    workload "train" service-account="trainer" priority="batch"
    registry "registry.acme.internal/platform"
}
"#
        .to_vec(),
    });
    loaded.inputs.sort_by(|a, b| a.path.cmp(&b.path));
    let compilation = tenantc::compile_loaded(&loaded);
    assert!(
        compilation.output.is_some(),
        "the fleet with acme compiles: {:?}",
        compilation
            .diagnostics
            .iter()
            .map(|d| &d.message)
            .collect::<Vec<_>>()
    );
    compilation.plan.unwrap()
}

#[test]
fn a_tenant_whose_name_prefixes_another_cannot_bind_or_copy_its_volumes() {
    // Tenant `acme` against `acme-research`: a rule that owned names by the prefix `acme-`
    // would hand acme every PersistentVolume and namespace named `acme-research-*`.
    let plan = plan_with_prefix_tenant();
    let cell = cell(&plan, "us-east-1a");
    let acme = tenant(cell, "acme");
    let namespace = acme.namespaces[0].name.clone();
    assert_eq!(namespace, "acme-train");
    let judge = |object: Json| {
        policy::evaluate(
            &admission::policy(),
            &admission::binding(acme),
            Some(&admission::params_config_map(acme, cell)),
            &Request::create(&namespace, object),
        )
    };
    let claim = |spec: Json| {
        json!({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "acme-scratch", "namespace": namespace},
            "spec": spec,
        })
    };
    let size = json!({"requests": {"storage": "1Gi"}});
    assert_eq!(
        judge(claim(
            json!({"accessModes": ["ReadWriteOnce"], "storageClassName": "standard", "resources": size})
        )),
        Outcome::Admitted
    );
    // Another tenant's statically provisioned PersistentVolume, named for it.
    let by_name = judge(claim(
        json!({"accessModes": ["ReadWriteOnce"], "resources": size, "volumeName": "acme-research-checkpoints"}),
    ));
    assert_eq!(denied_rules(&by_name), ["claim-binding"], "{by_name:?}");
    // A copy of a snapshot in another tenant's namespace.
    let across = judge(claim(json!({
        "accessModes": ["ReadWriteOnce"], "resources": size,
        "dataSourceRef": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "acme-research-ckpt", "namespace": "acme-research-train"},
    })));
    assert_eq!(denied_rules(&across), ["claim-binding"], "{across:?}");
    // The same through a generic ephemeral volume of a pod.
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": namespace, "labels": {"tenant.platform/tenant": "acme", "tenant.platform/cell": "us-east-1a"}},
        "spec": {
            "containers": [{"name": "main", "image": format!("registry.acme.internal/platform/tool@{DIGEST}")}],
            "volumes": [{"name": "copy", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": size, "volumeName": "acme-research-checkpoints"}}}}],
        },
    });
    assert_eq!(denied_rules(&judge(pod)), ["claim-binding"]);
    // Namespace membership is exact: no namespace of the cell is selected by two bindings, so
    // acme's binding never judges acme-research's namespaces with acme's params.
    for tenant in &cell.tenants {
        for ns in &tenant.namespaces {
            let selecting: Vec<&str> = cell
                .tenants
                .iter()
                .filter(|other| {
                    let binding = admission::binding(other);
                    let selector = binding
                        .spec
                        .as_ref()
                        .and_then(|spec| spec.match_resources.as_ref())
                        .and_then(|resources| resources.namespace_selector.as_ref())
                        .unwrap();
                    policy::selects(
                        selector,
                        &serde_json::Map::from_iter([(
                            "kubernetes.io/metadata.name".to_string(),
                            json!(ns.name),
                        )]),
                    )
                })
                .map(|other| other.name.as_str())
                .collect();
            assert_eq!(selecting, [tenant.name.as_str()], "{}", ns.name);
        }
    }
}

#[test]
fn a_claim_update_is_judged_only_for_a_volume_name_a_member_sets() {
    // A claim's spec is immutable but for its size and, once, `volumeName`: the PersistentVolume
    // controller sets it when it binds the claim, and a member could set it on a pending claim
    // to bind another tenant's volume.
    let plan = plan();
    let cell = cell(&plan, "us-east-1a");
    let research = tenant(cell, "acme-research");
    let judge = |old: &Json, new: &Json, username: &str| {
        let mut request = Request::create("acme-research-train", new.clone());
        request.operation = "UPDATE".to_string();
        request.old_object = Some(old.clone());
        request.username = username.to_string();
        policy::evaluate(
            &admission::policy(),
            &admission::binding(research),
            Some(&admission::params_config_map(research, cell)),
            &request,
        )
    };
    let pending = fixture("acme-research-pvc", "us-east-1a");
    let mut bound = pending.clone();
    bound["spec"]["volumeName"] = json!("pvc-0b5e3c1d-7a1f-4c1e-9d55-2f1b7a0c9e11");
    let member = "acme-research-member";
    assert_eq!(
        denied_rules(&judge(&pending, &bound, member)),
        ["claim-binding"]
    );
    for controller in [
        "system:kube-controller-manager",
        "system:serviceaccount:kube-system:persistent-volume-binder",
    ] {
        assert_eq!(judge(&pending, &bound, controller), Outcome::Admitted);
    }
    // A member resizes the bound claim: its volume name does not change.
    let mut resized = bound.clone();
    resized["spec"]["resources"]["requests"]["storage"] = json!("200Gi");
    assert_eq!(judge(&bound, &resized, member), Outcome::Admitted);
}

/// The rule the platform templates apply to a PersistentVolumeClaim (`template/check.rs`),
/// restated: it binds nothing by name or label and copies from no other namespace.
fn claim_binds_by_reference(spec: &Json) -> bool {
    spec.get("volumeName")
        .and_then(Json::as_str)
        .is_some_and(|name| !name.is_empty())
        || spec.get("selector").is_some()
        || spec
            .pointer("/dataSourceRef/namespace")
            .and_then(Json::as_str)
            .is_some_and(|namespace| !namespace.is_empty())
}

#[test]
fn claims_and_claim_templates_follow_the_template_rule_on_generated_claims() {
    // The family of the claim rule: generated claim specs (volume names, selectors, data
    // sources in and out of the namespace) as a PersistentVolumeClaim, a StatefulSet claim
    // template and a generic ephemeral volume; `claim-binding` must deny exactly what the
    // platform templates' rule denies, wherever the claim is written.
    let plan = plan();
    let mut rng = support::Rng(0x0c1a_13b1_0000_0011);
    let mut next = |bound: usize| usize::try_from(rng.below(bound as u64)).unwrap();
    // Absent fields are drawn more often, so that about a third of the claims bind nothing.
    let volume_names = [
        None,
        None,
        None,
        Some(""),
        Some("pvc-123"),
        Some("globex-vision-data"),
    ];
    let selectors = [
        None,
        None,
        None,
        Some(json!({})),
        Some(json!({"matchLabels": {"tenant.platform/tenant": "globex-vision"}})),
    ];
    let namespaces = [None, None, Some(""), Some("acme-serving-infer")];
    let (mut denied, mut admitted) = (0, 0);
    for _ in 0..240 {
        let mut spec = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}});
        if let Some(name) = volume_names[next(volume_names.len())] {
            spec["volumeName"] = json!(name);
        }
        if let Some(selector) = &selectors[next(selectors.len())] {
            spec["selector"] = selector.clone();
        }
        if next(2) == 0 {
            let mut source =
                json!({"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot"});
            let namespace = namespaces[next(namespaces.len())];
            if let Some(namespace) = namespace {
                source["namespace"] = json!(namespace);
            }
            // The snapshot is named for the tenant that owns the claim's namespace.
            source["name"] = json!("OWNER-snap");
            spec["dataSourceRef"] = source;
        }
        let expected = claim_binds_by_reference(&spec);
        let (cell_name, object) = match next(3) {
            0 => {
                let mut claim = fixture("acme-research-pvc", "us-east-1a");
                claim["spec"] = spec.clone();
                ("us-east-1a", claim)
            }
            1 => {
                let mut set = fixture("globex-vision-statefulset", "eu-west-4b");
                set["spec"]["volumeClaimTemplates"][0]["spec"] = spec.clone();
                ("eu-west-4b", set)
            }
            _ => {
                let mut pod = fixture("acme-research-pod", "us-east-1a");
                pod_spec(&mut pod)["volumes"].as_array_mut().unwrap().push(
                    json!({"name": "claim", "ephemeral": {"volumeClaimTemplate": {"spec": spec}}}),
                );
                ("us-east-1a", pod)
            }
        };
        let namespace = namespace_of(&object);
        let owner = namespace.rsplit_once('-').unwrap().0.to_string();
        let object: Json =
            serde_json::from_str(&object.to_string().replace("OWNER", &owner)).unwrap();
        let outcome = verdict(cell(&plan, cell_name), &namespace, &object);
        assert_eq!(
            denied_rules(&outcome),
            if expected {
                vec!["claim-binding"]
            } else {
                Vec::new()
            },
            "{object} in {cell_name}: {outcome:?}"
        );
        if expected {
            denied += 1;
        } else {
            admitted += 1;
        }
    }
    assert!(
        denied > 40 && admitted > 40,
        "{denied} denied, {admitted} admitted"
    );
}

#[test]
fn only_kueue_releases_what_it_holds() {
    let plan = plan();
    for case in update_cases() {
        let cell = cell(&plan, case.cell);
        let request = member_update(cell, &case);
        let outcome = judge(cell, &request);
        assert_eq!(
            denied_rules(&outcome),
            [case.rule],
            "{}: {outcome:?}",
            case.name
        );
        let Outcome::Denied(denials) = &outcome else {
            unreachable!()
        };
        let rule = RULES.iter().find(|rule| rule.name == case.rule).unwrap();
        assert_ne!(denials[0].message, rule.message, "{}", case.name);
        // A ServiceAccount of one of the tenant's namespaces is the tenant too.
        let namespace = request.namespace.clone();
        let mut by_account = request.clone();
        by_account.groups = vec!["system:serviceaccounts".to_string()];
        by_account.username = format!("system:serviceaccount:{namespace}:default");
        assert_eq!(
            denied_rules(&judge(cell, &by_account)),
            [case.rule],
            "{}",
            case.name
        );
        // Kueue makes the same change when it admits the workload.
        let mut by_kueue = request.clone();
        by_kueue.groups = vec!["system:serviceaccounts".to_string()];
        by_kueue.username = KUEUE.to_string();
        assert_eq!(judge(cell, &by_kueue), Outcome::Admitted, "{}", case.name);
        // A member may still change what Kueue does not read, such as a label of its own.
        let mut relabelled = request.clone();
        relabelled.object = request.old_object.clone().unwrap();
        pod_labels(&mut relabelled.object)["example.com/experiment"] = json!("ablation-7");
        assert_eq!(judge(cell, &relabelled), Outcome::Admitted, "{}", case.name);
    }
}

#[test]
fn controllers_may_set_owner_references_that_members_may_not() {
    let plan = plan();
    for case in cases()
        .into_iter()
        .filter(|case| case.rule == "controller-references")
    {
        let cell = cell(&plan, case.cell);
        let mut object = fixture(case.fixture, case.cell);
        (case.mutate)(&mut object);
        let namespace = namespace_of(&object);
        let mut request = Request::create(&namespace, object.clone());
        request.username = "system:serviceaccount:kube-system:job-controller".to_string();
        request.groups = vec!["system:serviceaccounts".to_string()];
        assert_eq!(judge(cell, &request), Outcome::Admitted, "{}", case.name);
        // A member may name a CronJob, which Kueue does not manage, as `kubectl create job
        // --from=cronjob/…` does; anything else stays denied.
        let mut from_cron = object.clone();
        from_cron["metadata"]["ownerReferences"][0]["apiVersion"] = json!("batch/v1");
        from_cron["metadata"]["ownerReferences"][0]["kind"] = json!("CronJob");
        assert_eq!(
            verdict(cell, &namespace, &from_cron),
            Outcome::Admitted,
            "{}",
            case.name
        );
        let mut not_a_cron = object;
        not_a_cron["metadata"]["ownerReferences"][0]["apiVersion"] = json!("example.com/v1");
        not_a_cron["metadata"]["ownerReferences"][0]["kind"] = json!("CronJob");
        assert_eq!(
            denied_rules(&verdict(cell, &namespace, &not_a_cron)),
            ["controller-references"],
            "{}",
            case.name
        );
    }
}

#[test]
fn a_member_may_not_change_the_pod_template_of_a_controlled_workload_but_its_controller_may() {
    let plan = plan();
    let cell = cell(&plan, "eu-west-4b");
    let mut before = fixture("globex-vision-statefulset", "eu-west-4b");
    before["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "name": "globex-vision-serving",
        "uid": "2c7d9e04-6a1b-4f38-9e25-d0b7c4a8f613",
        "controller": true,
    }]);
    let mut after = before.clone();
    pod_spec(&mut after)["containers"][0]["image"] = json!(format!(
        "registry.globex.example/vision/indexer-v2@{DIGEST}"
    ));
    let namespace = namespace_of(&after);
    let mut request = member_create(cell, &namespace, after);
    request.operation = "UPDATE".to_string();
    request.old_object = Some(before.clone());
    let outcome = judge(cell, &request);
    assert_eq!(denied_rules(&outcome), ["kueue-hold"], "{outcome:?}");
    let mut by_controller = request.clone();
    by_controller.groups = vec!["system:serviceaccounts".to_string()];
    by_controller.username = "system:serviceaccount:lws-system:lws-controller-manager".to_string();
    assert_eq!(judge(cell, &by_controller), Outcome::Admitted);
    // The controller reference itself: a member may not drop and re-add it under a new owner,
    // and an update that changes only owner references is judged unless the garbage
    // collector makes it.
    let mut reowned = before.clone();
    reowned["metadata"]["ownerReferences"][0]["uid"] =
        json!("99999999-6a1b-4f38-9e25-d0b7c4a8f613");
    let mut request = member_create(cell, &namespace, reowned);
    request.operation = "UPDATE".to_string();
    request.old_object = Some(before);
    assert_eq!(
        denied_rules(&judge(cell, &request)),
        ["controller-references"]
    );
    // Keeping the uid does not make another owner the old one.
    let mut renamed = request.old_object.clone().unwrap();
    renamed["metadata"]["ownerReferences"][0]["kind"] = json!("JobSet");
    renamed["metadata"]["ownerReferences"][0]["apiVersion"] = json!("jobset.x-k8s.io/v1alpha2");
    let mut same_uid = request.clone();
    same_uid.object = renamed;
    assert_eq!(
        denied_rules(&judge(cell, &same_uid)),
        ["controller-references"]
    );
    let mut by_collector = request.clone();
    by_collector.groups = vec!["system:serviceaccounts".to_string()];
    by_collector.username =
        "system:serviceaccount:kube-system:generic-garbage-collector".to_string();
    assert!(matches!(judge(cell, &by_collector), Outcome::NotMatched(_)));
}

#[test]
fn a_group_whose_name_holds_a_comma_is_still_the_tenant() {
    // LDAP distinguished names hold commas; a comma-separated list would have split the group
    // and let its members release what Kueue holds.
    let plan = plan();
    let cell = cell(&plan, "us-east-1a");
    let mut tenant = tenant(cell, "acme-serving").clone();
    let group = "cn=serving,ou=acme,dc=example,dc=com".to_string();
    tenant
        .groups
        .insert(tenantc::model::TenantRole::Member, group.clone());
    let case = update_cases()
        .into_iter()
        .find(|case| case.fixture == "acme-serving-pod")
        .unwrap();
    let mut request = member_update(cell, &case);
    request.groups = vec![group];
    let outcome = policy::evaluate(
        &admission::policy(),
        &admission::binding(&tenant),
        Some(&admission::params_config_map(&tenant, cell)),
        &request,
    );
    assert_eq!(denied_rules(&outcome), [case.rule], "{outcome:?}");
}

/// Asserts that `request` is denied by exactly `rule`, with a message from its message
/// expression that holds `phrase`; `what` names the case.
fn assert_denied_by(cell: &CellPlan, request: &Request, what: &str, rule_name: &str, phrase: &str) {
    let outcome = judge(cell, request);
    assert_eq!(denied_rules(&outcome), [rule_name], "{what}: {outcome:?}");
    let Outcome::Denied(denials) = &outcome else {
        unreachable!()
    };
    let rule = RULES.iter().find(|rule| rule.name == rule_name).unwrap();
    assert_ne!(denials[0].message, rule.message, "{what}");
    assert!(
        denials[0].message.contains(phrase),
        "{what}: {}",
        denials[0].message
    );
}

#[test]
fn a_member_may_not_take_an_object_from_its_controller_but_the_controller_and_the_platform_may() {
    // Hole 1 of issue 18: a pod released by its Job runs on, and Kueue counts a Job's pods only
    // through the Job's Workload, so the Job controller starts another one in its place.
    let plan = plan();
    for case in ownership_cases() {
        let cell = cell(&plan, case.cell);
        let request = member_update(cell, &case);
        assert_denied_by(
            cell,
            &request,
            case.name,
            case.rule,
            "controls: the controller would release it",
        );
        // A ServiceAccount of the tenant is the tenant too.
        let mut by_account = request.clone();
        by_account.groups = vec!["system:serviceaccounts".to_string()];
        by_account.username = format!(
            "system:serviceaccount:{}:default",
            request.namespace.clone()
        );
        assert_eq!(
            denied_rules(&judge(cell, &by_account)),
            [case.rule],
            "{}",
            case.name
        );
        // The controllers release and adopt pods under their own identities, and the platform
        // may relabel anything.
        for (username, groups) in [
            (
                "system:serviceaccount:kube-system:job-controller",
                vec!["system:serviceaccounts".to_string()],
            ),
            (
                "system:serviceaccount:kube-system:replicaset-controller",
                vec!["system:serviceaccounts".to_string()],
            ),
            ("platform-admin", vec!["system:masters".to_string()]),
        ] {
            let mut by_other = request.clone();
            by_other.username = username.to_string();
            by_other.groups = groups;
            // (An update of nothing but owner references by kube-system is not even matched.)
            let outcome = judge(cell, &by_other);
            assert!(
                !outcome.is_denied(),
                "{}: {username}: {outcome:?}",
                case.name
            );
        }
        // What no controller selects by stays the member's: an annotation of the owned pod,
        // and the labels of a pod nothing controls.
        let mut annotated = request.clone();
        annotated.object = request.old_object.clone().unwrap();
        pod_annotations(&mut annotated.object)["example.com/note"] = json!("profiling");
        assert_eq!(judge(cell, &annotated), Outcome::Admitted, "{}", case.name);
        let mut uncontrolled = request.clone();
        for object in [
            uncontrolled.object.as_object_mut().unwrap(),
            uncontrolled
                .old_object
                .as_mut()
                .unwrap()
                .as_object_mut()
                .unwrap(),
        ] {
            object["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("ownerReferences");
        }
        let outcome = judge(cell, &uncontrolled);
        assert!(
            !outcome.is_denied(),
            "{}: a pod without a controller: {outcome:?}",
            case.name
        );
    }
}

#[test]
fn a_member_may_not_relabel_a_job_of_its_cron_job_only_if_a_label_selects_it() {
    // A CronJob finds its Jobs by owner reference, not by label: a Job it made may be
    // relabelled (`kubectl create job --from=cronjob/…` makes such Jobs too), but its owner
    // reference stays.
    let plan = plan();
    let cell = cell(&plan, "us-east-1a");
    let mut before = fixture("acme-research-job", "us-east-1a");
    before["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "name": "acme-research-nightly",
        "uid": "4d1e8b3a-7c92-4f05-a6d8-1b9e2c7f5a40",
        "controller": true,
    }]);
    let namespace = namespace_of(&before);
    let mut relabelled = before.clone();
    relabelled["metadata"]["labels"]["example.com/run"] = json!("rerun-3");
    let mut request = member_create(cell, &namespace, relabelled);
    request.operation = "UPDATE".to_string();
    request.old_object = Some(before.clone());
    assert_eq!(judge(cell, &request), Outcome::Admitted);
    let mut orphaned = before.clone();
    orphaned["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("ownerReferences");
    request.object = orphaned;
    assert_eq!(
        denied_rules(&judge(cell, &request)),
        ["controller-ownership"]
    );
}

#[test]
fn a_member_may_delete_a_workload_with_its_pods_but_not_orphan_them() {
    let plan = plan();
    for case in delete_cases() {
        let cell = cell(&plan, case.cell);
        let request = member_delete(cell, &case);
        assert_denied_by(
            cell,
            &request,
            case.name,
            case.rule,
            "delete it with propagationPolicy Background",
        );
        // With its pods, as kubectl deletes by default, the delete is the member's to make.
        for options in [
            json!({"propagationPolicy": "Background"}),
            json!({"propagationPolicy": "Foreground"}),
            json!({"orphanDependents": false}),
        ] {
            let mut cascading = request.clone();
            cascading.options = Some(options.clone());
            assert_eq!(
                judge(cell, &cascading),
                Outcome::Admitted,
                "{}: {options}",
                case.name
            );
        }
        // The platform may orphan, as when it replaces a workload in place.
        let mut by_platform = request.clone();
        by_platform.username = "platform-admin".to_string();
        by_platform.groups = vec!["system:masters".to_string()];
        assert_eq!(
            judge(cell, &by_platform),
            Outcome::Admitted,
            "{}",
            case.name
        );
    }
    // Only a batch/v1 Job orphans by default: an apps/v1 workload deleted without options
    // takes its pods with it.
    let cell = cell(&plan, "eu-west-4b");
    let statefulset = fixture("globex-vision-statefulset", "eu-west-4b");
    let mut request = Request::delete(&namespace_of(&statefulset), statefulset, json!({}));
    request.groups = vec![member_group(cell, &request.namespace)];
    assert_eq!(judge(cell, &request), Outcome::Admitted);
    // A DELETE of a pod or claim is not the floor's to judge.
    let pod = fixture("globex-vision-pod", "eu-west-4b");
    let mut request = Request::delete(
        &namespace_of(&pod),
        pod,
        json!({"propagationPolicy": "Orphan"}),
    );
    request.groups = vec![member_group(cell, &request.namespace)];
    assert!(
        matches!(judge(cell, &request), Outcome::NotMatched(_)),
        "a pod's DELETE"
    );
}

/// The fixture fleet with `us-east-1a` forbidding keys of its own, and `acme-research`
/// declaring `keys` as chargeback labels when there are any.
fn fleet_declaring(keys: &[String]) -> tenantc::Compilation {
    let mut loaded = tenantc::load::load(&support::fleet()).unwrap();
    for input in &mut loaded.inputs {
        let mut text = String::from_utf8(input.contents.clone()).unwrap();
        if input.path == "cells/us-east-1a.kdl" {
            text = text.replacen(
                "cell \"us-east-1a\" {\n",
                "cell \"us-east-1a\" {\n    forbidden-label-keys \"customer-name\" \"acme.io/owner\"\n",
                1,
            );
        } else if input.path == "tenants/acme-research.kdl" && !keys.is_empty() {
            let labels: Vec<String> = keys
                .iter()
                .map(|key| format!("        label \"{key}\" \"x\"\n"))
                .collect();
            text = text.replacen(
                "    registry ",
                &format!(
                    "    chargeback {{\n{}    }}\n    registry ",
                    labels.concat()
                ),
                1,
            );
        } else {
            continue;
        }
        input.contents = text.into_bytes();
    }
    tenantc::compile_loaded(&loaded)
}

#[test]
fn the_floor_and_the_chargeback_declaration_check_refuse_the_same_keys() {
    // Keys built from the words of the built-in forbidden keys, of the keys one cell adds and
    // of harmless keys, in any case, joined by `-`, `_`, `.` or nothing, with and without a
    // prefix: each is put on a pod of `acme-research` in each of its cells, and declared as a
    // chargeback label of `acme-research`. The floor must deny exactly the keys the
    // declaration check refuses in that cell (built-in ones in every cell).
    let base = fleet_declaring(&[]);
    assert!(base.output.is_some(), "the changed fixture fleet compiles");
    let plan = base.plan.unwrap();
    let words: &[&[&str]] = &[
        &["user", "email"],
        &["session", "id"],
        &["prompt"],
        &["e", "mail"],
        &["user", "id"],
        &["customer", "name"],
        &["owner"],
        &["cost", "center"],
        &["user", "group"],
        &["prompt", "cache"],
        &["customer"],
        &["emails"],
    ];
    let separators = ["-", "_", ".", ""];
    let prefixes = ["", "example.com/", "acme.io/", "a.b.c/"];
    let mut rng = support::Rng(0x1abe_1abe_0000_0020);
    let mut next = |bound: usize| usize::try_from(rng.below(bound as u64)).unwrap();
    let mut keys = Vec::new();
    for _ in 0..160 {
        let parts = words[next(words.len())];
        let separator = separators[next(separators.len())];
        let mut name = String::new();
        for (idx, part) in parts.iter().enumerate() {
            if idx > 0 {
                name.push_str(separator);
            }
            for c in part.chars() {
                name.push(if next(3) == 0 {
                    c.to_ascii_uppercase()
                } else {
                    c
                });
            }
        }
        keys.push(format!("{}{name}", prefixes[next(prefixes.len())]));
    }
    // The declaration check's verdicts: (key, cell) pairs it refuses, `*` for every cell. At
    // most 30 labels a compile, below the per-file cap of findings of one code.
    let mut refused: std::collections::BTreeSet<(String, String)> = Default::default();
    for chunk in keys.chunks(30) {
        let compilation = fleet_declaring(chunk);
        for diagnostic in &compilation.diagnostics {
            let code = diagnostic.code.as_str();
            if code == "chargeback-label-duplicate" {
                continue;
            }
            assert_eq!(code, "chargeback-label-forbidden", "{diagnostic:?}");
            let quoted: Vec<&str> = diagnostic.message.split('`').collect();
            let cell = if diagnostic.message.contains(" in cell `") {
                quoted[5].to_string()
            } else {
                "*".to_string()
            };
            refused.insert((quoted[1].to_string(), cell));
        }
    }
    let (mut denied, mut admitted) = (0, 0);
    for cell_name in ["us-east-1a", "eu-west-4b"] {
        let cell = cell(&plan, cell_name);
        let base = fixture("acme-research-pod", cell_name);
        let namespace = namespace_of(&base);
        for key in &keys {
            let mut object = base.clone();
            cases::pod_labels(&mut object)[key] = json!("x");
            let floor_denies =
                denied_rules(&verdict(cell, &namespace, &object)).contains(&"forbidden-labels");
            let declaration_refuses = refused.contains(&(key.clone(), "*".to_string()))
                || refused.contains(&(key.clone(), cell_name.to_string()));
            assert_eq!(
                floor_denies, declaration_refuses,
                "{key} in {cell_name}: the floor and the declaration check disagree"
            );
            if floor_denies {
                denied += 1;
            } else {
                admitted += 1;
            }
        }
    }
    // Some keys must be refused by the cell's own list only.
    assert!(
        refused.iter().any(|(_, cell)| cell == "us-east-1a"),
        "{refused:?}"
    );
    assert!(
        denied > 60 && admitted > 60,
        "{denied} denied, {admitted} admitted"
    );
}
