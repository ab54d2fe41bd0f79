//! Cell checks: pools against the hardware catalog.
//!
//! Consumes: one [`Cell`]. Produces: diagnostics for duplicate names, unknown GPU models,
//! sharing modes the GPU does not support, missing or misplaced MIG layouts and replicas, node
//! groups that do not add up, unknown MIG profiles and layouts that cannot be placed.
//!
//! Invariant: pure; every profile lookup is keyed by GPU model and profile name, since the same
//! name means different sizes on different GPUs.

use crate::catalog::{Catalog, MigTable, SharingMode};
use crate::diag::{Code, Diagnostic, did_you_mean, list_names};
use crate::hardware;
use crate::model::{Cell, GpuModelDecl, Pool, Sharing, Spanned};
use crate::source::Span;

use super::duplicates;

/// Checks one cell.
pub(super) fn check(cell: &Cell, base: &Catalog, diagnostics: &mut Vec<Diagnostic>) {
    duplicates(cell.pools.iter().map(|p| &p.name), "pool", diagnostics);
    duplicates(
        cell.priorities.iter().map(|p| &p.name),
        "priority",
        diagnostics,
    );
    duplicates(
        cell.gpu_models.iter().map(|m| &m.name),
        "GPU model",
        diagnostics,
    );
    for model in &cell.gpu_models {
        check_gpu_model(model, base, diagnostics);
    }
    let catalog = hardware::cell_catalog(cell, base);
    for pool in &cell.pools {
        check_pool(cell, pool, &catalog, diagnostics);
    }
    check_config_names(cell, diagnostics);
}

/// mig-parted config names (`<pool>-<layout>`, the `nvidia.com/mig.config` label values) must be
/// unique in a cell and must not take the GPU Operator's `all-*` names.
fn check_config_names(cell: &Cell, diagnostics: &mut Vec<Diagnostic>) {
    let mut seen: std::collections::BTreeMap<String, Span> = std::collections::BTreeMap::new();
    for pool in cell.pools.iter().filter(|pool| pool.sharing.value.is_mig()) {
        for layout in &pool.mig_layouts {
            let config = crate::facts::gpu::mig_config_name(pool, layout);
            if config.starts_with("all-") {
                diagnostics.push(
                    Diagnostic::error(
                        Code::NameInvalid,
                        layout.name.span,
                        format!("MIG config name `{config}` takes a name reserved for the GPU Operator"),
                    )
                    .with_label("`all-*` configs such as `all-disabled` belong to the GPU Operator")
                    .with_secondary(pool.name.span, "the config name starts with the pool name")
                    .with_help("rename the pool or the layout so `<pool>-<layout>` does not start with `all-`"),
                );
            }
            match seen.get(&config) {
                Some(first) => diagnostics.push(
                    Diagnostic::error(
                        Code::NameDuplicate,
                        layout.name.span,
                        format!("MIG config name `{config}` is made twice in cell `{}`", cell.name.value),
                    )
                    .with_label("`<pool>-<layout>` of this layout")
                    .with_secondary(*first, "the same name from this layout")
                    .with_help("rename a pool or a layout; the names become node label values and must differ"),
                ),
                None => {
                    seen.insert(config, layout.name.span);
                }
            }
        }
    }
}

fn invalid_model(span: Span, message: String, label: &str, help: &str) -> Diagnostic {
    Diagnostic::error(Code::GpuModelInvalid, span, message)
        .with_label(label)
        .with_help(help)
}

