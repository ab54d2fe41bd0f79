//! Policy tests: every CEL expression of the tenant admission floor, evaluated in process.
//!
//! Consumes: the example fleet (compiled in memory), the admitted fixtures under
//! `tests/policy/admitted/<cell>/`, and denied objects made here from them, one or more per
//! validation, many of them cross-tenant (another tenant's digest, PVC, registry, queue, pool
//! toleration, priority; a runtime class of a weaker trust class). Produces: pass or fail.
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

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};
use tenantc::lower::admission::{self, RULES};
use tenantc::plan::{CellPlan, Plan};
use tenantc::policy::{self, Outcome, Request};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn plan() -> Plan {
    let loaded = tenantc::load::load(Path::new(ROOT)).unwrap();
    let compilation = tenantc::compile_loaded(&loaded);
    assert!(compilation.output.is_some(), "the example fleet compiles");
    compilation.plan.unwrap()
}

fn cell<'a>(plan: &'a Plan, name: &str) -> &'a CellPlan {
    plan.cells.iter().find(|cell| cell.name == name).unwrap()
}

/// Every admitted fixture: `(cell, path, object)`.
fn admitted_fixtures() -> Vec<(String, PathBuf, Json)> {
    let mut fixtures = Vec::new();
    let root = Path::new(ROOT).join("tests/policy/admitted");
    let mut cells: Vec<_> = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    cells.sort();
    for cell_dir in cells {
        let cell = cell_dir.file_name().unwrap().to_string_lossy().to_string();
        let mut files: Vec<_> = fs::read_dir(&cell_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for file in files {
            let text = fs::read_to_string(&file).unwrap();
            let object = policy::object_from_yaml(&text)
                .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
            fixtures.push((cell.clone(), file, object));
        }
    }
    fixtures
}

fn namespace_of(object: &Json) -> String {
    object["metadata"]["namespace"]
        .as_str()
        .unwrap()
        .to_string()
}

fn verdict(cell: &CellPlan, namespace: &str, object: &Json) -> Outcome {
    policy::check_object(cell, &Request::create(namespace, object.clone()))
        .map(|(_, outcome)| outcome)
        .unwrap_or_else(|| panic!("no tenant owns namespace {namespace}"))
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

/// The pod spec of a Pod or of a workload's template.
fn pod_spec(object: &mut Json) -> &mut Json {
    if object["kind"] == "Pod" {
        &mut object["spec"]
    } else {
        &mut object["spec"]["template"]["spec"]
    }
}

fn pod_labels(object: &mut Json) -> &mut Json {
    if object["kind"] == "Pod" {
        &mut object["metadata"]["labels"]
    } else {
        &mut object["spec"]["template"]["metadata"]["labels"]
    }
}

fn pod_annotations(object: &mut Json) -> &mut Json {
    let meta = if object["kind"] == "Pod" {
        &mut object["metadata"]
    } else {
        &mut object["spec"]["template"]["metadata"]
    };
    if meta.get("annotations").is_none() {
        meta["annotations"] = json!({});
    }
    &mut meta["annotations"]
}

const DIGEST: &str = "sha256:3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f";

/// A denied case: a name, the cell, the fixture it mutates, the mutation, and the validation
/// that must deny it.
struct Case {
    name: &'static str,
    cell: &'static str,
    fixture: &'static str,
    mutate: fn(&mut Json),
    rule: &'static str,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "a GPU pod without a runtime class",
            cell: "us-east-1a",
            fixture: "acme-research-pod",
            rule: "runtime-class",
            mutate: |o| {
                pod_spec(o)
                    .as_object_mut()
                    .unwrap()
                    .remove("runtimeClassName");
            },
        },
        Case {
            name: "a soft tenant's runtime class on a hard tenant (a weaker trust class's runtime)",
            cell: "eu-west-4b",
            fixture: "acme-research-job",
            rule: "runtime-class",
            mutate: |o| pod_spec(o)["runtimeClassName"] = json!("kata-nvidia"),
        },
        Case {
            name: "a mig tenant naming the soft tenants' Kata runtime",
            cell: "eu-west-4b",
            fixture: "globex-vision-pod",
            rule: "runtime-class",
            mutate: |o| pod_spec(o)["runtimeClassName"] = json!("kata-nvidia"),
        },
        Case {
            name: "a toleration of another pool's taint",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "pool-tolerations",
            mutate: |o| {
                pod_spec(o)["tolerations"].as_array_mut().unwrap().push(json!({"key": "train-exclusive", "operator": "Equal", "value": "true", "effect": "NoSchedule"}))
            },
        },
        Case {
            name: "an Exists toleration of another pool's taint key",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-job",
            rule: "pool-tolerations",
            mutate: |o| {
                pod_spec(o)["tolerations"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"key": "train-exclusive", "operator": "Exists"}))
            },
        },
        Case {
            name: "a toleration of every taint",
            cell: "us-east-1a",
            fixture: "acme-research-job",
            rule: "pool-tolerations",
            mutate: |o| {
                pod_spec(o)["tolerations"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"operator": "Exists"}))
            },
        },
        Case {
            name: "a GPU pod without a queue",
            cell: "us-east-1a",
            fixture: "globex-vision-pod",
            rule: "local-queue",
            mutate: |o| {
                pod_labels(o)
                    .as_object_mut()
                    .unwrap()
                    .remove("kueue.x-k8s.io/queue-name");
            },
        },
        Case {
            name: "another tenant's queue name",
            cell: "us-east-1a",
            fixture: "acme-serving-job",
            rule: "local-queue",
            mutate: |o| pod_labels(o)["kueue.x-k8s.io/queue-name"] = json!("globex-vision"),
        },
        Case {
            name: "another namespace's priority class",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "priority-class",
            mutate: |o| pod_labels(o)["kueue.x-k8s.io/priority-class"] = json!("batch"),
        },
        Case {
            name: "NVIDIA_VISIBLE_DEVICES in env",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-pod",
            rule: "nvidia-env",
            mutate: |o| {
                pod_spec(o)["containers"][0]["env"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}))
            },
        },
        Case {
            name: "NVIDIA_DRIVER_CAPABILITIES in an init container",
            cell: "us-east-1a",
            fixture: "acme-research-job",
            rule: "nvidia-env",
            mutate: |o| {
                let c = pod_spec(o)["containers"][0].clone();
                let mut init = c;
                init["name"] = json!("init");
                init["env"] = json!([{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "all"}]);
                init.as_object_mut().unwrap().remove("resources");
                pod_spec(o)["initContainers"] = json!([init]);
            },
        },
        Case {
            name: "an envFrom prefix that forms NVIDIA_VISIBLE_DEVICES",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "nvidia-env-from",
            mutate: |o| {
                pod_spec(o)["containers"][0]["envFrom"]
                    .as_array_mut()
                    .unwrap()
                    .push(
                        json!({"prefix": "NVIDIA_", "configMapRef": {"name": "acme-serving-env"}}),
                    )
            },
        },
        Case {
            name: "hostNetwork on a mig tenant",
            cell: "us-east-1a",
            fixture: "globex-vision-pod",
            rule: "host-namespaces",
            mutate: |o| pod_spec(o)["hostNetwork"] = json!(true),
        },
        Case {
            name: "hostIPC on a soft tenant",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-job",
            rule: "host-namespaces",
            mutate: |o| pod_spec(o)["hostIPC"] = json!(true),
        },
        Case {
            name: "RDMA devices on a mig tenant",
            cell: "us-east-1a",
            fixture: "acme-serving-job",
            rule: "rdma-devices",
            mutate: |o| {
                pod_spec(o)["containers"][0]["resources"]["limits"]["rdma/hca_shared_devices_a"] =
                    json!(1)
            },
        },
        Case {
            name: "another tenant's registry",
            cell: "us-east-1a",
            fixture: "acme-research-pod",
            rule: "images",
            mutate: |o| {
                pod_spec(o)["containers"][0]["image"] =
                    json!(format!("registry.globex.example/vision/worker@{DIGEST}"))
            },
        },
        Case {
            name: "a registry that only starts like the tenant's",
            cell: "us-east-1a",
            fixture: "acme-research-pod",
            rule: "images",
            mutate: |o| {
                pod_spec(o)["containers"][0]["image"] = json!(format!(
                    "registry.acme.internal/research-evil/worker@{DIGEST}"
                ))
            },
        },
        Case {
            name: "an image pinned by tag only",
            cell: "eu-west-4b",
            fixture: "globex-vision-job",
            rule: "images",
            mutate: |o| {
                pod_spec(o)["containers"][0]["image"] =
                    json!("registry.globex.example/vision/worker:latest")
            },
        },
        Case {
            name: "weights without the digest annotation",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "weight-digest",
            mutate: |o| {
                pod_spec(o)["volumes"].as_array_mut().unwrap().push(json!({"name": "weights", "persistentVolumeClaim": {"claimName": "acme-serving-weights", "readOnly": true}}))
            },
        },
        Case {
            name: "another tenant's weight digest",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "weight-digest",
            mutate: |o| {
                pod_annotations(o)["tenantc.io/weight-digest"] =
                    json!("sha256:0badbadbadbadbadbadbadbadbadbadbadbadbadbadbadbadbadbadbadbadbad")
            },
        },
        Case {
            name: "a writable weight volume",
            cell: "us-east-1a",
            fixture: "acme-research-job",
            rule: "weight-volumes-read-only",
            mutate: |o| {
                pod_spec(o)["containers"][0]["volumeMounts"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "weights-llama", "mountPath": "/weights"}))
            },
        },
        Case {
            name: "a hostPath volume",
            cell: "eu-west-4b",
            fixture: "acme-research-pod",
            rule: "host-path",
            mutate: |o| {
                pod_spec(o)["volumes"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "host", "hostPath": {"path": "/var/lib"}}))
            },
        },
        Case {
            name: "another tenant's PVC",
            cell: "us-east-1a",
            fixture: "acme-serving-job",
            rule: "own-references",
            mutate: |o| {
                pod_spec(o)["volumes"][0]["persistentVolumeClaim"]["claimName"] =
                    json!("globex-vision-scratch")
            },
        },
        Case {
            name: "a Secret without the tenant prefix in env",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-pod",
            rule: "own-references",
            mutate: |o| {
                pod_spec(o)["containers"][0]["env"].as_array_mut().unwrap().push(json!({"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "platform-token", "key": "t"}}}))
            },
        },
        Case {
            name: "another tenant's Secret as a volume",
            cell: "us-east-1a",
            fixture: "acme-research-pod",
            rule: "own-references",
            mutate: |o| {
                pod_spec(o)["volumes"].as_array_mut().unwrap().push(
                    json!({"name": "creds", "secret": {"secretName": "acme-serving-credentials"}}),
                )
            },
        },
        Case {
            name: "a foreign pull secret",
            cell: "us-east-1a",
            fixture: "globex-vision-job",
            rule: "own-references",
            mutate: |o| pod_spec(o)["imagePullSecrets"] = json!([{"name": "acme-research-pull"}]),
        },
        Case {
            name: "a foreign Secret in a projected volume",
            cell: "eu-west-4b",
            fixture: "globex-vision-pod",
            rule: "own-references",
            mutate: |o| {
                pod_spec(o)["volumes"].as_array_mut().unwrap().push(json!({"name": "p", "projected": {"sources": [{"secret": {"name": "globex-vision-ok"}}, {"secret": {"name": "acme-research-keys"}}]}}))
            },
        },
        Case {
            name: "the training ServiceAccount in an inference namespace",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "training-service-account",
            mutate: |o| pod_spec(o)["serviceAccountName"] = json!("finetuner"),
        },
        Case {
            name: "a missing tenant label",
            cell: "us-east-1a",
            fixture: "acme-research-pod",
            rule: "chargeback-labels",
            mutate: |o| {
                pod_labels(o)
                    .as_object_mut()
                    .unwrap()
                    .remove("tenant.platform/tenant");
            },
        },
        Case {
            name: "another tenant's chargeback label",
            cell: "eu-west-4b",
            fixture: "globex-vision-job",
            rule: "chargeback-labels",
            mutate: |o| pod_labels(o)["tenant.platform/tenant"] = json!("acme-research"),
        },
        Case {
            name: "a GPU SKU the tenant does not use",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-pod",
            rule: "chargeback-labels",
            mutate: |o| pod_labels(o)["tenant.platform/sku"] = json!("A100-80GB-SXM"),
        },
        Case {
            name: "a prompt label",
            cell: "us-east-1a",
            fixture: "acme-serving-pod",
            rule: "forbidden-labels",
            mutate: |o| pod_labels(o)["example.com/Prompt"] = json!("hello"),
        },
        Case {
            name: "a user email label",
            cell: "eu-west-4b",
            fixture: "initech-notebooks-job",
            rule: "forbidden-labels",
            mutate: |o| pod_labels(o)["user-email"] = json!("someone.example.com"),
        },
    ]
}

fn fixture(name: &str, cell: &str) -> Json {
    let path = Path::new(ROOT).join(format!("tests/policy/admitted/{cell}/{name}.yaml"));
    policy::object_from_yaml(&fs::read_to_string(&path).unwrap()).unwrap()
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
    for rule in RULES {
        assert!(
            cases.iter().any(|case| case.rule == rule.name),
            "no denied case for {}",
            rule.name
        );
    }
}

/// The policy with one validation replaced, evaluated on every denied case; returns the cases
/// that the weakened policy admits.
fn escaped_cases(
    plan: &Plan,
    weaken: impl Fn(&mut k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy),
) -> Vec<&'static str> {
    let mut policy = admission::policy();
    weaken(&mut policy);
    let mut escaped = Vec::new();
    for case in cases() {
        let cell = cell(plan, case.cell);
        let mut object = fixture(case.fixture, case.cell);
        (case.mutate)(&mut object);
        let namespace = namespace_of(&object);
        let tenant = cell
            .tenants
            .iter()
            .find(|t| t.namespaces.iter().any(|ns| ns.name == namespace))
            .unwrap();
        let outcome = policy::evaluate(
            &policy,
            &admission::binding(tenant),
            Some(&admission::params_config_map(tenant, cell)),
            &Request::create(&namespace, object),
        );
        if !outcome.is_denied() {
            escaped.push(case.name);
        }
    }
    escaped
}

#[test]
fn weakening_any_validation_lets_a_denied_case_through() {
    let plan = plan();
    assert!(escaped_cases(&plan, |_| {}).is_empty());
    for (idx, rule) in RULES.iter().enumerate() {
        let escaped = escaped_cases(&plan, |policy| {
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
    let research = cell
        .tenants
        .iter()
        .find(|t| t.name == "acme-research")
        .unwrap();
    let vision = cell
        .tenants
        .iter()
        .find(|t| t.name == "globex-vision")
        .unwrap();
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
    let research = cell
        .tenants
        .iter()
        .find(|t| t.name == "acme-research")
        .unwrap();
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
