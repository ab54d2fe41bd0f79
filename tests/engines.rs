//! The tenant floor as the policy engines run it (issue 22 item 3): Gatekeeper's `gator` and
//! Kyverno's CLI judge every fixture of `tests/policy/` with the floor tenantc translates for
//! them, and Kyverno's CLI judges the ValidatingAdmissionPolicy floor itself; each verdict must
//! equal the in-process evaluator's verdict on the ValidatingAdmissionPolicy floor
//! (`tenantc::policy`, what `tests/policy.rs` and `tenantc test-policy` run), fixture by fixture.
//!
//! Consumes: the frozen fixture fleet (`tests/fixtures/fleet/`, compiled in memory) and its
//! Volcano and DRA variants, the fixtures and cases of `tests/policy/cases.rs` (admitted
//! objects, denied objects, denied updates and deletes), of `tests/policy/volcano_cases.rs`
//! (pods and PodGroups) and of `tests/policy/dra_cases.rs` (ResourceClaims, templates and DRA
//! pods), and the CLIs `tests/engines/install.sh` builds (`$TENANTC_GATOR` and
//! `$TENANTC_KYVERNO`, else `${TENANTC_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tenantc-tools}/bin/`).
//! Produces: a line per engine with the fixtures judged, agreed and the time taken; fails on
//! the first engine whose verdicts differ, listing every differing fixture. Without the CLIs
//! the tests fail under `CI=true` (unless `TENANTC_ENGINES_DEFERRED=1`: `.ci/run`'s engines
//! step builds them and runs this binary again) and print a skip line otherwise.
//!
//! The floor is every policy of `admission::floor_policies` for the fixture's cell, each with the
//! tenant's binding of it from `admission::tenant_bindings`, so a floor policy added there is
//! judged by both engines without a change here; the fixtures are every file and case
//! `tests/policy/cases.rs` lists.
//!
//! What each engine is given: gator judges `AdmissionReview`s (`gator verify`), so it sees every
//! request as the API server sends it: operation, user, old object and options; it is compared
//! policy by policy (which floor policies deny each fixture). Kyverno's CLI (`kyverno apply`)
//! judges an object with a user only, with the old object of an UPDATE equal to the new one and
//! no DELETE options, so it judges the CREATE fixtures; it judges all fixtures of one tenant in
//! one run (the objects renamed apart, which must not change the floor's verdict), and is
//! compared policy by policy and by the index of the first validation that denies.
//!
//! A self-test translates the floor with one validation made to admit everything and shows
//! that the comparison fails.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stdout
)] // Test code: a panic is a failed test, and the skip line and figures are its report.

#[path = "policy/cases.rs"]
mod policy_cases;

#[path = "policy/volcano_cases.rs"]
mod volcano_cases;

#[path = "policy/dra_cases.rs"]
mod dra_cases;

mod support;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use policy_cases::{
    PINNED_WEIGHTS, admitted_fixtures, cases, delete_cases, fixture, namespace_of, ownership_cases,
    update_cases,
};
use serde_json::{Value as Json, json};
use tenantc::lower::{admission, engines};
use tenantc::plan::{CellPlan, Plan, TenantPlan};

/// The fleets the fixtures are judged in: the frozen fixture fleet, its variant with
/// `eu-west-4b` on Volcano (`tests/policy/volcano_cases.rs`) and its variant with `us-east-1a` on
/// DRA (`tests/policy/dra_cases.rs`). A fixture names its cell as `<cell>`, `volcano:<cell>` or
/// `dra:<cell>`, and [`cell`] finds it in its fleet.
struct Plans {
    frozen: Plan,
    volcano: Plan,
    dra: Plan,
}
use tenantc::policy::{self, Outcome, Request};

/// One request of the policy fixtures, with where it comes from.
struct Fixture {
    /// A unique name (`<n>-<what>`).
    name: String,
    /// The cell of the fixture.
    cell: String,
    /// The request.
    request: Request,
}

fn compiled(root: &Path, what: &str) -> Plan {
    let compilation = support::compile_root(root);
    assert!(compilation.output.is_some(), "{what} compiles");
    compilation.plan.unwrap()
}

fn plan() -> Plans {
    let volcano = tempfile::tempdir().unwrap();
    volcano_cases::write_variant(volcano.path());
    let dra = tempfile::tempdir().unwrap();
    dra_cases::write_variant(dra.path());
    Plans {
        frozen: compiled(&support::fleet(), "the fixture fleet"),
        volcano: compiled(volcano.path(), "the Volcano variant"),
        dra: compiled(dra.path(), "the DRA variant"),
    }
}