/// Checks the facts of a GPU model a cell declares.
fn check_gpu_model(model: &GpuModelDecl, base: &Catalog, diagnostics: &mut Vec<Diagnostic>) {
    let name = &model.name;
    if base.sku(&name.value).is_some() {
        diagnostics.push(invalid_model(
            name.span,
            format!("GPU model `{}` is already in the catalog", name.value),
            "a cell may only add models the catalog lacks",
            "remove this declaration to use the catalog's facts, or give the model another name",
        ));
    }
    if name.value.is_empty()
        || !name
            .value
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.'))
    {
        diagnostics.push(invalid_model(
            name.span,
            format!("`{}` is not a GPU model key", name.value),
            "letters, digits, `-`, `_` and `.` only",
            "name the model like the catalog does, such as `H100-80GB-SXM`",
        ));
    }
    let wants_mig = model.sharing.iter().any(|mode| mode.value.is_mig());
    match (&model.mig, wants_mig) {
        (None, true) => diagnostics.push(invalid_model(
            name.span,
            format!(
                "GPU model `{}` supports MIG but declares no `mig` table",
                name.value
            ),
            "MIG sharing needs the profile and placement table",
            "add `mig compute-slices=… memory-slices=… placement-units=… { profile … }`",
        )),
        (Some(mig), false) => diagnostics.push(invalid_model(
            mig.span,
            format!(
                "GPU model `{}` declares a MIG table but no MIG sharing mode",
                name.value
            ),
            "the table is never used",
            "add `\"mig\"` to `sharing`, or remove the table",
        )),
        _ => {}
    }
    let Some(mig) = &model.mig else { return };
    let names: Vec<Spanned<String>> = mig.profiles.iter().map(|p| p.name.clone()).collect();
    duplicates(&names, "MIG profile", diagnostics);
    for profile in &mig.profiles {
        let budgets = [
            (&profile.compute, &mig.compute_slices, "compute"),
            (&profile.memory, &mig.memory_slices, "memory"),
        ];
        for (needed, total, unit) in budgets {
            if needed.value > total.value {
                diagnostics.push(invalid_model(
                    needed.span,
                    format!(
                        "profile `{}` has {} {unit} slices, the GPU has {}",
                        profile.name.value, needed.value, total.value
                    ),
                    "more than the whole GPU",
                    "check the profile against `nvidia-smi mig -lgip`",
                ));
            }
        }
        let starts = i64::try_from(profile.starts.len()).unwrap_or(i64::MAX);
        if profile.max.value > starts {
            diagnostics.push(invalid_model(
                profile.max.span,
                format!(
                    "profile `{}` allows {} instances but has {} start positions",
                    profile.name.value, profile.max.value, starts
                ),
                "each instance needs its own start position",
                "check `max` against `nvidia-smi mig -lgip` and the starts against `-lgipp`",
            ));
        }
        for start in &profile.starts {
            if start.value + profile.size.value > mig.placement_units.value {
                diagnostics.push(invalid_model(
                    start.span,
                    format!(
                        "profile `{}` placed at {} with size {} runs past the {} placement units",
                        profile.name.value,
                        start.value,
                        profile.size.value,
                        mig.placement_units.value
                    ),
                    "outside the placement axis",
                    "check the starts and size against `nvidia-smi mig -lgipp`",
                ));
            }
        }
    }
}

