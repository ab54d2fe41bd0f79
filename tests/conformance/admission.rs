//! Conformance of the tenant admission floor: the real API server judges the policy tests'
//! objects exactly as tenantc's in-process evaluator (`tenantc::policy`, also behind
//! `tenantc test-policy`) does.
//!
//! Consumes: the fixture fleet (applied cell by cell with `quota::set_up_cell`, so each
//! cell's params, bindings and RuntimeClasses are the ones in force), the admitted fixtures
//! and the denied cases of `tests/policy/cases.rs`. Produces: pass or fail, and one line per
//! cell with the counts.
//!
//! Invariants:
//! - Every object is created by server-side dry-run as a member of its tenant (impersonated),
//!   so Pod Security, RBAC, quota and the admission floor all judge it and nothing is stored.
//! - An admitted fixture must be admitted; a denied case must be refused with
//!   `ValidatingAdmissionPolicy 'tenantc-tenant-floor' with binding '…' denied request:`
//!   followed by the first message the offline evaluator gives, and the offline evaluator must
//!   agree on both.
//! - The self-test weakens the deployed policy so that it admits another tenant's weight
//!   digest, shows that the comparison reports it, and restores the policy even if it fails.

use super::policy_cases::{
    admitted_fixtures, cases, delete_cases, fixture, merge_patch, namespace_of, ownership_cases,
    update_cases,
};
use super::quota::{as_member, fixture_fleet, member_group, set_up_cell};
use super::*;

use std::time::Duration;

use tenantc::lower::admission;
use tenantc::plan::CellPlan;
use tenantc::policy::{Outcome, Request};

/// How long a change of policy or params may take to reach the API server's admission plugin.
pub(super) const PROPAGATION_TIMEOUT: Duration = Duration::from_secs(30);

/// Creates `object` by server-side dry-run as a member of the tenant owning its namespace;
/// `Ok` when admitted, else the API server's message.
pub(super) fn dry_run(cluster: &Cluster, cell: &CellPlan, object: &Value) -> Result<(), String> {
    let namespace = namespace_of(object);
    let tenant = cell
        .tenants
        .iter()
        .find(|tenant| tenant.namespaces.iter().any(|ns| ns.name == namespace))
        .unwrap_or_else(|| panic!("no tenant of {} owns {namespace}", cell.name));
    let mut args: Vec<String> = ["create", "--dry-run=server", "-o", "name", "-f", "-"]
        .iter()
        .map(|arg| (*arg).to_string())
        .collect();
    args.extend(as_member(&member_group(tenant)));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = cluster.kubectl_with(&cluster.user_kubeconfig, &args, &object.to_string());
    if run.ok {
        Ok(())
    } else {
        Err(run.stderr.trim().to_string())
    }
}

/// The ServiceAccount of a Pod or of a workload's template (a CronJob's at
/// `spec.jobTemplate.spec.template`).
fn service_account_of(object: &Value) -> Option<String> {
    let spec = if object["kind"] == "Pod" {
        &object["spec"]
    } else if object["kind"] == "CronJob" {
        &object["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    } else {
        &object["spec"]["template"]["spec"]
    };
    spec["serviceAccountName"].as_str().map(str::to_string)
}

/// Creates the object's ServiceAccount when its namespace lacks it; returns its name if created.
pub(super) fn ensure_service_account(cluster: &Cluster, object: &Value) -> Option<String> {
    let account = service_account_of(object)?;
    let namespace = namespace_of(object);
    let exists = cluster.kubectl(&["get", "serviceaccount", &account, "-n", &namespace], "");
    if exists.ok {
        return None;
    }
    create_service_account(cluster, &namespace, &account);
    Some(account)
}

/// Creates (or keeps) a ServiceAccount without a token, as the admin, as a tenant admin could.
pub(super) fn create_service_account(cluster: &Cluster, namespace: &str, account: &str) {
    let manifest = json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": account, "namespace": namespace},
        "automountServiceAccountToken": false,
    });
    let run = cluster.kubectl(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            "conformance-scratch",
            "-f",
            "-",
        ],
        &manifest.to_string(),
    );
    assert!(
        run.ok,
        "creating ServiceAccount {namespace}/{account} failed:\n{}",
        run.stderr
    );
}

pub(super) fn remove_service_account(cluster: &Cluster, namespace: &str, account: &str) {
    let run = cluster.kubectl(
        &[
            "delete",
            "serviceaccount",
            account,
            "-n",
            namespace,
            "--wait=false",
        ],
        "",
    );
    assert!(
        run.ok,
        "deleting ServiceAccount {namespace}/{account} failed:\n{}",
        run.stderr
    );
}

