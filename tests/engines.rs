//! The tenant floor as the policy engines run it (issue 22 item 3): Gatekeeper's `gator` and
//! Kyverno's CLI judge every fixture of `tests/policy/` with the floor tenantc translates for
//! them, and Kyverno's CLI judges the ValidatingAdmissionPolicy floor itself; each verdict must
//! equal the in-process evaluator's verdict on the ValidatingAdmissionPolicy floor
//! (`tenantc::policy`, what `tests/policy.rs` and `tenantc test-policy` run), fixture by fixture.
//!
//! Consumes: the frozen fixture fleet (`tests/fixtures/fleet/`, compiled in memory), the
//! fixtures and cases of `tests/policy/cases.rs` (admitted objects, denied objects, denied
//! updates and deletes), and the CLIs `tests/engines/install.sh` builds (`$TENANTC_GATOR` and
//! `$TENANTC_KYVERNO`, else `${TENANTC_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tenantc-tools}/bin/`).
//! Produces: a line per engine with the fixtures judged, agreed and the time taken; fails on
//! the first engine whose verdicts differ, listing every differing fixture. Without the CLIs
//! the tests fail under `CI=true` (unless `TENANTC_ENGINES_DEFERRED=1`: `.ci/run`'s engines
//! step builds them and runs this binary again) and print a skip line otherwise.
//!
//! What each engine is given: gator judges `AdmissionReview`s (`gator verify`), so it sees every
//! request as the API server sends it: operation, user, old object and options. Kyverno's CLI
//! (`kyverno apply`) judges an object with a user and an operation only, with the old object of
//! an UPDATE equal to the new one and no DELETE options, so it judges the CREATE fixtures.
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
mod cases;

mod support;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use cases::{
    PINNED_WEIGHTS, admitted_fixtures, cases, delete_cases, fixture, namespace_of, ownership_cases,
    update_cases,
};
use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;
use serde_json::{Value as Json, json};
use tenantc::lower::{admission, engines};
use tenantc::plan::{CellPlan, Plan, TenantPlan};
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

fn plan() -> Plan {
    let loaded = tenantc::load::load(&support::fleet()).unwrap();
    let compilation = tenantc::compile_loaded(&loaded);
    assert!(compilation.output.is_some(), "the fixture fleet compiles");
    compilation.plan.unwrap()
}