fn check_pool(cell: &Cell, pool: &Pool, catalog: &Catalog, diagnostics: &mut Vec<Diagnostic>) {
    duplicates(
        pool.mig_layouts.iter().map(|l| &l.name),
        "MIG layout",
        diagnostics,
    );
    let sharing = pool.sharing.value;

    // Fields that belong to other sharing modes.
    if let Some(replicas) = &pool.replicas
        && !sharing.is_shared()
    {
        diagnostics.push(
            Diagnostic::error(
                Code::FieldNotApplicable,
                replicas.span,
                format!("`replicas` does not apply to `{}` pools", sharing.as_str()),
            )
            .with_label("only time-slice and mps pools have replicas")
            .with_secondary(pool.sharing.span, "sharing mode set here")
            .with_help("remove `replicas`, or change the sharing mode"),
        );
    }
    if sharing.is_shared() && pool.replicas.is_none() {
        diagnostics.push(
            Diagnostic::error(
                Code::FieldMissing,
                pool.name.span,
                format!(
                    "`{}` pool `{}` has no `replicas`",
                    sharing.as_str(),
                    pool.name.value
                ),
            )
            .with_secondary(pool.sharing.span, "sharing mode set here")
            .with_help("add `replicas 4` (the number of pods that share one GPU)"),
        );
    }
    if !sharing.is_mig() {
        for layout in &pool.mig_layouts {
            diagnostics.push(
                Diagnostic::error(
                    Code::FieldNotApplicable,
                    layout.name.span,
                    format!(
                        "`{}` pool `{}` declares a MIG layout",
                        sharing.as_str(),
                        pool.name.value
                    ),
                )
                .with_label("MIG layouts apply to `mig` and `mig-single` pools")
                .with_secondary(pool.sharing.span, "sharing mode set here")
                .with_help("remove the layout, or set `sharing \"mig\"`"),
            );
        }
    } else if pool.mig_layouts.is_empty() {
        diagnostics.push(
            Diagnostic::error(
                Code::MigLayoutMissing,
                pool.name.span,
                format!("MIG pool `{}` declares no MIG layout", pool.name.value),
            )
            .with_secondary(pool.sharing.span, "MIG sharing set here")
            .with_help("add `mig-layout \"<name>\" { profile \"<profile>\" <count> }`"),
        );
    }
    check_node_groups(pool, diagnostics);

    let Some(sku) = catalog.sku(&pool.gpu.value) else {
        if !cell.gpu_models_complete {
            // The model may be one of the cell's own that could not be read; its error stands.
            return;
        }
        let mut diagnostic = Diagnostic::error(
            Code::GpuModelUnknown,
            pool.gpu.span,
            format!(
                "GPU model `{}` is neither in the hardware catalog nor declared in the cell",
                pool.gpu.value
            ),
        );
        diagnostic = match catalog.suggest_sku(&pool.gpu.value) {
            Some(close) => diagnostic
                .with_label(format!("did you mean `{close}`?"))
                .with_help(format!("use the model key `{close}`")),
            None => diagnostic
                .with_label("unknown GPU model")
                .with_help("use a model key from docs/catalog.md, or declare the model in the cell with `gpu-model`"),
        };
        diagnostics.push(diagnostic);
        return;
    };
    if !sku.sharing.contains(&hardware::sharing_mode(sharing)) {
        diagnostics.push(
            Diagnostic::error(
                Code::SharingUnsupported,
                pool.sharing.span,
                format!(
                    "`{}` does not support `{}` sharing",
                    sku.key,
                    sharing.as_str()
                ),
            )
            .with_secondary(pool.gpu.span, "GPU model set here")
            .with_help(format!(
                "`{}` supports {}",
                sku.key,
                list_names(sku.sharing.iter().map(|mode| match mode {
                    SharingMode::Exclusive => "exclusive",
                    SharingMode::Mig => "mig",
                    SharingMode::MigSingle => "mig-single",
                    SharingMode::TimeSlice => "time-slice",
                    SharingMode::Mps => "mps",
                }))
            )),
        );
        return;
    }
    if sharing.is_mig() {
        let table = sku.mig_table.as_deref().and_then(|key| catalog.table(key));
        if let Some(table) = table {
            check_layouts(cell, pool, &sku.key, table, catalog, diagnostics);
        }
    }
}

fn check_node_groups(pool: &Pool, diagnostics: &mut Vec<Diagnostic>) {
    if pool.mig_layouts.len() < 2 {
        if let Some(layout) = pool.mig_layouts.first()
            && let Some(nodes) = &layout.nodes
            && nodes.value != pool.nodes.value
        {
            diagnostics.push(
                Diagnostic::error(
                    Code::MigNodeGroupsMismatch,
                    nodes.span,
                    format!(
                        "layout `{}` covers {} nodes, pool `{}` has {}",
                        layout.name.value, nodes.value, pool.name.value, pool.nodes.value
                    ),
                )
                .with_secondary(pool.nodes.span, "pool nodes")
                .with_help("remove `nodes` from a pool's only layout, or make it match"),
            );
        }
        return;
    }
    let mut total = 0_i64;
    for layout in &pool.mig_layouts {
        match &layout.nodes {
            Some(nodes) => total = total.saturating_add(nodes.value),
            None => {
                diagnostics.push(
                    Diagnostic::error(
                        Code::MigNodeGroupsMismatch,
                        layout.name.span,
                        format!(
                            "layout `{}` does not say how many nodes it covers",
                            layout.name.value
                        ),
                    )
                    .with_label("a pool with several layouts splits its nodes into groups")
                    .with_help("add `nodes=<count>` to every layout of this pool"),
                );
                return;
            }
        }
    }
    if total != pool.nodes.value {
        diagnostics.push(
            Diagnostic::error(
                Code::MigNodeGroupsMismatch,
                pool.nodes.span,
                format!(
                    "the layouts of pool `{}` cover {total} nodes, the pool has {}",
                    pool.name.value, pool.nodes.value
                ),
            )
            .with_help("make the layouts' `nodes` add up to the pool's node count"),
        );
    }
}

