//! Conformance tests: what tenantc emits, a real Kubernetes API server accepts and enforces
//! (issue 11).
//!
//! Consumes: the control plane that `tests/conformance/harness.sh` starts (its env file sets
//! `TENANTC_CONFORMANCE=1`, `KUBECONFIG` for an admin and `TENANTC_CONFORMANCE_USER_KUBECONFIG`
//! for a user who may only impersonate), `kubectl` (`KUBECTL`, or `kubectl` on `PATH`), the
//! frozen fixture fleet (`tests/fixtures/fleet/`), the example fleet (only for the checks that
//! judge its committed `out/`: that it applies, and that the previous commit's `out/` updates
//! in place to it) and generated fleets, compiled in-process with `tenantc::compile`, the CRDs
//! vendored under `schema/crds/` and the fixtures under `tests/conformance/`.
//! Produces: one line per check and a summary in libtest's format, plus the reports a reviewer
//! reads: objects applied per kind, the tenant access table of `conformance/rbac.rs` (the
//! RBAC of every tenant group as the API server answers it), the objects the API server
//! refuses to update in place, and the quota probes and ceiling sums of `conformance/quota.rs`
//! (quota admission judging tenant pods against their GPU quotas, ceilings and priorities).
//!
//! Invariants:
//! - The checks share one API server, so this binary has its own runner (`harness = false` in
//!   `Cargo.toml`): checks run one after another in a fixed order, and what they print is
//!   never captured.
//! - Every check is idempotent (server-side apply with one field manager), so a developer may
//!   run the binary again and again against one running control plane.
//! - Without a control plane every check that needs one is skipped with a printed message;
//!   under `CI=true` that is a failure, unless `TENANTC_CONFORMANCE_DEFERRED=1` says that a
//!   later step of `.ci/run` runs this binary under the harness (and that step fails when
//!   anything was skipped).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // A test runner prints its results, and a panic is a failed check.

mod support;

#[path = "conformance/guard.rs"]
mod guard;

#[path = "conformance/quota.rs"]
mod quota;

#[path = "conformance/rbac.rs"]
mod rbac;

#[path = "conformance/admission.rs"]
mod admission;

#[path = "conformance/controllers.rs"]
mod controllers;

#[path = "conformance/words.rs"]
mod words;

#[path = "conformance/replacement.rs"]
mod replacement;

#[path = "conformance/processes.rs"]
mod processes;

#[path = "conformance/sim.rs"]
mod sim;

#[path = "conformance/scenarios.rs"]
mod scenarios;

#[path = "conformance/gitops.rs"]
mod gitops;

#[path = "conformance/argocd.rs"]
mod argocd;

#[path = "policy/cases.rs"]
mod policy_cases;

#[path = "policy/volcano_cases.rs"]
mod volcano_cases;

#[path = "conformance/volcano.rs"]
mod volcano;

#[path = "policy/dra_cases.rs"]
mod dra_cases;

#[path = "conformance/dra.rs"]
mod dra;

#[path = "conformance/test_policy.rs"]
mod test_policy;

#[path = "policy/pod_security.rs"]
mod pod_security_cases;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use serde_json::{Value, json};
use tenantc::emit::OutputTree;
use tenantc::{InputFile, compile};

/// Field manager of every apply: the same one a GitOps controller would use for tenantc's
/// output, so re-applies are updates by the owner and never conflicts.
const FIELD_MANAGER: &str = "tenantc";

/// Namespaces tenantc puts objects in without creating them: documented prerequisites of a
/// cell (docs/conformance.md), created before the emitted objects are applied.
/// `argocd` and `flux-system` hold the ApplicationSets and Kustomizations of `out/argocd/` and
/// `out/flux/`; the controllers' installation creates them. `monitoring` holds the chargeback
/// PrometheusRules of `out/<cell>/metering/` (the example cells' `metrics` namespace); the
/// Prometheus Operator's installation creates it.
const PREREQUISITE_NAMESPACES: &[&str] = &["gpu-operator", "argocd", "flux-system", "monitoring"];

/// Objects of the previous commit's `out/` that the API server refuses to update in place to
/// the current `out/`. Empty: no commit so far changed an immutable field. The check also
/// requires the set to equal what `tenantc diff` marks replaced on sync.
const EXPECTED_REFUSED_FROM_PREVIOUS_COMMIT: &[&str] = &[];

/// Objects of the generated older tree that the API server refuses to update in place: its
/// PriorityClass `upd-batch` changes `value`, which is immutable; `tenantc diff` must mark
/// exactly these replaced on sync.
const EXPECTED_REFUSED_FROM_GENERATED_OLDER: &[&str] = &["PriorityClass/upd-batch"];

// ---------------------------------------------------------------------------------------------
// The runner.

type Check = fn(&Cluster);

