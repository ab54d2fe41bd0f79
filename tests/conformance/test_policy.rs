//! Conformance of `tenantc test-policy`: its verdict (`tenantc::policy::judge`, the function
//! the command calls) equals the real API server's on every policy fixture, Pod Security
//! included.
//!
//! Consumes: the fixture fleet (each cell applied alone with `quota::set_up_cell`, and judged
//! offline from the same compilation's output tree), the admitted fixtures, the denied cases,
//! update cases, ownership cases and delete cases of `tests/policy/cases.rs`, and the Pod
//! Security cases of `tests/policy/pod_security.rs`. Produces: pass or fail, one line per cell
//! with the counts, and every disagreement.
//!
//! Invariants:
//! - Every request is a server-side dry-run by the principal the offline request names, by
//!   impersonation: a member of the tenant (`conformance:member-of:<group>`), and for updates
//!   also the admin (`conformance-admin` in `system:masters`) and a ServiceAccount of the
//!   namespace in the member group (so RBAC lets it), and a member's delete, with kubectl's
//!   default cascade and with `--cascade=orphan`; nothing is stored but the `before` objects
//!   of the updates, which the admin creates and deletes.
//! - A request agrees when both admit it or both refuse it, a refusal's message is one the
//!   offline verdict says the API server may answer (Pod Security's when it denies, else the
//!   first failing validation of one of the denying policies), and the warnings Pod Security
//!   and the policies give are the same.
//! - The self-test judges offline without Pod Security (namespaces relaxed to `privileged`, no
//!   exception policy: the floor alone, as `test-policy` judged before issue 18) and shows that
//!   the comparison reports the API server's refusals and its warning.

use super::admission::{
    dry_run_delete, ensure_service_account, install_node_runtime_classes, remove_service_account,
};
use super::pod_security_cases::{Expect, pod_security_cases, pod_security_updates};
use super::policy_cases::{
    admitted_fixtures, cases, delete_cases, fixture, merge_patch, namespace_of, ownership_cases,
    update_cases,
};
use super::quota::{member_group, set_up_cell};
use super::*;

use std::time::Duration;

use tenantc::emit::OutputTree;
use tenantc::plan::{CellPlan, Plan, TenantPlan};
use tenantc::policy::Request;
use tenantc::policy::judge::{CellAdmission, Judge, Verdict, kubectl_delete_options};

/// How long a change of policy, params or namespace labels may take to reach admission.
const PROPAGATION_TIMEOUT: Duration = Duration::from_secs(30);

/// The prefixes of the warnings the judged admission gives, as kubectl prints them.
const JUDGED_WARNINGS: &[&str] = &[
    "Warning: would violate PodSecurity",
    "Warning: Validation failed for ValidatingAdmissionPolicy",
];

/// The fixture fleet's plan and output tree, compiled once.
fn compiled() -> (Plan, OutputTree) {
    let compilation = support::compile_root(&support::fleet());
    assert!(!compilation.has_errors(), "the fixture fleet must compile");
    (
        compilation.plan.expect("a plan"),
        compilation.output.expect("an output tree"),
    )
}

/// A principal, as kubectl impersonates it and as the offline request names it.
#[derive(Debug, Clone)]
struct Principal {
    what: &'static str,
    username: String,
    groups: Vec<String>,
    /// Whether kubectl runs as the admin itself rather than impersonating.
    admin: bool,
}

impl Principal {
    fn member(tenant: &TenantPlan) -> Self {
        let group = member_group(tenant);
        Self {
            what: "a member",
            username: format!("conformance:member-of:{group}"),
            groups: vec![group, "system:authenticated".to_string()],
            admin: false,
        }
    }

    fn admin() -> Self {
        Self {
            what: "the admin",
            username: "conformance-admin".to_string(),
            groups: vec![
                "system:masters".to_string(),
                "system:authenticated".to_string(),
            ],
            admin: true,
        }
    }

    /// A ServiceAccount of `namespace`, impersonated in the tenant's member group so that
    /// RBAC lets it make the request and admission alone decides.
    fn service_account(tenant: &TenantPlan, namespace: &str) -> Self {
        Self {
            what: "a ServiceAccount of the namespace",
            username: format!("system:serviceaccount:{namespace}:conformance-probe"),
            groups: vec![member_group(tenant), "system:authenticated".to_string()],
            admin: false,
        }
    }

