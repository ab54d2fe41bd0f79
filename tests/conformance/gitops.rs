//! The GitOps controllers judge what tenantc emits for them (issue 21 item 4): the flux CLI
//! builds every emitted Flux Kustomization, the real kustomize-controller syncs the fixture
//! fleet's Flux cell revision by revision, and the real Argo CD expands the ApplicationSet of its
//! Argo CD cell and renders each Application (`argocd.rs`, with the helpers here).
//!
//! Consumes: the control plane of the runner in `tests/conformance.rs`, the tools that
//! `harness.sh build-gitops` caches in `$TENANTC_CONFORMANCE_GITOPS` (kustomize-controller, the
//! flux CLI, Argo CD, kustomize, and the Flux and Argo CD CRDs of the same modules), the fixture
//! fleet compiled in-process, and variants of it with a tenant removed or a priority's value
//! changed (each edit stated where it is made).
//! Produces: the GitOps checks of the runner's `CHECKS` and their self-tests; each prints what
//! the controller did: objects rendered per unit, the order in which Flux made its
//! Kustomizations Ready, the objects it created, left alone, pruned and replaced.
//!
//! Invariants:
//! - What a check expects is what tenantc wrote: the output tree of the declarations, never what
//!   the controller produced; the controllers are only the judges, so a tree tampered with before
//!   a controller reads it is detected (the self-tests).
//! - No source-controller runs: the check plays its part, serving each revision of the tree as a
//!   tarball on 127.0.0.1 and writing the GitRepository's `status.artifact`, which is all that
//!   kustomize-controller reads of its source.
//! - The controllers run as the identity the cell declares (`gitops user=`), through a token of
//!   that ServiceAccount, so the cell's guard policies judge their every write; the scenario
//!   leaves the cell as the fixture fleet emits it (a last revision restores it), and removes its
//!   Flux objects (finalizers first) after stopping the controller, also when it fails.

use super::processes::{Components, free_port, http_ok};
use super::quota::{fixture_fleet, set_up_cell};
use super::*;

use std::time::Duration;

use sha2::{Digest, Sha256};
use tenantc::model::GitOpsController;
use tenantc::plan::{CellPlan, Plan};

/// How long a controller may take to become ready, and a revision to settle.
const READY_TIMEOUT: Duration = Duration::from_secs(90);
const SETTLE_TIMEOUT: Duration = Duration::from_secs(180);

/// The labels `flux build` and kustomize-controller put on every object they build
/// (`fluxcd/flux2` `internal/build`, `setOwnerLabels`): the Kustomization's name and namespace.
const FLUX_NAME_LABEL: &str = "kustomize.toolkit.fluxcd.io/name";
const FLUX_NAMESPACE_LABEL: &str = "kustomize.toolkit.fluxcd.io/namespace";
/// kustomize-controller's field manager for what it applies.
const FLUX_MANAGER: &str = "kustomize-controller";
/// The root Kustomization a platform's bootstrap points at `out/flux/` (README, "Point Argo CD
/// or Flux at the repository"); the platform's, not tenantc's.
const FLUX_ROOT: &str = "tenantc-fleet";
/// The tenant the second revision adds, and the one the third removes (with the change of a
/// PriorityClass `value`, which only a replacement can make).
const ADDED_TENANT: &str = "initech-notebooks";
const REMOVED_TENANT: &str = "globex-vision";
const CHANGED_PRIORITY: (&str, &str, &str) = ("batch", "value=1000 ", "value=1001 ");

// The tools -------------------------------------------------------------------------------------

/// The GitOps tools the harness built (`harness.sh build-gitops`).
pub(super) struct Tools {
    dir: PathBuf,
}

impl Tools {
    /// The tools, of which a check needs `binaries`.
    pub(super) fn of(cluster: &Cluster, binaries: &[&str]) -> Tools {
        let dir = cluster.gitops_dir.clone();
        for binary in binaries {
            assert!(
                dir.join(binary).is_file(),
                "no {binary} in `{}`: run `bash tests/conformance/harness.sh build-gitops` first",
                dir.display()
            );
        }
        Tools { dir }
    }

    pub(super) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// A fresh scratch folder of a check in the harness's run folder.
pub(super) fn scratch(cluster: &Cluster, name: &str) -> PathBuf {
    let dir = cluster.run_dir.join("gitops").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

/// Writes an output tree as a repository holds it: every file under `<root>/<out>/`.
pub(super) fn write_tree(root: &Path, out: &str, tree: &OutputTree) {
    for (path, bytes) in tree {
        let file = root.join(out).join(path);
        std::fs::create_dir_all(file.parent().expect("a folder")).expect("a folder of the tree");
        std::fs::write(&file, bytes).expect("a file of the tree");
    }
}

// Comparing objects ---------------------------------------------------------------------------

/// The differences of `actual` from `expected`, as JSON pointers with both values; with `subset`,
/// fields of `actual` that `expected` does not set are no difference (a live object carries
/// defaults, status and metadata of the API server).
pub(super) fn differences(expected: &Value, actual: &Value, subset: bool) -> Vec<String> {
    let mut found = Vec::new();
    walk_differences(expected, actual, subset, String::new(), &mut found);
    found
}

fn walk_differences(
    expected: &Value,
    actual: &Value,
    subset: bool,
    at: String,
    found: &mut Vec<String>,
) {
    match (expected, actual) {
        (Value::Object(want), Value::Object(have)) => {
            for (key, value) in want {
                let path = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                match have.get(key) {
                    Some(other) => walk_differences(value, other, subset, path, found),
                    // The API server leaves out a field set to its zero value (`omitempty`).
                    None if subset && is_zero(value) => {}
                    None => found.push(format!("{path}: {value} is missing")),
                }
            }
            if !subset {
                for (key, value) in have {
                    if !want.contains_key(key) {
                        found.push(format!(
                            "{at}/{}: {value} is extra",
                            key.replace('~', "~0").replace('/', "~1")
                        ));
                    }
                }
            }
        }
        (Value::Array(want), Value::Array(have)) if want.len() == have.len() => {
            for (idx, (value, other)) in want.iter().zip(have).enumerate() {
                walk_differences(value, other, subset, format!("{at}/{idx}"), found);
            }
        }
        _ if expected == actual => {}
        _ => found.push(format!("{at}: {expected} was {actual}")),
    }
}

/// Whether a value is the zero value of its type, which the API server stores as absent.
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(flag) => !flag,
        Value::Number(number) => number.as_f64() == Some(0.0),
        Value::String(text) => text.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
    }
}

/// An object's `Kind/namespace/name` (or `Kind/name`) from its JSON.
pub(super) fn id_of(object: &Value) -> String {
    let field = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
    match field("/metadata/namespace") {
        Some(namespace) => format!(
            "{}/{namespace}/{}",
            field("/kind").unwrap_or("?"),
            field("/metadata/name").unwrap_or("?")
        ),
        None => format!(
            "{}/{}",
            field("/kind").unwrap_or("?"),
            field("/metadata/name").unwrap_or("?")
        ),
    }
}

/// The emitted objects as typed JSON (integers and booleans typed, as a YAML 1.2 reader reads
/// them), by id.
pub(super) fn typed_objects<'a>(
    objects: impl IntoIterator<Item = &'a Object>,
) -> BTreeMap<String, Value> {
    objects
        .into_iter()
        .map(|object| {
            let typed = yaml_documents_typed(&object.text)
                .unwrap_or_else(|error| panic!("{}: {error}", object.path))
                .remove(0);
            (object.id(), typed)
        })
        .collect()
}

/// The live objects of `objects` with their managed fields, by id (absent ones are missing).
pub(super) fn live_objects(cluster: &Cluster, objects: &[&Object]) -> BTreeMap<String, Value> {
    if objects.is_empty() {
        return BTreeMap::new();
    }
    let stream: String = objects
        .iter()
        .map(|object| format!("---\n{}", object.text))
        .collect();
    let run = cluster.kubectl(
        &["get", "-f", "-", "-o", "json", "--show-managed-fields"],
        &stream,
    );
    if run.stdout.trim().is_empty() {
        return BTreeMap::new();
    }
    let answer: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|error| panic!("kubectl get -f: {error}\n{}", run.stderr));
    let items = match answer["kind"].as_str() {
        Some("List") => answer["items"].as_array().cloned().unwrap_or_default(),
        _ => vec![answer],
    };
    items.into_iter().map(|item| (id_of(&item), item)).collect()
}

