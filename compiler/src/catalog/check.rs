//! The catalog's self-checks: every invariant of the data, checked when it is loaded.
//!
//! Consumes: the catalog file as parsed ([`CatalogFile`]), before it is indexed. Produces: one
//! message per broken invariant ([`validate`]), which [`super::Catalog::from_json`] returns as
//! [`super::CatalogError::Invalid`]; its tests prove the built-in data keeps them all.
//!
//! Invariants checked: every SKU names an existing MIG table or none; every table is used by some
//! SKU; keys and PCI ids are unique; PCI ids have the mig-parted device-filter form `0xDDDD10DE`;
//! a SKU's sharing modes follow its MIG table; every profile name passes the go-nvlib grammar,
//! agrees with its own slice, memory and attribute fields and has a valid mixed-strategy resource
//! name; every placement interval lies on the table's axis, and tables have at most
//! [`MAX_TABLE_UNITS`] compute slices and placement units; `inferred` profiles say why.
//! Every problem is reported, not only the first.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    CONFIDENCE_LEVELS, CatalogFile, MAX_TABLE_UNITS, MigProfile, MigTable, SharingMode, SkuEntry,
    is_pci_id, is_profile_name, parse_profile_name, resource_name_for_profile,
};

/// The profile fields that an `inferred_fields` list may name.
const INFERABLE_FIELDS: [&str; 5] = [
    "profile_id",
    "memory_slices",
    "placement_starts",
    "placement_size",
    "max_count",
];

/// Checks every catalog invariant and returns one message per problem.
pub(super) fn validate(file: &CatalogFile) -> Vec<String> {
    let mut problems = Vec::new();
    if file.catalog_version == 0 {
        problems.push("catalog_version must be at least 1".to_owned());
    }
    if file.description.trim().is_empty() {
        problems.push("description is empty".to_owned());
    }
    let mut table_keys = BTreeSet::new();
    for table in &file.mig_tables {
        if !table_keys.insert(table.key.as_str()) {
            problems.push(format!("mig table `{}` is defined twice", table.key));
        }
        validate_table(table, &mut problems);
    }
    let mut sku_keys = BTreeSet::new();
    let mut pci_owner: BTreeMap<&str, &str> = BTreeMap::new();
    let mut used_tables = BTreeSet::new();
    for sku in &file.skus {
        if !sku_keys.insert(sku.key.as_str()) {
            problems.push(format!("sku `{}` is defined twice", sku.key));
        }
        validate_sku(sku, &table_keys, &mut problems);
        for pci in &sku.pci_ids {
            if let Some(owner) = pci_owner.insert(pci.id.as_str(), sku.key.as_str()) {
                problems.push(format!(
                    "pci id `{}` belongs to both `{owner}` and `{}`",
                    pci.id, sku.key
                ));
            }
        }
        if let Some(table) = &sku.mig_table {
            used_tables.insert(table.as_str());
        }
    }
    for key in table_keys.difference(&used_tables) {
        problems.push(format!("mig table `{key}` is used by no sku"));
    }
    problems
}

/// Checks one SKU against the SKU invariants.
fn validate_sku(sku: &SkuEntry, table_keys: &BTreeSet<&str>, problems: &mut Vec<String>) {
    let key = &sku.key;
    if key.is_empty()
        || !key
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '-')
    {
        problems.push(format!(
            "sku key `{key}` must be ASCII letters, digits and `-`"
        ));
    }
    if sku.pci_ids.is_empty() {
        problems.push(format!("sku `{key}` has no pci id"));
    }
    for pci in &sku.pci_ids {
        if !is_pci_id(&pci.id) {
            problems.push(format!(
                "sku `{key}` pci id `{}` is not of the form 0xDDDD10DE",
                pci.id
            ));
        }
        if pci.source.trim().is_empty() {
            problems.push(format!("sku `{key}` pci id `{}` has no source", pci.id));
        }
    }
    if sku.product_name.is_some() != sku.product_name_source.is_some() {
        problems.push(format!(
            "sku `{key}` must give product_name and product_name_source together"
        ));
    }
    match (sku.memory_gb, &sku.memory_gb_source, &sku.mig_table) {
        (Some(_), None, _) | (None, Some(_), _) => problems.push(format!(
            "sku `{key}` must give memory_gb and memory_gb_source together"
        )),
        (Some(0), _, _) => problems.push(format!("sku `{key}` has a memory_gb of 0")),
        // A MIG table's whole-GPU profile already names the memory; two figures could disagree.
        (Some(_), _, Some(_)) => problems.push(format!(
            "sku `{key}` gives memory_gb beside a MIG table, whose whole-GPU profile names it"
        )),
        _ => {}
    }
    if let Some(table) = &sku.mig_table
        && !table_keys.contains(table.as_str())
    {
        problems.push(format!("sku `{key}` names unknown mig table `{table}`"));
    }
    let expected: Vec<SharingMode> = SharingMode::ALL
        .into_iter()
        .filter(|mode| sku.mig_table.is_some() || !mode.needs_mig())
        .collect();
    if sku.sharing != expected {
        let spelled: Vec<&str> = expected.iter().map(|mode| mode.as_str()).collect();
        problems.push(format!(
            "sku `{key}` sharing must be exactly [{}] in that order",
            spelled.join(", ")
        ));
    }
}

