//! `tenantc catalog [GPU]`: the compiled-in hardware catalog, or the GPU models a key names.
//!
//! Consumes: a GPU model key or its start, and `catalog/gpus.json` as compiled in
//! ([`Catalog::builtin`]). Produces: a table of models, one model in full (PCI ids and MIG
//! profiles), or JSON, on stdout.
//!
//! Invariant: keys are compared without case, and an unknown key gets a suggestion of the same
//! family; nothing is read at run time.

use tenantc::catalog::{Catalog, GpuSku, MigTable};
use tenantc::diag::render;

use super::DescribeFormat;
use super::error::{Exit, Fatal};
use super::output::{escape, print_json, print_out};

/// Runs `tenantc catalog`.
pub fn run(gpu: Option<&str>, format: DescribeFormat) -> Result<Exit, Fatal> {
    let catalog = Catalog::builtin();
    let skus: Vec<&GpuSku> = match gpu {
        None => catalog.skus().collect(),
        Some(key) => {
            let found = matching_skus(catalog, key);
            if found.is_empty() {
                let hint = catalog
                    .suggest_sku(key)
                    .map(|close| format!("; did you mean `{close}`?"))
                    .unwrap_or_default();
                return Err(Fatal::new(format!(
                    "`{}` is not a GPU model key of the catalog{hint}",
                    escape(key)
                ))
                .with_help("`tenantc catalog` lists every key; a model the catalog lacks is declared in the cell with `gpu-model`"));
            }
            found
        }
    };
    if format == DescribeFormat::Json {
        return Ok(print_json(&json(catalog, &skus)));
    }
    // One model is shown in full; no key, or one that starts several keys, lists them.
    if gpu.is_none() || skus.len() > 1 {
        return Ok(print_out(&listing(catalog, &skus, gpu)));
    }
    Ok(print_out(&in_full(catalog, &skus)))
}

/// The product family of a key, its first part: `H100` of `H100-80GB-SXM`.
fn family(key: &str) -> String {
    key.split('-').next().unwrap_or(key).to_string()
}

/// The sharing modes of a model, as declarations spell them.
fn sharing(sku: &GpuSku) -> Vec<&'static str> {
    sku.sharing.iter().map(|mode| mode.as_str()).collect()
}

/// The MIG table of a model, if it has one.
fn table<'a>(catalog: &'a Catalog, sku: &GpuSku) -> Option<&'a MigTable> {
    sku.mig_table.as_deref().and_then(|key| catalog.table(key))
}

