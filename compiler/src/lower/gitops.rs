//! The objects that tell Argo CD or Flux which folders of `out/` to sync, in which order, and
//! the marks on objects that must be replaced rather than updated.
//!
//! Consumes: a cell's plan (its `gitops.sync` settings) and the kustomization folders `lower`
//! placed its objects in (`cluster`, `kueue` or `volcano`, `gpu-operator`, `metering`,
//! `tenants/<tenant>`, `serving`).
//! Produces: for Argo CD, one ApplicationSet per cell in `argocd/`, whose list generator has one
//! element per folder; for Flux, one Kustomization per folder in `flux/`; and
//! [`replace_annotations`], the annotations of objects with immutable fields.
//!
//! Invariants:
//! - One synced unit (Application or Kustomization) per folder, and a tenant folder holds only
//!   that tenant's objects, so the render work of a sync grows linearly with tenants.
//! - Order: the `cluster` folder (Namespaces of tenantc and every cluster-scoped policy) first,
//!   then `kueue` (or, in a Volcano cell, `volcano`), then every tenant folder, then `gpu-operator`, whose namespace belongs to the
//!   GPU Operator and must exist before the first sync (a documented prerequisite), then
//!   `metering`, whose namespace and CRD belong to the Prometheus Operator (also a
//!   prerequisite), then
//!   `serving`, whose model namespaces and Gateway are the platform's prerequisites too; Argo CD
//!   gets it as RollingSync steps, Flux as `dependsOn`.
//! - Nothing creates a namespace implicitly (`CreateNamespace=false`), and every apply is
//!   server-side.
//! - A cell without a declared controller gets no objects here; the replacement marks are on
//!   the objects whatever the controller, since each tool ignores the other's annotation.

use std::collections::{BTreeMap, BTreeSet};

use super::body;
use crate::emit::Body;
use crate::emit::InternalError;
use crate::kube::gitops::{
    ARGOCD_REPLACE, ARGOCD_SYNC_OPTIONS, ApplicationDestination, ApplicationSet,
    ApplicationSetSpec, ApplicationSource, ApplicationSpec, ApplicationTemplate, AutomatedSync,
    DependencyReference, FLUX_FORCE, FLUX_FORCE_ENABLED, Generator, Kustomization,
    KustomizationSpec, ListGenerator, MatchExpression, RollingSync, RollingSyncStep, SourceKind,
    SourceReference, Strategy, StrategyType, SyncPolicy, TemplateMeta,
};
use crate::layout::CellFolder;
use crate::model::GitOpsController;
use crate::plan::{CellPlan, Destination, SyncPlan};

/// The folder of `out/` that holds the Argo CD objects of every cell.
pub const ARGOCD_FOLDER: &str = "argocd";
/// The folder of `out/` that holds the Flux objects of every cell.
pub const FLUX_FOLDER: &str = "flux";
/// The label of each generated Application that its RollingSync step selects on.
pub use crate::kube::labels::SYNC_STEP_LABEL;
/// How often Flux reconciles a folder.
const FLUX_INTERVAL: &str = "10m";

/// The annotations of an object with immutable fields: both controllers delete and recreate
/// it when it changes, instead of an update the API server refuses.
pub(crate) fn replace_annotations() -> BTreeMap<String, String> {
    BTreeMap::from([
        (ARGOCD_SYNC_OPTIONS.to_string(), ARGOCD_REPLACE.to_string()),
        (FLUX_FORCE.to_string(), FLUX_FORCE_ENABLED.to_string()),
    ])
}

/// The annotation that makes Argo CD apply an object of a tenant's folder, and see it
/// healthy, before the rest of the folder (sync wave -1; the rest is wave 0).
pub(crate) const ARGOCD_SYNC_WAVE: &str = "argocd.argoproj.io/sync-wave";