/// What the offline evaluator says: `None` admitted, else its first message.
fn offline(cell: &CellPlan, object: &Value) -> Option<String> {
    let request = Request::create(&namespace_of(object), object.clone());
    match tenantc::policy::check_object(cell, &request) {
        Some((_, Outcome::Denied(denials))) => denials.first().map(|denial| denial.message.clone()),
        Some((_, Outcome::Admitted)) => None,
        other => panic!("{}: not judged offline: {other:?}", namespace_of(object)),
    }
}

/// Every disagreement between the API server and the offline evaluator on one cell's objects:
/// its admitted fixtures and the denied cases named by `only` (all when empty).
fn disagreements(cluster: &Cluster, cell: &CellPlan, only: &[&str]) -> (usize, Vec<String>) {
    let mut objects: Vec<(String, Value, bool)> = Vec::new();
    if only.is_empty() {
        for (cell_name, path, object) in admitted_fixtures() {
            if cell_name == cell.name {
                objects.push((path.display().to_string(), object, false));
            }
        }
    }
    for case in cases() {
        if case.cell == cell.name && (only.is_empty() || only.contains(&case.name)) {
            let mut object = fixture(case.fixture, case.cell);
            (case.mutate)(&mut object);
            objects.push((case.name.to_string(), object, true));
        }
    }
    let mut problems = Vec::new();
    for (what, object, denied) in &objects {
        let expected = offline(cell, object);
        if expected.is_some() != *denied {
            problems.push(format!("{what}: the offline evaluator says {expected:?}"));
            continue;
        }
        let tenant = &object["metadata"]["namespace"];
        // A ServiceAccount the object names but the tenant lacks (the training identity in an
        // inference namespace) is created first, as a tenant admin could, so that the
        // ServiceAccount admission plugin does not refuse the pod before the floor judges it.
        let created = ensure_service_account(cluster, object);
        let answer = dry_run(cluster, cell, object);
        if let Some(account) = created {
            remove_service_account(cluster, &namespace_of(object), &account);
        }
        match (answer, expected) {
            (Ok(()), None) => {}
            (Err(message), Some(expected)) => {
                let binding_of = cell
                    .tenants
                    .iter()
                    .find(|t| {
                        t.namespaces
                            .iter()
                            .any(|ns| ns.name == namespace_of(object))
                    })
                    .map(|t| admission::binding_name(&t.name))
                    .unwrap_or_default();
                let wanted = format!(
                    "ValidatingAdmissionPolicy '{}' with binding '{binding_of}' denied request: {expected}",
                    admission::POLICY_NAME
                );
                if !message.contains(&wanted) {
                    problems.push(format!(
                        "{what} ({tenant}): the API server refused it with\n    {message}\n  but tenantc expects\n    {wanted}"
                    ));
                }
            }
            (Ok(()), Some(expected)) => problems.push(format!(
                "{what} ({tenant}): the API server admitted it; tenantc denies it with: {expected}"
            )),
            (Err(message), None) => problems.push(format!(
                "{what} ({tenant}): the API server refused it; tenantc admits it:\n    {message}"
            )),
        }
    }
    (objects.len(), problems)
}

