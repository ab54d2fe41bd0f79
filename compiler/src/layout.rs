//! The folder layout of a project and of its output: which folders the build reads, what a path
//! under them holds, and the marker of an output folder.
//!
//! Consumes: relative, `/`-separated paths. Produces: the folder names (`tenants/`, `cells/`,
//! `keys/`, `weights/`, `templates/`), what each path is ([`classify`], [`is_material`],
//! [`template_scope`]) and [`MARKER`], the file that identifies a folder as tenantc's output.
//!
//! Invariant: the one home of these names; `load`, `git`, the driver, `weights`, `template` and
//! `emit` read them here, so no stage names a folder another stage could spell differently.

use crate::parse::Format;

/// The folder of tenant declarations.
pub const TENANTS: &str = "tenants";
/// The folder of cell declarations.
pub const CELLS: &str = "cells";
/// The folders a project root holds declarations in, sorted.
pub const DECLARATION_FOLDERS: [&str; 2] = [CELLS, TENANTS];
/// The folder of tenants' public keys and trust roots.
pub const KEYS: &str = "keys";
/// The folder of lock files and signature files.
pub const WEIGHTS: &str = "weights";
/// The folders of signing material (public keys, trust roots, weight locks and signatures),
/// read with the same care as declarations when they exist, and never required.
pub const MATERIAL_FOLDERS: [&str; 2] = [KEYS, WEIGHTS];
/// The folder templates live in, beside `tenants/` and `cells/`.
pub const TEMPLATES: &str = "templates";
/// The file name ending of a template.
pub const TEMPLATE_EXTENSION: &str = ".yaml.j2";
/// Every folder the build reads, sorted: the declarations, the signing material and the
/// platform templates. `git.rs` reads a revision's copy of exactly these.
pub const READ_FOLDERS: [&str; 5] = [CELLS, KEYS, TEMPLATES, TENANTS, WEIGHTS];

/// The folder of a cell's output that holds one tenant's folders (`<cell>/tenants/<tenant>/`).
pub const TENANT_OUTPUT: &str = "tenants";

/// A kustomization folder of a cell's output (`<cell>/<path>/`), each synced as its own unit:
/// the one way `lower` names the folder it adds an object to, and what the GitOps sync order is
/// a function of.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum CellFolder {
    /// `cluster/`: tenantc's Namespaces and every cluster-scoped policy.
    Cluster,
    /// `kueue/`: the cell's Kueue objects.
    Kueue,
    /// `volcano/`: the cell's Volcano objects (the org queues), in a Volcano cell.
    Volcano,
    /// `tenants/<tenant>/`: everything of one tenant.
    Tenant(String),
    /// `gpu-operator/`: the GPU Operator's ConfigMaps.
    GpuOperator,
    /// `metering/`: the chargeback PrometheusRule, in the Prometheus server's namespace.
    Metering,
    /// `serving/`: the routes and gateway policies of the cell's shared models, declared in
    /// the cell file (so a tenant edit never changes it).
    Serving,
}

impl CellFolder {
    /// The folder's path below the cell's folder.
    pub fn path(&self) -> String {
        match self {
            CellFolder::Cluster => "cluster".to_string(),
            CellFolder::Kueue => "kueue".to_string(),
            CellFolder::Volcano => "volcano".to_string(),
            CellFolder::Tenant(tenant) => format!("{TENANT_OUTPUT}/{tenant}"),
            CellFolder::GpuOperator => "gpu-operator".to_string(),
            CellFolder::Metering => "metering".to_string(),
            CellFolder::Serving => "serving".to_string(),
        }
    }

    /// The tenant whose folder it is, if it is a tenant's.
    pub fn tenant(&self) -> Option<&str> {
        match self {
            CellFolder::Tenant(tenant) => Some(tenant),
            CellFolder::Cluster
            | CellFolder::Kueue
            | CellFolder::Volcano
            | CellFolder::GpuOperator
            | CellFolder::Metering
            | CellFolder::Serving => None,
        }
    }
}

/// The name of the marker file that identifies a folder as tenantc's output.
pub const MARKER: &str = ".tenantc";

/// Which folder a declaration file sits in, and so what it must declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeclKind {
    /// `tenants/`.
    Tenant,
    /// `cells/`.
    Cell,
}

impl DeclKind {
    /// The KDL node name and the word used in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            DeclKind::Tenant => "tenant",
            DeclKind::Cell => "cell",
        }
    }
}

/// Which declaration kind and format a path holds, if it is a declaration at all.
pub fn classify(path: &str) -> Option<(DeclKind, Option<Format>)> {
    let (folder, name) = path.split_once('/')?;
    let kind = match folder {
        TENANTS => DeclKind::Tenant,
        CELLS => DeclKind::Cell,
        _ => return None,
    };
    let format = match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("kdl") => Some(Format::Kdl),
        Some("yaml" | "yml") => Some(Format::Yaml),
        _ => None,
    };
    Some((kind, format))
}

/// Whether a repository path is signing material, which the weights stage reads.
pub fn is_material(path: &str) -> bool {
    path.strip_prefix(KEYS)
        .or_else(|| path.strip_prefix(WEIGHTS))
        .is_some_and(|rest| rest.starts_with('/'))
}

/// What a template is rendered for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TemplateScope {
    /// Once per tenant per cell it runs in (`templates/tenant/`).
    Tenant,
    /// Once per cell (`templates/cell/`).
    Cell,
}

/// Whether `path` lies under `templates/`.
pub fn in_templates(path: &str) -> bool {
    path.strip_prefix(TEMPLATES)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// The scope of a template path, or `None` if the path is not a template: templates are
/// `templates/tenant/<name>.yaml.j2` and `templates/cell/<name>.yaml.j2`, with no deeper folders.
pub fn template_scope(path: &str) -> Option<TemplateScope> {
    let rest = path.strip_prefix(TEMPLATES)?.strip_prefix('/')?;
    let (folder, name) = rest.split_once('/')?;
    let scope = match folder {
        "tenant" => TemplateScope::Tenant,
        "cell" => TemplateScope::Cell,
        _ => return None,
    };
    let stem = name.strip_suffix(TEMPLATE_EXTENSION)?;
    (!stem.is_empty() && !name.contains('/')).then_some(scope)
}

/// Whether the build opens the file at `path` (relative, `/`-separated): a declaration, signing
/// material or a template. Other files under [`READ_FOLDERS`] are passed on unread.
pub fn is_read(path: &str) -> bool {
    classify(path).is_some_and(|(_, format)| format.is_some())
        || is_material(path)
        || template_scope(path).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folders_read_are_the_declarations_the_material_and_the_templates() {
        let mut expected: Vec<&str> = DECLARATION_FOLDERS
            .into_iter()
            .chain(MATERIAL_FOLDERS)
            .chain([TEMPLATES])
            .collect();
        expected.sort_unstable();
        assert_eq!(READ_FOLDERS.to_vec(), expected);
        assert!(is_read("templates/tenant/chargeback.yaml.j2"));
        assert!(is_read("weights/a.lock") && is_read("tenants/a.kdl"));
        assert!(!is_read("templates/README.md") && !is_read("tenants/notes.txt"));
    }

    #[test]
    fn material_is_only_what_lies_under_keys_and_weights() {
        assert!(is_material("keys/a/k.pem"));
        assert!(is_material("weights/a.lock"));
        assert!(!is_material("keys"));
        assert!(!is_material("keysmith/a"));
        assert!(!is_material("tenants/a.kdl"));
    }
}