/// The annotations of the admission objects in a tenant's folder (its floor's params and
/// binding, its RoleBinding subjects policy and binding): Argo CD orders kinds it does not
/// know, such as ValidatingAdmissionPolicyBinding, after RoleBindings, so on a tenant's first
/// sync its members could create pods before the floor judged them. A lower wave closes that
/// window; Flux has no such ordering inside a folder (docs/security.md, "Sync order").
pub(crate) fn first_wave_annotations() -> BTreeMap<String, String> {
    BTreeMap::from([(ARGOCD_SYNC_WAVE.to_string(), "-1".to_string())])
}

/// One synced folder of a cell: its unit's name suffix, its folder (path and kind) and its
/// sync step.
struct Unit<'a> {
    suffix: String,
    folder: String,
    kind: &'a CellFolder,
    step: u8,
}

/// The sync step of a folder (see the module invariants): a function of its kind.
fn step_of(folder: &CellFolder) -> u8 {
    match folder {
        CellFolder::Cluster => 1,
        // A cell has one scheduler: its queues sync before the tenants that name them.
        CellFolder::Kueue | CellFolder::Volcano => 2,
        CellFolder::Tenant(_) => 3,
        CellFolder::GpuOperator => 4,
        CellFolder::Metering => 5,
        // Last: the model namespaces and the Gateway are the platform's, prerequisites like
        // the GPU Operator's namespace, and nothing else waits for the routes.
        CellFolder::Serving => 6,
    }
}

fn units(folders: &BTreeSet<CellFolder>) -> Vec<Unit<'_>> {
    let mut units: Vec<Unit<'_>> = folders
        .iter()
        .map(|folder| Unit {
            suffix: match folder.tenant() {
                Some(tenant) => format!("tenant-{tenant}"),
                None => folder.path(),
            },
            folder: folder.path(),
            kind: folder,
            step: step_of(folder),
        })
        .collect();
    units.sort_by(|left, right| (left.step, &left.folder).cmp(&(right.step, &right.folder)));
    units
}

