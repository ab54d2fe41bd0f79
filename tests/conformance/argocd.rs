//! Argo CD judges what tenantc emits for it (issue 21 item 4): the real ApplicationSet controller
//! expands the ApplicationSet of the fixture fleet's Argo CD cell, and the real application
//! controller has the real repo server render every generated Application from a Git repository
//! of tenantc's tree; each Application must be the one tenantc's ApplicationSet describes, and
//! what Argo CD renders for it must equal what tenantc wrote into its folder.
//!
//! Consumes: the control plane of the runner, Argo CD v3.6.1 (one binary, run as the repo
//! server, the API server, the application controller and the ApplicationSet controller, and as
//! the CLI), its CRDs and kustomize v5.8.3 from `$TENANTC_CONFORMANCE_GITOPS`, Debian's
//! `redis-server`, `git`, `python3` with `git_proxy.py`, and the fixture fleet.
//! Produces: the Argo CD check of the runner's `CHECKS` and its self-test; each prints the
//! Applications Argo CD generated and the objects it rendered for each.
//!
//! Invariants:
//! - The ApplicationSet is applied as tenantc wrote it, repository URL included: the repo server
//!   reaches `https://<host>/<path>.git` through an HTTPS proxy on loopback that is that one Git
//!   host (`git_proxy.py`), with a certificate made for the run, which the repo server trusts
//!   for that host only (Argo CD's per-host TLS certificates).
//! - Argo CD renders and compares, but writes nothing to the cell: the project's deny sync window
//!   holds back every sync, the RollingSync steps' included (the check asserts that no object of
//!   the cell has fields of Argo CD's field manager).
//! - Every component runs as the identity Argo CD's installation gives it (the application
//!   controller as the cell's declared GitOps user), through ServiceAccount tokens, listens on
//!   127.0.0.1 (but the application controller's metrics, which Argo CD binds to every address
//!   on a free port), and is stopped when the check ends, also when it fails; the Argo CD
//!   objects the check made are then deleted.

use super::gitops::{
    Tools, differences, id_of, kubeconfig_of_service_account, scratch, typed_objects, unit_objects,
    write_tree,
};
use super::guard::{APPLICATIONSET_CONTROLLER, ARGOCD_SERVER, generated_applications};
use super::processes::{Components, free_port, http_ok, make_serving_certificate};
use super::quota::{fixture_fleet, set_up_cell};
use super::*;

use std::io::{Read, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use tenantc::model::GitOpsController;
use tenantc::plan::CellPlan;

/// How long a component may take to become ready, and Argo CD to compare every Application.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
const SETTLE_TIMEOUT: Duration = Duration::from_secs(240);

/// The annotation by which Argo CD v3 tracks the objects of an Application (its default
/// tracking method), which it adds to every object it renders: `<app>:<group>/<kind>:<ns>/<name>`.
const TRACKING_ANNOTATION: &str = "argocd.argoproj.io/tracking-id";
/// Argo CD's field manager for what it applies.
const ARGOCD_MANAGER: &str = "argocd-controller";
/// The label Argo CD reads its settings' ConfigMaps and Secrets by.
const ARGOCD_SETTINGS_LABEL: (&str, &str) = ("app.kubernetes.io/part-of", "argocd");

/// The fixture fleet's Argo CD cell: the one cell whose `gitops` names Argo CD.
fn argo_cd_cell(cells: &[CellPlan]) -> &CellPlan {
    let found: Vec<&CellPlan> = cells
        .iter()
        .filter(|cell| {
            cell.gitops
                .sync
                .as_ref()
                .is_some_and(|sync| sync.controller == GitOpsController::ArgoCd)
        })
        .collect();
    assert_eq!(found.len(), 1, "the fixture fleet has one Argo CD cell");
    found[0]
}

/// Whether something answers on `127.0.0.1:port`.
fn listening(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// Whether Redis answers PING on `127.0.0.1:port`.
fn redis_ready(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let mut answer = [0_u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut answer).is_ok()
        && &answer == b"+PONG\r\n"
}

/// `https://host/path` as `(host, path)`.
fn split_url(url: &str) -> (String, String) {
    let rest = url
        .strip_prefix("https://")
        .unwrap_or_else(|| panic!("the repository `{url}` is not an https:// URL"));
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    (host.to_string(), path.to_string())
}

/// Runs git in `dir`, with a fixed identity and no user configuration.
fn git(dir: &Path, args: &[&str]) {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=tenantc conformance",
            "-c",
            "user.email=conformance@tenantc.invalid",
        ])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null())
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The running Argo CD and what it needs.
struct ArgoCd<'a> {
    cluster: &'a Cluster,
    components: Components,
    namespace: String,
    server_port: u16,
    work: PathBuf,
    tools: PathBuf,
    /// The kubeconfig of the cell's GitOps identity (the application controller's).
    controller_kubeconfig: PathBuf,
    /// The ApplicationSet's name, once applied.
    set_name: Option<String>,
}