fn cell<'a>(plan: &'a Plan, name: &str) -> &'a CellPlan {
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
fn fixtures(plan: &Plan) -> Vec<Fixture> {
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

/// The in-process verdict of the ValidatingAdmissionPolicy floor: `true` when denied.
fn vap_denies(plan: &Plan, fixture: &Fixture) -> bool {
    let cell = cell(plan, &fixture.cell);
    let tenant = tenant_of(cell, &fixture.request.namespace);
    let mut params = admission::params_config_map(tenant, cell);
    params.data = Some(pinned(tenant, cell));
    let outcome = policy::evaluate(
        &admission::policy(),
        &admission::binding(tenant),
        Some(&params),
        &fixture.request,
    );
    match outcome {
        Outcome::Denied(_) => true,
        Outcome::Admitted => false,
        other => panic!("{}: the floor does not judge it: {other:?}", fixture.name),
    }
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

/// The verdicts gator gives on `fixtures` (name to denied) with `policy` translated.
fn gator_verdicts(
    gator: &Path,
    plan: &Plan,
    policy: &ValidatingAdmissionPolicy,
    fixtures: &[Fixture],
    expected: &BTreeMap<String, bool>,
) -> BTreeMap<String, bool> {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<&str> = tenantc::plan::admission::ParamKey::ALL
        .iter()
        .map(|key| key.as_str())
        .collect();
    let template = engines::gatekeeper_template(policy, keys.iter().copied()).unwrap();
    write_json(&dir.path().join("template.yaml"), &template);
    // One test per (cell, tenant): its constraint and its fixtures.
    let mut tests: BTreeMap<(String, String), Vec<&Fixture>> = BTreeMap::new();
    for fixture in fixtures {
        let tenant = tenant_of(cell(plan, &fixture.cell), &fixture.request.namespace);
        tests
            .entry((fixture.cell.clone(), tenant.name.clone()))
            .or_default()
            .push(fixture);
    }
    let mut suite_tests = Vec::new();
    for ((cell_name, tenant_name), members) in &tests {
        let cell = cell(plan, cell_name);
        let tenant = cell
            .tenants
            .iter()
            .find(|t| &t.name == tenant_name)
            .unwrap();
        let constraint = engines::gatekeeper_constraint(
            policy,
            &template,
            &admission::binding(tenant),
            Some(&pinned(tenant, cell)),
        )
        .unwrap();
        let file = format!("constraint-{cell_name}-{tenant_name}.yaml");
        write_json(&dir.path().join(&file), &constraint);
        let mut cases = Vec::new();
        for fixture in members {
            let object = format!("{}.yaml", fixture.name);
            write_json(
                &dir.path().join(&object),
                &admission_review(&fixture.request),
            );
            // The assertion is the floor's own verdict: gator passes a case when it agrees.
            let violations = if expected[&fixture.name] { "yes" } else { "no" };
            cases.push(json!({
                "name": fixture.name,
                "object": object,
                "assertions": [{"violations": violations}],
            }));
        }
        suite_tests.push(json!({
            "name": format!("{cell_name}-{tenant_name}"),
            "template": "template.yaml",
            "constraint": file,
            "cases": cases,
        }));
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
    let mut verdicts = BTreeMap::new();
    for line in stdout.lines() {
        let line = line.trim();
        let (passed, rest) = if let Some(rest) = line.strip_prefix("--- PASS: ") {
            (true, rest)
        } else if let Some(rest) = line.strip_prefix("--- FAIL: ") {
            (false, rest)
        } else {
            continue;
        };
        let name = rest.split_whitespace().next().unwrap_or_default();
        if let Some(&floor) = expected.get(name) {
            verdicts.insert(name.to_string(), if passed { floor } else { !floor });
        }
    }
    assert!(
        !verdicts.is_empty(),
        "gator verify judged nothing:\n{stdout}\n{stderr}"
    );
    verdicts
}

/// The fixtures whose verdicts differ, as a report.
fn differences(
    fixtures: &[Fixture],
    expected: &BTreeMap<String, bool>,
    verdicts: &BTreeMap<String, bool>,
) -> String {
    let mut report = String::new();
    for fixture in fixtures {
        let floor = expected[&fixture.name];
        match verdicts.get(&fixture.name) {
            Some(engine) if *engine == floor => {}
            Some(engine) => {
                let _ = writeln!(
                    report,
                    "{}: the floor {} it, the engine {} it",
                    fixture.name,
                    if floor { "denies" } else { "admits" },
                    if *engine { "denies" } else { "admits" }
                );
            }
            None => {
                let _ = writeln!(report, "{}: the engine gave no verdict", fixture.name);
            }
        }
    }
    report
}

/// The floor with the validation `name` made to admit everything.
fn weakened(name: &str) -> ValidatingAdmissionPolicy {
    let idx = admission::RULES
        .iter()
        .position(|rule| rule.name == name)
        .unwrap();
    let mut policy = admission::policy();
    policy.spec.as_mut().unwrap().validations.as_mut().unwrap()[idx].expression =
        "true".to_string();
    policy
}

#[test]
fn gator_judges_every_policy_fixture_as_the_floor_does() {
    let Some(gator) = tool("gator", "TENANTC_GATOR") else {
        return;
    };
    let plan = plan();
    let fixtures = fixtures(&plan);
    let expected: BTreeMap<String, bool> = fixtures
        .iter()
        .map(|fixture| (fixture.name.clone(), vap_denies(&plan, fixture)))
        .collect();
    let started = Instant::now();
    let verdicts = gator_verdicts(&gator, &plan, &admission::policy(), &fixtures, &expected);
    let report = differences(&fixtures, &expected, &verdicts);
    let denied = expected.values().filter(|denied| **denied).count();
    println!(
        "gator: {} fixtures ({} admitted, {denied} denied by the floor), {} agree, in {:.1} s",
        fixtures.len(),
        fixtures.len() - denied,
        verdicts.len() - report.lines().count().min(verdicts.len()),
        started.elapsed().as_secs_f64()
    );
    assert!(report.is_empty(), "gator differs from the floor:\n{report}");
    assert_eq!(verdicts.len(), fixtures.len());

    // Self-test: with `images` translated to admit everything, gator admits what the floor
    // denies, and the comparison says so.
    let verdicts = gator_verdicts(&gator, &plan, &weakened("images"), &fixtures, &expected);
    let report = differences(&fixtures, &expected, &verdicts);
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

/// What one `kyverno apply` says of one resource: `Some(true)` denied (a failed or erroring
/// rule, since the floor fails closed), `Some(false)` admitted (rules passed, none failed), and
/// `None` when no rule judged it.
fn kyverno_verdict(kyverno: &Path, dir: &Path, args: &[&str]) -> Option<bool> {
    let output = Command::new(kyverno)
        .arg("apply")
        .args(args)
        .arg("--remove-color")
        .current_dir(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    // The summary line: `pass: N, fail: N, warn: N, error: N, skip: N`.
    let line = stdout
        .lines()
        .find(|line| line.trim_start().starts_with("pass: "))?;
    let count = |what: &str| -> usize {
        line.split(',')
            .find_map(|part| part.trim().strip_prefix(&format!("{what}: ")))
            .and_then(|number| number.trim().parse().ok())
            .unwrap_or(0)
    };
    if count("fail") > 0 || count("error") > 0 {
        Some(true)
    } else if count("pass") > 0 {
        Some(false)
    } else {
        None
    }
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

/// The labels the API server puts on a namespace, as `kyverno apply --values-file` reads them.
fn namespace_values(namespace: &str) -> Json {
    json!({
        "apiVersion": "cli.kyverno.io/v1alpha1",
        "kind": "Values",
        "namespaceSelector": [{"name": namespace, "labels": {"kubernetes.io/metadata.name": namespace}}],
    })
}

/// The verdicts of the Kyverno CLI on the CREATE fixtures: with `translated`, on the floor
/// translated into a ValidatingPolicy (from `policy`); without, on the ValidatingAdmissionPolicy
/// floor itself, its binding and its params.
fn kyverno_verdicts(
    kyverno: &Path,
    plan: &Plan,
    policy: &ValidatingAdmissionPolicy,
    fixtures: &[&Fixture],
    translated: bool,
) -> BTreeMap<String, bool> {
    let dir = tempfile::tempdir().unwrap();
    let mut verdicts = BTreeMap::new();
    for fixture in fixtures {
        let cell = cell(plan, &fixture.cell);
        let tenant = tenant_of(cell, &fixture.request.namespace);
        let binding = admission::binding(tenant);
        let params = pinned(tenant, cell);
        let policies = if translated {
            let translated = engines::kyverno_policy(policy, &binding, Some(&params)).unwrap();
            documents(&[serde_json::to_value(translated).unwrap()])
        } else {
            let mut config_map = admission::params_config_map(tenant, cell);
            config_map.data = Some(params);
            std::fs::write(
                dir.path().join("params.yaml"),
                documents(&[serde_json::to_value(&config_map).unwrap()]),
            )
            .unwrap();
            documents(&[
                serde_json::to_value(policy).unwrap(),
                serde_json::to_value(&binding).unwrap(),
            ])
        };
        std::fs::write(dir.path().join("policy.yaml"), policies).unwrap();
        std::fs::write(
            dir.path().join("resource.yaml"),
            documents(std::slice::from_ref(&fixture.request.object)),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("user.yaml"),
            documents(&[userinfo(&fixture.request)]),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("values.yaml"),
            documents(&[namespace_values(&fixture.request.namespace)]),
        )
        .unwrap();
        let mut args = vec![
            "policy.yaml",
            "--resource",
            "resource.yaml",
            "--userinfo",
            "user.yaml",
            "--values-file",
            "values.yaml",
        ];
        if !translated {
            args.extend(["--parameter-resource", "params.yaml"]);
        }
        if let Some(denied) = kyverno_verdict(kyverno, dir.path(), &args) {
            verdicts.insert(fixture.name.clone(), denied);
        }
    }
    verdicts
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
    let expected: BTreeMap<String, bool> = creates
        .iter()
        .map(|fixture| (fixture.name.clone(), vap_denies(&plan, fixture)))
        .collect();
    let judged: Vec<Fixture> = creates
        .iter()
        .map(|fixture| Fixture {
            name: fixture.name.clone(),
            cell: fixture.cell.clone(),
            request: fixture.request.clone(),
        })
        .collect();
    let denied = expected.values().filter(|denied| **denied).count();
    for (form, translated) in [
        ("ValidatingPolicy", true),
        ("ValidatingAdmissionPolicy", false),
    ] {
        let started = Instant::now();
        let verdicts =
            kyverno_verdicts(&kyverno, &plan, &admission::policy(), &creates, translated);
        let report = differences(&judged, &expected, &verdicts);
        println!(
            "kyverno apply ({form}): {} CREATE fixtures of {} ({} admitted, {denied} denied by the floor), {} differ, in {:.1} s",
            creates.len(),
            all.len(),
            creates.len() - denied,
            report.lines().count(),
            started.elapsed().as_secs_f64()
        );
        assert!(
            report.is_empty(),
            "kyverno ({form}) differs from the floor:\n{report}"
        );
    }

    // Self-test: the translated floor with `images` admitting everything differs.
    let verdicts = kyverno_verdicts(&kyverno, &plan, &weakened("images"), &creates, true);
    assert!(
        !differences(&judged, &expected, &verdicts).is_empty(),
        "a weakened images validation went unnoticed"
    );
}