    /// Runs kubectl with `args` as this principal.
    fn kubectl(&self, cluster: &Cluster, args: &[String], stdin: &str) -> Run {
        let mut all: Vec<String> = args.to_vec();
        all.extend(self.impersonation());
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        cluster.kubectl_with(self.kubeconfig(cluster), &all, stdin)
    }

    /// The kubectl arguments that impersonate this principal.
    fn impersonation(&self) -> Vec<String> {
        let mut args = Vec::new();
        if !self.admin {
            args.extend(["--as".to_string(), self.username.clone()]);
            for group in &self.groups {
                args.extend(["--as-group".to_string(), group.clone()]);
            }
        }
        args
    }

    /// The kubeconfig this principal's requests are sent with.
    fn kubeconfig<'a>(&self, cluster: &'a Cluster) -> &'a Path {
        if self.admin {
            &cluster.kubeconfig
        } else {
            &cluster.user_kubeconfig
        }
    }

    /// The request of this principal, as `tenantc test-policy --user … --group …` makes it.
    fn request(&self, mut request: Request) -> Request {
        request.username = self.username.clone();
        request.groups = self.groups.clone();
        request
    }

    /// The offline verdict on this principal's `request`, and the API server's answer to
    /// kubectl `args` (reading `stdin`) run as this principal.
    fn ask(
        &self,
        cluster: &Cluster,
        admission: &CellAdmission<'_>,
        what: &str,
        request: Request,
        args: &[&str],
        stdin: &str,
    ) -> (Verdict, Run) {
        let verdict = admission
            .judge(&self.request(request))
            .unwrap_or_else(|error| panic!("{what}: not judged offline: {error}"));
        (verdict, self.kubectl(cluster, &strings(args), stdin))
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|arg| (*arg).to_string()).collect()
}

/// The warnings of the judged admission in kubectl's stderr, without `Warning: `.
fn server_warnings(stderr: &str) -> BTreeSet<String> {
    stderr
        .lines()
        .filter(|line| {
            JUDGED_WARNINGS
                .iter()
                .any(|prefix| line.starts_with(prefix))
        })
        .map(|line| line.trim_start_matches("Warning: ").to_string())
        .collect()
}

/// Whether the API server's answer agrees with the verdict; `Some(why)` when it does not.
fn disagreement(what: &str, verdict: &Verdict, run: &Run) -> Option<String> {
    let answers = verdict.answers();
    let mut problems = Vec::new();
    match (run.ok, answers.is_empty()) {
        (true, true) => {}
        (false, false) => {
            let agrees = run
                .stderr
                .lines()
                .any(|line| answers.iter().any(|answer| line.ends_with(answer.as_str())));
            if !agrees {
                problems.push(format!(
                    "the API server refused it with\n    {}\n  but tenantc expects one of\n    {}",
                    run.stderr.trim(),
                    answers.join("\n    ")
                ));
            }
        }
        (true, false) => problems.push(format!(
            "the API server admitted it; tenantc refuses it with\n    {}",
            answers.join("\n    ")
        )),
        (false, true) => problems.push(format!(
            "the API server refused it; tenantc admits it:\n    {}",
            run.stderr.trim()
        )),
    }
    let expected: BTreeSet<String> = verdict.warnings().into_iter().collect();
    let actual = server_warnings(&run.stderr);
    if expected != actual {
        problems.push(format!(
            "the API server warned {actual:?}; tenantc expects {expected:?}"
        ));
    }
    (!problems.is_empty()).then(|| format!("{what}: {}", problems.join("\n  ")))
}

/// The tenant that owns an object's namespace.
fn owner<'a>(cell: &'a CellPlan, object: &Value) -> &'a TenantPlan {
    let namespace = namespace_of(object);
    cell.tenants
        .iter()
        .find(|tenant| tenant.namespaces.iter().any(|ns| ns.name == namespace))
        .unwrap_or_else(|| panic!("no tenant of {} owns {namespace}", cell.name))
}

/// What a cell's comparison saw.
#[derive(Default)]
struct Tally {
    requests: usize,
    pod_security_denials: usize,
    warned: usize,
    problems: Vec<String>,
}

impl Tally {
    fn count(&mut self, what: &str, verdict: &Verdict, run: &Run) {
        self.requests += 1;
        if verdict
            .refusals()
            .first()
            .is_some_and(|refusal| refusal.judge == Judge::PodSecurity)
        {
            self.pod_security_denials += 1;
        }
        if !server_warnings(&run.stderr).is_empty() {
            self.warned += 1;
        }
        self.problems.extend(disagreement(what, verdict, run));
    }
}