/// The `catalog` JSON document of `docs/json.md`: every model of `skus` in full.
fn json(catalog: &Catalog, skus: &[&GpuSku]) -> serde_json::Value {
    let gpus: Vec<serde_json::Value> = skus
        .iter()
        .map(|sku| {
            let profiles: Vec<serde_json::Value> = table(catalog, sku)
                .map(|table| {
                    table
                        .profiles
                        .iter()
                        .map(|profile| {
                            serde_json::json!({
                                "name": profile.name,
                                "compute_slices": profile.compute_slices,
                                "memory_slices": profile.memory_slices,
                                "memory_gb": profile.memory_gb,
                                "max": profile.max_count,
                                "min_driver": profile.min_driver,
                                "inferred": profile.inferred,
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            serde_json::json!({
                "key": sku.key,
                "family": family(&sku.key),
                "product_name": sku.product_name,
                "generic": sku.generic,
                "pci_ids": sku.pci_ids,
                "sharing": sharing(sku),
                "mig_table": sku.mig_table,
                "mig_confidence": table(catalog, sku).map(|table| table.confidence.clone()),
                "mig_profiles": profiles,
            })
        })
        .collect();
    serde_json::json!({
        "tenantc": render::JSON_ENVELOPE_VERSION,
        "kind": "catalog",
        "catalog_version": catalog.catalog_version,
        "gpus": gpus,
    })
}

/// One line per model, with its family, sharing modes and MIG profiles, then how to see more:
/// the whole catalog (`wanted` is `None`) or the models a key starts.
fn listing(catalog: &Catalog, skus: &[&GpuSku], wanted: Option<&str>) -> String {
    let mut text = String::new();
    text.push_str(&format!(
        "{:<30} {:<8} {:<44} {:<28} {}\n",
        "GPU MODEL", "FAMILY", "SHARING", "MIG TABLE", "MIG PROFILES"
    ));
    for sku in skus {
        let profiles: Vec<&str> = table(catalog, sku)
            .map(|table| {
                table
                    .profiles
                    .iter()
                    .map(|profile| profile.name.as_str())
                    .collect()
            })
            .unwrap_or_default();
        text.push_str(&format!(
            "{:<30} {:<8} {:<44} {:<28} {}\n",
            sku.key,
            family(&sku.key),
            sharing(sku).join(", "),
            sku.mig_table.as_deref().unwrap_or("-"),
            if profiles.is_empty() {
                "-".to_string()
            } else {
                profiles.join(", ")
            }
        ));
    }
    match wanted {
        None => text.push_str("\n`tenantc catalog <GPU>` shows one model's PCI ids and MIG profiles; docs/catalog.md explains the sources.\n"),
        Some(key) => text.push_str(&format!(
            "\n`{}` starts the keys of {} models; `tenantc catalog <GPU>` shows one in full.\n",
            escape(key),
            skus.len()
        )),
    }
    text
}

/// Every model of `skus` in full: product, PCI ids, sharing modes and the MIG profile table.
fn in_full(catalog: &Catalog, skus: &[&GpuSku]) -> String {
    let mut text = String::new();
    for sku in skus {
        text.push_str(&format!("{}\n", sku.key));
        text.push_str(&format!("  family:    {}\n", family(&sku.key)));
        text.push_str(&format!(
            "  product:   {}\n",
            sku.product_name.as_deref().unwrap_or("-")
        ));
        if sku.generic {
            text.push_str("  generic:   yes, a key for a table shared by several products; prefer a product key\n");
        }
        text.push_str(&format!("  pci ids:   {}\n", sku.pci_ids.join(", ")));
        text.push_str(&format!("  sharing:   {}\n", sharing(sku).join(", ")));
        match table(catalog, sku) {
            None => text.push_str("  mig:       not supported\n"),
            Some(table) => {
                text.push_str(&format!(
                    "  mig table: {} ({} compute slices, {} memory slices; confidence: {})\n",
                    table.key, table.compute_slices, table.memory_slices, table.confidence
                ));
                text.push_str(&format!(
                    "    {:<16} {:>7} {:>6} {:>9} {:>4} {:>10} {}\n",
                    "PROFILE", "COMPUTE", "MEMORY", "MEMORY GB", "MAX", "MIN DRIVER", "INFERRED"
                ));
                for profile in &table.profiles {
                    text.push_str(&format!(
                        "    {:<16} {:>7} {:>6} {:>9} {:>4} {:>10} {}\n",
                        profile.name,
                        profile.compute_slices,
                        profile.memory_slices,
                        profile.memory_gb,
                        profile.max_count,
                        profile
                            .min_driver
                            .map_or("-".to_string(), |driver| format!("R{driver}")),
                        if profile.inferred { "yes" } else { "no" }
                    ));
                }
            }
        }
    }
    text
}

/// The catalog models `wanted` names, compared without case: the model whose key it is, else
/// every model whose key it starts at a `-` (`H20` names `H20-96GB`, not the H200 models),
/// else every model whose key it starts at all.
fn matching_skus<'a>(catalog: &'a Catalog, wanted: &str) -> Vec<&'a GpuSku> {
    let wanted = wanted.to_ascii_lowercase();
    let keyed = |sku: &&GpuSku| sku.key.to_ascii_lowercase();
    let exact: Vec<_> = catalog.skus().filter(|sku| keyed(sku) == wanted).collect();
    if !exact.is_empty() {
        return exact;
    }
    let at_part: Vec<_> = catalog
        .skus()
        .filter(|sku| {
            keyed(sku)
                .strip_prefix(&wanted)
                .is_some_and(|rest| rest.starts_with('-'))
        })
        .collect();
    if !at_part.is_empty() || wanted.is_empty() {
        return at_part;
    }
    catalog
        .skus()
        .filter(|sku| keyed(sku).starts_with(&wanted))
        .collect()
}