fn cell<'a>(plans: &'a Plans, label: &str) -> &'a CellPlan {
    let (plan, name) = match label.split_once(':') {
        Some(("volcano", name)) => (&plans.volcano, name),
        Some(("dra", name)) => (&plans.dra, name),
        _ => (&plans.frozen, label),
    };
    plan.cells.iter().find(|cell| cell.name == name).unwrap()
}

fn tenant_of<'a>(cell: &'a CellPlan, namespace: &str) -> &'a TenantPlan {
    cell.tenants
        .iter()
        .find(|t| t.namespaces.iter().any(|ns| ns.name == namespace))
        .unwrap_or_else(|| panic!("no tenant owns namespace {namespace}"))
}

/// The tenant's params with [`PINNED_WEIGHTS`] pinned, as `tests/policy.rs` judges with them.
fn pinned(tenant: &TenantPlan, cell: &CellPlan) -> BTreeMap<String, String> {
    let mut params = tenantc::plan::admission::params(tenant, cell);
    params.insert("weightDigests".to_string(), PINNED_WEIGHTS.to_string());
    params
}

fn member_group(cell: &CellPlan, namespace: &str) -> String {
    tenant_of(cell, namespace).groups[&tenantc::model::TenantRole::Member].clone()
}

/// Every request of the policy fixtures: each admitted fixture and each denied object created
/// by a member of its tenant, each denied update and each denied delete by a member.
fn fixtures(plan: &Plans) -> Vec<Fixture> {
    let mut out = Vec::new();
    let mut push = |what: String, cell_name: &str, request: Request| {
        let name = format!("{:03}-{}", out.len(), slug(&what));
        out.push(Fixture {
            name,
            cell: cell_name.to_string(),
            request,
        });
    };
    let member_create = |cell_name: &str, object: Json| {
        let namespace = namespace_of(&object);
        let mut request = Request::create(&namespace, object);
        request.groups = vec![member_group(cell(plan, cell_name), &namespace)];
        request
    };
    for (cell_name, path, object) in admitted_fixtures() {
        let what = path.file_stem().unwrap().to_string_lossy().to_string();
        push(what, &cell_name, member_create(&cell_name, object));
    }
    for case in cases() {
        let mut object = fixture(case.fixture, case.cell);
        (case.mutate)(&mut object);
        push(
            case.name.to_string(),
            case.cell,
            member_create(case.cell, object),
        );
    }
    for case in update_cases().into_iter().chain(ownership_cases()) {
        let mut before = fixture(case.fixture, case.cell);
        (case.before)(&mut before);
        let mut after = fixture(case.fixture, case.cell);
        (case.after)(&mut after);
        let mut request = member_create(case.cell, after);
        request.operation = "UPDATE".to_string();
        request.old_object = Some(before);
        push(case.name.to_string(), case.cell, request);
    }
    for case in delete_cases() {
        let object = fixture(case.fixture, case.cell);
        let namespace = namespace_of(&object);
        let mut request = Request::delete(&namespace, object, (case.options)());
        request.groups = vec![member_group(cell(plan, case.cell), &namespace)];
        push(case.name.to_string(), case.cell, request);
    }
    // The Volcano cell's pods and PodGroups, judged by its floor and PodGroup policy.
    let volcano = format!("volcano:{}", volcano_cases::CELL);
    for (name, object) in volcano_cases::admitted() {
        push(
            format!("volcano {name}"),
            &volcano,
            member_create(&volcano, object),
        );
    }
    for case in volcano_cases::cases() {
        let (before, after) = volcano_cases::objects(&case);
        let mut request = member_create(&volcano, after);
        if let Some(before) = before {
            request.operation = "UPDATE".to_string();
            request.old_object = Some(before);
        }
        push(format!("volcano {}", case.name), &volcano, request);
    }
    // The DRA cell's claims, templates and DRA pods, judged by its floor and device claims
    // policy.
    let dra = format!("dra:{}", dra_cases::CELL);
    for (name, object) in dra_cases::admitted() {
        push(format!("dra {name}"), &dra, member_create(&dra, object));
    }
    for case in dra_cases::cases() {
        push(
            format!("dra {}", case.name),
            &dra,
            member_create(&dra, dra_cases::object(&case)),
        );
    }
    out
}