/// The folder of the output tree, with a final `/`, that a GitOps unit syncs
/// (`./<out>/<cell>/<folder>` in the repository).
pub(super) fn unit_folder(out: &str, unit_path: &str) -> String {
    let folder = unit_path
        .trim_start_matches("./")
        .strip_prefix(&format!("{out}/"))
        .unwrap_or_else(|| panic!("the unit path `{unit_path}` is outside `{out}/`"));
    format!("{}/", folder.trim_end_matches('/'))
}

/// The objects of `tree` in the folder a GitOps unit syncs.
pub(super) fn unit_objects(tree: &OutputTree, out: &str, unit_path: &str) -> Vec<Object> {
    let prefix = unit_folder(out, unit_path);
    objects_of(tree)
        .into_iter()
        .filter(|object| object.path.starts_with(&prefix))
        .collect()
}

// The fleet and its variants ------------------------------------------------------------------

/// The fixture fleet's Flux cell: the one cell whose `gitops` names Flux.
fn flux_cell(plan: &Plan) -> &CellPlan {
    let cells: Vec<&CellPlan> = plan
        .cells
        .iter()
        .filter(|cell| {
            cell.gitops
                .sync
                .as_ref()
                .is_some_and(|sync| sync.controller == GitOpsController::Flux)
        })
        .collect();
    assert_eq!(cells.len(), 1, "the fixture fleet has one Flux cell");
    cells[0]
}

/// A variant of the fixture fleet: `removed` tenant files left out, and each `(file, from, to)`
/// text replaced once (the replacement must happen: a fixture edit fails here, not silently).
fn fleet_variant(removed: &[&str], edits: &[(&str, &str, &str)]) -> tenantc::Compilation {
    let mut inputs = support::inputs(&support::fleet());
    let before = inputs.len();
    inputs.retain(|input| {
        !removed
            .iter()
            .any(|tenant| input.path.starts_with(&format!("tenants/{tenant}.")))
    });
    assert_eq!(
        inputs.len() + removed.len(),
        before,
        "every removed tenant has one file"
    );
    for (file, from, to) in edits {
        let input = inputs
            .iter_mut()
            .find(|input| input.path == *file)
            .unwrap_or_else(|| panic!("the fixture fleet has no {file}"));
        let text = String::from_utf8(input.contents.clone()).expect("a text file");
        assert_eq!(
            text.matches(from).count(),
            1,
            "`{from}` occurs once in the fixture's {file}"
        );
        input.contents = text.replacen(from, to, 1).into_bytes();
    }
    let compilation = compile(&inputs);
    assert!(
        !compilation.has_errors(),
        "the fixture fleet variant must compile:\n{}",
        tenantc::diag::render::human(
            &compilation.diagnostics,
            &compilation.sources,
            tenantc::diag::render::Color::Never
        )
    );
    compilation
}

/// The text of an org that lists one tenant in a fixture cell, removed with the tenant.
fn org_block(org: &str, tenant: &str) -> String {
    format!("    org \"{org}\" {{\n        tenants \"{tenant}\"\n    }}\n")
}

// The flux CLI --------------------------------------------------------------------------------

/// One Flux Kustomization that tenantc emitted into `flux/`.
struct FluxUnit {
    /// Its file in the tree.
    file: String,
    name: String,
    namespace: String,
    /// `spec.path`.
    path: String,
    depends_on: Vec<String>,
}