/// One GitOps object of a cell: `(folder of out/, file, object, tenant)`, where `tenant` is
/// the tenant a Flux Kustomization syncs (for the file's header), if any.
pub(super) type GitOpsObject = (&'static str, String, Body, Option<String>);

/// The GitOps objects of a cell.
pub(super) fn cell_objects(
    cell: &CellPlan,
    folders: &BTreeSet<CellFolder>,
) -> Result<Vec<GitOpsObject>, InternalError> {
    let Some(sync) = &cell.gitops.sync else {
        return Ok(Vec::new());
    };
    let units = units(folders);
    match sync.controller {
        GitOpsController::ArgoCd => Ok(vec![(
            ARGOCD_FOLDER,
            format!("applicationset-{}.yaml", cell.name),
            body(&application_set(cell, sync, &units))?,
            None,
        )]),
        GitOpsController::Flux => units
            .iter()
            .map(|unit| {
                let tenant = unit.kind.tenant().map(str::to_string);
                Ok((
                    FLUX_FOLDER,
                    format!("kustomization-{}-{}.yaml", cell.name, unit.suffix),
                    body(&flux_kustomization(cell, sync, unit, &units))?,
                    tenant,
                ))
            })
            .collect(),
    }
}

fn application_set(cell: &CellPlan, sync: &SyncPlan, units: &[Unit<'_>]) -> ApplicationSet {
    let elements = units
        .iter()
        .map(|unit| {
            BTreeMap::from([
                ("name".to_string(), format!("{}-{}", cell.name, unit.suffix)),
                (
                    "path".to_string(),
                    format!("{}/{}/{}", sync.path, cell.name, unit.folder),
                ),
                ("step".to_string(), unit.step.to_string()),
            ])
        })
        .collect();
    let mut steps: Vec<u8> = units.iter().map(|unit| unit.step).collect();
    steps.dedup();
    let (server, name) = match &sync.destination {
        Destination::Server(server) => (Some(server.clone()), None),
        Destination::Name(name) => (None, Some(name.clone())),
    };
    let mut set = ApplicationSet::new(
        &format!("tenantc-{}", cell.name),
        &sync.namespace,
        ApplicationSetSpec {
            go_template: true,
            go_template_options: vec!["missingkey=error".to_string()],
            generators: vec![Generator {
                list: ListGenerator { elements },
            }],
            template: ApplicationTemplate {
                metadata: TemplateMeta {
                    name: Some("{{.name}}".to_string()),
                    // No managed-by label: Argo CD's ApplicationSet controller and API server
                    // write the Applications (RollingSync steps, UI syncs), and the guard would
                    // refuse them. The ApplicationSet, which tenantc manages, is guarded, and
                    // its controller puts any edited Application back to the template.
                    labels: Some(BTreeMap::from([(
                        SYNC_STEP_LABEL.to_string(),
                        "{{.step}}".to_string(),
                    )])),
                },
                spec: ApplicationSpec {
                    source: ApplicationSource {
                        repo_url: sync.repo.clone(),
                        path: Some("{{.path}}".to_string()),
                        target_revision: sync.revision.clone(),
                    },
                    destination: ApplicationDestination { server, name },
                    project: sync.project.clone(),
                    sync_policy: SyncPolicy {
                        automated: AutomatedSync {
                            prune: true,
                            self_heal: true,
                        },
                        sync_options: vec![
                            "ServerSideApply=true".to_string(),
                            "CreateNamespace=false".to_string(),
                        ],
                    },
                },
            },
            strategy: Strategy {
                type_: StrategyType::RollingSync,
                rolling_sync: RollingSync {
                    steps: steps
                        .iter()
                        .map(|step| RollingSyncStep {
                            match_expressions: vec![MatchExpression {
                                key: SYNC_STEP_LABEL.to_string(),
                                operator: "In".to_string(),
                                values: vec![step.to_string()],
                            }],
                        })
                        .collect(),
                },
            },
        },
    );
    set.metadata.labels = Some(super::managed_labels());
    set
}

fn flux_kustomization(
    cell: &CellPlan,
    sync: &SyncPlan,
    unit: &Unit<'_>,
    units: &[Unit<'_>],
) -> Kustomization {
    // Each unit waits for the last unit of every earlier step; tenants wait for `cluster` and
    // `kueue`, never for each other.
    let mut earlier: BTreeMap<u8, &Unit<'_>> = BTreeMap::new();
    for other in units.iter().filter(|other| other.step < unit.step) {
        if other.step != 3 {
            earlier.insert(other.step, other);
        }
    }
    let mut kustomization = Kustomization::new(
        &format!("{}-{}", cell.name, unit.suffix),
        &sync.namespace,
        KustomizationSpec {
            depends_on: earlier
                .values()
                .map(|other| DependencyReference {
                    name: format!("{}-{}", cell.name, other.suffix),
                })
                .collect(),
            interval: FLUX_INTERVAL.to_string(),
            path: format!("./{}/{}/{}", sync.path, cell.name, unit.folder),
            prune: true,
            source_ref: SourceReference {
                kind: SourceKind::GitRepository,
                name: sync.source.clone(),
            },
        },
    );
    kustomization.metadata.labels = Some(super::managed_labels());
    kustomization
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use crate::emit::OutputTree;
    use crate::testing::Rng;
    use crate::validate::test_support::{CELL, compile_files, listing, tenant};

    /// A fleet of one cell (synced by `controller`) and `tenants` tenants.
    fn fleet(controller: &str, tenants: usize) -> OutputTree {
        let gitops = match controller {
            "flux" => "gitops \"flux\"",
            _ => "gitops \"argocd\" repo=\"https://git.example.com/fleet.git\"",
        };
        let names: Vec<String> = (0..tenants).map(|idx| format!("t{idx}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let cell = listing(CELL, "acme", &names).replace(
            "    driver \"570\"\n",
            &format!("    driver \"570\"\n    {gitops}\n"),
        );
        let tenants: Vec<(String, String)> = (0..tenants)
            .map(|idx| {
                (
                    format!("tenants/t{idx}.kdl"),
                    tenant(&format!("t{idx}"), "hard", "pool \"train\" reserved=0"),
                )
            })
            .collect();
        let mut files = vec![("cells/c1.kdl", cell.as_str())];
        files.extend(
            tenants
                .iter()
                .map(|(path, text)| (path.as_str(), text.as_str())),
        );
        let compilation = compile_files(&files);
        assert!(!compilation.has_errors(), "{:?}", compilation.diagnostics);
        compilation.output.unwrap()
    }

    /// The folders of the tree (below `c1/`) that the emitted Argo CD or Flux objects sync.
    fn synced_folders(tree: &OutputTree) -> Vec<String> {
        let mut folders = Vec::new();
        for (path, bytes) in tree {
            if !(path.starts_with("argocd/") || path.starts_with("flux/"))
                || path.ends_with("/kustomization.yaml")
            {
                continue;
            }
            let text = String::from_utf8_lossy(bytes);
            for line in text.lines() {
                let value = line.trim().trim_start_matches("- ");
                if let Some(value) = value.strip_prefix("path: ") {
                    let value = value.trim_matches('"');
                    if let Some(folder) = value
                        .strip_prefix("./out/c1/")
                        .or_else(|| value.strip_prefix("out/c1/"))
                    {
                        folders.push(folder.to_string());
                    }
                }
            }
        }
        folders.sort();
        folders
    }

    /// The tenants whose objects lie in a folder of the tree (by their tenant label).
    fn tenants_in(tree: &OutputTree, folder: &str) -> (BTreeSet<String>, usize) {
        let prefix = format!("c1/{folder}/");
        let mut tenants = BTreeSet::new();
        let mut objects = 0;
        for (path, bytes) in tree.range(prefix.clone()..) {
            if !path.starts_with(&prefix) {
                break;
            }
            if path.ends_with("/kustomization.yaml") {
                continue;
            }
            objects += 1;
            for line in String::from_utf8_lossy(bytes).lines() {
                if let Some(name) = line.trim().strip_prefix("tenant.platform/tenant: ") {
                    tenants.insert(name.trim_matches('"').to_string());
                }
            }
        }
        (tenants, objects)
    }

    #[test]
    fn every_synced_folder_holds_at_most_one_tenants_objects_whatever_the_fleet_size() {
        let mut rng = Rng(0x5eed_0a10);
        for round in 0..6 {
            let controller = if round % 2 == 0 { "argocd" } else { "flux" };
            let count = 1 + rng.below(12);
            let small = fleet(controller, count);
            let large = fleet(controller, 2 * count);
            let mut shared: Vec<BTreeMap<String, usize>> = Vec::new();
            for tree in [&small, &large] {
                let folders = synced_folders(tree);
                // Every kustomization folder of the cell but the cell's own is synced, once.
                let kustomized: Vec<String> = tree
                    .keys()
                    .filter_map(|path| path.strip_prefix("c1/"))
                    .filter_map(|path| path.strip_suffix("/kustomization.yaml"))
                    .map(str::to_string)
                    .collect();
                assert_eq!(folders, kustomized, "{controller}, {count} tenants");
                let mut sizes = BTreeMap::new();
                for folder in &folders {
                    let (tenants, objects) = tenants_in(tree, folder);
                    assert!(
                        tenants.len() <= 1,
                        "{controller}: {folder} holds objects of {tenants:?}"
                    );
                    match folder.strip_prefix("tenants/") {
                        Some(name) => assert_eq!(
                            tenants,
                            BTreeSet::from([name.to_string()]),
                            "{controller}: {folder}"
                        ),
                        None => {
                            assert!(tenants.is_empty(), "{controller}: {folder}: {tenants:?}");
                            sizes.insert(folder.clone(), objects);
                        }
                    }
                }
                shared.push(sizes);
            }
            // The shared folders do not grow with tenants, so the largest synced folder stays
            // the same size as the fleet doubles: the render work is linear in tenants.
            assert_eq!(shared[0], shared[1], "{controller}, {count} tenants");
        }
    }

    #[test]
    fn a_cell_without_a_controller_gets_no_gitops_objects_but_keeps_the_replacement_marks() {
        let files = [
            ("cells/c1.kdl", CELL.to_string()),
            (
                "tenants/a.kdl",
                tenant("a", "hard", "pool \"train\" reserved=0"),
            ),
        ];
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(path, text)| (*path, text.as_str()))
            .collect();
        let compilation = compile_files(&borrowed);
        let tree = compilation.output.unwrap();
        assert!(
            tree.keys()
                .all(|path| !path.starts_with("argocd/") && !path.starts_with("flux/"))
        );
        let priority =
            String::from_utf8_lossy(&tree["c1/cluster/priorityclass-batch.yaml"]).to_string();
        assert!(
            priority.contains("argocd.argoproj.io/sync-options: \"Force=true,Replace=true\""),
            "{priority}"
        );
        assert!(
            priority.contains("kustomize.toolkit.fluxcd.io/force: enabled"),
            "{priority}"
        );
    }

    #[test]
    fn flux_tenants_wait_for_the_cluster_and_kueue_folders_and_argo_syncs_them_in_steps() {
        let flux = fleet("flux", 2);
        let tenant =
            String::from_utf8_lossy(&flux["flux/kustomization-c1-tenant-t0.yaml"]).to_string();
        assert!(
            tenant.contains("dependsOn:\n  - name: c1-cluster\n  - name: c1-kueue\n"),
            "{tenant}"
        );
        let cluster =
            String::from_utf8_lossy(&flux["flux/kustomization-c1-cluster.yaml"]).to_string();
        assert!(!cluster.contains("dependsOn"), "{cluster}");
        let argo = fleet("argocd", 2);
        let set = String::from_utf8_lossy(&argo["argocd/applicationset-c1.yaml"]).to_string();
        let order: Vec<&str> = set
            .lines()
            .filter_map(|line| line.trim().strip_prefix("- name: c1-"))
            .collect();
        assert_eq!(
            order,
            ["cluster", "kueue", "tenant-t0", "tenant-t1", "gpu-operator"]
        );
        assert!(set.contains("\"ServerSideApply=true\""), "{set}");
        assert!(set.contains("\"CreateNamespace=false\""), "{set}");
    }

    #[test]
    fn a_tenants_admission_objects_come_before_its_role_bindings_in_argo_cd() {
        let argo = fleet("argocd", 2);
        let mut first = Vec::new();
        for (path, bytes) in argo
            .iter()
            .filter(|(path, _)| path.starts_with("c1/tenants/"))
        {
            let text = String::from_utf8_lossy(bytes);
            let kind = text
                .lines()
                .find_map(|line| line.strip_prefix("kind: "))
                .unwrap_or("");
            let early = text.contains("argocd.argoproj.io/sync-wave: \"-1\"");
            let admission = kind.starts_with("ValidatingAdmissionPolicy")
                || text.contains("namespace: tenantc-system");
            // Everything that judges the tenant's requests is in the first wave, and nothing
            // that lets members make requests is.
            assert_eq!(early, admission, "{path}");
            if early {
                first.push(path.rsplit('/').next().unwrap_or("").to_string());
            }
        }
        first.sort();
        first.dedup();
        assert_eq!(
            first,
            [
                "admission-binding.yaml",
                "admission-params.yaml",
                "admission-subjects-binding.yaml",
                "admission-subjects-policy.yaml"
            ]
        );
    }
}