/// Checks one MIG table and its profiles against the table invariants.
fn validate_table(table: &MigTable, problems: &mut Vec<String>) {
    let key = &table.key;
    if table.compute_slices == 0 || table.memory_slices == 0 || table.placement_units == 0 {
        problems.push(format!("mig table `{key}` has a zero slice or axis count"));
    }
    if table.compute_slices > MAX_TABLE_UNITS || table.placement_units > MAX_TABLE_UNITS {
        problems.push(format!(
            "mig table `{key}` has more than {MAX_TABLE_UNITS} compute slices or placement units"
        ));
    }
    if table.max_gpu_instances == 0 || table.max_gpu_instances > table.compute_slices {
        problems.push(format!(
            "mig table `{key}` max_gpu_instances must be between 1 and its compute slices"
        ));
    }
    if !CONFIDENCE_LEVELS.contains(&table.confidence.as_str()) {
        problems.push(format!(
            "mig table `{key}` confidence `{}` is not one of {}",
            table.confidence,
            CONFIDENCE_LEVELS.join(", ")
        ));
    }
    if table.sources.is_empty() {
        problems.push(format!("mig table `{key}` has no source"));
    }
    if table.profiles.is_empty() {
        problems.push(format!("mig table `{key}` has no profile"));
    }
    let mut names = BTreeSet::new();
    for profile in &table.profiles {
        if !names.insert(profile.name.as_str()) {
            problems.push(format!(
                "mig table `{key}` defines profile `{}` twice",
                profile.name
            ));
        }
        validate_profile(table, profile, problems);
    }
    for rule in &table.combination_rules {
        for name in &rule.profiles {
            if !names.contains(name.as_str()) {
                problems.push(format!(
                    "mig table `{key}` combination rule names unknown profile `{name}`"
                ));
            }
        }
    }
    for generation in &table.older_profile_names {
        for (older, current) in &generation.names {
            if !is_profile_name(older) {
                problems.push(format!(
                    "mig table `{key}` older profile name `{older}` breaks the grammar"
                ));
            }
            if !names.contains(current.as_str()) {
                problems.push(format!(
                    "mig table `{key}` maps older name `{older}` to unknown profile `{current}`"
                ));
            }
        }
    }
}