/// Checks in the order they run; `needs_cluster` is false for the offline ones.
const CHECKS: &[(&str, bool, Check)] = &[
    (
        "pinned_kubernetes_version_covers_every_cell_version",
        false,
        pinned_kubernetes_version_covers_every_cell_version,
    ),
    ("generated_fleets_compile", false, generated_fleets_compile),
    (
        "tenant_access_table_matches_the_emitted_rbac",
        false,
        rbac::tenant_access_table_matches_the_emitted_rbac,
    ),
    (
        "control_plane_runs_the_pinned_version",
        true,
        control_plane_runs_the_pinned_version,
    ),
    (
        "vendored_crds_install_and_become_established",
        true,
        vendored_crds_install_and_become_established,
    ),
    (
        "previous_commit_out_updates_in_place_to_the_current_one",
        true,
        previous_commit_out_updates_in_place_to_the_current_one,
    ),
    (
        "example_fleet_applies_server_side",
        true,
        example_fleet_applies_server_side,
    ),
    (
        "gatekeeper_floor_applies_server_side",
        true,
        gatekeeper_floor_applies_server_side,
    ),
    (
        "generated_fleet_applies_server_side",
        true,
        generated_fleet_applies_server_side,
    ),
    (
        "rbac_of_the_example_fleet_keeps_the_floor",
        true,
        rbac::rbac_of_the_example_fleet_keeps_the_floor,
    ),
    (
        "rbac_tenant_admins_cannot_bind_more_than_they_hold",
        true,
        rbac::tenant_admins_cannot_bind_more_than_they_hold,
    ),
    (
        "rbac_tenant_admins_bind_only_their_own_subjects",
        true,
        rbac::tenant_admins_bind_only_their_own_subjects,
    ),
    (
        "rbac_aggregated_cluster_roles_do_not_widen_tenant_groups",
        true,
        rbac::aggregated_cluster_roles_do_not_widen_tenant_groups,
    ),
    (
        "rbac_tenant_service_accounts_mount_no_token",
        true,
        rbac::tenant_service_accounts_mount_no_token,
    ),
    (
        "rbac_self_test_tampered_rbac_fails_the_checks",
        true,
        rbac::rbac_self_test_tampered_rbac_fails_the_checks,
    ),
    (
        "rbac_matches_the_reviewer_view",
        true,
        rbac::rbac_matches_the_reviewer_view,
    ),
    (
        "kueue_fixtures_are_judged_by_the_crds_own_rules",
        true,
        kueue_fixtures_are_judged_by_the_crds_own_rules,
    ),
    (
        "generated_older_tree_updates_refuse_only_the_expected_objects",
        true,
        generated_older_tree_updates_refuse_only_the_expected_objects,
    ),
    (
        "immutable_fields_are_exactly_the_ones_marked_for_replacement",
        true,
        replacement::immutable_fields_are_exactly_the_ones_marked_for_replacement,
    ),
    (
        "harness_self_test_broken_objects_fail_the_apply_step",
        true,
        harness_self_test_broken_objects_fail_the_apply_step,
    ),
    (
        "quota_quantities_parse_and_print_exactly",
        false,
        quota::quota_quantities_parse_and_print_exactly,
    ),
    (
        "quota_admission_judges_server_side_dry_run_like_real_creates",
        true,
        quota::quota_admission_judges_server_side_dry_run_like_real_creates,
    ),
    (
        "tenant_namespaces_may_use_only_their_own_priority_class",
        true,
        quota::tenant_namespaces_may_use_only_their_own_priority_class,
    ),
    (
        "gpu_requests_beyond_the_namespace_quota_are_refused",
        true,
        quota::gpu_requests_beyond_the_namespace_quota_are_refused,
    ),
    (
        "namespace_quotas_add_up_to_the_tenant_ceiling",
        true,
        quota::namespace_quotas_add_up_to_the_tenant_ceiling,
    ),
    (
        "quota_self_test_tampered_quotas_fail_the_checks",
        true,
        quota::quota_self_test_tampered_quotas_fail_the_checks,
    ),
    (
        "guard_only_the_gitops_controller_changes_managed_objects",
        true,
        guard::only_the_gitops_controller_changes_managed_objects,
    ),
    (
        "guard_argo_cd_drives_the_generated_applications_past_the_guard",
        true,
        guard::argo_cd_drives_the_generated_applications_past_the_guard,
    ),
    (
        "guard_excepted_namespaces_admit_only_the_declared_capabilities",
        true,
        guard::excepted_namespaces_admit_only_the_declared_capabilities,
    ),
    (
        "admission_floor_judges_like_the_offline_evaluator",
        true,
        admission::admission_floor_judges_like_the_offline_evaluator,
    ),
    (
        "admission_self_test_a_policy_admitting_another_tenants_digest_is_caught",
        true,
        admission::admission_self_test_a_policy_admitting_another_tenants_digest_is_caught,
    ),
    (
        "volcano_floor_judges_like_the_offline_evaluator",
        true,
        volcano::volcano_floor_judges_like_the_offline_evaluator,
    ),
    (
        "dra_floor_judges_like_the_offline_evaluator",
        true,
        dra::dra_floor_judges_like_the_offline_evaluator,
    ),
    (
        "controllers_keep_their_pods_under_kueue",
        true,
        controllers::controllers_keep_their_pods_under_kueue,
    ),
    (
        "words_and_enforcement_agree",
        true,
        words::words_and_enforcement_agree,
    ),
    (
        "words_self_test_a_floor_without_pool_tolerations_is_caught",
        true,
        words::words_self_test_a_floor_without_pool_tolerations_is_caught,
    ),
    (
        "simulated_cell_runs_kueue_with_the_documented_integrations",
        false,
        sim::simulated_cell_runs_kueue_with_the_documented_integrations,
    ),
    (
        "simulated_cell_admits_each_tenant_its_effective_capacity",
        true,
        sim::simulated_cell_admits_each_tenant_its_effective_capacity,
    ),
    (
        "simulated_cell_self_test_a_doubled_borrowing_limit_is_caught",
        true,
        sim::simulated_cell_self_test_a_doubled_borrowing_limit_is_caught,
    ),
    (
        "simulated_cell_places_each_gang_inside_one_domain",
        true,
        scenarios::simulated_cell_places_each_gang_inside_one_domain,
    ),
    (
        "simulated_cell_shares_a_busy_cohort_reclaims_and_holds_the_ceilings",
        true,
        scenarios::simulated_cell_shares_a_busy_cohort_reclaims_and_holds_the_ceilings,
    ),
    (
        "simulated_cell_keeps_each_tenant_off_the_pools_it_may_not_reach",
        true,
        scenarios::simulated_cell_keeps_each_tenant_off_the_pools_it_may_not_reach,
    ),
    (
        "simulated_cell_self_test_a_pool_without_its_taint_is_caught",
        true,
        scenarios::simulated_cell_self_test_a_pool_without_its_taint_is_caught,
    ),
    (
        "simulated_cell_loses_what_what_if_says_on_three_drains",
        true,
        scenarios::simulated_cell_loses_what_what_if_says_on_three_drains,
    ),
    (
        "test_policy_pod_security_cases_are_judged_as_written",
        false,
        test_policy::test_policy_pod_security_cases_are_judged_as_written,
    ),
    (
        "test_policy_judges_every_fixture_as_the_api_server_does",
        true,
        test_policy::test_policy_judges_every_fixture_as_the_api_server_does,
    ),
    (
        "test_policy_self_test_a_wrong_verdict_is_caught",
        true,
        test_policy::test_policy_self_test_a_wrong_verdict_is_caught,
    ),
    (
        "flux_build_renders_every_emitted_kustomization",
        true,
        gitops::flux_build_renders_every_emitted_kustomization,
    ),
    (
        "flux_build_self_test_broken_folders_are_caught",
        true,
        gitops::flux_build_self_test_broken_folders_are_caught,
    ),
    (
        "flux_syncs_the_flux_cell_revision_by_revision",
        true,
        gitops::flux_syncs_the_flux_cell_revision_by_revision,
    ),
    (
        "flux_sync_self_test_a_tampered_revision_is_caught",
        true,
        gitops::flux_sync_self_test_a_tampered_revision_is_caught,
    ),
    (
        "argo_cd_renders_each_application_as_emitted",
        true,
        argocd::argo_cd_renders_each_application_as_emitted,
    ),
    (
        "argo_cd_self_test_a_tampered_repository_is_caught",
        true,
        argocd::argo_cd_self_test_a_tampered_repository_is_caught,
    ),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|arg| arg == "--list") {
        for (name, _, _) in CHECKS {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    // Like libtest: plain arguments filter by substring, `--skip PATTERN` leaves names out,
    // `--exact` compares whole names; other flags are accepted and ignored (with their value
    // where libtest's take one).
    let exact = args.iter().any(|arg| arg == "--exact");
    let mut filters: Vec<&str> = Vec::new();
    let mut skips: Vec<&str> = Vec::new();
    let mut words = args.iter();
    while let Some(arg) = words.next() {
        match arg.as_str() {
            "--skip" => skips.extend(words.next().map(String::as_str)),
            "--color" | "--format" | "--test-threads" | "--logfile" | "--shuffle-seed" | "-Z" => {
                words.next();
            }
            flag if flag.starts_with('-') => {}
            filter => filters.push(filter),
        }
    }
    let matches = |name: &str, pattern: &str| {
        if exact {
            name == pattern
        } else {
            name.contains(pattern)
        }
    };
    let selected: Vec<&(&str, bool, Check)> = CHECKS
        .iter()
        .filter(|(name, _, _)| {
            (filters.is_empty() || filters.iter().any(|filter| matches(name, filter)))
                && !skips.iter().any(|skip| matches(name, skip))
        })
        .collect();

    let cluster = Cluster::from_env();
    let offline = Cluster::offline();
    let started = Instant::now();
    println!("\nrunning {} tests", selected.len());
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    let mut failures = Vec::new();
    for (name, needs_cluster, check) in selected {
        let cluster = match (&cluster, needs_cluster) {
            (Availability::Up(cluster), _) => cluster,
            (_, false) => &offline,
            (Availability::Missing(_), true) => {
                println!("test {name} ... SKIPPED (no control plane)");
                skipped += 1;
                continue;
            }
            (Availability::RequiredButMissing(why), true) => {
                println!("test {name} ... FAILED");
                println!("  {why}");
                failures.push(name.to_string());
                failed += 1;
                continue;
            }
        };
        println!("test {name} ...");
        let check_started = Instant::now();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(cluster)));
        let seconds = check_started.elapsed().as_secs_f64();
        if outcome.is_ok() {
            println!("test {name} ... ok ({seconds:.1} s)");
            passed += 1;
        } else {
            println!("test {name} ... FAILED ({seconds:.1} s)");
            failures.push(name.to_string());
            failed += 1;
        }
    }
    if let (Availability::Missing(why), true) = (&cluster, skipped > 0) {
        println!("\nconformance: SKIPPED {skipped} checks: {why}");
    }
    if !failures.is_empty() {
        println!("\nfailures:");
        for name in &failures {
            println!("    {name}");
        }
    }
    println!(
        "\ntest result: {}. {passed} passed; {failed} failed; 0 ignored; {skipped} skipped; finished in {:.2}s\n",
        if failed == 0 { "ok" } else { "FAILED" },
        started.elapsed().as_secs_f64()
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Whether the checks can reach a control plane.
enum Availability {
    Up(Cluster),
    /// Skipped, with the reason.
    Missing(String),
    /// Absent where it must be present (CI).
    RequiredButMissing(String),
}

/// The control plane as the harness's env file describes it.
struct Cluster {
    kubectl: String,
    kubeconfig: PathBuf,
    user_kubeconfig: PathBuf,
    version: String,
    /// The folder of the harness's binaries (`TENANTC_CONFORMANCE_BIN`), for checks that start
    /// more controllers of the same build.
    bin_dir: PathBuf,
    /// The folder of the GitOps controllers the harness built (`TENANTC_CONFORMANCE_GITOPS`).
    gitops_dir: PathBuf,
    /// The harness's run folder (`TENANTC_CONFORMANCE_RUN`), whose `logs/` they write to.
    run_dir: PathBuf,
}

impl Cluster {
    fn from_env() -> Availability {
        let var = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let up = var("TENANTC_CONFORMANCE").is_some_and(|value| value == "1");
        let kubeconfig = var("TENANTC_CONFORMANCE_KUBECONFIG").or_else(|| var("KUBECONFIG"));
        let user_kubeconfig = var("TENANTC_CONFORMANCE_USER_KUBECONFIG");
        if let (true, Some(kubeconfig), Some(user_kubeconfig)) = (up, kubeconfig, user_kubeconfig) {
            return Availability::Up(Cluster {
                kubectl: var("KUBECTL").unwrap_or_else(|| "kubectl".to_string()),
                kubeconfig: PathBuf::from(kubeconfig),
                user_kubeconfig: PathBuf::from(user_kubeconfig),
                version: var("TENANTC_CONFORMANCE_VERSION").unwrap_or_default(),
                bin_dir: PathBuf::from(var("TENANTC_CONFORMANCE_BIN").unwrap_or_default()),
                gitops_dir: PathBuf::from(var("TENANTC_CONFORMANCE_GITOPS").unwrap_or_default()),
                run_dir: PathBuf::from(var("TENANTC_CONFORMANCE_RUN").unwrap_or_default()),
            });
        }
        let how = "no control plane: TENANTC_CONFORMANCE=1, KUBECONFIG and \
                   TENANTC_CONFORMANCE_USER_KUBECONFIG are not set (run \
                   `tests/conformance/harness.sh run -- cargo test --locked --test conformance`)";
        let ci = var("CI").is_some_and(|value| value == "true");
        let deferred = var("TENANTC_CONFORMANCE_DEFERRED").is_some_and(|value| value == "1");
        if ci && !deferred {
            Availability::RequiredButMissing(format!(
                "{how}; CI=true requires the conformance checks to run"
            ))
        } else if deferred {
            Availability::Missing(format!(
                "{how}; deferred to the conformance step of .ci/run"
            ))
        } else {
            Availability::Missing(how.to_string())
        }
    }

    /// A stand-in for the checks that need no cluster.
    fn offline() -> Cluster {
        Cluster {
            kubectl: String::new(),
            kubeconfig: PathBuf::new(),
            user_kubeconfig: PathBuf::new(),
            version: String::new(),
            bin_dir: PathBuf::new(),
            gitops_dir: PathBuf::new(),
            run_dir: PathBuf::new(),
        }
    }

    /// Runs kubectl as the admin, with `stdin` as its input.
    fn kubectl(&self, args: &[&str], stdin: &str) -> Run {
        self.kubectl_with(&self.kubeconfig, args, stdin)
    }

    /// Runs kubectl as the plain user who may only impersonate.
    fn kubectl_as_user(&self, args: &[&str]) -> Run {
        self.kubectl_with(&self.user_kubeconfig, args, "")
    }

    fn kubectl_with(&self, kubeconfig: &Path, args: &[&str], stdin: &str) -> Run {
        let mut child = Command::new(&self.kubectl)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot run {}: {error}", self.kubectl));
        // Writing in a thread: kubectl may fill its output pipes before it read all input.
        let mut input = child.stdin.take().unwrap();
        let text = stdin.to_string();
        let writer = std::thread::spawn(move || input.write_all(text.as_bytes()));
        let output = child.wait_with_output().unwrap();
        // A broken pipe means kubectl stopped reading early; its exit status tells why.
        let _ = writer.join();
        Run {
            ok: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Kind to (API group, whether namespaced), from the server's discovery.
    fn scopes(&self) -> BTreeMap<(String, String), bool> {
        let run = self.kubectl(&["api-resources", "--no-headers"], "");
        assert!(run.ok, "kubectl api-resources failed:\n{}", run.stderr);
        let mut scopes = BTreeMap::new();
        for line in run.stdout.lines() {
            // NAME [SHORTNAMES] APIVERSION NAMESPACED KIND: read from the end.
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 4 {
                continue;
            }
            let kind = fields[fields.len() - 1];
            let namespaced = fields[fields.len() - 2] == "true";
            let group = group_of(fields[fields.len() - 3]);
            scopes.insert((group, kind.to_string()), namespaced);
        }
        scopes
    }
}

/// The outcome of one kubectl run.
struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

// ---------------------------------------------------------------------------------------------
// Objects.

/// One emitted object, identified from its YAML.
#[derive(Clone)]
struct Object {
    /// Path in the output tree.
    path: String,
    api_version: String,
    kind: String,
    name: String,
    namespace: Option<String>,
    /// The object as JSON (scalars as strings), for the RBAC and CRD checks.
    json: Value,
    /// The file as emitted.
    text: String,
}

impl Object {
    /// `Kind/name` or `Kind/namespace/name`.
    fn id(&self) -> String {
        match &self.namespace {
            Some(namespace) => format!("{}/{namespace}/{}", self.kind, self.name),
            None => format!("{}/{}", self.kind, self.name),
        }
    }
}

/// The API group of an `apiVersion` (empty for the core group).
fn group_of(api_version: &str) -> String {
    api_version
        .rsplit_once('/')
        .map_or(String::new(), |(group, _)| group.to_string())
}

/// Every Kubernetes object of an output tree: each `.yaml` file except the kustomizations and
/// the reports, which no GitOps controller syncs (`reports/kueue-dra-configuration.yaml` is a
/// part of Kueue's controller configuration for the platform to merge, not an object).
fn objects_of(tree: &OutputTree) -> Vec<Object> {
    let mut objects = Vec::new();
    for (path, bytes) in tree {
        let is_report = path.starts_with("reports/") || path.contains("/reports/");
        if !path.ends_with(".yaml") || path.ends_with("kustomization.yaml") || is_report {
            continue;
        }
        let text = String::from_utf8(bytes.clone()).unwrap();
        let documents = yaml_documents(&text).unwrap_or_else(|error| panic!("{path}: {error}"));
        assert_eq!(documents.len(), 1, "{path}: one object per file");
        objects.push(object_from(path, &documents[0], &text));
    }
    objects
}

fn object_from(path: &str, json: &Value, text: &str) -> Object {
    let field = |pointer: &str| json.pointer(pointer).and_then(Value::as_str);
    Object {
        path: path.to_string(),
        api_version: field("/apiVersion")
            .unwrap_or_else(|| panic!("{path}: no apiVersion"))
            .to_string(),
        kind: field("/kind")
            .unwrap_or_else(|| panic!("{path}: no kind"))
            .to_string(),
        name: field("/metadata/name")
            .unwrap_or_else(|| panic!("{path}: no metadata.name"))
            .to_string(),
        namespace: field("/metadata/namespace").map(str::to_string),
        json: json.clone(),
        text: text.to_string(),
    }
}

/// The documents of a YAML stream as JSON, every scalar a string (enough to identify objects
/// and read names; kubectl sends the original text).
fn yaml_documents(text: &str) -> Result<Vec<Value>, String> {
    read_yaml(text, false)
}

/// The documents of a YAML stream as JSON, with plain scalars typed by the YAML 1.2 core
/// schema (integers and booleans; tenantc quotes every string that would read otherwise), for
/// checks that change an object and send it back.
fn yaml_documents_typed(text: &str) -> Result<Vec<Value>, String> {
    read_yaml(text, true)
}

fn read_yaml(text: &str, typed: bool) -> Result<Vec<Value>, String> {
    use saphyr_parser::{Event, Parser, ScalarStyle};

    enum Frame {
        Seq(Vec<Value>),
        Map(serde_json::Map<String, Value>, Option<String>),
    }
    fn add(stack: &mut [Frame], documents: &mut Vec<Value>, value: Value) -> Result<(), String> {
        match stack.last_mut() {
            None => documents.push(value),
            Some(Frame::Seq(items)) => items.push(value),
            Some(Frame::Map(map, key)) => match key.take() {
                None => match value {
                    Value::String(text) => *key = Some(text),
                    other => return Err(format!("a mapping key that is not a scalar: {other}")),
                },
                Some(name) => {
                    map.insert(name, value);
                }
            },
        }
        Ok(())
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut documents = Vec::new();
    for event in Parser::new_from_str(text) {
        let (event, _) = event.map_err(|error| error.to_string())?;
        match event {
            Event::Scalar(value, style, ..) => {
                let plain = typed && style == ScalarStyle::Plain;
                let scalar = match value.as_ref() {
                    "true" if plain => Value::Bool(true),
                    "false" if plain => Value::Bool(false),
                    number if plain && number.parse::<i64>().is_ok() => {
                        json!(number.parse::<i64>().unwrap_or_default())
                    }
                    _ => Value::String(value.into_owned()),
                };
                add(&mut stack, &mut documents, scalar)?;
            }
            Event::SequenceStart(..) => stack.push(Frame::Seq(Vec::new())),
            Event::MappingStart(..) => stack.push(Frame::Map(serde_json::Map::new(), None)),
            Event::SequenceEnd | Event::MappingEnd => {
                let value = match stack.pop() {
                    Some(Frame::Seq(items)) => Value::Array(items),
                    Some(Frame::Map(map, _)) => Value::Object(map),
                    None => return Err("unbalanced YAML events".to_string()),
                };
                add(&mut stack, &mut documents, value)?;
            }
            Event::Alias(_) => return Err("YAML aliases are not expected here".to_string()),
            _ => {}
        }
    }
    Ok(documents)
}

/// The example fleet of the repository, compiled in-process: what its committed `out/` holds.
/// Only the checks that judge that output read it; every other check uses [`fleet_tree`], so
/// that editing an example changes no conformance check.
fn example_tree() -> OutputTree {
    let compilation = support::compile_root(&support::example());
    assert!(
        !compilation.has_errors(),
        "the example fleet must compile without errors"
    );
    compilation.output.expect("an output tree")
}

/// The frozen fixture fleet (`tests/fixtures/fleet/`, a copy of the example fleet), compiled
/// in-process: the realistic fleet of the checks that judge what tenantc emits.
fn fleet_tree() -> OutputTree {
    let compilation = support::compile_root(&support::fleet());
    assert!(
        !compilation.has_errors(),
        "the fixture fleet must compile without errors"
    );
    compilation.output.expect("an output tree")
}

fn compile_inputs(inputs: &[InputFile]) -> OutputTree {
    let compilation = compile(inputs);
    if compilation.has_errors() {
        panic!(
            "the generated fleet must compile:\n{}",
            tenantc::diag::render::human(
                &compilation.diagnostics,
                &compilation.sources,
                tenantc::diag::render::Color::Never
            )
        );
    }
    compilation.output.expect("an output tree")
}

// ---------------------------------------------------------------------------------------------
// Applying.

/// Objects the API server refused, by id, with its message.
type Refusals = BTreeMap<String, String>;

/// kubectl's server-side apply, strict field validation, one field manager.
fn apply_args(dry_run: bool) -> Vec<&'static str> {
    let mut args = vec![
        "apply",
        "--server-side",
        "--field-manager",
        FIELD_MANAGER,
        "--validate=strict",
        "-o",
        "name",
        "-f",
        "-",
    ];
    if dry_run {
        args.push("--dry-run=server");
    }
    args
}

/// Concurrent kubectl runs of one apply: the API server answers each object in a few
/// milliseconds, and kubectl sends one request at a time.
const PARALLEL_APPLIES: usize = 4;

/// Applies `objects` in up to [`PARALLEL_APPLIES`] concurrent kubectl runs; a run that fails is
/// split in halves until every refused object is named with its own message. Returns the
/// refusals (empty when everything applied).
fn apply_batch(cluster: &Cluster, objects: &[&Object], dry_run: bool) -> Refusals {
    if objects.is_empty() {
        return Refusals::new();
    }
    let size = objects.len().div_ceil(PARALLEL_APPLIES).max(25);
    std::thread::scope(|scope| {
        let runs: Vec<_> = objects
            .chunks(size)
            .map(|chunk| scope.spawn(move || apply_bisect(cluster, chunk, dry_run)))
            .collect();
        let mut refusals = Refusals::new();
        for run in runs {
            refusals.extend(run.join().expect("an apply thread"));
        }
        refusals
    })
}

fn apply_bisect(cluster: &Cluster, objects: &[&Object], dry_run: bool) -> Refusals {
    let stream: String = objects
        .iter()
        .map(|object| format!("---\n{}", object.text))
        .collect();
    let run = cluster.kubectl(&apply_args(dry_run), &stream);
    let applied = run.stdout.lines().count();
    if run.ok && applied == objects.len() {
        return Refusals::new();
    }
    let mut refusals = Refusals::new();
    if let [object] = objects {
        refusals.insert(object.id(), run.stderr.trim().to_string());
        return refusals;
    }
    let (left, right) = objects.split_at(objects.len() / 2);
    refusals.extend(apply_bisect(cluster, left, dry_run));
    refusals.extend(apply_bisect(cluster, right, dry_run));
    if refusals.is_empty() {
        refusals.insert(
            format!("(batch of {})", objects.len()),
            format!(
                "the batch apply failed (status ok={}, {applied} of {} objects named) but its halves apply:\n{}",
                run.ok,
                objects.len(),
                run.stderr
            ),
        );
    }
    refusals
}

/// How a tree of objects was applied.
struct Applied {
    /// Objects per kind.
    kinds: BTreeMap<String, usize>,
    refusals: Refusals,
}

/// Applies an output tree the way a cell is set up: the documented prerequisite namespaces,
/// then cluster-scoped objects and Namespaces (real creates), then namespaced objects.
/// Checks first that every kind is served (CRDs installed) and scoped as the object says.
/// The kinds tenantc emits into tenant namespaces that the tenant floor judges, with the
/// tenant's params: applied after every other namespaced object.
const JUDGED_KINDS: &[&str] = &["ResourceClaim", "ResourceClaimTemplate"];

fn apply_tree(cluster: &Cluster, objects: &[Object], dry_run: bool) -> Applied {
    let scopes = cluster.scopes();
    let emitted_namespaces: BTreeSet<&str> = objects
        .iter()
        .filter(|object| object.kind == "Namespace")
        .map(|object| object.name.as_str())
        .collect();
    // The namespaces of a cell's served models are the platform's, declared in the cell's
    // `serving` (docs/serving.md): prerequisites like the GPU Operator's.
    let serving_namespaces: BTreeSet<&str> = objects
        .iter()
        .filter(|object| {
            object
                .path
                .split('/')
                .rev()
                .nth(1)
                .is_some_and(|folder| folder == "serving")
        })
        .filter_map(|object| object.namespace.as_deref())
        .collect();
    let mut problems = Vec::new();
    for object in objects {
        match scopes.get(&(group_of(&object.api_version), object.kind.clone())) {
            None => problems.push(format!(
                "{} ({}): the API server does not serve {} {}; vendor its CRD under schema/crds/",
                object.id(),
                object.path,
                object.api_version,
                object.kind
            )),
            Some(true) if object.namespace.is_none() => problems.push(format!(
                "{} ({}): a namespaced kind without metadata.namespace",
                object.id(),
                object.path
            )),
            Some(false) if object.namespace.is_some() => problems.push(format!(
                "{} ({}): a cluster-scoped kind with metadata.namespace",
                object.id(),
                object.path
            )),
            _ => {}
        }
        if let Some(namespace) = &object.namespace
            && !emitted_namespaces.contains(namespace.as_str())
            && !PREREQUISITE_NAMESPACES.contains(&namespace.as_str())
            && !serving_namespaces.contains(namespace.as_str())
        {
            problems.push(format!(
                "{} ({}): namespace `{namespace}` is neither emitted nor a documented prerequisite",
                object.id(),
                object.path
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    for namespace in PREREQUISITE_NAMESPACES
        .iter()
        .copied()
        .chain(serving_namespaces.iter().copied())
    {
        let manifest = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n");
        let run = cluster.kubectl(
            &[
                "apply",
                "--server-side",
                "--field-manager",
                "platform-prerequisites",
                "-f",
                "-",
            ],
            &manifest,
        );
        assert!(
            run.ok,
            "creating the prerequisite namespace {namespace} failed:\n{}",
            run.stderr
        );
    }
    // One synced folder tree at a time (a cell, or the fleet's `argocd/`): every cell is its own
    // cluster, and its tenants' params have the same names in each, so a cell's objects are
    // judged while its own params are in place. In each, cluster-scoped objects first (the
    // floor's policies and bindings among them), then the namespaced ones, and last the kinds
    // the floor judges (a DRA cell's ResourceClaimTemplates), once the tenants' params exist:
    // Argo CD and Flux likewise apply ConfigMaps before kinds they do not order by name.
    let mut trees: BTreeMap<&str, Vec<&Object>> = BTreeMap::new();
    for object in objects {
        let tree = object.path.split('/').next().unwrap_or_default();
        trees.entry(tree).or_default().push(object);
    }
    let judged = |object: &&Object| JUDGED_KINDS.contains(&object.kind.as_str());
    let mut refusals = Refusals::new();
    for tree in trees.into_values() {
        let (first, rest): (Vec<&Object>, Vec<&Object>) = tree
            .into_iter()
            .partition(|object| object.namespace.is_none());
        let (last, second): (Vec<&Object>, Vec<&Object>) = rest.into_iter().partition(judged);
        refusals.extend(apply_batch(cluster, &first, dry_run));
        refusals.extend(apply_batch(cluster, &second, dry_run));
        refusals.extend(apply_batch(cluster, &last, dry_run));
    }
    let mut kinds = BTreeMap::new();
    for object in objects {
        *kinds.entry(object.kind.clone()).or_insert(0) += 1;
    }
    Applied { kinds, refusals }
}

/// Applies and asserts that everything was accepted; prints the objects per kind.
fn apply_all_accepted(cluster: &Cluster, what: &str, tree: &OutputTree) {
    let objects = objects_of(tree);
    let started = Instant::now();
    let applied = apply_tree(cluster, &objects, false);
    assert!(
        applied.refusals.is_empty(),
        "the API server refused objects of {what}:\n{}",
        format_refusals(&applied.refusals)
    );
    let kinds: Vec<String> = applied
        .kinds
        .iter()
        .map(|(kind, count)| format!("{count} {kind}"))
        .collect();
    println!(
        "  {what}: {} objects applied server-side in {:.1} s: {}",
        objects.len(),
        started.elapsed().as_secs_f64(),
        kinds.join(", ")
    );
}

fn format_refusals(refusals: &Refusals) -> String {
    refusals
        .iter()
        .map(|(id, message)| format!("  {id}: {message}"))
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------------------------
// Checks.

/// The pinned Kubernetes version of the harness, such as `v1.36.3`, from its build module.
fn pinned_version() -> String {
    let go_mod = std::fs::read_to_string(support::repo().join("tests/conformance/build/go.mod"))
        .expect("tests/conformance/build/go.mod");
    go_mod
        .lines()
        .find_map(|line| {
            let mut words = line.split_whitespace();
            let first = words.next()?;
            let (module, version) = if first == "require" {
                (words.next()?, words.next()?)
            } else {
                (first, words.next()?)
            };
            (module == "k8s.io/kubernetes" && version.starts_with("v1."))
                .then(|| version.to_string())
        })
        .expect("a k8s.io/kubernetes requirement in tests/conformance/build/go.mod")
}

fn minor_of(version: &str) -> u32 {
    version
        .trim_start_matches('v')
        .split('.')
        .nth(1)
        .and_then(|minor| minor.parse().ok())
        .unwrap_or_else(|| panic!("`{version}` is not a Kubernetes version"))
}

fn pinned_kubernetes_version_covers_every_cell_version(_: &Cluster) {
    let pinned = pinned_version();
    let newest = *tenantc::schema::KUBERNETES_MINORS.end();
    println!("  pinned Kubernetes {pinned}; cells may declare up to 1.{newest}");
    assert!(
        minor_of(&pinned) >= newest,
        "the harness builds Kubernetes {pinned}, older than 1.{newest}, the newest version a \
         cell may declare: bump k8s.io/kubernetes and its staging modules in \
         tests/conformance/build/go.mod"
    );
}

fn control_plane_runs_the_pinned_version(cluster: &Cluster) {
    let run = cluster.kubectl(&["version", "-o", "json"], "");
    let version: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|error| panic!("kubectl version: {error}\n{}", run.stderr));
    let server = version["serverVersion"]["gitVersion"]
        .as_str()
        .unwrap_or_default();
    println!(
        "  server {server}, kubectl {}",
        version["clientVersion"]["gitVersion"]
            .as_str()
            .unwrap_or_default()
    );
    assert_eq!(server, pinned_version(), "the server runs another version");
    assert_eq!(
        cluster.version, server,
        "TENANTC_CONFORMANCE_VERSION names another version"
    );
    // The aggregated roles the tenant bindings use are filled by the controller manager.
    for role in ["admin", "edit", "view"] {
        let run = cluster.kubectl(&["get", "clusterrole", role, "-o", "json"], "");
        let rules: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
        let count = rules["rules"].as_array().map_or(0, Vec::len);
        assert!(
            count > 0,
            "ClusterRole {role} has no rules: the clusterrole-aggregation-controller is not running"
        );
    }
}

/// The vendored CRDs, as objects.
fn vendored_crds() -> Vec<Object> {
    let root = support::repo().join("schema/crds");
    let mut files = Vec::new();
    collect_yaml(&root, &mut files);
    files.sort();
    let mut crds = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for document in yaml_documents(&text).unwrap_or_else(|error| panic!("{file:?}: {error}")) {
            let path = file
                .strip_prefix(support::repo())
                .unwrap()
                .display()
                .to_string();
            let object = object_from(&path, &document, &text);
            assert_eq!(
                object.kind, "CustomResourceDefinition",
                "{path}: only CRDs belong under schema/crds/"
            );
            crds.push(object);
        }
    }
    crds
}

fn collect_yaml(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|error| panic!("{dir:?}: {error}")) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_yaml(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "yaml") {
            found.push(path);
        }
    }
}

/// Installs every vendored CRD and waits until each is Established.
fn install_crds(cluster: &Cluster) -> Vec<Object> {
    let crds = vendored_crds();
    let refs: Vec<&Object> = crds.iter().collect();
    let refusals = apply_batch(cluster, &refs, false);
    assert!(
        refusals.is_empty(),
        "the API server refused vendored CRDs:\n{}",
        format_refusals(&refusals)
    );
    let mut args = vec!["wait", "--for", "condition=Established", "--timeout=60s"];
    let names: Vec<String> = crds.iter().map(|crd| format!("crd/{}", crd.name)).collect();
    args.extend(names.iter().map(String::as_str));
    // kubectl's wait fails at once, instead of waiting, on a CRD whose status has no
    // conditions yet, which the large Argo CD CRDs show for a few seconds after they are
    // created; so it is retried.
    let mut run = cluster.kubectl(&args, "");
    for _ in 0..30 {
        if run.ok {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(2));
        run = cluster.kubectl(&args, "");
    }
    assert!(
        run.ok,
        "CRDs not Established:\n{}{}",
        run.stdout, run.stderr
    );
    crds
}

fn vendored_crds_install_and_become_established(cluster: &Cluster) {
    let crds = install_crds(cluster);
    let kinds: BTreeSet<(String, String)> = crds
        .iter()
        .map(|crd| {
            (
                crd.json["spec"]["group"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                crd.json["spec"]["names"]["kind"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    println!(
        "  {} CRDs installed and Established: {}",
        crds.len(),
        kinds
            .iter()
            .map(|(group, kind)| format!("{kind}.{group}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // Every kind tenantc emits outside the built-in groups must have its CRD vendored.
    let scopes = cluster.scopes();
    let fleet = objects_of(&fleet_tree());
    let generated = objects_of(&compile_inputs(&generated_fleet("gen", 6, 2, Variant::New)));
    for object in fleet.iter().chain(&generated) {
        let group = group_of(&object.api_version);
        let builtin = group.is_empty()
            || !group.contains('.')
            || (group.ends_with(".k8s.io") && !group.ends_with(".x-k8s.io"));
        if !builtin {
            assert!(
                kinds.contains(&(group.clone(), object.kind.clone())),
                "{}: tenantc emits {}, whose CRD is not vendored under schema/crds/",
                object.path,
                object.api_version
            );
        }
        assert!(
            scopes.contains_key(&(group, object.kind.clone())),
            "{}: the API server does not serve {} {}",
            object.path,
            object.api_version,
            object.kind
        );
    }
}

fn example_fleet_applies_server_side(cluster: &Cluster) {
    install_crds(cluster);
    apply_all_accepted(cluster, "the example fleet", &example_tree());
}

/// The ok case whose cell runs its floor on Gatekeeper (Kubernetes 1.28): its ConstraintTemplates
/// and Constraints, with the rest of the cell.
const GATEKEEPER_CASE: &str = "tests/cases/ok/251-issue-22-gatekeeper-floor-on-kubernetes-1-28";

/// The CustomResourceDefinition Gatekeeper's controller makes of a ConstraintTemplate for its
/// constraint kind: group `constraints.gatekeeper.sh`, version `v1beta1`, cluster-scoped, the
/// kind lowercased as its plural, and `spec.parameters` of the template's schema.
fn constraint_crd(template: &Value) -> (String, String) {
    let kind = template["spec"]["crd"]["spec"]["names"]["kind"]
        .as_str()
        .expect("a template names its constraint kind")
        .to_string();
    let plural = kind.to_lowercase();
    let mut parameters = template["spec"]["crd"]["spec"]["validation"]["openAPIV3Schema"].clone();
    if parameters.get("type").is_none() {
        parameters["type"] = json!("object");
    }
    let name = format!("{plural}.constraints.gatekeeper.sh");
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": "constraints.gatekeeper.sh",
            "scope": "Cluster",
            "names": {
                "kind": kind,
                "plural": plural,
                "singular": plural,
                "listKind": format!("{kind}List"),
                "categories": ["constraint", "constraints"],
            },
            "versions": [{
                "name": "v1beta1",
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "properties": {
                                "enforcementAction": {"type": "string"},
                                "match": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                                "parameters": parameters,
                            },
                        },
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    },
                }},
            }],
        },
    });
    (name, crd.to_string())
}

/// A Gatekeeper cell's floor on the real API server: the vendored ConstraintTemplate CRD judges
/// every ConstraintTemplate, and each constraint kind's CRD, made from its template as
/// Gatekeeper's controller would (no Gatekeeper runs here), judges every Constraint, with the
/// template's parameter schema; then the CRDs of the constraint kinds are deleted again.
fn gatekeeper_floor_applies_server_side(cluster: &Cluster) {
    install_crds(cluster);
    let root = support::case_root(&support::repo().join(GATEKEEPER_CASE), "input");
    let compilation = support::compile_root(root.as_ref());
    assert!(!compilation.has_errors(), "{GATEKEEPER_CASE} compiles");
    let tree = compilation.output.expect("an output tree");
    let objects = objects_of(&tree);
    let templates: Vec<&Object> = objects
        .iter()
        .filter(|object| object.kind == "ConstraintTemplate")
        .collect();
    assert!(
        templates.len() >= 2,
        "{} ConstraintTemplates",
        templates.len()
    );
    let mut names = Vec::new();
    for template in &templates {
        let (name, crd) = constraint_crd(&template.json);
        let run = cluster.kubectl(
            &[
                "apply",
                "--server-side",
                "--field-manager",
                "gatekeeper-stand-in",
                "-f",
                "-",
            ],
            &crd,
        );
        assert!(
            run.ok,
            "the constraint CRD {name} was refused:\n{}",
            run.stderr
        );
        names.push(format!("crd/{name}"));
    }
    let mut wait = vec!["wait", "--for", "condition=Established", "--timeout=60s"];
    wait.extend(names.iter().map(String::as_str));
    let mut run = cluster.kubectl(&wait, "");
    for _ in 0..30 {
        if run.ok {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(2));
        run = cluster.kubectl(&wait, "");
    }
    assert!(
        run.ok,
        "constraint CRDs not Established:\n{}{}",
        run.stdout, run.stderr
    );
    let constraints = objects
        .iter()
        .filter(|object| object.api_version.starts_with("constraints.gatekeeper.sh/"))
        .count();
    assert!(
        constraints > templates.len() / 2,
        "{constraints} Constraints"
    );
    apply_all_accepted(cluster, "the Gatekeeper case's cell", &tree);
    println!(
        "  {} ConstraintTemplates and {constraints} Constraints accepted by their CRDs",
        templates.len()
    );
    let mut delete = vec!["delete", "--wait=false"];
    delete.extend(names.iter().map(String::as_str));
    let run = cluster.kubectl(&delete, "");
    assert!(
        run.ok,
        "deleting the constraint CRDs failed: {}",
        run.stderr
    );
}

/// Which version of a generated fleet to make (the updates check compares two).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    Old,
    New,
}

/// A generated fleet: `cells` cells alternating between an H100 cell (exclusive and MIG pools)
/// and an A100 + L4 cell (exclusive and time-sliced pools), and `tenants` tenants spread over
/// them; every name starts with `prefix`. The old variant differs from the new one in mutable
/// fields (Kubernetes version labels, quotas, a removed and an added tenant) and in one
/// immutable field (the `value` of the PriorityClass `<prefix>-batch`).
fn generated_fleet(prefix: &str, tenants: usize, cells: usize, variant: Variant) -> Vec<InputFile> {
    let old = variant == Variant::Old;
    let kubernetes = if old { "1.35" } else { "1.36" };
    let batch = if old { 900 } else { 1000 };
    let mut inputs = Vec::new();
    // The new variant has tenants 0 to n-1; the old one lacks the last of them (added since)
    // and has tenant n (removed since).
    let indexes: Vec<usize> = if old {
        (0..tenants.saturating_sub(1)).chain([tenants]).collect()
    } else {
        (0..tenants).collect()
    };
    for idx in 0..cells {
        // The tenants of a cell share its org, so the cell lists them.
        let members: Vec<String> = indexes
            .iter()
            .filter(|tenant| *tenant % cells == idx)
            .map(|tenant| format!("\"{prefix}-{tenant}\""))
            .collect();
        let org = if members.is_empty() {
            String::new()
        } else {
            format!(
                "org \"{prefix}-org-{idx}\" {{ tenants {}; }}",
                members.join(" ")
            )
        };
        let pools = if idx.is_multiple_of(2) {
            r#"pool "train" { gpu "H100-80GB-SXM"; nodes 64 gpus-per-node=8; sharing "exclusive"; taint "train" "true" effect="NoSchedule"; }
    pool "infer" {
        gpu "H100-80GB-SXM"
        nodes 64 gpus-per-node=8
        sharing "mig"
        mig-layout "balanced" nodes=32 { profile "3g.40gb" 1; profile "2g.20gb" 1; profile "1g.10gb" 2; }
        mig-layout "small" nodes=32 { profile "1g.10gb" 7; }
    }"#
        } else {
            r#"pool "train" { gpu "A100-80GB-SXM"; nodes 64 gpus-per-node=8; sharing "exclusive"; }
    pool "infer" { gpu "L4"; nodes 64 gpus-per-node=1; sharing "time-slice"; replicas 4; }"#
        };
        inputs.push(InputFile {
            path: format!("cells/{prefix}-cell-{idx}.kdl"),
            contents: format!(
                r#"cell "{prefix}-cell-{idx}" {{
    cloud "aws" region="us-east-1"
    kubernetes "{kubernetes}"
    driver "580"
    priority "{prefix}-batch" value={batch} preempt=#false description="generated batch"
    priority "{prefix}-serving" value=100000
    {org}
    {pools}
}}
"#
            )
            .into_bytes(),
        });
    }
    for idx in indexes {
        let cell = idx % cells;
        let reserved = if old { 2 } else { 4 };
        let (trust, infer) = if cell.is_multiple_of(2) {
            (
                "mig",
                format!(
                    r#"pool "infer" profile="1g.10gb" reserved={reserved} workload="infer"
        pool "infer" profile="3g.40gb" reserved=1 workload="infer""#
                ),
            )
        } else {
            (
                "soft",
                format!(r#"pool "infer" reserved={reserved} burst=2 workload="infer""#),
            )
        };
        let viewer = if idx.is_multiple_of(3) {
            format!(r#" viewer="{prefix}-t{idx}-viewers""#)
        } else {
            String::new()
        };
        inputs.push(InputFile {
            path: format!("tenants/{prefix}-{idx}.kdl"),
            contents: format!(
                r#"tenant "{prefix}-{idx}" {{
    org "{prefix}-org-{cell}"
    team "team-{idx}"
    trust "{trust}"
    groups admin="{prefix}-t{idx}-admins" member="{prefix}-t{idx}-members"{viewer}
    quota cell="{prefix}-cell-{cell}" cpu="64" memory="256Gi" pods=200 {{
        pool "train" reserved={reserved} burst=4 workload="train"
        {infer}
    }}
    workload "train" service-account="trainer" priority="{prefix}-batch"
    workload "infer" service-account="server" priority="{prefix}-serving"
}}
"#
            )
            .into_bytes(),
        });
    }
    inputs
}

/// Tenants and cells of the generated larger fleet.
const GENERATED_TENANTS: usize = 120;
const GENERATED_CELLS: usize = 3;

fn generated_fleets_compile(_: &Cluster) {
    let large = compile_inputs(&generated_fleet(
        "gen",
        GENERATED_TENANTS,
        GENERATED_CELLS,
        Variant::New,
    ));
    let old_inputs = generated_fleet("upd", 8, 2, Variant::Old);
    let new_inputs = generated_fleet("upd", 8, 2, Variant::New);
    let old = compile_inputs(&old_inputs);
    let new = compile_inputs(&new_inputs);
    // Offline, the objects `tenantc diff` marks replaced on sync are the documented ones; the
    // update check proves the API server refuses exactly those.
    let marked = marked_for_replacement(&compile(&old_inputs), &compile(&new_inputs));
    let documented: BTreeSet<String> = EXPECTED_REFUSED_FROM_GENERATED_OLDER
        .iter()
        .map(|id| id.to_string())
        .collect();
    assert_eq!(
        marked, documented,
        "`tenantc diff` marks other objects for replacement than EXPECTED_REFUSED_FROM_GENERATED_OLDER"
    );
    let tenants = |tree: &OutputTree| {
        objects_of(tree)
            .iter()
            .filter_map(|object| {
                object.json["metadata"]["labels"]["tenant.platform/tenant"]
                    .as_str()
                    .map(str::to_string)
            })
            .collect::<BTreeSet<String>>()
    };
    assert_eq!(tenants(&large).len(), GENERATED_TENANTS);
    println!(
        "  generated fleet: {GENERATED_TENANTS} tenants, {} objects",
        objects_of(&large).len()
    );
    let (old_tenants, new_tenants) = (tenants(&old), tenants(&new));
    assert_eq!(
        old_tenants.difference(&new_tenants).count(),
        1,
        "one tenant removed"
    );
    assert_eq!(
        new_tenants.difference(&old_tenants).count(),
        1,
        "one tenant added"
    );
}

fn generated_fleet_applies_server_side(cluster: &Cluster) {
    install_crds(cluster);
    let tree = compile_inputs(&generated_fleet(
        "gen",
        GENERATED_TENANTS,
        GENERATED_CELLS,
        Variant::New,
    ));
    apply_all_accepted(
        cluster,
        &format!("a generated fleet of {GENERATED_TENANTS} tenants over {GENERATED_CELLS} cells"),
        &tree,
    );
}

// Kueue fixtures ------------------------------------------------------------------------------

/// A fixture file and the message the API server must answer with (its `# expect:` lines).
fn fixtures(folder: &str) -> Vec<(PathBuf, String, Vec<String>)> {
    let dir = support::repo().join("tests/conformance").join(folder);
    let mut files = Vec::new();
    collect_yaml(&dir, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file).unwrap();
            let expect: Vec<String> = text
                .lines()
                .filter_map(|line| line.strip_prefix("# expect:"))
                .map(|message| message.trim().to_string())
                .collect();
            (file, text, expect)
        })
        .collect()
}