fn flux_units(tree: &OutputTree) -> Vec<FluxUnit> {
    objects_of(tree)
        .into_iter()
        .filter(|object| {
            object.path.starts_with("flux/")
                && object.kind == "Kustomization"
                && object
                    .api_version
                    .starts_with("kustomize.toolkit.fluxcd.io/")
        })
        .map(|object| FluxUnit {
            file: object.path.clone(),
            name: object.name.clone(),
            namespace: object
                .namespace
                .clone()
                .expect("a namespaced Kustomization"),
            path: object.json["spec"]["path"]
                .as_str()
                .expect("spec.path")
                .to_string(),
            depends_on: object.json["spec"]["dependsOn"]
                .as_array()
                .map(|deps| {
                    deps.iter()
                        .filter_map(|dep| dep["name"].as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect()
}

/// Runs `flux build kustomization --dry-run` on every Kustomization of `flux/` in `served`
/// (written to disk as a repository holds it) and compares what each renders with the objects
/// tenantc wrote into its folder in `written`; returns the failures and prints a line per unit.
fn flux_build_all(
    tools: &Tools,
    work: &Path,
    out: &str,
    served: &OutputTree,
    written: &OutputTree,
) -> (Vec<String>, usize) {
    write_tree(work, out, served);
    let units = flux_units(written);
    assert!(
        !units.is_empty(),
        "the fixture fleet emits no Flux Kustomization"
    );
    let home = work.join("home");
    std::fs::create_dir_all(&home).expect("a HOME for flux");
    let mut failures = Vec::new();
    for unit in &units {
        let output = Command::new(tools.path("flux"))
            .args(["build", "kustomization", &unit.name, "--namespace"])
            .arg(&unit.namespace)
            .arg("--dry-run")
            .arg("--path")
            .arg(work.join(unit.path.trim_start_matches("./")))
            .arg("--kustomization-file")
            .arg(work.join(out).join(&unit.file))
            .env("HOME", &home)
            .env("KUBECONFIG", home.join("no-kubeconfig"))
            .stdin(Stdio::null())
            .output()
            .expect("flux runs");
        if !output.status.success() {
            failures.push(format!(
                "flux build kustomization {} failed:\n{}",
                unit.name,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
            continue;
        }
        let rendered = match yaml_documents_typed(&String::from_utf8_lossy(&output.stdout)) {
            Ok(documents) => documents,
            Err(error) => {
                failures.push(format!("flux build of {}: unreadable: {error}", unit.name));
                continue;
            }
        };
        let expected = typed_objects(&unit_objects(written, out, &unit.path));
        let mut built = BTreeMap::new();
        for mut object in rendered.into_iter().filter(|object| object.is_object()) {
            let labels = object["metadata"]["labels"].as_object_mut();
            let owner = labels.map(|labels| {
                let name = labels.remove(FLUX_NAME_LABEL);
                let namespace = labels.remove(FLUX_NAMESPACE_LABEL);
                let empty = labels.is_empty();
                (name, namespace, empty)
            });
            let id = id_of(&object);
            match owner {
                Some((Some(name), Some(namespace), empty))
                    if name == json!(unit.name) && namespace == json!(unit.namespace) =>
                {
                    if empty && let Some(metadata) = object["metadata"].as_object_mut() {
                        metadata.remove("labels");
                    }
                }
                _ => failures.push(format!(
                    "{}: {id} lacks flux's owner labels {FLUX_NAME_LABEL}={} and {FLUX_NAMESPACE_LABEL}={}",
                    unit.name, unit.name, unit.namespace
                )),
            }
            built.insert(id, object);
        }
        for (id, want) in &expected {
            match built.get(id) {
                None => failures.push(format!("{}: {id} was not rendered", unit.name)),
                Some(have) => {
                    let found = differences(want, have, false);
                    if !found.is_empty() {
                        failures.push(format!(
                            "{}: {id} differs from what tenantc wrote: {}",
                            unit.name,
                            found.join("; ")
                        ));
                    }
                }
            }
        }
        for id in built.keys().filter(|id| !expected.contains_key(*id)) {
            failures.push(format!(
                "{}: {id} was rendered but tenantc wrote no such object in {}",
                unit.name, unit.path
            ));
        }
        println!(
            "  flux build kustomization {} ({}): {} objects, {} written by tenantc",
            unit.name,
            unit.path,
            built.len(),
            expected.len()
        );
    }
    (failures, units.len())
}

/// `flux build kustomization` renders every Flux Kustomization of the fixture fleet into exactly
/// the objects tenantc wrote into its folder, plus Flux's two owner labels.
pub(super) fn flux_build_renders_every_emitted_kustomization(cluster: &Cluster) {
    let tools = Tools::of(cluster, &["flux"]);
    let compilation = support::compile_root(&support::fleet());
    let plan = compilation.plan.as_ref().expect("a plan");
    let out = flux_cell(plan)
        .gitops
        .sync
        .as_ref()
        .expect("a sync plan")
        .path
        .clone();
    let tree = compilation.output.clone().expect("an output tree");
    let work = scratch(cluster, "flux-build");
    let (failures, units) = flux_build_all(&tools, &work, &out, &tree, &tree);
    println!(
        "  {units} Kustomizations built; flux adds the labels {FLUX_NAME_LABEL} and {FLUX_NAMESPACE_LABEL} to every object, and nothing else"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The self-test: a folder whose `kustomization.yaml` lists a file that is not there, and a
/// quota changed behind tenantc's back, are both reported, each for its own unit.
pub(super) fn flux_build_self_test_broken_folders_are_caught(cluster: &Cluster) {
    let tools = Tools::of(cluster, &["flux"]);
    let compilation = support::compile_root(&support::fleet());
    let plan = compilation.plan.as_ref().expect("a plan");
    let cell = flux_cell(plan);
    let out = cell.gitops.sync.as_ref().expect("a sync plan").path.clone();
    let written = compilation.output.clone().expect("an output tree");
    let mut served = written.clone();
    let missing = format!("{}/kueue/kustomization.yaml", cell.name);
    let listing = String::from_utf8(served[&missing].clone()).expect("a kustomization");
    served.insert(
        missing.clone(),
        format!("{listing}- conformance-missing.yaml\n").into_bytes(),
    );
    let quota = format!("{}/tenants/{ADDED_TENANT}/", cell.name);
    let quota = served
        .keys()
        .find(|path| path.starts_with(&quota) && path.ends_with("/resourcequota.yaml"))
        .cloned()
        .expect("a tenant quota");
    let text = String::from_utf8(served[&quota].clone()).expect("a quota");
    let tampered: String = text
        .lines()
        .map(|line| {
            if line.trim_start().starts_with("requests.cpu: ") {
                "    requests.cpu: \"999\"\n".to_string()
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    assert_ne!(tampered, text, "the quota was not changed");
    served.insert(quota.clone(), tampered.into_bytes());
    let work = scratch(cluster, "flux-build-self-test");
    let (failures, _) = flux_build_all(&tools, &work, &out, &served, &written);
    println!("  reported:\n    {}", failures.join("\n    "));
    let kueue_unit = format!("{}-kueue", cell.name);
    let tenant_unit = format!("{}-tenant-{ADDED_TENANT}", cell.name);
    assert!(
        failures.iter().any(|failure| failure
            .starts_with(&format!("flux build kustomization {kueue_unit} failed"))
            && failure.contains("conformance-missing.yaml")),
        "the missing file of {missing} was not reported: {failures:?}"
    );
    assert!(
        failures.iter().any(|failure| failure
            .starts_with(&format!("{tenant_unit}: ResourceQuota/"))
            && failure.contains("/spec/hard/requests.cpu")),
        "the changed quota {quota} was not reported: {failures:?}"
    );
    assert_eq!(
        failures.len(),
        2,
        "only the two broken units fail: {failures:?}"
    );
}

// kustomize-controller ------------------------------------------------------------------------

/// The cell's GitOps identity as a ServiceAccount: `(namespace, name)`.
pub(super) fn service_account_of(user: &str) -> (String, String) {
    let rest = user
        .strip_prefix("system:serviceaccount:")
        .unwrap_or_else(|| panic!("the GitOps identity `{user}` is not a ServiceAccount"));
    let (namespace, name) = rest
        .split_once(':')
        .unwrap_or_else(|| panic!("the GitOps identity `{user}` is not a ServiceAccount"));
    (namespace.to_string(), name.to_string())
}

/// A kubeconfig that authenticates as `user` (a ServiceAccount) with a token the API server
/// issues for it, bound to `cluster-admin` as the controllers' installations bind them; the
/// cell's guard policies then judge what it writes. Returns the kubeconfig's path.
pub(super) fn kubeconfig_of_service_account(cluster: &Cluster, user: &str, dir: &Path) -> PathBuf {
    let (namespace, name) = service_account_of(user);
    let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": format!("tenantc-conformance-{name}")},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]},
    ]});
    let run = cluster.kubectl(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            "tenantc-conformance-gitops",
            "-f",
            "-",
        ],
        &objects.to_string(),
    );
    assert!(
        run.ok,
        "creating the identity {user} failed:\n{}",
        run.stderr
    );
    let token = cluster.kubectl(
        &["create", "token", &name, "-n", &namespace, "--duration=2h"],
        "",
    );
    assert!(token.ok, "a token for {user}:\n{}", token.stderr);
    let view = cluster.kubectl(&["config", "view", "--minify", "--raw", "-o", "json"], "");
    let config: Value = serde_json::from_str(&view.stdout).expect("the admin kubeconfig");
    let server = config["clusters"][0]["cluster"]["server"]
        .as_str()
        .expect("a server");
    let ca = config["clusters"][0]["cluster"]["certificate-authority"]
        .as_str()
        .expect("a CA file");
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "cell", "cluster": {"server": server, "certificate-authority": ca}}],
        "users": [{"name": name, "user": {"token": token.stdout.trim()}}],
        "contexts": [{"name": "cell", "context": {"cluster": "cell", "user": name, "namespace": namespace}}],
        "current-context": "cell",
    });
    let path = dir.join(format!("{name}.kubeconfig"));
    std::fs::write(&path, kubeconfig.to_string()).expect("the kubeconfig");
    path
}

/// The current time in RFC 3339 (UTC, seconds), as Kubernetes writes times.
pub(super) fn rfc3339_now() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs();
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = i64::try_from(days).expect("days since 1970") + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

/// One Kustomization's state at a revision, as the settle loop judges it.
#[derive(Clone, Debug, PartialEq)]
enum UnitState {
    Ready,
    /// Ready=False for this revision with a reason that is not waiting, with its message.
    Failed(String),
    /// Waiting for a dependency (DependencyNotReady) or still reconciling.
    Waiting(String),
    Absent,
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|condition| condition["type"] == kind)
}

fn unit_state(object: &Value, revision: &str) -> UnitState {
    let ready = condition(object, "Ready");
    let status = ready.and_then(|c| c["status"].as_str()).unwrap_or("");
    let reason = ready.and_then(|c| c["reason"].as_str()).unwrap_or("");
    let message = ready
        .and_then(|c| c["message"].as_str())
        .unwrap_or("")
        .to_string();
    let current = object["status"]["observedGeneration"] == object["metadata"]["generation"];
    if status == "True" && current && object["status"]["lastAppliedRevision"] == revision {
        UnitState::Ready
    } else if status == "False"
        && current
        && object["status"]["lastAttemptedRevision"] == revision
        && !matches!(
            reason,
            "DependencyNotReady" | "Progressing" | "ProgressingWithRetry"
        )
    {
        UnitState::Failed(format!("{reason}: {message}"))
    } else {
        UnitState::Waiting(format!("{status} {reason}: {message}"))
    }
}

/// The running kustomize-controller, its artifact server, the namespace controller it needs for
/// pruned namespaces, and a watch of its Kustomizations.
struct FluxSync<'a> {
    cluster: &'a Cluster,
    components: Components,
    namespace: String,
    source: String,
    out: String,
    work: PathBuf,
    artifacts: PathBuf,
    artifact_port: u16,
    /// The watch's events (`kubectl get --watch --output-watch-events -o json`).
    events: PathBuf,
    /// The cell's objects as the fixture fleet emits them, handed back when Flux stops.
    synced: Vec<Object>,
    /// The kubeconfig kustomize-controller runs with: the cell's declared GitOps identity.
    controller_kubeconfig: PathBuf,
}

impl<'a> FluxSync<'a> {
    /// Removes what an earlier run left, starts the components and creates the GitRepository
    /// (without an artifact yet) and the root Kustomization.
    fn start(cluster: &'a Cluster, tools: &Tools, cell: &CellPlan) -> FluxSync<'a> {
        let sync = cell.gitops.sync.as_ref().expect("a sync plan");
        let work = scratch(cluster, "flux-sync");
        let artifacts = work.join("artifacts");
        std::fs::create_dir_all(&artifacts).expect("the artifact folder");
        remove_flux_objects(cluster, &sync.namespace);
        let mut flux = FluxSync {
            cluster,
            components: Components::new(cluster),
            namespace: sync.namespace.clone(),
            source: sync.source.clone(),
            out: sync.path.clone(),
            work: work.clone(),
            artifacts: artifacts.clone(),
            artifact_port: free_port(),
            events: PathBuf::new(),
            synced: Vec::new(),
            controller_kubeconfig: PathBuf::new(),
        };
        // The source-controller CRDs (kustomize-controller watches GitRepositories,
        // OCIRepositories and Buckets); the Kustomization CRD is vendored with the others.
        let crds: Vec<PathBuf> = std::fs::read_dir(tools.path("flux-crds"))
            .expect("the Flux CRDs")
            .map(|entry| entry.expect("a CRD file").path())
            .filter(|path| {
                path.file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with("source.toolkit"))
            })
            .collect();
        assert!(!crds.is_empty(), "no source-controller CRDs in flux-crds/");
        for crd in &crds {
            let run = cluster.kubectl(
                &[
                    "apply",
                    "--server-side",
                    "--field-manager",
                    "tenantc-conformance-gitops",
                    "-f",
                    &crd.display().to_string(),
                ],
                "",
            );
            assert!(run.ok, "applying {}: {}", crd.display(), run.stderr);
        }
        let mut wait = vec!["wait", "--for", "condition=Established", "--timeout=60s"];
        let files: Vec<String> = crds.iter().map(|crd| crd.display().to_string()).collect();
        for file in &files {
            wait.extend(["-f", file.as_str()]);
        }
        let established = (0..30).any(|_| {
            let run = cluster.kubectl(&wait, "");
            if !run.ok {
                std::thread::sleep(Duration::from_secs(1));
            }
            run.ok
        });
        assert!(
            established,
            "the source-controller CRDs are not Established"
        );

        // The namespace controller: a pruned tenant's namespaces are deleted only once emptied;
        // and the PVC protection controller, which releases the PersistentVolumeClaims that
        // other checks' StatefulSets left in them once no pod uses them.
        let kubeconfig = cluster.kubeconfig.display().to_string();
        let mut command = Command::new(cluster.bin_dir.join("kube-controller-manager"));
        command.args([
            format!("--kubeconfig={kubeconfig}"),
            format!("--authentication-kubeconfig={kubeconfig}"),
            format!("--authorization-kubeconfig={kubeconfig}"),
            "--controllers=namespace-controller,persistentvolumeclaim-protection-controller"
                .to_string(),
            "--leader-elect=false".to_string(),
            "--bind-address=127.0.0.1".to_string(),
            "--secure-port=0".to_string(),
            "--use-service-account-credentials=false".to_string(),
        ]);
        flux.components.spawn("flux-namespace-controller", command);

        // The artifact server: the tarballs of the revisions, on loopback.
        let mut command = Command::new("python3");
        command
            .args(["-m", "http.server", "--bind", "127.0.0.1", "--directory"])
            .arg(&artifacts)
            .arg(flux.artifact_port.to_string());
        flux.components.spawn("flux-artifacts", command);
        let url = format!("http://127.0.0.1:{}/", flux.artifact_port);
        flux.components
            .wait_ready("the artifact server", READY_TIMEOUT, || http_ok(&url, None));

        // The watch, before any Kustomization changes.
        let mut command = Command::new(&cluster.kubectl);
        command.arg("--kubeconfig").arg(&cluster.kubeconfig).args([
            "get",
            "kustomizations.kustomize.toolkit.fluxcd.io",
            "-n",
            &flux.namespace,
            "--watch",
            "--output-watch-events",
            "-o",
            "json",
        ]);
        flux.events = flux.components.spawn_with_output("flux-watch", command);

        // kustomize-controller, as the cell's declared identity.
        let controller_kubeconfig =
            kubeconfig_of_service_account(cluster, &cell.gitops.user, &work);
        flux.controller_kubeconfig = controller_kubeconfig.clone();
        let (health, metrics) = (free_port(), free_port());
        let tmp = work.join("tmp");
        std::fs::create_dir_all(&tmp).expect("the controller's temporary folder");
        let mut command = Command::new(tools.path("kustomize-controller"));
        command
            .args([
                format!("--health-addr=127.0.0.1:{health}"),
                format!("--metrics-addr=127.0.0.1:{metrics}"),
                "--enable-leader-election=false".to_string(),
                "--watch-all-namespaces=true".to_string(),
                // Dependencies are checked again every 2 s instead of 30 s.
                "--requeue-dependency=2s".to_string(),
                "--no-remote-bases=true".to_string(),
                // The other checks apply the cell as `tenantc`: Flux takes those fields over in
                // its first revision, as it would from a manual apply before a cell moves to it.
                format!("--override-manager={FIELD_MANAGER}"),
                "--log-level=info".to_string(),
            ])
            .env("KUBECONFIG", &controller_kubeconfig)
            .env("RUNTIME_NAMESPACE", &flux.namespace)
            .env("TMPDIR", &tmp);
        flux.components.spawn("kustomize-controller", command);
        let url = format!("http://127.0.0.1:{health}/readyz");
        flux.components
            .wait_ready("kustomize-controller /readyz", READY_TIMEOUT, || {
                http_ok(&url, None)
            });

        // The GitRepository the cell names, which no source-controller reconciles here
        // (`suspend`), and the platform's root Kustomization of `out/flux/`.
        let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
             "metadata": {"name": flux.source, "namespace": flux.namespace},
             "spec": {"url": format!("http://127.0.0.1:{}/fleet.git", flux.artifact_port),
                      "interval": "10m", "ref": {"branch": "main"}, "suspend": true}},
            {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
             "metadata": {"name": FLUX_ROOT, "namespace": flux.namespace},
             "spec": {"interval": "10m", "path": format!("./{}/flux", flux.out), "prune": true,
                      "sourceRef": {"kind": "GitRepository", "name": flux.source}}},
        ]});
        let run = cluster.kubectl(
            &[
                "apply",
                "--server-side",
                "--field-manager",
                "tenantc-conformance-platform",
                "-f",
                "-",
            ],
            &objects.to_string(),
        );
        assert!(
            run.ok,
            "creating the Flux source and root failed:\n{}",
            run.stderr
        );
        flux
    }

    /// Serves `tree` as the next revision and points the GitRepository at it; returns the
    /// revision and the index of the first watch event after it.
    fn publish(&self, index: usize, tree: &OutputTree) -> (String, usize) {
        let root = self.work.join(format!("rev-{index}"));
        let _ = std::fs::remove_dir_all(&root);
        write_tree(&root, &self.out, tree);
        let name = format!("rev-{index}.tar.gz");
        let tarball = self.artifacts.join(&name);
        let status = Command::new("tar")
            .arg("-czf")
            .arg(&tarball)
            .arg("-C")
            .arg(&root)
            .arg(&self.out)
            .status()
            .expect("tar runs");
        assert!(status.success(), "tar of revision {index} failed");
        let bytes = std::fs::read(&tarball).expect("the tarball");
        let digest = format!("{:x}", Sha256::digest(&bytes));
        // A Git revision as source-controller writes it, `<branch>@sha1:<commit>`; the commit is
        // made up from the content.
        let revision = format!("main@sha1:{}", &digest[..40]);
        let seen = self.events().len();
        let now = rfc3339_now();
        let patch = json!({"status": {
            "observedGeneration": 1,
            "artifact": {
                "path": format!("gitrepository/{}/{}/{name}", self.namespace, self.source),
                "url": format!("http://127.0.0.1:{}/{name}", self.artifact_port),
                "revision": revision,
                "digest": format!("sha256:{digest}"),
                "lastUpdateTime": now,
                "size": bytes.len(),
            },
            "conditions": [{"type": "Ready", "status": "True", "reason": "Succeeded",
                            "message": format!("stored artifact for revision '{revision}'"),
                            "lastTransitionTime": now, "observedGeneration": 1}],
        }});
        let run = self.cluster.kubectl(
            &[
                "patch",
                "gitrepository",
                &self.source,
                "-n",
                &self.namespace,
                "--subresource=status",
                "--type=merge",
                "-p",
                &patch.to_string(),
            ],
            "",
        );
        assert!(
            run.ok,
            "publishing revision {index} failed:\n{}",
            run.stderr
        );
        (revision, seen)
    }

    /// The Kustomizations of the namespace now, by name.
    fn kustomizations(&self) -> BTreeMap<String, Value> {
        let run = self.cluster.kubectl(
            &[
                "get",
                "kustomizations.kustomize.toolkit.fluxcd.io",
                "-n",
                &self.namespace,
                "-o",
                "json",
            ],
            "",
        );
        let list: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
        list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| Some((item["metadata"]["name"].as_str()?.to_string(), item.clone())))
            .collect()
    }

    /// Waits until each of `units` is Ready at `revision`, failed, or waiting on a failed
    /// dependency, and every other Kustomization but the root is gone; returns their states.
    fn settle(&mut self, units: &[FluxUnit], revision: &str) -> BTreeMap<String, UnitState> {
        let started = Instant::now();
        loop {
            let live = self.kustomizations();
            let mut states: BTreeMap<String, UnitState> = units
                .iter()
                .map(|unit| {
                    let state = live
                        .get(&unit.name)
                        .map_or(UnitState::Absent, |object| unit_state(object, revision));
                    (unit.name.clone(), state)
                })
                .collect();
            let root = live
                .get(FLUX_ROOT)
                .map_or(UnitState::Absent, |object| unit_state(object, revision));
            let leftovers: Vec<&String> = live
                .keys()
                .filter(|name| *name != FLUX_ROOT && !units.iter().any(|unit| &unit.name == *name))
                .collect();
            // A unit waiting on a failed unit (directly or not) will not move either.
            let failed: BTreeSet<String> = states
                .iter()
                .filter(|(_, state)| matches!(state, UnitState::Failed(_)))
                .map(|(name, _)| name.clone())
                .collect();
            let blocked = |unit: &FluxUnit| {
                let mut stack: Vec<&String> = unit.depends_on.iter().collect();
                let mut seen = BTreeSet::new();
                while let Some(dep) = stack.pop() {
                    if failed.contains(dep) {
                        return true;
                    }
                    if seen.insert(dep.clone())
                        && let Some(next) = units.iter().find(|other| &other.name == dep)
                    {
                        stack.extend(next.depends_on.iter());
                    }
                }
                false
            };
            let settled = root != UnitState::Absent
                && !matches!(root, UnitState::Waiting(_))
                && leftovers.is_empty()
                && units.iter().all(|unit| match &states[&unit.name] {
                    UnitState::Ready | UnitState::Failed(_) => true,
                    UnitState::Waiting(_) => blocked(unit),
                    UnitState::Absent => false,
                });
            if settled {
                states.insert(FLUX_ROOT.to_string(), root);
                return states;
            }
            if let Some(name) = self.components.exited() {
                panic!(
                    "{name} exited during the sync:\n{}",
                    self.components.log_tail(&name, 30)
                );
            }
            if started.elapsed() > SETTLE_TIMEOUT {
                states.insert(FLUX_ROOT.to_string(), root);
                panic!(
                    "revision {revision} did not settle in {} s: {states:#?}; left over: {leftovers:?}\nkustomize-controller:\n{}",
                    SETTLE_TIMEOUT.as_secs(),
                    self.components.log_tail("kustomize-controller", 20)
                );
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// The watch's events so far (an unfinished last event is left out).
    fn events(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.events).unwrap_or_default();
        serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .map_while(Result::ok)
            .collect()
    }
}

impl Drop for FluxSync<'_> {
    fn drop(&mut self) {
        // The controller stops first, so that deleting the Kustomizations prunes nothing.
        self.components.stop();
        remove_flux_objects(self.cluster, &self.namespace);
        hand_back(self.cluster, &self.synced, FLUX_MANAGER);
    }
}