/// Every object a cell's comparison creates: `(what, object)`.
fn created_objects(cell: &CellPlan) -> Vec<(String, Value)> {
    let mut objects = Vec::new();
    for (cell_name, path, object) in admitted_fixtures() {
        if cell_name == cell.name {
            objects.push((path.display().to_string(), object));
        }
    }
    for case in cases() {
        if case.cell == cell.name {
            let mut object = fixture(case.fixture, case.cell);
            (case.mutate)(&mut object);
            objects.push((case.name.to_string(), object));
        }
    }
    for case in pod_security_cases() {
        if case.cell == cell.name {
            objects.push((case.name.to_string(), case.object()));
        }
    }
    objects
}

/// Creates every object of the cell by server-side dry-run as a member and compares.
fn compare_creates(cluster: &Cluster, cell: &CellPlan, admission: &CellAdmission<'_>) -> Tally {
    let mut tally = Tally::default();
    for (what, object) in created_objects(cell) {
        // A ServiceAccount the object names but the namespace lacks is created first, so that
        // the ServiceAccount admission plugin does not refuse the pod before admission judges it.
        let created = ensure_service_account(cluster, &object);
        let (verdict, run) = Principal::member(owner(cell, &object)).ask(
            cluster,
            admission,
            &what,
            Request::create(&namespace_of(&object), object.clone()),
            &["create", "--dry-run=server", "-o", "name", "-f", "-"],
            &object.to_string(),
        );
        if let Some(account) = created {
            remove_service_account(cluster, &namespace_of(&object), &account);
        }
        tally.count(&format!("create {what}"), &verdict, &run);
    }
    tally
}

/// `kind/name` for kubectl.
fn target(object: &Value) -> String {
    format!(
        "{}/{}",
        object["kind"].as_str().unwrap().to_lowercase(),
        object["metadata"]["name"].as_str().unwrap()
    )
}