fn slug(text: &str) -> String {
    let mut slug = String::new();
    for ch in text.chars() {
        if ch.is_ascii_alphanumeric() {
            slug.push(ch.to_ascii_lowercase());
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.trim_matches('-').chars().take(60).collect()
}

/// What the floor or an engine says of one request: each floor policy that denies it (by name),
/// with the index of its first validation that does (`None` where that is not known or not
/// compared); empty when the request is admitted.
type Denials = BTreeMap<String, Option<usize>>;

/// A tenant's floor: each policy of `admission::floor_policies` for its cell, with the tenant's
/// binding of it, and with the validation `weakened` of the tenant floor policy made to admit
/// everything (for the self-tests).
fn floor(
    cell: &CellPlan,
    tenant: &TenantPlan,
    weakened: Option<&str>,
) -> Vec<(ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding)> {
    let scheduler = cell.backends.scheduler;
    let devices = cell.backends.devices;
    let policies = admission::floor_policies(scheduler, devices);
    let bindings = admission::tenant_bindings(tenant, scheduler, devices);
    assert_eq!(
        policies.len(),
        bindings.len(),
        "tenant {} has one binding per floor policy",
        tenant.name
    );
    policies
        .into_iter()
        .map(|mut policy| {
            let name = policy.metadata.name.clone().unwrap();
            let binding = bindings
                .iter()
                .find(|binding| {
                    binding
                        .spec
                        .as_ref()
                        .and_then(|spec| spec.policy_name.as_deref())
                        == Some(name.as_str())
                })
                .unwrap_or_else(|| panic!("tenant {} has no binding of {name}", tenant.name))
                .clone();
            if let Some(rule) = weakened
                && name == admission::POLICY_NAME
            {
                let idx = admission::rules(scheduler)
                    .iter()
                    .position(|candidate| candidate.name == rule)
                    .unwrap();
                policy.spec.as_mut().unwrap().validations.as_mut().unwrap()[idx].expression =
                    "true".to_string();
            }
            (policy, binding)
        })
        .collect()
}

/// The in-process verdict of the ValidatingAdmissionPolicy floor on `request` (of the fixture
/// `name`): the policies that deny it, each with its first denying validation.
fn floor_denials(plan: &Plans, name: &str, cell_name: &str, request: &Request) -> Denials {
    let cell = cell(plan, cell_name);
    let tenant = tenant_of(cell, &request.namespace);
    let mut params = admission::params_config_map(tenant, cell);
    params.data = Some(pinned(tenant, cell));
    let mut denials = Denials::new();
    let mut judged = false;
    for (policy, binding) in floor(cell, tenant, None) {
        match policy::evaluate(&policy, &binding, Some(&params), request) {
            Outcome::Denied(list) => {
                judged = true;
                denials.insert(
                    policy.metadata.name.clone().unwrap(),
                    list.first().and_then(|denial| denial.validation),
                );
            }
            Outcome::Admitted => judged = true,
            Outcome::NotMatched(_) => {}
        }
    }
    assert!(judged, "{name}: no policy of the floor judges it");
    denials
}

/// The floor's verdicts on `fixtures`, by fixture name.
fn expected_of<'a>(
    plan: &Plans,
    fixtures: impl IntoIterator<Item = &'a Fixture>,
) -> BTreeMap<String, Denials> {
    fixtures
        .into_iter()
        .map(|fixture| {
            (
                fixture.name.clone(),
                floor_denials(plan, &fixture.name, &fixture.cell, &fixture.request),
            )
        })
        .collect()
}

/// A CLI's path, or `None` (with the skip line printed) when it is absent outside CI.
fn tool(name: &str, variable: &str) -> Option<PathBuf> {
    let path = match std::env::var_os(variable) {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => {
            let cache = match std::env::var_os("TENANTC_TOOLS_CACHE") {
                Some(root) if !root.is_empty() => PathBuf::from(root),
                _ => match std::env::var_os("XDG_CACHE_HOME") {
                    Some(root) if !root.is_empty() => PathBuf::from(root).join("tenantc-tools"),
                    _ => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                        .join(".cache/tenantc-tools"),
                },
            };
            cache.join("bin").join(name)
        }
    };
    if path.is_file() {
        return Some(path);
    }
    let message = format!(
        "{name} not found at {}; build it with `bash tests/engines/install.sh`",
        path.display()
    );
    // `.ci/run` sets TENANTC_ENGINES_DEFERRED=1 in its test step: its engines step builds the
    // CLIs and runs this binary again, where a missing CLI fails.
    let deferred = std::env::var("TENANTC_ENGINES_DEFERRED").as_deref() == Ok("1");
    assert!(
        deferred || std::env::var("CI").as_deref() != Ok("true"),
        "{message}"
    );
    println!("SKIPPED {name} tests: {message}");
    None
}

/// The API resource of an object's kind, from the translation's own table.
fn resource_of(object: &Json) -> (String, String, String) {
    let api_version = object["apiVersion"].as_str().unwrap();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = object["kind"].as_str().unwrap();
    let (_, resource, _) = engines::KINDS
        .iter()
        .find(|(g, r, k)| *g == group && *k == kind && !r.contains('/'))
        .unwrap_or_else(|| panic!("no resource for {api_version} {kind}"));
    (
        group.to_string(),
        version.to_string(),
        (*resource).to_string(),
    )
}

/// The `AdmissionReview` the API server would send for a request.
fn admission_review(request: &Request) -> Json {
    let object = if request.object.is_null() {
        request.old_object.clone().unwrap()
    } else {
        request.object.clone()
    };
    let (group, version, resource) = resource_of(&object);
    let mut inner = json!({
        "uid": "00000000-0000-0000-0000-000000000000",
        "kind": {"group": group, "version": version, "kind": object["kind"]},
        "resource": {"group": group, "version": version, "resource": resource},
        "name": object["metadata"]["name"],
        "namespace": request.namespace,
        "operation": request.operation,
        "userInfo": {"username": request.username, "groups": request.groups},
    });
    if !request.object.is_null() {
        inner["object"] = request.object.clone();
    }
    if let Some(old) = &request.old_object {
        inner["oldObject"] = old.clone();
    }
    if let Some(options) = &request.options {
        let mut options = options.clone();
        options["apiVersion"] = json!("meta.k8s.io/v1");
        options["kind"] = json!("DeleteOptions");
        inner["options"] = options;
    }
    if let Some(subresource) = &request.subresource {
        inner["subResource"] = json!(subresource);
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": inner})
}

fn write_json(path: &Path, value: &impl serde::Serialize) {
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

/// The verdicts gator gives on `fixtures` with the floor translated (its validation `weakened`
/// made to admit everything, if any): one test per floor policy and tenant, with one case per
/// fixture that asserts whether the floor's policy denies it.
fn gator_verdicts(
    gator: &Path,
    plan: &Plans,
    fixtures: &[Fixture],
    weakened: Option<&str>,
    expected: &BTreeMap<String, Denials>,
) -> BTreeMap<String, Denials> {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<&str> = tenantc::plan::admission::ParamKey::ALL
        .iter()
        .map(|key| key.as_str())
        .collect();
    let mut tenants: BTreeMap<(String, String), Vec<&Fixture>> = BTreeMap::new();
    for fixture in fixtures {
        let tenant = tenant_of(cell(plan, &fixture.cell), &fixture.request.namespace);
        tenants
            .entry((fixture.cell.clone(), tenant.name.clone()))
            .or_default()
            .push(fixture);
    }
    for fixture in fixtures {
        write_json(
            &dir.path().join(format!("{}.yaml", fixture.name)),
            &admission_review(&fixture.request),
        );
    }
    // Every case gator must report, as `<fixture>@<policy>`.
    let mut cases_asked = BTreeMap::new();
    let mut suite_tests = Vec::new();
    for ((cell_name, tenant_name), members) in &tenants {
        let cell = cell(plan, cell_name);
        let tenant = cell
            .tenants
            .iter()
            .find(|t| &t.name == tenant_name)
            .unwrap();
        for (policy, binding) in floor(cell, tenant, weakened) {
            let policy_name = policy.metadata.name.clone().unwrap();
            let template = engines::gatekeeper_template(&policy, keys.iter().copied()).unwrap();
            let template_file = format!("template-{cell_name}-{tenant_name}-{policy_name}.yaml");
            write_json(&dir.path().join(&template_file), &template);
            let constraint = engines::gatekeeper_constraint(
                &policy,
                &template,
                &binding,
                Some(&pinned(tenant, cell)),
            )
            .unwrap();
            let constraint_file =
                format!("constraint-{cell_name}-{tenant_name}-{policy_name}.yaml");
            write_json(&dir.path().join(&constraint_file), &constraint);
            let mut cases = Vec::new();
            for fixture in members {
                // The assertion is the floor's own verdict: gator passes a case when it agrees.
                let denies = expected[&fixture.name].contains_key(&policy_name);
                let case = format!("{}@{policy_name}", fixture.name);
                cases.push(json!({
                    "name": case,
                    "object": format!("{}.yaml", fixture.name),
                    "assertions": [{"violations": if denies { "yes" } else { "no" }}],
                }));
                cases_asked.insert(case, (fixture.name.clone(), policy_name.clone(), denies));
            }
            suite_tests.push(json!({
                "name": format!("{policy_name}-{cell_name}-{tenant_name}"),
                "template": template_file,
                "constraint": constraint_file,
                "cases": cases,
            }));
        }
    }
    write_json(
        &dir.path().join("suite.yaml"),
        &json!({"apiVersion": "test.gatekeeper.sh/v1alpha1", "kind": "Suite", "tests": suite_tests}),
    );
    let output = Command::new(gator)
        .args(["verify", "-v", "suite.yaml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // `gator verify -v` prints one `=== RUN` line per case and a `--- PASS` or `--- FAIL` line
    // after it; a failed case is one whose verdict differs from the floor's.
    let mut verdicts: BTreeMap<String, Denials> = BTreeMap::new();
    let mut reported: BTreeMap<String, usize> = BTreeMap::new();
    for line in stdout.lines() {
        let line = line.trim();
        let (passed, rest) = if let Some(rest) = line.strip_prefix("--- PASS: ") {
            (true, rest)
        } else if let Some(rest) = line.strip_prefix("--- FAIL: ") {
            (false, rest)
        } else {
            continue;
        };
        let case = rest.split_whitespace().next().unwrap_or_default();
        if let Some((fixture, policy_name, floor_denies)) = cases_asked.get(case) {
            *reported.entry(fixture.clone()).or_default() += 1;
            let denials = verdicts.entry(fixture.clone()).or_default();
            if passed == *floor_denies {
                denials.insert(policy_name.clone(), None);
            }
        }
    }
    assert!(
        !verdicts.is_empty(),
        "gator verify judged nothing:\n{stdout}\n{stderr}"
    );
    // A fixture gator did not judge under every policy has no verdict.
    let mut asked: BTreeMap<&str, usize> = BTreeMap::new();
    for (fixture, _, _) in cases_asked.values() {
        *asked.entry(fixture).or_default() += 1;
    }
    verdicts.retain(|fixture, _| reported.get(fixture) == asked.get(fixture.as_str()));
    verdicts
}

/// The fixtures whose verdicts differ, as a report: by the policies that deny each, and, with
/// `by_validation`, by the first validation of each that denies.
fn differences(
    fixtures: &[&Fixture],
    expected: &BTreeMap<String, Denials>,
    verdicts: &BTreeMap<String, Denials>,
    by_validation: bool,
) -> String {
    let shown = |denials: &Denials| -> String {
        if denials.is_empty() {
            return "admits it".to_string();
        }
        let list: Vec<String> = denials
            .iter()
            .map(|(policy_name, validation)| match validation {
                Some(idx) if by_validation => format!("{policy_name} validation {idx}"),
                _ => policy_name.clone(),
            })
            .collect();
        format!("denies it by {}", list.join(", "))
    };
    let compared = |denials: &Denials| -> Denials {
        denials
            .iter()
            .map(|(policy_name, validation)| {
                (policy_name.clone(), validation.filter(|_| by_validation))
            })
            .collect()
    };
    let mut report = String::new();
    for fixture in fixtures {
        let floor = &expected[&fixture.name];
        match verdicts.get(&fixture.name) {
            Some(engine) if compared(engine) == compared(floor) => {}
            Some(engine) => {
                let _ = writeln!(
                    report,
                    "{}: the floor {}, the engine {}",
                    fixture.name,
                    shown(floor),
                    shown(engine)
                );
            }
            None => {
                let _ = writeln!(report, "{}: the engine gave no verdict", fixture.name);
            }
        }
    }
    report
}

#[test]
fn gator_judges_every_policy_fixture_as_the_floor_does() {
    let Some(gator) = tool("gator", "TENANTC_GATOR") else {
        return;
    };
    let plan = plan();
    let fixtures = fixtures(&plan);
    let all: Vec<&Fixture> = fixtures.iter().collect();
    let expected = expected_of(&plan, &fixtures);
    let started = Instant::now();
    let verdicts = gator_verdicts(&gator, &plan, &fixtures, None, &expected);
    let report = differences(&all, &expected, &verdicts, false);
    let denied = expected
        .values()
        .filter(|denials| !denials.is_empty())
        .count();
    println!(
        "gator: {} fixtures ({} admitted, {denied} denied by the floor), {} agree, in {:.1} s",
        fixtures.len(),
        fixtures.len() - denied,
        fixtures.len() - report.lines().count(),
        started.elapsed().as_secs_f64()
    );
    assert!(report.is_empty(), "gator differs from the floor:\n{report}");
    assert_eq!(verdicts.len(), fixtures.len());

    // Self-test: with `images` translated to admit everything, gator admits what the floor
    // denies, and the comparison says so.
    let verdicts = gator_verdicts(&gator, &plan, &fixtures, Some("images"), &expected);
    let report = differences(&all, &expected, &verdicts, false);
    assert!(
        !report.is_empty(),
        "a weakened images validation went unnoticed"
    );
}

/// YAML documents of `values`, as JSON (which YAML reads), separated by `---`.
fn documents(values: &[Json]) -> String {
    values
        .iter()
        .map(|value| serde_json::to_string(value).unwrap())
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// The user of a request, as `kyverno apply --userinfo` reads it.
fn userinfo(request: &Request) -> Json {
    json!({
        "apiVersion": "cli.kyverno.io/v1alpha1",
        "kind": "UserInfo",
        "metadata": {"name": "member"},
        "userInfo": {"username": request.username, "groups": request.groups},
    })
}

/// The labels the API server puts on namespaces, as `kyverno apply --values-file` reads them.
fn namespace_values<'a>(namespaces: impl IntoIterator<Item = &'a str>) -> Json {
    let selectors: Vec<Json> = namespaces
        .into_iter()
        .map(|namespace| {
            json!({"name": namespace, "labels": {"kubernetes.io/metadata.name": namespace}})
        })
        .collect();
    json!({
        "apiVersion": "cli.kyverno.io/v1alpha1",
        "kind": "Values",
        "namespaceSelector": selectors,
    })
}

/// The vendored CRD of an object's kind, `schema/crds/<project>/<group>_<resource>.yaml`, if
/// its kind is a custom resource.
fn crd_of(object: &Json) -> Option<PathBuf> {
    let (group, _, resource) = resource_of(object);
    let file = format!("{group}_{resource}.yaml");
    let root = support::repo().join("schema/crds");
    let mut projects: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    projects.sort();
    projects
        .into_iter()
        .map(|project| project.join(&file))
        .find(|path| path.is_file())
}

/// `request` with its object renamed `<name>-<idx>`, so that the objects of many fixtures can
/// be judged in one `kyverno apply` (which refuses two objects of one name) and each result read
/// back by name.
fn renamed(request: &Request, idx: usize) -> (Request, String) {
    let mut request = request.clone();
    let mut name = String::new();
    for object in [Some(&mut request.object), request.old_object.as_mut()]
        .into_iter()
        .flatten()
    {
        if let Some(old) = object["metadata"]["name"].as_str() {
            name = format!("{old}-{idx:03}");
            object["metadata"]["name"] = json!(name);
        }
    }
    assert!(!name.is_empty(), "a fixture object without a name");
    (request, name)
}

/// The verdicts of the Kyverno CLI on `fixtures` (CREATE requests) and the number of runs: with
/// `translated`, on the floor translated into ValidatingPolicies; without, on the
/// ValidatingAdmissionPolicy floor itself, its bindings and its params. One `kyverno apply` per
/// tenant and user judges all of their fixtures; its policy report names each object, each
/// policy and, for a denial, the index of the validation that failed.
fn kyverno_verdicts(
    kyverno: &Path,
    plan: &Plans,
    fixtures: &[&Fixture],
    weakened: Option<&str>,
    translated: bool,
) -> (BTreeMap<String, Denials>, usize) {
    let dir = tempfile::tempdir().unwrap();
    // The runs: fixtures (with their index, which names their objects apart) by cell, tenant
    // and user (one `--userinfo` per run).
    type Run<'a> = Vec<(usize, &'a Fixture)>;
    let mut runs: BTreeMap<(String, String, String), Run> = BTreeMap::new();
    for (idx, fixture) in fixtures.iter().enumerate() {
        assert_eq!(fixture.request.operation, "CREATE", "{}", fixture.name);
        let tenant = tenant_of(cell(plan, &fixture.cell), &fixture.request.namespace);
        runs.entry((
            fixture.cell.clone(),
            tenant.name.clone(),
            userinfo(&fixture.request).to_string(),
        ))
        .or_default()
        .push((idx, fixture));
    }
    let mut verdicts: BTreeMap<String, Denials> = BTreeMap::new();
    for (run, ((cell_name, tenant_name, _), members)) in runs.iter().enumerate() {
        let run_dir = dir.path().join(format!("run-{run}"));
        std::fs::create_dir(&run_dir).unwrap();
        let cell = cell(plan, cell_name);
        let tenant = cell
            .tenants
            .iter()
            .find(|t| &t.name == tenant_name)
            .unwrap();
        let params = pinned(tenant, cell);
        // Every name a result may give its policy (the translated policy is named as the
        // binding), to the floor policy's name.
        let mut policy_names = BTreeMap::new();
        let mut policies = Vec::new();
        // The resources each policy's `matchConstraints` names, as `(group, resource)`.
        let mut matched: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for (policy, binding) in floor(cell, tenant, weakened) {
            let policy_name = policy.metadata.name.clone().unwrap();
            let rules = policy
                .spec
                .as_ref()
                .and_then(|spec| spec.match_constraints.as_ref())
                .and_then(|constraints| constraints.resource_rules.clone())
                .unwrap_or_default();
            for rule in rules {
                for group in rule.api_groups.unwrap_or_default() {
                    for resource in rule.resources.clone().unwrap_or_default() {
                        matched
                            .entry(policy_name.clone())
                            .or_default()
                            .push((group.clone(), resource));
                    }
                }
            }
            policy_names.insert(policy_name.clone(), policy_name.clone());
            policy_names.insert(binding.metadata.name.clone().unwrap(), policy_name);
            if translated {
                let translated = engines::kyverno_policy(&policy, &binding, Some(&params)).unwrap();
                policies.push(serde_json::to_value(translated).unwrap());
            } else {
                policies.push(serde_json::to_value(&policy).unwrap());
                policies.push(serde_json::to_value(&binding).unwrap());
            }
        }
        std::fs::write(run_dir.join("policy.yaml"), documents(&policies)).unwrap();
        if !translated {
            let mut config_map = admission::params_config_map(tenant, cell);
            config_map.data = Some(params.clone());
            std::fs::write(
                run_dir.join("params.yaml"),
                documents(&[serde_json::to_value(&config_map).unwrap()]),
            )
            .unwrap();
        }
        // The objects, renamed apart; the floor must judge each renamed object as it judges
        // the fixture.
        let mut by_object = BTreeMap::new();
        let mut objects = Vec::new();
        let mut namespaces = std::collections::BTreeSet::new();
        for (idx, fixture) in members {
            let (request, object_name) = renamed(&fixture.request, *idx);
            assert_eq!(
                floor_denials(plan, &fixture.name, &fixture.cell, &request),
                floor_denials(plan, &fixture.name, &fixture.cell, &fixture.request),
                "{}: renamed {object_name} for the Kyverno CLI, the floor judges it otherwise",
                fixture.name
            );
            let (group, _, resource) = resource_of(&request.object);
            by_object.insert(
                (request.namespace.clone(), object_name),
                (fixture.name.clone(), (group, resource)),
            );
            namespaces.insert(request.namespace.clone());
            objects.push(request.object);
        }
        std::fs::write(run_dir.join("resources.yaml"), documents(&objects)).unwrap();
        std::fs::write(
            run_dir.join("user.yaml"),
            documents(&[userinfo(&members[0].1.request)]),
        )
        .unwrap();
        std::fs::write(
            run_dir.join("values.yaml"),
            documents(&[namespace_values(namespaces.iter().map(String::as_str))]),
        )
        .unwrap();
        // The CRDs of the objects' kinds that the API server does not serve itself (Volcano's
        // PodGroup), which the CLI needs to map a kind to its resource, from `schema/crds/`.
        let crds: std::collections::BTreeSet<PathBuf> = objects.iter().filter_map(crd_of).collect();
        let crd_paths = crds
            .iter()
            .map(|path| path.display().to_string())
            .collect::<Vec<_>>()
            .join(",");
        let mut args = vec![
            "apply",
            "policy.yaml",
            "--resource",
            "resources.yaml",
            "--userinfo",
            "user.yaml",
            "--values-file",
            "values.yaml",
            "--policy-report",
            "--output-format",
            "json",
            "--remove-color",
        ];
        if !translated {
            args.extend(["--parameter-resource", "params.yaml"]);
        }
        if !crd_paths.is_empty() {
            args.extend(["--crd-paths", crd_paths.as_str()]);
        }
        let output = Command::new(kyverno)
            .args(&args)
            .current_dir(&run_dir)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let context = || format!("kyverno {}:\n{stdout}\n{stderr}", args.join(" "));
        // The reports, JSON documents separated by `---` lines; each result names its policy,
        // its object and its outcome.
        let text: String = stdout
            .lines()
            .filter(|line| line.trim() != "---")
            .collect::<Vec<_>>()
            .join("\n");
        let mut results = 0;
        for report in serde_json::Deserializer::from_str(&text).into_iter::<Json>() {
            let report = report.unwrap_or_else(|error| panic!("{error} in {}", context()));
            for result in report["results"].as_array().into_iter().flatten() {
                results += 1;
                let policy_name = result["policy"].as_str().unwrap_or_default();
                let policy_name = policy_names
                    .get(policy_name)
                    .unwrap_or_else(|| panic!("unknown policy {policy_name} in {}", context()));
                let resource = &result["resources"][0];
                let key = (
                    resource["namespace"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    resource["name"].as_str().unwrap_or_default().to_string(),
                );
                let (fixture, resource) = by_object
                    .get(&key)
                    .unwrap_or_else(|| panic!("unknown object {key:?} in {}", context()));
                // Without a cluster, Kyverno's CLI matches a ValidatingAdmissionPolicy by its
                // binding only, never by the policy's `matchConstraints`
                // (`processVAPWithoutClient` in `pkg/admissionpolicy/validate.go`), so it judges
                // every object with every policy; the API server judges an object only with the
                // policies whose resource rules name its resource. (The ValidatingPolicy form,
                // whose CLI path matches them, and gator judge those rules.)
                let names = |(group, name): &(String, String)| {
                    (group == "*" || group == &resource.0) && (name == "*" || name == &resource.1)
                };
                if !translated
                    && !matched
                        .get(policy_name)
                        .is_some_and(|rules| rules.iter().any(names))
                {
                    continue;
                }
                let validation = result["properties"]["cel.validationIndex"]
                    .as_str()
                    .map(|idx| idx.parse::<usize>().unwrap());
                match result["result"].as_str() {
                    Some("pass") => {
                        verdicts.entry(fixture.clone()).or_default();
                    }
                    // The floor fails closed: an error denies, as a failed validation does.
                    Some("fail" | "error") => {
                        verdicts
                            .entry(fixture.clone())
                            .or_default()
                            .insert(policy_name.clone(), validation);
                    }
                    Some("skip") => {}
                    other => panic!("result {other:?} in {}", context()),
                }
            }
        }
        assert!(results > 0, "no results from {}", context());
    }
    (verdicts, runs.len())
}

#[test]
fn kyverno_judges_every_create_fixture_as_the_floor_does_in_both_forms() {
    let Some(kyverno) = tool("kyverno", "TENANTC_KYVERNO") else {
        return;
    };
    let plan = plan();
    let all = fixtures(&plan);
    let creates: Vec<&Fixture> = all
        .iter()
        .filter(|fixture| fixture.request.operation == "CREATE")
        .collect();
    let expected = expected_of(&plan, creates.iter().copied());
    let denied = expected
        .values()
        .filter(|denials| !denials.is_empty())
        .count();
    // Kyverno reports the index of the failing validation of a ValidatingPolicy, not of a
    // ValidatingAdmissionPolicy.
    for (form, translated, by_validation) in [
        ("ValidatingPolicy", true, true),
        ("ValidatingAdmissionPolicy", false, false),
    ] {
        let started = Instant::now();
        let (verdicts, runs) = kyverno_verdicts(&kyverno, &plan, &creates, None, translated);
        let report = differences(&creates, &expected, &verdicts, by_validation);
        println!(
            "kyverno apply ({form}): {} CREATE fixtures of {} ({} admitted, {denied} denied by the floor) in {runs} runs, {} differ{}, in {:.1} s",
            creates.len(),
            all.len(),
            creates.len() - denied,
            report.lines().count(),
            if by_validation {
                " (verdict, policy and first denying validation)"
            } else {
                " (verdict and policy)"
            },
            started.elapsed().as_secs_f64()
        );
        assert!(
            report.is_empty(),
            "kyverno ({form}) differs from the floor:\n{report}"
        );
    }

    // Self-test: the translated floor with `images` admitting everything differs.
    let (verdicts, _) = kyverno_verdicts(&kyverno, &plan, &creates, Some("images"), true);
    assert!(
        !differences(&creates, &expected, &verdicts, true).is_empty(),
        "a weakened images validation went unnoticed"
    );
}