fn check_layouts(
    cell: &Cell,
    pool: &Pool,
    sku_key: &str,
    table: &MigTable,
    catalog: &Catalog,
    diagnostics: &mut Vec<Diagnostic>,
) {
    for layout in &pool.mig_layouts {
        let mut all_known = true;
        let mut seen = std::collections::BTreeMap::new();
        for (profile, count) in &layout.profiles {
            if let Some(first) = seen.insert(profile.value.as_str(), profile.span) {
                diagnostics.push(
                    Diagnostic::error(
                        Code::NameDuplicate,
                        profile.span,
                        format!(
                            "profile `{}` is listed twice in layout `{}`",
                            profile.value, layout.name.value
                        ),
                    )
                    .with_secondary(first, "first listed here")
                    .with_help(format!(
                        "list `{}` once with the total count",
                        profile.value
                    )),
                );
                all_known = false;
                continue;
            }
            if table.profile(&profile.value).is_none() {
                all_known = false;
                diagnostics.push(unknown_profile(
                    &profile.value,
                    profile.span,
                    sku_key,
                    table,
                    catalog,
                ));
            } else if pool.sharing.value == Sharing::Mig && count.value > 0 {
                check_profile_resource(pool, profile, diagnostics);
            }
        }
        if pool.sharing.value == Sharing::MigSingle && layout.profiles.len() > 1 {
            diagnostics.push(
                Diagnostic::error(
                    Code::FieldNotApplicable,
                    layout.name.span,
                    format!(
                        "`mig-single` layout `{}` has several profiles",
                        layout.name.value
                    ),
                )
                .with_label("the single strategy needs one profile on every GPU of a node")
                .with_help(
                    "use one profile per layout, or set `sharing \"mig\"` for mixed layouts",
                ),
            );
        }
        if all_known {
            super::cells_placement::check(layout, sku_key, table, diagnostics);
            super::cells_placement::check_driver(cell, layout, sku_key, table, diagnostics);
            check_config_name(pool, layout, diagnostics);
        }
    }
}

/// Under the device plugin's mixed strategy, a profile's devices must get a resource of their
/// own, which every tenant quota lists (zero unless reserved), so quotas deny it by default.
///
/// The plugin registers a resource only for GPU-instance profiles (`<G>g.<GB>gb`, or a
/// compute-instance name whose `C` equals its `G`), and skips the others: their devices are then
/// matched by no resource and the plugin fails on the node. A resource name must also be a valid
/// Kubernetes resource name, which a `+` list with a comma is not.
fn check_profile_resource(
    pool: &Pool,
    profile: &Spanned<String>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let resource = crate::catalog::resource_name_for_profile(&profile.value);
    let (reason, instead) = match &resource {
        None => (
            "a compute-instance profile gets no resource under the mixed strategy".to_owned(),
            crate::catalog::parse_profile_name(&profile.value).map_or_else(
                || "a GPU-instance profile".to_owned(),
                |name| {
                    format!(
                        "the GPU-instance profile `{}g.{}gb`",
                        name.gpu_instance_slices, name.memory_gb
                    )
                },
            ),
        ),
        Some(resource) => match crate::names::qualified_name(resource) {
            Ok(()) => return,
            Err(reason) => (
                format!("its resource name `{resource}` {reason}"),
                "a profile with at most one attribute".to_owned(),
            ),
        },
    };
    diagnostics.push(
        Diagnostic::error(
            Code::MigProfileWithoutResource,
            profile.span,
            format!(
                "MIG profile `{}` in pool `{}` would create devices that no quota can deny",
                profile.value, pool.name.value
            ),
        )
        .with_label(reason)
        .with_secondary(pool.sharing.span, "mixed strategy (`mig`) set here")
        .with_note("the NVIDIA device plugin advertises mixed-strategy MIG devices as `nvidia.com/mig-<G>g.<GB>gb`, only for profiles whose compute instance spans the whole GPU instance")
        .with_help(format!(
            "use {instead}, or `sharing \"mig-single\"`, where every MIG device is an `nvidia.com/gpu`"
        )),
    );
}