/// Waits until the object is gone, so that the next case may create one of the same name.
fn wait_gone(cluster: &Cluster, object: &Value) {
    let started = Instant::now();
    while started.elapsed() < PROPAGATION_TIMEOUT {
        let run = cluster.kubectl(
            &[
                "get",
                &target(object),
                "-n",
                &namespace_of(object),
                "-o",
                "name",
            ],
            "",
        );
        if !run.ok && run.stderr.contains("NotFound") {
            return;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("{} was not deleted in time", target(object));
}

/// An update's objects: the fixture changed by `before`, and by `after`.
fn before_and_after(
    name: &str,
    cell: &str,
    before: fn(&mut Value),
    after: fn(&mut Value),
) -> (Value, Value) {
    let (mut old, mut new) = (fixture(name, cell), fixture(name, cell));
    before(&mut old);
    after(&mut new);
    (old, new)
}

/// Every update of the cell: `(what, before, after)`.
fn updates(cell: &CellPlan) -> Vec<(String, Value, Value)> {
    let mut updates = Vec::new();
    for case in update_cases().into_iter().chain(ownership_cases()) {
        if case.cell == cell.name {
            let (before, after) =
                before_and_after(case.fixture, case.cell, case.before, case.after);
            updates.push((case.name.to_string(), before, after));
        }
    }
    for case in pod_security_updates() {
        if case.cell == cell.name {
            let (before, after) =
                before_and_after(case.fixture, case.cell, case.before, case.after);
            updates.push((case.name.to_string(), before, after));
        }
    }
    updates
}

/// Creates each update's `before` for real as the admin, patches it into `after` by
/// server-side dry-run as each principal, deletes it by server-side dry-run as a member (with
/// kubectl's default cascade and with `--cascade=orphan`), and
/// compares each answer; then deletes it for real.
fn compare_updates(cluster: &Cluster, cell: &CellPlan, admission: &CellAdmission<'_>) -> Tally {
    let mut tally = Tally::default();
    for (what, before, after) in updates(cell) {
        let namespace = namespace_of(&before);
        let tenant = owner(cell, &before);
        let created = cluster.kubectl(&["create", "-f", "-"], &before.to_string());
        if !created.ok {
            tally
                .problems
                .push(format!("{what}: creating it failed: {}", created.stderr));
            continue;
        }
        let patch = merge_patch(&before, &after).to_string();
        for principal in [
            Principal::member(tenant),
            Principal::admin(),
            Principal::service_account(tenant, &namespace),
        ] {
            let mut request = Request::create(&namespace, after.clone());
            request.operation = "UPDATE".to_string();
            request.old_object = Some(before.clone());
            let (verdict, run) = principal.ask(
                cluster,
                admission,
                &what,
                request,
                &[
                    "patch",
                    &target(&before),
                    "-n",
                    &namespace,
                    // Strategic merge, so that a changed container list merges by name into the
                    // stored (defaulted) one, as `kubectl apply` and `kubectl edit` send it.
                    "--type=strategic",
                    "--dry-run=server",
                    "-p",
                    &patch,
                ],
                "",
            );
            tally.count(
                &format!("update by {} of {what}", principal.what),
                &verdict,
                &run,
            );
        }
        for (cascade, propagation) in [("background", "Background"), ("orphan", "Orphan")] {
            let (verdict, run) = Principal::member(tenant).ask(
                cluster,
                admission,
                &what,
                Request::delete(
                    &namespace,
                    before.clone(),
                    kubectl_delete_options(propagation),
                ),
                &[
                    "delete",
                    &target(&before),
                    "-n",
                    &namespace,
                    &format!("--cascade={cascade}"),
                    "--dry-run=server",
                ],
                "",
            );
            tally.count(
                &format!("delete --cascade={cascade} by a member of {what}"),
                &verdict,
                &run,
            );
        }
        let deleted = cluster.kubectl(
            &[
                "delete",
                &target(&before),
                "-n",
                &namespace,
                "--wait=false",
                "--grace-period=0",
                "--force",
            ],
            "",
        );
        if !deleted.ok {
            tally
                .problems
                .push(format!("{what}: deleting it failed: {}", deleted.stderr));
        }
        wait_gone(cluster, &before);
    }
    tally
}

/// Creates each delete case's workload for real as the admin, deletes it with the case's
/// options by server-side dry-run as a member and as the admin, and compares each answer; then
/// deletes it for real.
fn compare_deletes(cluster: &Cluster, cell: &CellPlan, admission: &CellAdmission<'_>) -> Tally {
    let mut tally = Tally::default();
    for case in delete_cases()
        .into_iter()
        .filter(|case| case.cell == cell.name)
    {
        let object = fixture(case.fixture, case.cell);
        let namespace = namespace_of(&object);
        let options = (case.options)();
        let created = cluster.kubectl(&["create", "-f", "-"], &object.to_string());
        if !created.ok {
            tally.problems.push(format!(
                "{}: creating it failed: {}",
                case.name, created.stderr
            ));
            continue;
        }
        for principal in [Principal::member(owner(cell, &object)), Principal::admin()] {
            let request = Request::delete(&namespace, object.clone(), options.clone());
            let verdict = admission
                .judge(&principal.request(request))
                .unwrap_or_else(|error| panic!("{}: not judged offline: {error}", case.name));
            let run = dry_run_delete(
                cluster,
                principal.kubeconfig(cluster),
                &object,
                &options,
                &principal.impersonation(),
            );
            tally.count(
                &format!("delete by {} of {}", principal.what, case.name),
                &verdict,
                &run,
            );
        }
        let deleted = cluster.kubectl(
            &["delete", &target(&object), "-n", &namespace, "--wait=false"],
            "",
        );
        if !deleted.ok {
            tally.problems.push(format!(
                "{}: deleting it failed: {}",
                case.name, deleted.stderr
            ));
        }
        wait_gone(cluster, &object);
    }
    tally
}

/// Applies one cell and waits until the comparison of its creates settles (policies, params
/// and namespaces reach admission a moment after they are applied).
fn settled_creates(cluster: &Cluster, cell: &CellPlan, admission: &CellAdmission<'_>) -> Tally {
    let started = Instant::now();
    loop {
        let tally = compare_creates(cluster, cell, admission);
        if tally.problems.is_empty() || started.elapsed() > PROPAGATION_TIMEOUT {
            return tally;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

pub(super) fn test_policy_judges_every_fixture_as_the_api_server_does(cluster: &Cluster) {
    install_crds(cluster);
    install_node_runtime_classes(cluster);
    let fleet = super::quota::fixture_fleet();
    let (_, tree) = compiled();
    let mut failures = Vec::new();
    for cell in &fleet.plan.cells {
        set_up_cell(cluster, &fleet, cell);
        let admission = CellAdmission::read(cell, &tree).expect("the cell's admission reads back");
        let creates = settled_creates(cluster, cell, &admission);
        let mut updates = compare_updates(cluster, cell, &admission);
        let deletes = compare_deletes(cluster, cell, &admission);
        updates.requests += deletes.requests;
        updates.warned += deletes.warned;
        updates.problems.extend(deletes.problems);
        println!(
            "  cell {}: {} creates and {} updates and deletes (by a member, the admin and a ServiceAccount) judged alike by the API server and `tenantc test-policy` ({} disagree); {} refused by Pod Security, {} with warnings",
            cell.name,
            creates.requests,
            updates.requests,
            creates.problems.len() + updates.problems.len(),
            creates.pod_security_denials + updates.pod_security_denials,
            creates.warned + updates.warned,
        );
        failures.extend(creates.problems);
        failures.extend(updates.problems);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The output tree as the evaluator before issue 18 saw it, a deliberately wrong basis for the
/// offline verdict: every tenant Namespace of `cell` at `privileged` in every mode (so Pod
/// Security neither denies nor warns), and without the Pod Security exception policy (which
/// would then select every namespace): the floor alone.
fn without_pod_security(tree: &OutputTree, cell: &str) -> OutputTree {
    let mut tree = tree.clone();
    tree.retain(|path, _| {
        !(path.starts_with(&format!("{cell}/cluster/"))
            && path.contains("tenantc-pod-security-exceptions"))
    });
    for (path, bytes) in tree.iter_mut() {
        if path.starts_with(&format!("{cell}/tenants/")) && path.ends_with("/namespace.yaml") {
            let text = String::from_utf8(bytes.clone()).unwrap();
            let mut relaxed = text.clone();
            for mode in ["enforce", "audit", "warn"] {
                for level in ["restricted", "baseline"] {
                    relaxed = relaxed.replace(
                        &format!("pod-security.kubernetes.io/{mode}: {level}"),
                        &format!("pod-security.kubernetes.io/{mode}: privileged"),
                    );
                }
            }
            *bytes = relaxed.into_bytes();
        }
    }
    tree
}

pub(super) fn test_policy_self_test_a_wrong_verdict_is_caught(cluster: &Cluster) {
    install_crds(cluster);
    install_node_runtime_classes(cluster);
    let fleet = super::quota::fixture_fleet();
    let (_, tree) = compiled();
    let cell = fleet
        .plan
        .cells
        .iter()
        .find(|cell| cell.name == "us-east-1a")
        .expect("cell us-east-1a");
    set_up_cell(cluster, &fleet, cell);
    let wrong_tree = without_pod_security(&tree, &cell.name);
    let right = CellAdmission::read(cell, &tree).unwrap();
    let wrong = CellAdmission::read(cell, &wrong_tree).unwrap();
    let probes: Vec<_> = pod_security_cases()
        .into_iter()
        .filter(|case| {
            case.cell == cell.name
                && matches!(
                    case.expect,
                    Expect::DeniedByPodSecurity(_) | Expect::Warned(_)
                )
        })
        .collect();
    assert!(!probes.is_empty(), "no Pod Security probe in {}", cell.name);
    let mut caught = Vec::new();
    for case in &probes {
        let object = case.object();
        let principal = Principal::member(owner(cell, &object));
        let request = Request::create(&namespace_of(&object), object.clone());
        let (right_verdict, run) = principal.ask(
            cluster,
            &right,
            case.name,
            request.clone(),
            &["create", "--dry-run=server", "-o", "name", "-f", "-"],
            &object.to_string(),
        );
        assert_eq!(
            disagreement(case.name, &right_verdict, &run),
            None,
            "before the self-test"
        );
        let wrong_verdict = wrong.judge(&principal.request(request)).unwrap();
        match disagreement(case.name, &wrong_verdict, &run) {
            Some(problem) => caught.push(problem),
            None => panic!(
                "{}: a verdict judged without Pod Security was not reported",
                case.name
            ),
        }
    }
    assert!(
        caught
            .iter()
            .any(|problem| problem.contains("tenantc admits it")),
        "no wrongly admitted refusal among {caught:?}"
    );
    assert!(
        caught
            .iter()
            .any(|problem| problem.contains("the API server warned")),
        "no missed warning among {caught:?}"
    );
    println!(
        "  self-test, verdicts judged without Pod Security (the floor alone, as before issue 18): {} of {} reported",
        caught.len(),
        probes.len()
    );
}

/// Offline: every Pod Security case is judged as it is written, and the comparison reports a
/// made-up answer that disagrees.
pub(super) fn test_policy_pod_security_cases_are_judged_as_written(_: &Cluster) {
    let (plan, tree) = compiled();
    let mut problems = Vec::new();
    let mut judged = 0;
    for cell in &plan.cells {
        let admission = CellAdmission::read(cell, &tree).unwrap();
        let mut check = |name: &str, request: Request, expect: Option<Expect>| {
            judged += 1;
            let verdict = admission
                .judge(&request)
                .unwrap_or_else(|error| panic!("{name}: {error}"));
            let refusals = verdict.refusals();
            let warnings = verdict.warnings();
            let warned = |detail: &str| {
                warnings.len() == 1
                    && warnings[0].starts_with("would violate PodSecurity \"restricted:v1.")
                    && warnings[0].ends_with(&format!("\": {detail}"))
            };
            let refused_by = |rule: &str| {
                refusals.iter().any(|refusal| match &refusal.judge {
                    Judge::Policy {
                        policy, validation, ..
                    } => {
                        policy == rule
                            || (policy == tenantc::lower::admission::POLICY_NAME
                                && validation
                                    .and_then(|idx| tenantc::lower::admission::RULES.get(idx))
                                    .is_some_and(|r| r.name == rule))
                    }
                    Judge::PodSecurity => false,
                })
            };
            let holds = match expect {
                None => refusals.is_empty() && warnings.is_empty(),
                Some(Expect::DeniedByPodSecurity(detail)) => {
                    refusals.first().is_some_and(|refusal| {
                        refusal.judge == Judge::PodSecurity
                            && refusal
                                .message
                                .contains("violates PodSecurity \"restricted:v1.")
                            && refusal.message.ends_with(&format!("\": {detail}"))
                    }) && warnings.is_empty()
                }
                Some(Expect::Warned(detail)) => refusals.is_empty() && warned(detail),
                Some(Expect::DeniedByPolicy(rule)) => {
                    refused_by(rule)
                        && refusals.iter().all(|r| r.judge != Judge::PodSecurity)
                        && warnings.is_empty()
                }
                Some(Expect::DeniedByPolicyWithWarning(rule, detail)) => {
                    refused_by(rule)
                        && refusals.iter().all(|r| r.judge != Judge::PodSecurity)
                        && warned(detail)
                }
            };
            if !holds {
                problems.push(format!(
                    "{name}: expected {expect:?}, judged {refusals:#?} with warnings {warnings:?}"
                ));
            }
        };
        for case in pod_security_cases().iter().filter(|c| c.cell == cell.name) {
            let object = case.object();
            check(
                case.name,
                Request::create(&namespace_of(&object), object),
                Some(case.expect),
            );
        }
        for case in pod_security_updates()
            .iter()
            .filter(|c| c.cell == cell.name)
        {
            let (before, after) =
                before_and_after(case.fixture, case.cell, case.before, case.after);
            let mut request = Request::create(&namespace_of(&after), after);
            request.operation = "UPDATE".to_string();
            request.old_object = Some(before);
            check(case.name, request, case.expect);
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The comparison itself: an admission where tenantc refuses, and a refusal with another
    // message, are both reported.
    let cell = plan.cells.iter().find(|c| c.name == "us-east-1a").unwrap();
    let admission = CellAdmission::read(cell, &tree).unwrap();
    let case = pod_security_cases().into_iter().next().unwrap();
    let object = case.object();
    let verdict = admission
        .judge(&Request::create(&namespace_of(&object), object))
        .unwrap();
    let admitted = Run {
        ok: true,
        stdout: String::new(),
        stderr: String::new(),
    };
    assert!(disagreement("probe", &verdict, &admitted).is_some());
    let other = Run {
        ok: false,
        stdout: String::new(),
        stderr: "Error from server (Forbidden): pods \"x\" is forbidden: something else\n"
            .to_string(),
    };
    assert!(disagreement("probe", &verdict, &other).is_some());
    let same = Run {
        ok: false,
        stdout: String::new(),
        stderr: format!(
            "Error from server (Forbidden): error when creating \"STDIN\": {}\n",
            verdict.answers()[0]
        ),
    };
    assert_eq!(disagreement("probe", &verdict, &same), None);
    println!(
        "  {judged} Pod Security cases judged as written; the comparison reports a disagreeing answer"
    );
}