/// Retries `disagreements` until there are none or the propagation time is up.
fn settled_disagreements(
    cluster: &Cluster,
    cell: &CellPlan,
    only: &[&str],
) -> (usize, Vec<String>) {
    let started = Instant::now();
    loop {
        let (count, problems) = disagreements(cluster, cell, only);
        if problems.is_empty() || started.elapsed() > PROPAGATION_TIMEOUT {
            return (count, problems);
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// RuntimeClasses a GPU node may carry beside the cell's declared ones: the GPU Operator in CDI
/// mode installs `nvidia-cdi` and `nvidia-legacy`. They exist here so that a pod naming one is
/// judged by the floor, not refused earlier by the RuntimeClass admission plugin for a class
/// that does not exist.
pub(super) fn install_node_runtime_classes(cluster: &Cluster) {
    for name in ["nvidia-cdi", "nvidia-legacy"] {
        let text = serde_json::json!({
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": name},
            "handler": name,
        })
        .to_string();
        let run = cluster.kubectl(&["apply", "--server-side", "-f", "-"], &text);
        assert!(
            run.ok,
            "creating RuntimeClass {name} failed:\n{}",
            run.stderr
        );
    }
}

pub(super) fn admission_floor_judges_like_the_offline_evaluator(cluster: &Cluster) {
    install_crds(cluster);
    install_node_runtime_classes(cluster);
    let fleet = fixture_fleet();
    let mut failures = Vec::new();
    for cell in &fleet.plan.cells {
        set_up_cell(cluster, &fleet, cell);
        let (count, problems) = settled_disagreements(cluster, cell, &[]);
        println!(
            "  cell {}: {count} objects judged alike by the API server and tenantc ({} disagree)",
            cell.name,
            problems.len()
        );
        failures.extend(problems);
        let (count, problems) = update_disagreements(cluster, cell);
        println!(
            "  cell {}: {count} updates of objects Kueue or a controller holds judged alike ({} disagree)",
            cell.name,
            problems.len()
        );
        failures.extend(problems);
        let (count, problems) = delete_disagreements(cluster, cell);
        println!(
            "  cell {}: {count} orphaning deletes judged alike ({} disagree)",
            cell.name,
            problems.len()
        );
        failures.extend(problems);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Applies a policy server-side with tenantc's field manager.
pub(super) fn apply_policy(
    cluster: &Cluster,
    policy: &k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy,
) {
    let text = serde_json::to_string(policy).expect("a policy as JSON");
    let run = cluster.kubectl(
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager",
            FIELD_MANAGER,
            "-f",
            "-",
        ],
        &text,
    );
    assert!(run.ok, "applying the policy failed:\n{}", run.stderr);
}

/// Re-applies the emitted policy when dropped, so a failing self-test never leaves a weakened
/// policy behind.
pub(super) struct Restore<'a>(pub(super) &'a Cluster);

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        apply_policy(self.0, &admission::policy());
    }
}

pub(super) fn admission_self_test_a_policy_admitting_another_tenants_digest_is_caught(
    cluster: &Cluster,
) {
    install_crds(cluster);
    let fleet = fixture_fleet();
    let cell = fleet
        .plan
        .cells
        .iter()
        .find(|cell| cell.name == "us-east-1a")
        .expect("cell us-east-1a");
    set_up_cell(cluster, &fleet, cell);
    let case = ["another tenant's weight digest"];
    let (_, before) = settled_disagreements(cluster, cell, &case);
    assert!(before.is_empty(), "before the self-test: {before:?}");
    let mut weakened = admission::policy();
    let validations = weakened
        .spec
        .as_mut()
        .and_then(|spec| spec.validations.as_mut())
        .expect("validations");
    let idx = admission::RULES
        .iter()
        .position(|rule| rule.name == "weight-digest")
        .expect("the weight-digest rule");
    // Any digest at all passes: another tenant's included.
    validations[idx].expression =
        "!variables.loadsWeights || 'tenantc.io/weight-digest' in variables.annotations"
            .to_string();
    {
        let _restore = Restore(cluster);
        apply_policy(cluster, &weakened);
        let started = Instant::now();
        let caught = loop {
            let (_, problems) = disagreements(cluster, cell, &case);
            if !problems.is_empty() || started.elapsed() > PROPAGATION_TIMEOUT {
                break problems;
            }
            std::thread::sleep(Duration::from_secs(1));
        };
        assert!(
            caught
                .iter()
                .any(|problem| problem.contains("the API server admitted it")),
            "a policy that admits another tenant's digest was not caught: {caught:?}"
        );
        println!("  self-test, a policy admitting another tenant's digest: reported");
    }
    let (_, after) = settled_disagreements(cluster, cell, &case);
    assert!(after.is_empty(), "after restoring the policy: {after:?}");
}

/// The offline verdict on a member's update of `before` into `after`: `None` admitted, else
/// its first message.
pub(super) fn offline_update(cell: &CellPlan, before: &Value, after: &Value) -> Option<String> {
    let mut request = Request::create(&namespace_of(after), after.clone());
    request.operation = "UPDATE".to_string();
    request.old_object = Some(before.clone());
    match tenantc::policy::check_object(cell, &request) {
        Some((_, Outcome::Denied(denials))) => denials.first().map(|denial| denial.message.clone()),
        Some((_, Outcome::Admitted)) => None,
        other => panic!("{}: not judged offline: {other:?}", namespace_of(after)),
    }
}

/// Every disagreement on the update cases of one cell: each `before` is created for real by
/// the admin (the floor judges it, but Kueue's hold is the tenant's to keep, not the
/// platform's), then patched into `after` by server-side dry-run, once as a member of the
/// tenant, who must be refused with the offline message, and once as the admin, who must not.
/// The ownership cases name a controller that does not exist; no garbage collector runs here,
/// so the object stays (`controllers.rs` replays them on pods the real controllers made).
fn update_disagreements(cluster: &Cluster, cell: &CellPlan) -> (usize, Vec<String>) {
    let mut problems = Vec::new();
    let mut count = 0;
    for case in update_cases()
        .into_iter()
        .chain(ownership_cases())
        .filter(|case| case.cell == cell.name)
    {
        count += 1;
        let mut before = fixture(case.fixture, case.cell);
        (case.before)(&mut before);
        let mut after = fixture(case.fixture, case.cell);
        (case.after)(&mut after);
        let namespace = namespace_of(&before);
        let target = format!(
            "{}/{}",
            before["kind"].as_str().unwrap().to_lowercase(),
            before["metadata"]["name"].as_str().unwrap()
        );
        let created = cluster.kubectl(&["create", "-f", "-"], &before.to_string());
        if !created.ok {
            problems.push(format!(
                "{}: creating it failed: {}",
                case.name, created.stderr
            ));
            continue;
        }
        let tenant = cell
            .tenants
            .iter()
            .find(|tenant| tenant.namespaces.iter().any(|ns| ns.name == namespace))
            .unwrap();
        let by_member = dry_run_patch(
            cluster,
            &cluster.user_kubeconfig,
            &before,
            &after,
            &as_member(&member_group(tenant)),
        );
        let by_admin = dry_run_patch(cluster, &cluster.kubeconfig, &before, &after, &[]);
        let expected = offline_update(cell, &before, &after);
        match (&expected, by_member.ok) {
            (Some(message), false) if by_member.stderr.contains(message.as_str()) => {}
            (Some(message), _) => problems.push(format!(
                "{}: tenantc denies it with\n    {message}\n  but the API server answered the member with\n    {}",
                case.name,
                by_member.stderr.trim()
            )),
            (None, _) => problems.push(format!(
                "{}: the offline evaluator admits the member's update",
                case.name
            )),
        }
        if !by_admin.ok {
            problems.push(format!(
                "{}: the API server refused the admin's update:\n    {}",
                case.name,
                by_admin.stderr.trim()
            ));
        }
        let deleted = cluster.kubectl(
            &[
                "delete",
                &target,
                "-n",
                &namespace,
                "--wait=false",
                "--grace-period=0",
                "--force",
            ],
            "",
        );
        if !deleted.ok {
            problems.push(format!(
                "{}: deleting it failed: {}",
                case.name, deleted.stderr
            ));
        }
    }
    (count, problems)
}

/// The kubectl arguments that impersonate a member of the tenant owning `namespace`.
pub(super) fn member_of(cell: &CellPlan, namespace: &str) -> Vec<String> {
    let tenant = cell
        .tenants
        .iter()
        .find(|tenant| tenant.namespaces.iter().any(|ns| ns.name == namespace))
        .unwrap_or_else(|| panic!("no tenant of {} owns {namespace}", cell.name));
    as_member(&member_group(tenant))
}

/// `before` patched into `after` (a JSON merge patch) by server-side dry-run, with the extra
/// kubectl arguments (impersonation).
pub(super) fn dry_run_patch(
    cluster: &Cluster,
    kubeconfig: &std::path::Path,
    before: &Value,
    after: &Value,
    extra: &[String],
) -> Run {
    let target = format!(
        "{}/{}",
        before["kind"].as_str().unwrap().to_lowercase(),
        before["metadata"]["name"].as_str().unwrap()
    );
    let namespace = namespace_of(before);
    let patch = merge_patch(before, after).to_string();
    let mut args: Vec<String> = [
        "patch",
        &target,
        "-n",
        &namespace,
        "--type=merge",
        "--dry-run=server",
        "-p",
        &patch,
    ]
    .iter()
    .map(|arg| (*arg).to_string())
    .collect();
    args.extend(extra.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cluster.kubectl_with(kubeconfig, &args, "")
}

/// The offline verdict on a member's DELETE of `object` with `options`: `None` admitted, else
/// its first message.
pub(super) fn offline_delete(cell: &CellPlan, object: &Value, options: &Value) -> Option<String> {
    let request = Request::delete(&namespace_of(object), object.clone(), options.clone());
    match tenantc::policy::check_object(cell, &request) {
        Some((_, Outcome::Denied(denials))) => denials.first().map(|denial| denial.message.clone()),
        Some((_, Outcome::Admitted | Outcome::NotMatched(_))) => None,
        other => panic!("{}: not judged offline: {other:?}", namespace_of(object)),
    }
}

/// The API path of a namespaced object, from its `apiVersion` and kind.
pub(super) fn object_path(object: &Value) -> String {
    let api_version = object["apiVersion"].as_str().unwrap();
    let prefix = if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    };
    format!(
        "{prefix}/namespaces/{}/{}s/{}",
        namespace_of(object),
        object["kind"].as_str().unwrap().to_lowercase(),
        object["metadata"]["name"].as_str().unwrap()
    )
}

/// A DELETE of `object` with `options` (its `DeleteOptions`, sent as the body exactly as given
/// but for `dryRun`), by server-side dry-run, with the extra kubectl arguments (impersonation).
pub(super) fn dry_run_delete(
    cluster: &Cluster,
    kubeconfig: &std::path::Path,
    object: &Value,
    options: &Value,
    extra: &[String],
) -> Run {
    let mut body = options.clone();
    body["apiVersion"] = json!("v1");
    body["kind"] = json!("DeleteOptions");
    body["dryRun"] = json!(["All"]);
    let path = object_path(object);
    let mut args: Vec<String> = ["delete", "--raw", &path, "-f", "-"]
        .iter()
        .map(|arg| (*arg).to_string())
        .collect();
    args.extend(extra.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cluster.kubectl_with(kubeconfig, &args, &body.to_string())
}

/// Every disagreement on the delete cases of one cell: the fixture is created for real by the
/// admin, then deleted with the case's options by server-side dry-run, once as a member of the
/// tenant, who must be refused with the offline message, once as a member with the pods
/// (`propagationPolicy: Background`), and once as the admin, who both must not.
fn delete_disagreements(cluster: &Cluster, cell: &CellPlan) -> (usize, Vec<String>) {
    let mut problems = Vec::new();
    let mut count = 0;
    for case in delete_cases()
        .into_iter()
        .filter(|case| case.cell == cell.name)
    {
        count += 1;
        let object = fixture(case.fixture, case.cell);
        let options = (case.options)();
        let namespace = namespace_of(&object);
        let created = cluster.kubectl(&["create", "-f", "-"], &object.to_string());
        if !created.ok {
            problems.push(format!(
                "{}: creating it failed: {}",
                case.name, created.stderr
            ));
            continue;
        }
        let member = member_of(cell, &namespace);
        let by_member = dry_run_delete(
            cluster,
            &cluster.user_kubeconfig,
            &object,
            &options,
            &member,
        );
        let expected = offline_delete(cell, &object, &options);
        match &expected {
            Some(message) if !by_member.ok && by_member.stderr.contains(message.as_str()) => {}
            Some(message) => problems.push(format!(
                "{}: tenantc denies it with\n    {message}\n  but the API server answered the member with\n    {}{}",
                case.name,
                by_member.stderr.trim(),
                by_member.stdout.trim()
            )),
            None => problems.push(format!(
                "{}: the offline evaluator admits the member's delete",
                case.name
            )),
        }
        let background = json!({"propagationPolicy": "Background"});
        let cascading = dry_run_delete(
            cluster,
            &cluster.user_kubeconfig,
            &object,
            &background,
            &member,
        );
        if !cascading.ok || offline_delete(cell, &object, &background).is_some() {
            problems.push(format!(
                "{}: a member's delete with propagationPolicy Background was refused:\n    {}",
                case.name,
                cascading.stderr.trim()
            ));
        }
        let by_admin = dry_run_delete(cluster, &cluster.kubeconfig, &object, &options, &[]);
        if !by_admin.ok {
            problems.push(format!(
                "{}: the API server refused the admin's delete:\n    {}",
                case.name,
                by_admin.stderr.trim()
            ));
        }
        let target = format!(
            "{}/{}",
            object["kind"].as_str().unwrap().to_lowercase(),
            object["metadata"]["name"].as_str().unwrap()
        );
        let deleted = cluster.kubectl(&["delete", &target, "-n", &namespace, "--wait=false"], "");
        if !deleted.ok {
            problems.push(format!(
                "{}: deleting it failed: {}",
                case.name, deleted.stderr
            ));
        }
    }
    (count, problems)
}