/// The `nvidia.com/mig.config` label value of a layout must be a valid label value.
fn check_config_name(
    pool: &Pool,
    layout: &crate::model::MigLayout,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let config = crate::facts::gpu::mig_config_name(pool, layout);
    if let Err(reason) = crate::names::label_value(&config) {
        diagnostics.push(
            Diagnostic::error(
                Code::NameInvalid,
                layout.name.span,
                format!("MIG config name `{config}` is not a valid label value"),
            )
            .with_label(reason)
            .with_help("shorten the pool or layout name; the node label `nvidia.com/mig.config` holds `<pool>-<layout>`"),
        );
    }
}

/// A `mig-profile-unknown` diagnostic: suggests a close profile of this GPU and says when the
/// name belongs to another model.
pub(crate) fn unknown_profile(
    name: &str,
    span: crate::source::Span,
    sku_key: &str,
    table: &MigTable,
    catalog: &Catalog,
) -> Diagnostic {
    let available: Vec<&str> = table.profiles.iter().map(|p| p.name.as_str()).collect();
    let mut diagnostic = Diagnostic::error(
        Code::MigProfileUnknown,
        span,
        format!("`{sku_key}` has no MIG profile `{name}`"),
    );
    let elsewhere: Vec<&str> = catalog
        .skus_with_profile(name)
        .into_iter()
        .filter(|key| *key != sku_key)
        .collect();
    if let Some(current) = table.current_name_of(name) {
        return diagnostic
            .with_label(format!("older drivers' name for `{current}`"))
            .with_note(format!(
                "`{name}` is what earlier drivers named `{current}` on `{sku_key}`; the extended resource name changes with it"
            ))
            .with_help(format!("write `{current}`, the name current drivers report"));
    }
    if !elsewhere.is_empty() {
        diagnostic = diagnostic.with_note(format!(
            "`{name}` is a profile of {}; profile names mean different sizes on different GPUs",
            list_names(elsewhere.iter().copied())
        ));
    }
    match did_you_mean(name, available.iter().copied()) {
        Some(close) => diagnostic
            .with_label(format!("did you mean `{close}`?"))
            .with_help(format!(
                "`{sku_key}` profiles are {}",
                list_names(available.iter().copied())
            )),
        None => diagnostic.with_label("unknown profile").with_help(format!(
            "`{sku_key}` profiles are {}",
            list_names(available.iter().copied())
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::catalog::Catalog;
    use crate::diag::Code;
    use crate::validate::test_support::{codes, compile_files, tenant};

    /// A cell declaring `ACME-Z` with a 2g GPU instance and the given extra profile, and a pool
    /// of the given sharing mode whose layout uses the extra profile once.
    fn declared_profile_cell(profile: &str, sharing: &str) -> String {
        format!(
            r#"cell "c1" {{
  cloud "aws" region="r"
  kubernetes "1.33"
  driver "570"
  gpu-model "ACME-Z" {{
    pci-ids "0x1A2B10DE"
    sharing "exclusive" "mig" "mig-single"
    mig compute-slices=4 memory-slices=4 placement-units=4 {{
      profile "2g.48gb" compute=2 memory=2 max=2 size=2 {{ starts 0 2; }}
      profile "{profile}" compute=1 memory=2 max=2 size=2 {{ starts 0 2; }}
    }}
  }}
  pool "p" {{
    gpu "ACME-Z"
    nodes 1 gpus-per-node=8
    sharing "{sharing}"
    mig-layout "l" {{ profile "{profile}" 2; }}
  }}
}}
"#
        )
    }

    fn cell_with_pool(pool: &str) -> String {
        format!(
            "cell \"c1\" {{\n  cloud \"aws\" region=\"r\"\n  kubernetes \"1.33\"\n  driver \"570\"\n  {pool}\n}}\n"
        )
    }

    #[test]
    fn rejects_unknown_gpu_models_with_a_suggestion() {
        let cell = cell_with_pool(
            "pool \"p\" { gpu \"H100-80GB-SMX\"; nodes 1 gpus-per-node=8; sharing \"exclusive\" }",
        );
        assert_eq!(codes(&[("cells/c1.kdl", &cell)]), [Code::GpuModelUnknown]);
    }

    /// Issue 10 item 6: `H100` suggested `H100-96GB`, a generic key of the GH200 and H20 table,
    /// whose PCI filter and profile names are wrong for an H100.
    #[test]
    fn suggests_a_gpu_model_of_the_same_family_and_form_factor() {
        for (written, expected) in [
            ("H100", "H100-80GB-SXM"),
            ("h100", "H100-80GB-SXM"),
            ("H100-PCIe", "H100-80GB-PCIe"),
            ("H100-NVL", "H100-94GB-NVL"),
            ("H100-80GB-SMX", "H100-80GB-SXM"),
            ("H200", "H200-141GB-SXM"),
            ("A100-80GB", "A100-80GB-SXM"),
        ] {
            let cell = cell_with_pool(&format!(
                "pool \"p\" {{ gpu \"{written}\"; nodes 1 gpus-per-node=8; sharing \"exclusive\" }}"
            ));
            let compilation = compile_files(&[("cells/c1.kdl", &cell)]);
            let found = compilation
                .diagnostics
                .iter()
                .find(|diagnostic| diagnostic.code == Code::GpuModelUnknown)
                .map(|diagnostic| diagnostic.help.clone());
            assert_eq!(
                found,
                Some(format!("use the model key `{expected}`")),
                "{written}"
            );
        }
    }

    #[test]
    fn rejects_mig_without_a_layout_and_layouts_without_mig() {
        let cell = cell_with_pool(
            "pool \"p\" { gpu \"H100-80GB-SXM\"; nodes 1 gpus-per-node=8; sharing \"mig\" }",
        );
        assert_eq!(codes(&[("cells/c1.kdl", &cell)]), [Code::MigLayoutMissing]);
        let cell = cell_with_pool(
            "pool \"p\" { gpu \"H100-80GB-SXM\"; nodes 1 gpus-per-node=8; sharing \"exclusive\"; mig-layout \"x\" { profile \"1g.10gb\" 7 } }",
        );
        assert_eq!(
            codes(&[("cells/c1.kdl", &cell)]),
            [Code::FieldNotApplicable]
        );
    }

    #[test]
    fn rejects_time_slicing_without_replicas() {
        let cell = cell_with_pool(
            "pool \"p\" { gpu \"H100-80GB-SXM\"; nodes 1 gpus-per-node=8; sharing \"time-slice\" }",
        );
        assert_eq!(codes(&[("cells/c1.kdl", &cell)]), [Code::FieldMissing]);
    }

    #[test]
    fn rejects_node_groups_that_do_not_add_up() {
        let cell = cell_with_pool(
            "pool \"p\" { gpu \"H100-80GB-SXM\"; nodes 4 gpus-per-node=8; sharing \"mig\"; mig-layout \"a\" nodes=1 { profile \"1g.10gb\" 7 }; mig-layout \"b\" nodes=2 { profile \"7g.80gb\" 1 } }",
        );
        assert_eq!(
            codes(&[("cells/c1.kdl", &cell)]),
            [Code::MigNodeGroupsMismatch]
        );
    }

    #[test]
    fn refuses_compute_instance_profiles_in_mixed_strategy_layouts() {
        let cell = declared_profile_cell("1c.2g.48gb", "mig");
        let result = compile_files(&[("cells/c1.kdl", &cell)]);
        let codes: Vec<Code> = result.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, [Code::MigProfileWithoutResource]);
        let found = &result.diagnostics[0];
        assert_eq!(
            found.message,
            "MIG profile `1c.2g.48gb` in pool `p` would create devices that no quota can deny"
        );
        assert!(
            found.help.contains("the GPU-instance profile `2g.48gb`"),
            "{}",
            found.help
        );
        // Under the single strategy every MIG device is an `nvidia.com/gpu`, which every quota
        // lists, so the same profile is fine there.
        let cell = declared_profile_cell("1c.2g.48gb", "mig-single");
        assert_eq!(codes_of(&cell), []);
        // A compute instance as large as its GPU instance is the GPU instance itself.
        let cell = declared_profile_cell("1c.1g.24gb", "mig");
        assert_eq!(codes_of(&cell), []);
    }

    #[test]
    fn refuses_profiles_whose_resource_name_is_not_valid() {
        let cell = declared_profile_cell("1g.24gb+me,gfx", "mig");
        assert_eq!(codes_of(&cell), [Code::MigProfileWithoutResource]);
    }

    fn codes_of(cell: &str) -> Vec<Code> {
        codes(&[("cells/c1.kdl", cell)])
    }

    #[test]
    fn every_catalog_profile_in_a_mixed_layout_gets_a_quota_key() {
        // Issue 6 item 11, for the built-in catalog: each device a layout creates must appear
        // in every tenant quota as `requests.<resource>`, zero unless reserved.
        let catalog = Catalog::builtin();
        let quota_tenant = tenant("a", "soft", "");
        let mut checked = 0;
        for sku in catalog
            .skus()
            .filter(|sku| sku.supports(crate::catalog::SharingMode::Mig))
        {
            let Some(table) = catalog.table_for_sku(&sku.key) else {
                continue;
            };
            for profile in &table.profiles {
                let cell = format!(
                    "cell \"c1\" {{\n  cloud \"aws\" region=\"r\"\n  kubernetes \"1.33\"\n  driver \"9999\"\n  priority \"batch\" value=1000\n  pool \"p\" {{\n    gpu \"{}\"\n    nodes 1 gpus-per-node=8\n    sharing \"mig\"\n    mig-layout \"l\" {{ profile \"{}\" 1; }}\n  }}\n}}\n",
                    sku.key, profile.name
                );
                let result =
                    compile_files(&[("cells/c1.kdl", &cell), ("tenants/a.kdl", &quota_tenant)]);
                let Some(output) = &result.output else {
                    panic!("{} {}: {:?}", sku.key, profile.name, result.diagnostics);
                };
                let quota = output
                    .iter()
                    .find(|(path, _)| path.ends_with("train/resourcequota.yaml"))
                    .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
                    .unwrap_or_default();
                let key = format!("requests.{}: \"0\"", profile.resource_name());
                assert!(
                    quota.contains(&key),
                    "{} {}: {quota}",
                    sku.key,
                    profile.name
                );
                checked += 1;
            }
        }
        assert!(checked > 50, "only {checked} profiles checked");
    }

    #[test]
    fn rejects_unknown_mig_profiles() {
        let cell = cell_with_pool(
            "pool \"p\" { gpu \"H100-80GB-SXM\"; nodes 1 gpus-per-node=8; sharing \"mig\"; mig-layout \"a\" { profile \"1g.5gb\" 7 } }",
        );
        assert_eq!(codes(&[("cells/c1.kdl", &cell)]), [Code::MigProfileUnknown]);
    }
}