fn kueue_fixtures_are_judged_by_the_crds_own_rules(cluster: &Cluster) {
    install_crds(cluster);
    let accepted = fixtures("kueue-accept");
    assert!(
        !accepted.is_empty(),
        "no tests/conformance/kueue-accept/*.yaml"
    );
    for (file, text, _) in &accepted {
        let run = cluster.kubectl(&apply_args(true), text);
        assert!(
            run.ok,
            "{}: a valid object was refused:\n{}",
            file.display(),
            run.stderr
        );
    }
    let rejected = fixtures("kueue-reject");
    assert!(
        rejected.len() >= 6,
        "too few tests/conformance/kueue-reject/*.yaml"
    );
    let mut failures = Vec::new();
    for (file, text, expect) in &rejected {
        let name = file.file_name().unwrap().to_string_lossy();
        assert!(!expect.is_empty(), "{name}: no `# expect: <message>` line");
        let run = cluster.kubectl(&apply_args(true), text);
        if run.ok {
            failures.push(format!(
                "{name}: accepted, expected a refusal with `{}`",
                expect.join("`, `")
            ));
            continue;
        }
        let missing: Vec<&String> = expect
            .iter()
            .filter(|message| !run.stderr.contains(message.as_str()))
            .collect();
        if missing.is_empty() {
            println!("  {name}: refused: {}", expect.join("; "));
        } else {
            failures.push(format!(
                "{name}: refused without `{}`:\n{}",
                missing
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join("`, `"),
                run.stderr
            ));
        }
    }
    println!(
        "  {} valid fixtures accepted, {} must-reject fixtures checked",
        accepted.len(),
        rejected.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// Updates -----------------------------------------------------------------------------------

/// Applies `old` and then `new`, and returns the objects refused at either step: an object
/// that differs in an immutable field is refused whichever of the two the cluster holds, so
/// the set does not depend on what an earlier run left behind.
fn refused_updates(cluster: &Cluster, old: &OutputTree, new: &OutputTree) -> Refusals {
    let old_objects = objects_of(old);
    let new_objects = objects_of(new);
    let mut refused = apply_tree(cluster, &old_objects, false).refusals;
    let forward = apply_tree(cluster, &new_objects, false).refusals;
    // Where both steps refused an object, the message of the step from older to newer is kept.
    refused.extend(forward);
    refused
}

fn print_refused(what: &str, refused: &Refusals) {
    if refused.is_empty() {
        println!("  {what}: every object updates in place");
    } else {
        println!("  {what}: the API server refuses to update in place:");
        println!("{}", format_refusals(refused));
    }
}

/// The output tree at a commit: the `out/` folder as Git stored it.
fn git_tree(repo: &Path, rev: &str) -> Option<OutputTree> {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(args)
            .output()
            .ok()
            .filter(|output| output.status.success())
    };
    let listing = git(&["ls-tree", "-r", "--name-only", rev, "--", "out/"])?;
    let mut tree = OutputTree::new();
    for path in String::from_utf8_lossy(&listing.stdout).lines() {
        let file = git(&["show", &format!("{rev}:{path}")])?;
        tree.insert(path.trim_start_matches("out/").to_string(), file.stdout);
    }
    Some(tree)
}

fn previous_commit_out_updates_in_place_to_the_current_one(cluster: &Cluster) {
    install_crds(cluster);
    let repo = support::repo();
    // The out/ before the newest commit that changed it: the last update a cell really saw.
    let last_change = Command::new("git")
        .arg("-C")
        .arg(&repo)
        .args(["log", "-1", "--format=%H", "--", "out/"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
        .filter(|hash| !hash.is_empty());
    let previous = last_change
        .as_ref()
        .and_then(|hash| {
            git_tree(&repo, &format!("{hash}~1")).map(|tree| (format!("{hash}~1"), tree))
        })
        .filter(|(_, tree)| !tree.is_empty());
    let Some((rev, old)) = previous else {
        println!(
            "  NOTE: no earlier out/ in the Git history here (shallow clone or no history); \
             the generated older tree check covers updates"
        );
        return;
    };
    let current = example_tree();
    let refused = refused_updates(cluster, &old, &current);
    print_refused(&format!("out/ at {rev} -> the current out/"), &refused);
    let expected: BTreeSet<String> = EXPECTED_REFUSED_FROM_PREVIOUS_COMMIT
        .iter()
        .map(|id| id.to_string())
        .collect();
    let observed: BTreeSet<String> = refused.keys().cloned().collect();
    assert_eq!(
        observed, expected,
        "objects refused in place differ from EXPECTED_REFUSED_FROM_PREVIOUS_COMMIT"
    );
    // The same commit as `tenantc diff --base` reads it: its marks must name exactly these.
    let (_, loaded) = tenantc::git::load_revision(&repo, &rev)
        .unwrap_or_else(|error| panic!("reading {rev} from git: {}", error.message()));
    let base = tenantc::compile_loaded(&loaded);
    if base.has_errors() {
        println!(
            "  NOTE: the declarations at {rev} do not compile with this tenantc; the marks of `tenantc diff` are checked on the generated older tree"
        );
        return;
    }
    let marked = marked_for_replacement(&base, &support::compile_root(&repo));
    assert_eq!(
        observed, marked,
        "objects refused in place differ from those `tenantc diff --base {rev}` marks replaced on sync"
    );
    println!("  `tenantc diff --base {rev}` marks exactly these for replacement");
}

/// The cluster-scoped objects that `tenantc diff` marks replaced on sync from `old` to `new`,
/// `Kind/name`, whatever the cell.
fn marked_for_replacement(
    old: &tenantc::Compilation,
    new: &tenantc::Compilation,
) -> BTreeSet<String> {
    let review = |compilation: &tenantc::Compilation| {
        tenantc::review::review(compilation.plan.as_ref().expect("a plan"))
    };
    let diff = tenantc::review::diff::diff(&review(old), &review(new), "old", "new");
    tenantc::review::diff::replaced_objects(&diff)
        .into_iter()
        .map(|(_, object)| object)
        .collect()
}

fn generated_older_tree_updates_refuse_only_the_expected_objects(cluster: &Cluster) {
    install_crds(cluster);
    let old_inputs = generated_fleet("upd", 8, 2, Variant::Old);
    let new_inputs = generated_fleet("upd", 8, 2, Variant::New);
    let old = compile_inputs(&old_inputs);
    let new = compile_inputs(&new_inputs);
    assert_ne!(old, new, "the two variants must differ");
    let refused = refused_updates(cluster, &old, &new);
    print_refused("generated older tree -> newer tree", &refused);
    let expected: BTreeSet<String> = EXPECTED_REFUSED_FROM_GENERATED_OLDER
        .iter()
        .map(|id| id.to_string())
        .collect();
    let observed: BTreeSet<String> = refused.keys().cloned().collect();
    assert_eq!(observed, expected, "objects refused in place");
    let marked = marked_for_replacement(&compile(&old_inputs), &compile(&new_inputs));
    assert_eq!(
        observed, marked,
        "objects refused in place differ from those `tenantc diff` marks replaced on sync"
    );
    println!("  `tenantc diff` marks exactly these for replacement");
    for message in refused.values() {
        assert!(
            message.contains("immutable") || message.contains("may not be changed"),
            "a refusal that is not about an immutable field: {message}"
        );
    }
}

// Self-test -----------------------------------------------------------------------------------

fn harness_self_test_broken_objects_fail_the_apply_step(cluster: &Cluster) {
    install_crds(cluster);
    // A bad quantity in a ResourceQuota of the fixture fleet.
    let mut tree = fleet_tree();
    let quota_path = tree
        .keys()
        .find(|path| path.ends_with("/resourcequota.yaml"))
        .cloned()
        .expect("a ResourceQuota in the fixture fleet");
    let quota = String::from_utf8(tree[&quota_path].clone()).unwrap();
    let broken: String = quota
        .lines()
        .map(|line| {
            if line.trim_start().starts_with("requests.cpu: ") {
                "    requests.cpu: \"lots\"\n".to_string()
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    assert_ne!(broken, quota, "the quota was not broken");
    tree.insert(quota_path.clone(), broken.into_bytes());
    let objects = objects_of(&tree);
    let applied = apply_tree(cluster, &objects, true);
    let quota_id = objects
        .iter()
        .find(|object| object.path == quota_path)
        .map(Object::id)
        .unwrap();
    println!(
        "  broken ResourceQuota: {}",
        format_refusals(&applied.refusals)
    );
    assert_eq!(
        applied.refusals.keys().cloned().collect::<Vec<_>>(),
        vec![quota_id.clone()],
        "the apply step must refuse exactly the broken ResourceQuota"
    );
    assert!(
        applied.refusals[&quota_id].contains("quantities must match the regular expression"),
        "unexpected message: {}",
        applied.refusals[&quota_id]
    );

    // A misspelt field in a CRD kind, with strict field validation, and also with kubectl's
    // validation off: server-side apply refuses unknown fields on its own.
    let misspelt = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: conformance-misspelt\nspec:\n  cohortNmae: team\n  namespaceSelector: {}\n";
    let object = object_from(
        "self-test/clusterqueue.yaml",
        &yaml_documents(misspelt).unwrap()[0],
        misspelt,
    );
    let applied = apply_tree(cluster, std::slice::from_ref(&object), true);
    println!(
        "  misspelt CRD field: {}",
        format_refusals(&applied.refusals)
    );
    let message = applied
        .refusals
        .get(&object.id())
        .cloned()
        .unwrap_or_default();
    assert!(
        message.contains(".spec.cohortNmae: field not declared in schema"),
        "the misspelt field was not refused by name: {message:?}"
    );
    let lax = cluster.kubectl(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            FIELD_MANAGER,
            "--validate=false",
            "--dry-run=server",
            "-f",
            "-",
        ],
        misspelt,
    );
    assert!(
        !lax.ok && lax.stderr.contains("field not declared in schema"),
        "server-side apply accepted an unknown field without strict validation:\n{}{}",
        lax.stdout,
        lax.stderr
    );
    // The same apply accepts the fixture fleet unchanged: the failures above are the broken
    // objects', not the step's.
    let clean = apply_tree(cluster, &objects_of(&fleet_tree()), true);
    assert!(
        clean.refusals.is_empty(),
        "{}",
        format_refusals(&clean.refusals)
    );
}