/// Hands the cell back to the other checks, which apply it as `tenantc` without forcing: applies
/// `objects` (the fixture fleet's cell) with `--force-conflicts` as `tenantc`, then removes
/// `manager`'s entries from their managed fields and Flux's owner labels. With Flux still owning
/// a field, another value applied to it would be a conflict; with no manager left at all, the
/// API server would give every field to `before-first-apply`, with the same effect.
fn hand_back(cluster: &Cluster, objects: &[Object], manager: &str) {
    let (cluster_scoped, namespaced): (Vec<&Object>, Vec<&Object>) = objects
        .iter()
        .partition(|object| object.namespace.is_none());
    for batch in [cluster_scoped, namespaced] {
        if batch.is_empty() {
            continue;
        }
        let stream: String = batch
            .iter()
            .map(|object| format!("---\n{}", object.text))
            .collect();
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
            &stream,
        );
        if !run.ok {
            println!(
                "  NOTE: taking the cell back as {FIELD_MANAGER} failed:\n{}",
                run.stderr
            );
        }
    }
    let refs: Vec<&Object> = objects.iter().collect();
    let mut items = Vec::new();
    for mut live in live_objects(cluster, &refs).into_values() {
        let mut changed = false;
        if let Some(fields) = live["metadata"]["managedFields"].as_array_mut() {
            let before = fields.len();
            fields.retain(|entry| entry["manager"] != manager);
            changed |= fields.len() != before && !fields.is_empty();
        }
        if let Some(labels) = live["metadata"]["labels"].as_object_mut() {
            changed |= labels.remove(FLUX_NAME_LABEL).is_some();
            changed |= labels.remove(FLUX_NAMESPACE_LABEL).is_some();
        }
        if changed {
            items.push(live);
        }
    }
    if items.is_empty() {
        return;
    }
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    let run = cluster.kubectl(&["replace", "-f", "-"], &list.to_string());
    if !run.ok {
        println!(
            "  NOTE: removing {manager}'s fields failed:\n{}",
            run.stderr
        );
    }
}