impl<'a> ArgoCd<'a> {
    /// Publishes `tree` as the repository the cell's ApplicationSet names, and starts Redis, the
    /// Git host, the repo server, the API server and both controllers.
    fn start(
        cluster: &'a Cluster,
        tools: &Tools,
        cell: &CellPlan,
        tree: &OutputTree,
    ) -> ArgoCd<'a> {
        let sync = cell.gitops.sync.as_ref().expect("a sync plan");
        let work = scratch(cluster, "argocd");
        let namespace = sync.namespace.clone();
        remove_argo_cd_objects(cluster, &namespace);

        // Argo CD's CRDs of the same release (the vendored ones are v3.5.7 and have no
        // AppProject); as tenantc's field manager, so that the vendored CRDs apply over them
        // again without a conflict.
        let crds = tools.path("argocd-crds");
        let run = cluster.kubectl(
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "--field-manager",
                FIELD_MANAGER,
                "-f",
                &crds.display().to_string(),
            ],
            "",
        );
        assert!(run.ok, "applying Argo CD's CRDs failed:\n{}", run.stderr);
        let established = (0..30).any(|_| {
            let run = cluster.kubectl(
                &[
                    "wait",
                    "--for",
                    "condition=Established",
                    "--timeout=30s",
                    "-f",
                    &crds.display().to_string(),
                ],
                "",
            );
            if !run.ok {
                std::thread::sleep(Duration::from_secs(1));
            }
            run.ok
        });
        assert!(established, "Argo CD's CRDs did not become Established");

        // The repository: the tree as one commit on the branch the cell names, in a bare
        // repository under the URL's path.
        let (host, path) = split_url(&sync.repo);
        let source = work.join("source");
        write_tree(&source, &sync.path, tree);
        git(&source, &["init", "-q", "-b", &sync.revision]);
        git(&source, &["add", "-A"]);
        git(&source, &["commit", "-q", "-m", "tenantc build"]);
        let repos = work.join("repos");
        let bare = repos.join(&path);
        std::fs::create_dir_all(bare.parent().expect("a folder")).expect("the repository folder");
        let output = Command::new("git")
            .args(["clone", "-q", "--bare"])
            .arg(&source)
            .arg(&bare)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .expect("git runs");
        assert!(output.status.success(), "git clone --bare failed");

        // A certificate for the Git host, which the repo server trusts for that host only.
        let certs = work.join("certs");
        std::fs::create_dir_all(&certs).expect("the certificate folder");
        make_serving_certificate(&certs, &host, &format!("DNS:{host}"));
        let tls = work.join("tls");
        std::fs::create_dir_all(&tls).expect("the TLS data folder");
        std::fs::copy(certs.join("ca.crt"), tls.join(&host)).expect("the host's CA");

        // Settings, the project with its deny window, and the components' identities.
        let settings = json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "argocd-cm", "namespace": namespace,
                          "labels": {ARGOCD_SETTINGS_LABEL.0: ARGOCD_SETTINGS_LABEL.1}},
             "data": {"admin.enabled": "false"}},
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "argocd-rbac-cm", "namespace": namespace,
                          "labels": {ARGOCD_SETTINGS_LABEL.0: ARGOCD_SETTINGS_LABEL.1}}},
            {"apiVersion": "v1", "kind": "Secret",
             "metadata": {"name": "argocd-secret", "namespace": namespace,
                          "labels": {ARGOCD_SETTINGS_LABEL.0: ARGOCD_SETTINGS_LABEL.1}},
             // Signs the API server's sessions; with authentication off, none is made.
             "stringData": {"server.secretkey": "tenantc-conformance-unused"}},
            {"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
             "metadata": {"name": sync.project, "namespace": namespace},
             "spec": {
                "sourceRepos": ["*"],
                "destinations": [{"server": "*", "namespace": "*"}],
                "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
                // Always on: Argo CD compares, but syncs nothing, RollingSync steps included.
                "syncWindows": [{"kind": "deny", "schedule": "* * * * *", "duration": "24h",
                                 "applications": ["*"], "manualSync": false}],
             }},
        ]});
        let run = cluster.kubectl(
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "--field-manager",
                "tenantc-conformance-platform",
                "-f",
                "-",
            ],
            &settings.to_string(),
        );
        assert!(run.ok, "Argo CD's settings:\n{}", run.stderr);
        let controller_kubeconfig =
            kubeconfig_of_service_account(cluster, &cell.gitops.user, &work);
        let set_kubeconfig = kubeconfig_of_service_account(
            cluster,
            &format!("system:serviceaccount:{namespace}:{APPLICATIONSET_CONTROLLER}"),
            &work,
        );
        let server_kubeconfig = kubeconfig_of_service_account(
            cluster,
            &format!("system:serviceaccount:{namespace}:{ARGOCD_SERVER}"),
            &work,
        );

        let mut argo = ArgoCd {
            cluster,
            components: Components::new(cluster),
            namespace: namespace.clone(),
            server_port: free_port(),
            work: work.clone(),
            tools: tools.path(""),
            controller_kubeconfig: controller_kubeconfig.clone(),
            set_name: None,
        };
        let home = work.join("home");
        let tmp = work.join("tmp");
        for folder in [&home, &tmp, &work.join("static")] {
            std::fs::create_dir_all(folder).expect("a folder of Argo CD's");
        }
        let argocd = |component: &str| {
            let mut command = Command::new(tools.path("argocd"));
            command
                .env("ARGOCD_BINARY_NAME", component)
                .env("HOME", &home)
                .env("TMPDIR", &tmp);
            command
        };

        let redis = free_port();
        let mut command = Command::new("redis-server");
        command
            .args(["--bind", "127.0.0.1", "--port", &redis.to_string()])
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(&work);
        argo.components.spawn("argocd-redis", command);
        argo.components
            .wait_ready("Redis", READY_TIMEOUT, || redis_ready(redis));
        let redis = format!("127.0.0.1:{redis}");

        let proxy = free_port();
        let mut command = Command::new("python3");
        command
            .arg(support::repo().join("tests/conformance/git_proxy.py"))
            .args(["--port", &proxy.to_string(), "--host", &host, "--root"])
            .arg(&repos)
            .arg("--cert")
            .arg(certs.join("tls.crt"))
            .arg("--key")
            .arg(certs.join("tls.key"));
        argo.components.spawn("argocd-git-host", command);
        argo.components
            .wait_ready("the Git host's proxy", READY_TIMEOUT, || listening(proxy));

        let (repo_port, repo_metrics) = (free_port(), free_port());
        // What Argo CD's image has on the repo server's PATH: kustomize and its wrapper scripts.
        let path_env = format!(
            "{}:{}:{}",
            tools.path("argocd-path").display(),
            tools.path("").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let proxy_url = format!("http://127.0.0.1:{proxy}");
        let mut command = argocd("argocd-repo-server");
        command
            .args(["--address", "127.0.0.1", "--port", &repo_port.to_string()])
            .args([
                "--metrics-address",
                "127.0.0.1",
                "--metrics-port",
                &repo_metrics.to_string(),
            ])
            .args(["--disable-tls", "--client-ca-path", "", "--redis", &redis])
            .args(["--logformat", "text"])
            .env("PATH", &path_env)
            .env("HTTPS_PROXY", &proxy_url)
            .env("https_proxy", &proxy_url)
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("no_proxy", "127.0.0.1,localhost")
            .env("ARGOCD_TLS_DATA_PATH", &tls)
            .env("ARGOCD_SSH_DATA_PATH", work.join("ssh"))
            .env("ARGOCD_GPG_ENABLED", "false")
            .env("ARGOCD_GNUPGHOME", work.join("gnupg"))
            .env("ARGOCD_ASK_PASS_SOCK", work.join("askpass.sock"));
        argo.components.spawn("argocd-repo-server", command);
        let url = format!("http://127.0.0.1:{repo_metrics}/healthz?full=true");
        argo.components
            .wait_ready("argocd-repo-server /healthz", READY_TIMEOUT, || {
                http_ok(&url, None)
            });
        let repo_server = format!("127.0.0.1:{repo_port}");

        let server_metrics = free_port();
        let mut command = argocd("argocd-server");
        command
            .args(["--insecure", "--disable-auth", "--address", "127.0.0.1"])
            .args(["--port", &argo.server_port.to_string()])
            .args([
                "--metrics-address",
                "127.0.0.1",
                "--metrics-port",
                &server_metrics.to_string(),
            ])
            .args(["--repo-server", &repo_server, "--repo-server-plaintext"])
            .args([
                "--redis",
                &redis,
                "--namespace",
                &namespace,
                "--logformat",
                "text",
            ])
            .args(["--dex-server", "http://127.0.0.1:1", "--staticassets"])
            .arg(work.join("static"))
            .arg("--kubeconfig")
            .arg(&server_kubeconfig)
            .env("ARGOCD_FAKE_IN_CLUSTER", "true")
            .env("KUBECONFIG", &server_kubeconfig);
        argo.components.spawn("argocd-server", command);
        let url = format!("http://127.0.0.1:{}/healthz", argo.server_port);
        argo.components
            .wait_ready("argocd-server /healthz", READY_TIMEOUT, || {
                http_ok(&url, None)
            });

        let controller_metrics = free_port();
        let mut command = argocd("argocd-application-controller");
        command
            .args(["--repo-server", &repo_server, "--repo-server-plaintext"])
            .args([
                "--redis",
                &redis,
                "--namespace",
                &namespace,
                "--logformat",
                "text",
            ])
            .args(["--metrics-port", &controller_metrics.to_string()])
            .arg("--kubeconfig")
            .arg(&controller_kubeconfig)
            // The destination `https://kubernetes.default.svc` is the cell itself: this makes
            // Argo CD reach it through KUBECONFIG, as the controller's own identity.
            .env("ARGOCD_FAKE_IN_CLUSTER", "true")
            .env("KUBECONFIG", &controller_kubeconfig);
        argo.components
            .spawn("argocd-application-controller", command);
        let url = format!("http://127.0.0.1:{controller_metrics}/healthz");
        argo.components.wait_ready(
            "argocd-application-controller /healthz",
            READY_TIMEOUT,
            || http_ok(&url, None),
        );

        let (set_metrics, set_probe, set_webhook) = (free_port(), free_port(), free_port());
        let mut command = argocd("argocd-applicationset-controller");
        command
            .args([
                "--argocd-repo-server",
                &repo_server,
                "--repo-server-plaintext",
            ])
            .args(["--namespace", &namespace, "--logformat", "text"])
            .args([
                "--enable-progressive-syncs",
                "--enable-leader-election=false",
            ])
            .arg(format!("--metrics-addr=127.0.0.1:{set_metrics}"))
            .arg(format!("--probe-addr=127.0.0.1:{set_probe}"))
            .arg(format!("--webhook-addr=127.0.0.1:{set_webhook}"))
            .arg("--kubeconfig")
            .arg(&set_kubeconfig)
            .env("KUBECONFIG", &set_kubeconfig);
        argo.components
            .spawn("argocd-applicationset-controller", command);
        // Its health probe server has no checks registered (404); its metrics answer once the
        // manager runs.
        let url = format!("http://127.0.0.1:{set_metrics}/metrics");
        argo.components.wait_ready(
            "argocd-applicationset-controller /metrics",
            READY_TIMEOUT,
            || http_ok(&url, None),
        );
        argo
    }

    /// Applies the ApplicationSet as the cell's GitOps identity, which syncs `argocd/`.
    fn apply_set(&mut self, set: &Value) {
        let run = self.cluster.kubectl_with(
            &self.controller_kubeconfig,
            &[
                "apply",
                "--server-side",
                "--field-manager",
                FIELD_MANAGER,
                "-f",
                "-",
            ],
            &set.to_string(),
        );
        assert!(
            run.ok,
            "the GitOps identity could not apply the ApplicationSet:\n{}",
            run.stderr
        );
        self.set_name = set["metadata"]["name"].as_str().map(str::to_string);
    }

    /// The Applications of the namespace, by name.
    fn applications(&self) -> BTreeMap<String, Value> {
        let run = self.cluster.kubectl(
            &[
                "get",
                "applications.argoproj.io",
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

    /// Waits until the ApplicationSet controller generated `names` and the application
    /// controller compared each of them with the cell (or recorded why it could not).
    fn settle(&mut self, names: &BTreeSet<String>) -> BTreeMap<String, Value> {
        let started = Instant::now();
        loop {
            let apps = self.applications();
            let compared = |app: &Value| {
                let status = &app["status"];
                let errors = status["conditions"].as_array().is_some_and(|conditions| {
                    conditions.iter().any(|condition| {
                        condition["type"]
                            .as_str()
                            .is_some_and(|kind| kind.ends_with("Error"))
                    })
                });
                errors
                    || (status["sync"]["comparedTo"]["source"] == app["spec"]["source"]
                        && matches!(
                            status["sync"]["status"].as_str(),
                            Some("Synced" | "OutOfSync")
                        ))
            };
            let present: BTreeSet<String> = apps.keys().cloned().collect();
            if names.is_subset(&present) && names.iter().all(|name| compared(&apps[name])) {
                return apps;
            }
            if let Some(name) = self.components.exited() {
                panic!("{name} exited:\n{}", self.components.log_tail(&name, 30));
            }
            if started.elapsed() > SETTLE_TIMEOUT {
                let states: Vec<String> = names
                    .iter()
                    .map(|name| match apps.get(name) {
                        None => format!("{name}: not generated"),
                        Some(app) => format!(
                            "{name}: sync {} compared to {}",
                            app["status"]["sync"]["status"], app["status"]["sync"]["comparedTo"]
                        ),
                    })
                    .collect();
                panic!(
                    "Argo CD did not compare every Application in {} s:\n{}\napplication controller:\n{}\nrepo server:\n{}",
                    SETTLE_TIMEOUT.as_secs(),
                    states.join("\n"),
                    self.components
                        .log_tail("argocd-application-controller", 20),
                    self.components.log_tail("argocd-repo-server", 20)
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// `argocd app manifests <name>`: the objects Argo CD rendered for the Application, as its
    /// application controller compared them with the cell.
    fn manifests(&self, name: &str) -> Result<Vec<Value>, String> {
        let output = Command::new(self.tools.join("argocd"))
            .args(["app", "manifests", name, "--server"])
            .arg(format!("127.0.0.1:{}", self.server_port))
            .args(["--plaintext", "--auth-token", "conformance", "--config"])
            .arg(self.work.join("cli-config"))
            .env("HOME", self.work.join("home"))
            .env("ARGOCD_BINARY_NAME", "argocd")
            .stdin(Stdio::null())
            .output()
            .expect("argocd runs");
        if !output.status.success() {
            return Err(String::from_utf8_lossy(&output.stderr).trim().to_string());
        }
        yaml_documents_typed(&String::from_utf8_lossy(&output.stdout))
            .map(|documents| documents.into_iter().filter(Value::is_object).collect())
    }
}

impl Drop for ArgoCd<'_> {
    fn drop(&mut self) {
        self.components.stop();
        remove_argo_cd_objects(self.cluster, &self.namespace);
    }
}

/// Deletes the ApplicationSets and Applications of `namespace` (finalizers first, with no
/// controller running, so nothing is pruned).
fn remove_argo_cd_objects(cluster: &Cluster, namespace: &str) {
    super::gitops::remove_without_finalizers(
        cluster,
        namespace,
        &["applicationsets.argoproj.io", "applications.argoproj.io"],
    );
}

/// A change the self-test makes to the tree Argo CD reads (tenantc's tree stays the
/// expectation).
type Tamper = fn(&str, &mut OutputTree);

/// The ApplicationSet of `cell` in `tree`, as typed JSON.
fn application_set_of(tree: &OutputTree, cell: &str) -> Value {
    let path = format!("argocd/applicationset-{cell}.yaml");
    let text = String::from_utf8(
        tree.get(&path)
            .unwrap_or_else(|| panic!("the fixture fleet emits {path}"))
            .clone(),
    )
    .expect("a text file");
    yaml_documents_typed(&text)
        .unwrap_or_else(|error| panic!("{path}: {error}"))
        .remove(0)
}

fn argo_cd_scenario(cluster: &Cluster, tamper: Option<Tamper>) -> Vec<String> {
    let tools = Tools::of(cluster, &["argocd", "kustomize"]);
    install_crds(cluster);
    let fleet = fixture_fleet();
    let cell = argo_cd_cell(&fleet.plan.cells).clone();
    let sync = cell.gitops.sync.clone().expect("a sync plan");
    let written = fleet_tree();
    let mut served = written.clone();
    if let Some(tamper) = tamper {
        tamper(&cell.name, &mut served);
    }
    // The cell as the other checks apply it: its guard names the application controller.
    set_up_cell(cluster, &fleet, &cell);
    let started = Instant::now();
    let mut argo = ArgoCd::start(cluster, &tools, &cell, &served);
    let version = Command::new(tools.path("argocd"))
        .args(["version", "--client", "--short"])
        .env("HOME", argo.work.join("home"))
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
        .unwrap_or_default();
    println!(
        "  Argo CD ({version}) started in {:.1} s: Redis, the Git host, the repo server, the API server, the application and ApplicationSet controllers",
        started.elapsed().as_secs_f64()
    );

    let emitted_set = application_set_of(&written, &cell.name);
    let expected: BTreeMap<String, Value> = generated_applications(&emitted_set)
        .into_iter()
        .map(|mut app| {
            // RollingSync hands syncing to the ApplicationSet controller, which generates the
            // Applications with automated sync turned off (`progressivesync`
            // `disableAutomatedSync`) and syncs each step itself.
            if app["spec"]["syncPolicy"]["automated"].is_object() {
                app["spec"]["syncPolicy"]["automated"]["enabled"] = json!(false);
            }
            (
                app["metadata"]["name"]
                    .as_str()
                    .expect("a name")
                    .to_string(),
                app,
            )
        })
        .collect();
    let started = Instant::now();
    argo.apply_set(&application_set_of(&served, &cell.name));
    let names: BTreeSet<String> = expected.keys().cloned().collect();
    let apps = argo.settle(&names);
    println!(
        "  {} Applications generated and compared with the cell in {:.1} s",
        names.len(),
        started.elapsed().as_secs_f64()
    );

    let mut failures = Vec::new();
    for (name, want) in &expected {
        let have = &apps[name];
        let found = differences(want, have, true);
        if !found.is_empty() {
            failures.push(format!(
                "Application {name} differs from the one tenantc's ApplicationSet generates: {}",
                found.join("; ")
            ));
        }
        let path = want["spec"]["source"]["path"].as_str().expect("a path");
        let expected_objects = typed_objects(&unit_objects(&written, &sync.path, path));
        let rendered = match argo.manifests(name) {
            Ok(rendered) => rendered,
            Err(error) => {
                let conditions = &have["status"]["conditions"];
                failures.push(format!(
                    "{name}: argocd app manifests failed: {error}; conditions: {conditions}"
                ));
                continue;
            }
        };
        let mut built = BTreeMap::new();
        for mut object in rendered {
            let id = id_of(&object);
            let (tracking, emptied) = match object["metadata"]["annotations"].as_object_mut() {
                Some(annotations) => (
                    annotations.remove(TRACKING_ANNOTATION),
                    annotations.is_empty(),
                ),
                None => (None, false),
            };
            if emptied && let Some(metadata) = object["metadata"].as_object_mut() {
                metadata.remove("annotations");
            }
            let group = object["apiVersion"]
                .as_str()
                .map(group_of)
                .unwrap_or_default();
            let key = format!(
                "{name}:{group}/{}:{}/{}",
                object["kind"].as_str().unwrap_or_default(),
                object["metadata"]["namespace"].as_str().unwrap_or_default(),
                object["metadata"]["name"].as_str().unwrap_or_default()
            );
            if tracking != Some(json!(key)) {
                failures.push(format!(
                    "{name}: {id} is not tracked as `{key}` ({TRACKING_ANNOTATION} is {tracking:?})"
                ));
            }
            built.insert(id, object);
        }
        for (id, want) in &expected_objects {
            match built.get(id) {
                None => failures.push(format!("{name}: {id} was not rendered")),
                Some(have) => {
                    let found = differences(want, have, false);
                    if !found.is_empty() {
                        failures.push(format!(
                            "{name}: {id} differs from what tenantc wrote: {}",
                            found.join("; ")
                        ));
                    }
                }
            }
        }
        for id in built
            .keys()
            .filter(|id| !expected_objects.contains_key(*id))
        {
            failures.push(format!(
                "{name}: {id} was rendered but tenantc wrote no such object in {path}"
            ));
        }
        if let Some(conditions) = have["status"]["conditions"].as_array() {
            for condition in conditions {
                println!(
                    "    {name}: condition {}: {}",
                    condition["type"].as_str().unwrap_or("?"),
                    condition["message"].as_str().unwrap_or("?")
                );
            }
        }
        println!(
            "  {name} ({path}): {} objects rendered by Argo CD, {} written by tenantc; sync {}, step {}",
            built.len(),
            expected_objects.len(),
            have["status"]["sync"]["status"].as_str().unwrap_or("?"),
            have["metadata"]["labels"][tenantc::kube::labels::SYNC_STEP_LABEL]
                .as_str()
                .unwrap_or("?")
        );
    }

    // Argo CD wrote nothing to the cell: the deny window held back every sync.
    let objects = fleet.cell_objects(&cell.name);
    let refs: Vec<&Object> = objects.iter().collect();
    let written_by_argo: Vec<String> = super::gitops::live_objects(cluster, &refs)
        .into_iter()
        .filter(|(_, live)| {
            live["metadata"]["managedFields"]
                .as_array()
                .is_some_and(|fields| {
                    fields
                        .iter()
                        .any(|entry| entry["manager"] == ARGOCD_MANAGER)
                })
        })
        .map(|(id, _)| id)
        .collect();
    if !written_by_argo.is_empty() {
        failures.push(format!(
            "Argo CD wrote to the cell despite the deny window: {written_by_argo:?}"
        ));
    }
    drop(argo);
    failures
}

/// Argo CD v3.6.1 expands the ApplicationSet of the fixture fleet's Argo CD cell into exactly
/// the Applications tenantc's ApplicationSet describes, and renders for each exactly the
/// objects tenantc wrote into its folder, plus its tracking annotation.
pub(super) fn argo_cd_renders_each_application_as_emitted(cluster: &Cluster) {
    let failures = argo_cd_scenario(cluster, None);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The self-test's changes: a quota of `acme-serving` changed in the repository, and the
/// ApplicationSet's `kueue` element pointed at the `gpu-operator` folder.
fn tamper_quota_and_element(cell: &str, tree: &mut OutputTree) {
    let prefix = format!("{cell}/tenants/acme-serving/");
    let quota = tree
        .keys()
        .find(|path| path.starts_with(&prefix) && path.ends_with("/resourcequota.yaml"))
        .cloned()
        .expect("acme-serving's quota");
    let text = String::from_utf8(tree[&quota].clone()).expect("a quota");
    let edited: String = text
        .lines()
        .map(|line| {
            if line.trim_start().starts_with("requests.cpu: ") {
                "    requests.cpu: \"999\"\n".to_string()
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    assert_ne!(edited, text, "the quota was not changed");
    tree.insert(quota, edited.into_bytes());
    let path = format!("argocd/applicationset-{cell}.yaml");
    let text = String::from_utf8(tree[&path].clone()).expect("an ApplicationSet");
    let from = format!("path: out/{cell}/kueue\n");
    assert_eq!(text.matches(&from).count(), 1, "one kueue element");
    tree.insert(
        path,
        text.replace(&from, &format!("path: out/{cell}/gpu-operator\n"))
            .into_bytes(),
    );
}

/// The self-test: a quota changed in the repository and an ApplicationSet element pointed at
/// another folder are both reported.
pub(super) fn argo_cd_self_test_a_tampered_repository_is_caught(cluster: &Cluster) {
    let failures = argo_cd_scenario(cluster, Some(tamper_quota_and_element));
    println!("  reported:\n    {}", failures.join("\n    "));
    assert!(
        failures.iter().any(
            |failure| failure.contains("-tenant-acme-serving: ResourceQuota/")
                && failure.contains("/spec/hard/requests.cpu")
        ),
        "the changed quota was not reported: {failures:?}"
    );
    assert!(
        failures
            .iter()
            .any(|failure| failure.starts_with("Application ")
                && failure.contains("-kueue differs")
                && failure.contains("/spec/source/path")),
        "the element pointed at another folder was not reported: {failures:?}"
    );
}