/// Checks one profile against its table and against its own name.
fn validate_profile(table: &MigTable, profile: &MigProfile, problems: &mut Vec<String>) {
    let at = format!("mig table `{}` profile `{}`", table.key, profile.name);
    match parse_profile_name(&profile.name) {
        None => problems.push(format!("{at} breaks the profile-name grammar")),
        Some(parsed) => {
            if parsed.compute_instance_slices.is_some() {
                problems.push(format!(
                    "{at} is a compute-instance name, not a GPU instance"
                ));
            }
            let resource = resource_name_for_profile(&profile.name);
            let quotable = resource
                .as_deref()
                .is_some_and(|name| crate::names::qualified_name(name).is_ok());
            if !quotable || resource.as_deref() != Some(profile.resource_name().as_str()) {
                problems.push(format!(
                    "{at} gets no valid mixed-strategy resource name, so no quota could deny it"
                ));
            }
            if parsed.gpu_instance_slices != u64::from(profile.compute_slices) {
                problems.push(format!("{at} name disagrees with compute_slices"));
            }
            if parsed.memory_gb != u64::from(profile.memory_gb) {
                problems.push(format!("{at} name disagrees with memory_gb_in_name"));
            }
            let mut from_name = parsed.attributes.clone();
            from_name.extend(
                parsed
                    .negative_attributes
                    .iter()
                    .map(|neg| format!("-{neg}")),
            );
            if from_name != profile.attributes {
                problems.push(format!("{at} name disagrees with attributes"));
            }
        }
    }
    if profile.compute_slices == 0 || profile.compute_slices > table.compute_slices {
        problems.push(format!(
            "{at} compute_slices must be between 1 and the table's"
        ));
    }
    if profile.memory_slices == 0 || profile.memory_slices > table.memory_slices {
        problems.push(format!(
            "{at} memory_slices must be between 1 and the table's"
        ));
    }
    if profile.placement_size == 0 {
        problems.push(format!("{at} placement_size must be at least 1"));
    }
    if profile.max_count == 0 {
        problems.push(format!("{at} max_count must be at least 1"));
    }
    if profile.placement_starts.is_empty() {
        problems.push(format!("{at} has no placement start"));
    }
    if profile
        .placement_starts
        .windows(2)
        .any(|pair| matches!(pair, [left, right] if left >= right))
    {
        problems.push(format!("{at} placement_starts must be strictly ascending"));
    }
    for start in &profile.placement_starts {
        if u64::from(*start) + u64::from(profile.placement_size) > u64::from(table.placement_units)
        {
            problems.push(format!("{at} start {start} runs past the placement axis"));
        }
    }
    if usize::try_from(profile.max_count).is_ok_and(|max| max > profile.placement_starts.len()) {
        problems.push(format!("{at} max_count exceeds its number of starts"));
    }
    if profile.inferred != profile.inferred_why.is_some()
        || profile.inferred == profile.inferred_fields.is_empty()
    {
        problems.push(format!(
            "{at} must give inferred_fields and inferred_why exactly when inferred is true"
        ));
    }
    for field in &profile.inferred_fields {
        if !INFERABLE_FIELDS.contains(&field.as_str()) {
            problems.push(format!(
                "{at} inferred field `{field}` is not a profile field"
            ));
        }
    }
    if profile.profile_id.is_none() && !profile.inferred_fields.iter().any(|f| f == "profile_id") {
        problems.push(format!(
            "{at} has no profile_id but does not mark it inferred"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::super::{BUILTIN_JSON, Catalog, CatalogError};
    use super::*;

    fn catalog() -> &'static Catalog {
        Catalog::builtin()
    }

    #[test]
    fn builtin_catalog_parses_and_validates() {
        match Catalog::from_json(BUILTIN_JSON) {
            Ok(parsed) => assert_eq!(&parsed, catalog()),
            Err(err) => panic!("{err}"),
        }
        assert!(catalog().catalog_version >= 1);
        assert!(!catalog().description.is_empty());
    }

    #[test]
    fn every_sku_table_exists() {
        for sku in catalog().skus() {
            if let Some(table) = &sku.mig_table {
                assert!(catalog().table(table).is_some(), "{} -> {table}", sku.key);
                assert!(catalog().table_for_sku(&sku.key).is_some());
            } else {
                assert!(catalog().table_for_sku(&sku.key).is_none());
            }
        }
    }

    #[test]
    fn every_table_is_used_by_a_sku() {
        for table in catalog().tables() {
            assert!(
                catalog()
                    .skus()
                    .any(|sku| sku.mig_table.as_deref() == Some(table.key.as_str())),
                "{}",
                table.key
            );
        }
    }

    #[test]
    fn every_pci_id_is_well_formed_and_unique() {
        let mut seen = BTreeSet::new();
        for sku in catalog().skus() {
            assert!(!sku.pci_ids.is_empty(), "{}", sku.key);
            assert_eq!(sku.pci_ids.len(), sku.pci_id_details.len());
            for id in &sku.pci_ids {
                assert!(is_pci_id(id), "{}: {id}", sku.key);
                assert!(seen.insert(id.clone()), "duplicate {id}");
            }
        }
    }

    #[test]
    fn every_profile_name_passes_the_grammar() {
        for table in catalog().tables() {
            for name in table.profile_names() {
                assert!(is_profile_name(name), "{}: {name}", table.key);
            }
            for generation in &table.older_profile_names {
                for older in generation.names.keys() {
                    assert!(is_profile_name(older), "{}: {older}", table.key);
                }
            }
        }
    }

    const MINIMAL_TABLE: &str = r#"{
        "key": "T", "architecture": null, "compute_slices": 7, "memory_slices": 8,
        "placement_units": 8, "max_gpu_instances": 7, "confidence": "high", "sources": ["s"],
        "profiles": [{"name": "1g.10gb", "profile_id": 19, "compute_slices": 1,
            "memory_slices": 1, "memory_gb_in_name": 10, "max_count": 7,
            "placement_starts": [0, 1, 2, 3, 4, 5, 6], "placement_size": 1,
            "attributes": [], "inferred": false}]
    }"#;

    fn minimal_sku(key: &str, pci: &str, table: &str) -> String {
        format!(
            r#"{{"key": "{key}", "generic": false, "product_name": null,
                "product_name_source": null,
                "pci_ids": [{{"id": "{pci}", "pci_ids_name": null, "source": "s"}}],
                "mig_table": {table},
                "sharing": ["exclusive", "mig", "mig-single", "time-slice", "mps"]}}"#
        )
    }

    fn minimal_catalog(skus: &[String], table: &str) -> String {
        format!(
            r#"{{"catalog_version": 1, "description": "d", "skus": [{}], "mig_tables": [{table}]}}"#,
            skus.join(",")
        )
    }

    #[test]
    fn accepts_a_minimal_catalog() {
        let text = minimal_catalog(&[minimal_sku("X", "0x000110DE", "\"T\"")], MINIMAL_TABLE);
        let parsed = Catalog::from_json(&text);
        assert!(parsed.is_ok(), "{parsed:?}");
    }

    #[test]
    fn a_memory_figure_needs_a_source_and_no_mig_table() {
        let with_memory = |table: &str, memory: &str| {
            minimal_sku("X", "0x000110DE", table).replacen(
                "\"mig_table\"",
                &format!("{memory}\"mig_table\""),
                1,
            )
        };
        let without_table = |memory: &str| {
            with_memory("null", memory).replacen(
                "[\"exclusive\", \"mig\", \"mig-single\", \"time-slice\", \"mps\"]",
                "[\"exclusive\", \"time-slice\", \"mps\"]",
                1,
            )
        };
        // Table T must be used by some SKU, so each catalog also has one that uses it.
        let user = minimal_sku("Z", "0x000210DE", "\"T\"");
        let ok = minimal_catalog(
            &[
                without_table("\"memory_gb\": 24, \"memory_gb_source\": \"s\", "),
                user.clone(),
            ],
            MINIMAL_TABLE,
        );
        let parsed = Catalog::from_json(&ok).unwrap();
        assert_eq!(parsed.sku("X").unwrap().memory_gb, Some(24));
        for (skus, wanted) in [
            (
                without_table("\"memory_gb\": 24, "),
                "must give memory_gb and memory_gb_source together",
            ),
            (
                without_table("\"memory_gb\": 0, \"memory_gb_source\": \"s\", "),
                "has a memory_gb of 0",
            ),
            (
                with_memory("\"T\"", "\"memory_gb\": 80, \"memory_gb_source\": \"s\", "),
                "beside a MIG table",
            ),
        ] {
            match Catalog::from_json(&minimal_catalog(&[skus, user.clone()], MINIMAL_TABLE)) {
                Err(CatalogError::Invalid(problems)) => assert!(
                    problems.iter().any(|problem| problem.contains(wanted)),
                    "{problems:?}"
                ),
                other => panic!("{wanted}: {other:?}"),
            }
        }
    }

    #[test]
    fn rejects_unknown_fields() {
        let text = minimal_catalog(&[minimal_sku("X", "0x000110DE", "\"T\"")], MINIMAL_TABLE)
            .replacen("\"description\"", "\"colour\": 1, \"description\"", 1);
        assert!(matches!(
            Catalog::from_json(&text),
            Err(CatalogError::Parse(_))
        ));
    }

    #[test]
    fn reports_every_broken_invariant_at_once() {
        let skus = [
            minimal_sku("X", "0x000110DE", "\"T\""),
            minimal_sku("X", "0x000110DE", "\"Missing\""),
            minimal_sku("Y", "0x1de", "null"),
        ];
        let Err(CatalogError::Invalid(problems)) =
            Catalog::from_json(&minimal_catalog(&skus, MINIMAL_TABLE))
        else {
            panic!("expected invalid catalog");
        };
        let has = |needle: &str| problems.iter().any(|problem| problem.contains(needle));
        assert!(has("sku `X` is defined twice"), "{problems:?}");
        assert!(has("belongs to both"), "{problems:?}");
        assert!(has("unknown mig table `Missing`"), "{problems:?}");
        assert!(has("not of the form 0xDDDD10DE"), "{problems:?}");
        assert!(has("sku `Y` sharing must be exactly"), "{problems:?}");
    }

    #[test]
    fn rejects_a_profile_whose_name_disagrees_with_its_fields() {
        let table = MINIMAL_TABLE.replace("\"compute_slices\": 1", "\"compute_slices\": 2");
        let text = minimal_catalog(&[minimal_sku("X", "0x000110DE", "\"T\"")], &table);
        let Err(CatalogError::Invalid(problems)) = Catalog::from_json(&text) else {
            panic!("expected invalid catalog");
        };
        assert!(
            problems
                .iter()
                .any(|problem| problem.contains("disagrees with compute_slices")),
            "{problems:?}"
        );
    }

    #[test]
    fn rejects_inferred_profiles_without_a_reason() {
        let table = MINIMAL_TABLE.replace("\"inferred\": false", "\"inferred\": true");
        let text = minimal_catalog(&[minimal_sku("X", "0x000110DE", "\"T\"")], &table);
        assert!(matches!(
            Catalog::from_json(&text),
            Err(CatalogError::Invalid(_))
        ));
    }

    #[test]
    fn rejects_tables_longer_than_the_placement_mask() {
        let table = MINIMAL_TABLE.replace("\"placement_units\": 8", "\"placement_units\": 65");
        let text = minimal_catalog(&[minimal_sku("X", "0x000110DE", "\"T\"")], &table);
        let Err(CatalogError::Invalid(problems)) = Catalog::from_json(&text) else {
            panic!("expected invalid catalog");
        };
        assert_eq!(
            problems,
            ["mig table `T` has more than 64 compute slices or placement units"]
        );
    }

    #[test]
    fn rejects_profiles_without_a_valid_resource_name() {
        // Issue 6 item 11: a device that gets no resource is a device no quota denies.
        let table = MINIMAL_TABLE
            .replace("\"1g.10gb\"", "\"1g.10gb+me,gfx\"")
            .replace("\"attributes\": []", "\"attributes\": [\"me\", \"gfx\"]");
        let text = minimal_catalog(&[minimal_sku("X", "0x000110DE", "\"T\"")], &table);
        let Err(CatalogError::Invalid(problems)) = Catalog::from_json(&text) else {
            panic!("expected invalid catalog");
        };
        assert_eq!(
            problems,
            [
                "mig table `T` profile `1g.10gb+me,gfx` gets no valid mixed-strategy resource name, so no quota could deny it"
            ]
        );
    }

    #[test]
    fn every_builtin_profile_has_the_resource_the_device_plugin_advertises() {
        for table in Catalog::builtin().tables() {
            for profile in &table.profiles {
                let resource = resource_name_for_profile(&profile.name);
                assert_eq!(resource, Some(profile.resource_name()), "{}", table.key);
                let resource = profile.resource_name();
                assert_eq!(
                    crate::names::qualified_name(&resource),
                    Ok(()),
                    "{resource}"
                );
            }
        }
    }

    #[test]
    fn rejects_an_unused_table() {
        let sku = minimal_sku("X", "0x000110DE", "null").replace(r#""mig", "mig-single", "#, "");
        let text = minimal_catalog(&[sku], MINIMAL_TABLE);
        let Err(CatalogError::Invalid(problems)) = Catalog::from_json(&text) else {
            panic!("expected invalid catalog");
        };
        assert_eq!(problems, ["mig table `T` is used by no sku"]);
    }
}