/// How long a namespace may stay terminating before the finalizers of what is left in it are
/// removed (see [`release_terminating_namespace`]).
const TERMINATING_GRACE: Duration = Duration::from_secs(10);

/// Waits until `objects` are gone from the cluster; returns those still there after
/// `SETTLE_TIMEOUT`. A namespace among them that is still terminating after
/// `TERMINATING_GRACE` has the finalizers of its remaining content removed.
fn wait_gone(cluster: &Cluster, objects: &[&Object]) -> BTreeMap<String, Value> {
    let started = Instant::now();
    let mut released = BTreeSet::new();
    loop {
        let still = live_objects(cluster, objects);
        if still.is_empty() || started.elapsed() > SETTLE_TIMEOUT {
            return still;
        }
        if started.elapsed() > TERMINATING_GRACE {
            for live in still.values() {
                let name = live["metadata"]["name"].as_str().unwrap_or_default();
                if live["kind"] == "Namespace"
                    && !live["metadata"]["deletionTimestamp"].is_null()
                    && released.insert(name.to_string())
                {
                    release_terminating_namespace(cluster, name);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A namespace that is being deleted is removed only once it is empty; objects that carry the
/// finalizer of a controller that does not run here (such as Kueue's) keep it terminating for
/// ever. Their controllers would remove the finalizers of deleted objects; this does it for
/// them, and says which.
fn release_terminating_namespace(cluster: &Cluster, namespace: &str) {
    let kinds = cluster.kubectl(
        &[
            "api-resources",
            "--namespaced",
            "--verbs=list,delete",
            "-o",
            "name",
        ],
        "",
    );
    let kinds: Vec<&str> = kinds
        .stdout
        .lines()
        .filter(|line| !line.is_empty())
        .collect();
    let run = cluster.kubectl(
        &["get", &kinds.join(","), "-n", namespace, "-o", "json"],
        "",
    );
    let list: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    let mut released = Vec::new();
    for item in list["items"].as_array().into_iter().flatten() {
        let finalizers = &item["metadata"]["finalizers"];
        if finalizers.as_array().is_none_or(Vec::is_empty) {
            continue;
        }
        let kind = item["kind"].as_str().unwrap_or_default();
        let group = item["apiVersion"]
            .as_str()
            .map(group_of)
            .unwrap_or_default();
        let resource = if group.is_empty() {
            kind.to_lowercase()
        } else {
            format!("{}.{group}", kind.to_lowercase())
        };
        let name = item["metadata"]["name"].as_str().unwrap_or_default();
        let patched = cluster.kubectl(
            &[
                "patch",
                &format!("{resource}/{name}"),
                "-n",
                namespace,
                "--type=merge",
                "-p",
                r#"{"metadata":{"finalizers":null}}"#,
            ],
            "",
        );
        if patched.ok {
            released.push(format!("{kind}/{name} ({finalizers})"));
        }
    }
    println!(
        "    namespace {namespace} stayed terminating: removed the finalizers of {}",
        if released.is_empty() {
            "nothing".to_string()
        } else {
            released.join(", ")
        }
    );
}

/// Deletes every Kustomization and GitRepository of `namespace`, finalizers first: with no
/// controller running, nothing they applied is pruned.
fn remove_flux_objects(cluster: &Cluster, namespace: &str) {
    remove_without_finalizers(
        cluster,
        namespace,
        &[
            "kustomizations.kustomize.toolkit.fluxcd.io",
            "gitrepositories.source.toolkit.fluxcd.io",
        ],
    );
}

/// Deletes every object of `kinds` in `namespace`, its finalizers removed first, so that with
/// its controller stopped the object goes at once and nothing it owns is pruned.
pub(super) fn remove_without_finalizers(cluster: &Cluster, namespace: &str, kinds: &[&str]) {
    for kind in kinds {
        let run = cluster.kubectl(&["get", kind, "-n", namespace, "-o", "name"], "");
        if !run.ok {
            continue;
        }
        for name in run.stdout.lines().filter(|line| !line.trim().is_empty()) {
            let _ = cluster.kubectl(
                &[
                    "patch",
                    name,
                    "-n",
                    namespace,
                    "--type=merge",
                    "-p",
                    r#"{"metadata":{"finalizers":null}}"#,
                ],
                "",
            );
            let _ = cluster.kubectl(
                &[
                    "delete",
                    name,
                    "-n",
                    namespace,
                    "--ignore-not-found",
                    "--wait=false",
                ],
                "",
            );
        }
    }
}

/// Kueue's finalizer on cluster-scoped Kueue objects stays behind when Kueue stops (the simulated
/// cell's check runs it); with no Kueue running, a pruned ClusterQueue would never go. Kueue
/// removes it itself from an object that no workload uses, which is the case here.
fn remove_kueue_finalizers(cluster: &Cluster) {
    let run = cluster.kubectl(
        &[
            "get",
            "clusterqueues.kueue.x-k8s.io,resourceflavors.kueue.x-k8s.io,cohorts.kueue.x-k8s.io,topologies.kueue.x-k8s.io",
            "-o",
            "json",
        ],
        "",
    );
    let list: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    for item in list["items"].as_array().into_iter().flatten() {
        if item["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty())
        {
            let kind = item["kind"].as_str().unwrap_or_default().to_lowercase();
            let name = item["metadata"]["name"].as_str().unwrap_or_default();
            let run = cluster.kubectl(
                &[
                    "patch",
                    &format!("{kind}.kueue.x-k8s.io/{name}"),
                    "--type=merge",
                    "-p",
                    r#"{"metadata":{"finalizers":null}}"#,
                ],
                "",
            );
            assert!(
                run.ok,
                "removing the finalizers of {kind} {name}:\n{}",
                run.stderr
            );
        }
    }
}

/// Another Flux controller than the one the cell declares, with the same rights (Flux's
/// installation binds its controllers to `cluster-admin`).
const OTHER_FLUX_CONTROLLER: &str = "helm-controller";

/// The cell's guard admits a change to a managed object by kustomize-controller, the identity the
/// cell declares, and refuses it to another Flux controller with the same rights: the Flux cell
/// syncs only because its declared identity is the one that runs. Server-side dry-runs of a
/// label on one of the cell's tenant Namespaces.
fn guard_admits_only_the_declared_identity(
    cluster: &Cluster,
    flux: &FluxSync<'_>,
    cell: &CellPlan,
) -> Vec<String> {
    // A tenant's Namespace, labelled (a change; the guard lets an update that changes nothing
    // through).
    let namespace = flux
        .synced
        .iter()
        .find(|object| object.kind == "Namespace" && object.path.contains("/tenants/"))
        .expect("a tenant Namespace in the cell");
    let other = kubeconfig_of_service_account(
        cluster,
        &format!(
            "system:serviceaccount:{}:{OTHER_FLUX_CONTROLLER}",
            flux.namespace
        ),
        &flux.work,
    );
    let args = [
        "label",
        "namespace",
        namespace.name.as_str(),
        "conformance/probe=1",
        "--overwrite",
        "--dry-run=server",
    ];
    let declared = cluster.kubectl_with(&flux.controller_kubeconfig, &args, "");
    let refused = cluster.kubectl_with(&other, &args, "");
    println!(
        "  the guard: {FLUX_MANAGER} (the declared `{}`) labelling Namespace {}: {}; {OTHER_FLUX_CONTROLLER}: {}",
        cell.gitops.user,
        namespace.name,
        if declared.ok { "admitted" } else { "refused" },
        if refused.ok {
            "admitted".to_string()
        } else {
            format!("refused: {}", refused.stderr.trim())
        }
    );
    let mut failures = Vec::new();
    if !declared.ok {
        failures.push(format!(
            "the guard refused the cell's declared GitOps identity:\n{}",
            declared.stderr
        ));
    }
    if refused.ok || !refused.stderr.contains("tenantc-guard-managed-objects") {
        failures.push(format!(
            "the guard did not refuse {OTHER_FLUX_CONTROLLER}, which the cell does not declare:\n{}",
            refused.stderr
        ));
    }
    failures
}

/// A change the self-test makes to a revision's tree before Flux reads it (tenantc's tree stays
/// the expectation).
type Tamper = fn(usize, &str, &mut OutputTree);

/// One revision of the scenario.
struct Revision {
    what: String,
    compilation: tenantc::Compilation,
}

impl Revision {
    fn tree(&self) -> OutputTree {
        self.compilation.output.clone().expect("an output tree")
    }
}

/// The objects of the Flux cell's units in `tree`, by id.
fn cell_objects_of(tree: &OutputTree, out: &str) -> BTreeMap<String, Object> {
    flux_units(tree)
        .iter()
        .flat_map(|unit| unit_objects(tree, out, &unit.path))
        .map(|object| (object.id(), object))
        .collect()
}

/// The Flux scenario: returns the failures (empty when Flux did everything tenantc's output
/// promises).
fn flux_sync_scenario(cluster: &Cluster, tamper: Option<Tamper>) -> Vec<String> {
    let tools = Tools::of(cluster, &["kustomize-controller"]);
    install_crds(cluster);
    let fleet = fixture_fleet();
    let cell = flux_cell(&fleet.plan).clone();
    let cell_file = format!("cells/{}.kdl", cell.name);
    let full = fleet_variant(&[], &[]);
    let added_org = org_block("initech", ADDED_TENANT);
    let removed_org = org_block("globex", REMOVED_TENANT);
    let (priority, from, to) = CHANGED_PRIORITY;
    let revisions = [
        Revision {
            what: format!("the fixture fleet without {ADDED_TENANT}"),
            compilation: fleet_variant(&[ADDED_TENANT], &[(&cell_file, &added_org, "")]),
        },
        Revision {
            what: format!("{ADDED_TENANT} added"),
            compilation: fleet_variant(&[], &[]),
        },
        Revision {
            what: format!(
                "{REMOVED_TENANT} removed, PriorityClass {priority} `{}` -> `{}`",
                from.trim(),
                to.trim()
            ),
            compilation: fleet_variant(
                &[REMOVED_TENANT],
                &[
                    (&cell_file, &removed_org, ""),
                    ("cells/us-east-1a.kdl", &removed_org, ""),
                    (
                        &cell_file,
                        &format!("priority \"{priority}\" {from}"),
                        &format!("priority \"{priority}\" {to}"),
                    ),
                ],
            ),
        },
        Revision {
            what: "the fixture fleet again".to_string(),
            compilation: full,
        },
    ];
    let out = cell.gitops.sync.as_ref().expect("a sync plan").path.clone();

    // The cell as the other checks apply it, with Kueue's finalizers off, and without the
    // objects of the tenant that the second revision adds.
    remove_kueue_finalizers(cluster);
    set_up_cell(cluster, &fleet, &cell);
    let mut flux = FluxSync::start(cluster, &tools, &cell);
    flux.synced = fleet.cell_objects(&cell.name);
    let mut failures = guard_admits_only_the_declared_identity(cluster, &flux, &cell);
    let added: Vec<Object> = objects_of(&revisions[1].tree())
        .into_iter()
        .filter(|object| {
            object
                .path
                .starts_with(&format!("{}/tenants/{ADDED_TENANT}/", cell.name))
        })
        .collect();
    assert!(
        !added.is_empty(),
        "{ADDED_TENANT} has objects in {}",
        cell.name
    );
    let stream: String = added
        .iter()
        .map(|object| format!("---\n{}", object.text))
        .collect();
    let run = cluster.kubectl(
        &["delete", "-f", "-", "--ignore-not-found", "--wait=false"],
        &stream,
    );
    assert!(
        run.ok,
        "removing {ADDED_TENANT}'s objects first failed:\n{}",
        run.stderr
    );
    let refs: Vec<&Object> = added.iter().collect();
    let still = wait_gone(cluster, &refs);
    assert!(
        still.is_empty(),
        "{ADDED_TENANT}'s objects are still there after {} s: {:?}",
        SETTLE_TIMEOUT.as_secs(),
        still.keys().collect::<Vec<_>>()
    );

    // The last revision every unit applied, with the tree Flux read then.
    let mut applied: Option<(usize, OutputTree)> = None;
    for (index, revision) in revisions.iter().enumerate() {
        let mut served = revision.tree();
        if let Some(tamper) = tamper {
            tamper(index + 1, &cell.name, &mut served);
        }
        let written = revision.tree();
        let units = flux_units(&served)
            .into_iter()
            .filter(|unit| unit.name.starts_with(&format!("{}-", cell.name)))
            .collect::<Vec<_>>();
        // Objects that the revision leaves as they were: Flux must not write them.
        let before = applied
            .as_ref()
            .map(|(_, tree)| cell_objects_of(tree, &out))
            .unwrap_or_default();
        let now = cell_objects_of(&served, &out);
        let unchanged: Vec<&Object> = now
            .iter()
            .filter(|(id, object)| {
                before.get(*id).is_some_and(|old| {
                    typed_objects([old]).values().next() == typed_objects([*object]).values().next()
                })
            })
            .map(|(_, object)| object)
            .collect();
        let versions_before: BTreeMap<String, (Value, Value)> = live_objects(cluster, &unchanged)
            .into_iter()
            .map(|(id, live)| {
                (
                    id,
                    (
                        live["metadata"]["resourceVersion"].clone(),
                        live["metadata"]["managedFields"].clone(),
                    ),
                )
            })
            .collect();
        let uids_before: BTreeMap<String, Value> = {
            let present: Vec<&Object> = now
                .iter()
                .filter(|(id, _)| before.contains_key(*id))
                .map(|(_, object)| object)
                .collect();
            live_objects(cluster, &present)
                .into_iter()
                .map(|(id, live)| (id, live["metadata"]["uid"].clone()))
                .collect()
        };

        let started = Instant::now();
        let (name, seen) = flux.publish(index + 1, &served);
        let states = flux.settle(&units, &name);
        let seconds = started.elapsed().as_secs_f64();
        let failed: Vec<String> = states
            .iter()
            .filter_map(|(unit, state)| match state {
                UnitState::Ready => None,
                other => Some(format!(
                    "revision {} ({}): Kustomization {unit} is not Ready: {other:?}",
                    index + 1,
                    revision.what
                )),
            })
            .collect();
        println!(
            "  revision {} ({}), {name}: {} Kustomizations settled in {seconds:.1} s",
            index + 1,
            revision.what,
            states.len()
        );

        // The order Flux made them Ready in, from the watch.
        let events = flux.events();
        let mut ready_at: BTreeMap<String, usize> = BTreeMap::new();
        let mut waited: BTreeSet<String> = BTreeSet::new();
        for (position, event) in events.iter().enumerate().skip(seen) {
            let object = &event["object"];
            let Some(unit) = object["metadata"]["name"].as_str() else {
                continue;
            };
            if unit_state(object, &name) == UnitState::Ready {
                ready_at.entry(unit.to_string()).or_insert(position);
            }
            if condition(object, "Ready").is_some_and(|c| c["reason"] == "DependencyNotReady") {
                waited.insert(unit.to_string());
            }
        }
        let mut order: Vec<(&String, &usize)> = ready_at.iter().collect();
        order.sort_by_key(|(_, position)| **position);
        println!(
            "    Ready in this order: {}",
            order
                .iter()
                .map(|(unit, _)| unit.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        println!(
            "    held back by Flux until their dependencies were Ready: {}",
            if waited.is_empty() {
                "none".to_string()
            } else {
                waited.iter().cloned().collect::<Vec<_>>().join(", ")
            }
        );
        for unit in &units {
            let Some(position) = ready_at.get(&unit.name) else {
                continue;
            };
            for dep in &unit.depends_on {
                if ready_at
                    .get(dep)
                    .is_none_or(|dep_position| dep_position > position)
                {
                    failures.push(format!(
                        "revision {}: {} became Ready before its dependency {dep}",
                        index + 1,
                        unit.name
                    ));
                }
            }
        }
        // Pruned: what the last applied revision had and this one has not, in the units that
        // applied it or that it removes (the root Kustomization prunes a removed tenant's unit
        // also when another unit failed).
        let prior_units = applied
            .as_ref()
            .map(|(_, tree)| flux_units(tree))
            .unwrap_or_default();
        let pruning = |object: &Object| {
            prior_units
                .iter()
                .find(|unit| object.path.starts_with(&unit_folder(&out, &unit.path)))
                .is_some_and(|unit| {
                    states
                        .get(&unit.name)
                        .is_none_or(|state| *state == UnitState::Ready)
                })
        };
        let removed: Vec<&Object> = before
            .iter()
            .filter(|(id, object)| !now.contains_key(*id) && pruning(object))
            .map(|(_, object)| object)
            .collect();
        let gone_started = Instant::now();
        let still = wait_gone(cluster, &removed);
        for id in still.keys() {
            failures.push(format!(
                "revision {}: {id} was removed from the tree but is still on the cluster",
                index + 1
            ));
        }
        if !removed.is_empty() {
            println!(
                "    pruned {} objects the revision no longer has, in {:.1} s (their namespaces included)",
                removed.len(),
                gone_started.elapsed().as_secs_f64()
            );
        }

        if !failed.is_empty() {
            failures.extend(failed);
            // The cell is no longer at a revision the checks below can judge: restore it.
            if index + 1 < revisions.len() {
                let last = &revisions[revisions.len() - 1];
                let restore_units: Vec<FluxUnit> = flux_units(&last.tree())
                    .into_iter()
                    .filter(|unit| unit.name.starts_with(&format!("{}-", cell.name)))
                    .collect();
                let (name, _) = flux.publish(revisions.len() + 1, &last.tree());
                let states = flux.settle(&restore_units, &name);
                let not_ready: Vec<String> = states
                    .iter()
                    .filter(|(_, state)| **state != UnitState::Ready)
                    .map(|(unit, state)| format!("{unit}: {state:?}"))
                    .collect();
                println!(
                    "  restored {} as revision {}: {}",
                    last.what,
                    revisions.len() + 1,
                    if not_ready.is_empty() {
                        "every Kustomization Ready".to_string()
                    } else {
                        not_ready.join("; ")
                    }
                );
                failures.extend(
                    not_ready
                        .into_iter()
                        .map(|line| format!("restoring the fixture fleet: {line}")),
                );
            }
            break;
        }

        // What is on the cluster equals what tenantc wrote, and Flux applied it.
        let expected_objects = cell_objects_of(&written, &out);
        let mut kustomizations: Vec<Object> = objects_of(&written)
            .into_iter()
            .filter(|object| {
                object.path.starts_with("flux/")
                    && object.name.starts_with(&format!("{}-", cell.name))
            })
            .collect();
        kustomizations.sort_by_key(Object::id);
        let mut all: Vec<&Object> = expected_objects.values().collect();
        all.extend(kustomizations.iter());
        let live = live_objects(cluster, &all);
        let mut created = 0;
        for object in &all {
            let id = object.id();
            let Some(have) = live.get(&id) else {
                failures.push(format!(
                    "revision {}: {id} is not on the cluster",
                    index + 1
                ));
                continue;
            };
            let want = typed_objects([*object]).remove(&id).expect("the object");
            let found = differences(&want, have, true);
            if !found.is_empty() {
                failures.push(format!(
                    "revision {}: {id} differs from what tenantc wrote: {}",
                    index + 1,
                    found.join("; ")
                ));
            }
            let managers = have["metadata"]["managedFields"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if !managers
                .iter()
                .any(|entry| entry["manager"] == FLUX_MANAGER && entry["operation"] == "Apply")
            {
                failures.push(format!(
                    "revision {}: {id} has no fields applied by {FLUX_MANAGER}",
                    index + 1
                ));
            }
            if !before.contains_key(&id) && expected_objects.contains_key(&id) {
                created += 1;
            }
        }
        println!(
            "    {} objects and {} Kustomizations on the cluster checked against tenantc's tree, each applied by {FLUX_MANAGER}",
            expected_objects.len(),
            kustomizations.len()
        );
        if applied.is_some() && created > 0 {
            println!("    {created} objects new in this revision, created by Flux");
        }

        // Untouched: objects this revision leaves as they were keep their resource version and
        // managed fields; the other tenants' objects are among them.
        if applied.is_some() {
            let after: BTreeMap<String, Value> = live_objects(cluster, &unchanged);
            let mut untouched_tenants = BTreeSet::new();
            for object in &unchanged {
                let id = object.id();
                let (Some((version, managed)), Some(live)) =
                    (versions_before.get(&id), after.get(&id))
                else {
                    failures.push(format!(
                        "revision {}: {id} is not on the cluster",
                        index + 1
                    ));
                    continue;
                };
                let now_version = &live["metadata"]["resourceVersion"];
                if now_version != version || &live["metadata"]["managedFields"] != managed {
                    failures.push(format!(
                        "revision {}: {id} did not change in the tree, but Flux wrote it (resourceVersion {version} -> {now_version})",
                        index + 1
                    ));
                }
                if let Some(tenant) = object
                    .path
                    .split('/')
                    .nth(2)
                    .filter(|_| object.path.split('/').nth(1) == Some("tenants"))
                {
                    untouched_tenants.insert(tenant.to_string());
                }
            }
            println!(
                "    {} objects the revision leaves as they were keep their resourceVersion and managedFields (those of {})",
                unchanged.len(),
                untouched_tenants.into_iter().collect::<Vec<_>>().join(", ")
            );
        }

        // Replaced: exactly what `tenantc diff` marks replaced on sync got a new uid.
        if let Some((applied_index, _)) = &applied {
            let marked: BTreeSet<String> = marked_for_replacement(
                &revisions[*applied_index].compilation,
                &revision.compilation,
            )
            .into_iter()
            .filter(|id| now.contains_key(id))
            .collect();
            let present: Vec<&Object> = now
                .iter()
                .filter(|(id, _)| uids_before.contains_key(*id))
                .map(|(_, object)| object)
                .collect();
            let replaced: BTreeSet<String> = live_objects(cluster, &present)
                .into_iter()
                .filter(|(id, live)| live["metadata"]["uid"] != uids_before[id])
                .map(|(id, _)| id)
                .collect();
            if replaced != marked {
                failures.push(format!(
                    "revision {}: Flux replaced {replaced:?}, `tenantc diff` marks {marked:?} replaced on sync",
                    index + 1
                ));
            }
            if !marked.is_empty() {
                println!(
                    "    replaced (deleted and created again, a new uid): {}",
                    replaced.into_iter().collect::<Vec<_>>().join(", ")
                );
            }
        }
        applied = Some((index, served));
    }
    drop(flux);
    failures
}

/// kustomize-controller v1.9.6 syncs the fixture fleet's Flux cell from tenantc's output, as
/// the cell's declared identity, revision by revision: every Kustomization becomes Ready after
/// its dependencies, the objects equal tenantc's, an added tenant's objects are created and
/// nothing else is written, a removed tenant's objects are pruned, and a changed PriorityClass
/// `value` is replaced.
pub(super) fn flux_syncs_the_flux_cell_revision_by_revision(cluster: &Cluster) {
    let failures = flux_sync_scenario(cluster, None);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The self-test's changes: in the second revision a quota of the added tenant (the cluster no
/// longer equals tenantc's tree), and up to the third the replacement mark of the PriorityClass
/// whose `value` the third changes (Flux cannot update it in place and fails the cell's `cluster`
/// unit).
fn tamper_quota_and_force_mark(revision: usize, cell: &str, tree: &mut OutputTree) {
    let edit = |tree: &mut OutputTree, path: &str, line_start: &str, replacement: Option<&str>| {
        let text = String::from_utf8(tree[path].clone()).expect("a text file");
        let edited: String = text
            .lines()
            .filter_map(|line| {
                if line.trim_start().starts_with(line_start) {
                    replacement.map(|replacement| format!("{replacement}\n"))
                } else {
                    Some(format!("{line}\n"))
                }
            })
            .collect();
        assert_ne!(edited, text, "{path}: nothing to change");
        tree.insert(path.to_string(), edited.into_bytes());
    };
    if revision == 2 {
        let prefix = format!("{cell}/tenants/{ADDED_TENANT}/");
        let quota = tree
            .keys()
            .find(|path| path.starts_with(&prefix) && path.ends_with("/resourcequota.yaml"))
            .cloned()
            .expect("the added tenant's quota");
        edit(
            tree,
            &quota,
            "requests.cpu: ",
            Some("    requests.cpu: \"999\""),
        );
    }
    // Flux honours the mark on the object it finds on the cluster as well as on the new one, so
    // the mark is left out from the first revision on.
    if revision <= 3 {
        let path = format!("{cell}/cluster/priorityclass-{}.yaml", CHANGED_PRIORITY.0);
        edit(tree, &path, FLUX_FORCE_ANNOTATION, None);
    }
}

/// Flux's replace-on-sync mark, as tenantc writes it.
const FLUX_FORCE_ANNOTATION: &str = "kustomize.toolkit.fluxcd.io/force:";

/// The self-test: the scenario reports a quota that differs from tenantc's tree, and a changed
/// PriorityClass `value` without the replacement mark, which Flux refuses to apply.
pub(super) fn flux_sync_self_test_a_tampered_revision_is_caught(cluster: &Cluster) {
    let failures = flux_sync_scenario(cluster, Some(tamper_quota_and_force_mark));
    println!("  reported:\n    {}", failures.join("\n    "));
    let mark = format!(
        "PriorityClass/{} differs from what tenantc wrote: /metadata/annotations/kustomize.toolkit.fluxcd.io~1force",
        CHANGED_PRIORITY.0
    );
    assert!(
        failures
            .iter()
            .any(|failure| failure.starts_with("revision 1: ") && failure.contains(&mark)),
        "the missing replacement mark was not reported: {failures:?}"
    );
    assert!(
        failures
            .iter()
            .any(|failure| failure.starts_with("revision 2: ResourceQuota/")
                && failure.contains("/spec/hard/requests.cpu")),
        "the tampered quota was not reported: {failures:?}"
    );
    assert!(
        failures
            .iter()
            .any(|failure| failure.starts_with("revision 3 ")
                && failure.contains("-cluster is not Ready")
                && failure.contains(&format!("PriorityClass/{}", CHANGED_PRIORITY.0))),
        "the PriorityClass without its replacement mark was not reported: {failures:?}"
    );
    assert!(
        !failures
            .iter()
            .any(|failure| failure.starts_with("restoring")),
        "the fixture fleet was not restored: {failures:?}"
    );
}
