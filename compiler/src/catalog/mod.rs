//! Hardware catalog: the GPU SKUs a cell may name and the MIG geometry of each GPU model.
//!
//! Consumes `catalog/gpus.json`, compiled into the binary with `include_str!`, so the catalog is
//! fixed at build time and loading it does no IO.
//! Produces a [`Catalog`] of [`GpuSku`]s (keyed by what a cell writes, e.g. `H100-80GB-SXM`) and
//! [`MigTable`]s (keyed by GPU model, e.g. `H100-80GB`), plus the MIG profile-name grammar and the
//! device-plugin resource naming rule.
//! This module loads the data and answers lookups; the self-checks that loading runs live in
//! [`check`], and the placement check for one GPU lives in [`placement`].
//!
//! Invariants: [`Catalog::from_json`] returns a catalog only when [`check`] finds no broken
//! invariant (its tests prove the built-in data keeps them all), so every lookup may rely on
//! them: every SKU names an existing MIG table or none; every table is used by some SKU; keys
//! and PCI ids are unique; PCI ids have the mig-parted device-filter form `0xDDDD10DE`; every
//! profile name passes the go-nvlib grammar and agrees with its own slice, memory and attribute
//! fields; every placement interval lies on the table's axis; `inferred` profiles say why.
//! Lookups are case-sensitive and exact, and every collection iterates in a fixed order.

mod check;
pub mod placement;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::OnceLock;

use serde::Deserialize;

/// The catalog data compiled into the binary.
const BUILTIN_JSON: &str = include_str!("../../../catalog/gpus.json");

/// The confidence levels a MIG table may carry, from best to worst.
pub const CONFIDENCE_LEVELS: [&str; 5] = ["high", "medium-high", "medium", "medium-low", "low"];

/// The most compute slices and placement units a MIG table may have: the placement search keeps
/// the occupied units in a 64-bit mask.
pub const MAX_TABLE_UNITS: u32 = 64;

/// The hardware catalog: GPU SKUs and MIG tables, validated and indexed by key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    /// Version of the catalog data; bumped on every data change (see `docs/catalog.md`).
    pub catalog_version: u32,
    /// Free-text description carried by the data file.
    pub description: String,
    skus: BTreeMap<String, GpuSku>,
    tables: BTreeMap<String, MigTable>,
}

/// A GPU SKU: the hardware a cell names, with its identity on the node and its sharing modes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuSku {
    /// The key a cell writes, e.g. `H100-80GB-SXM`.
    pub key: String,
    /// True when the sources do not say which board this is, only which MIG group it belongs to.
    pub generic: bool,
    /// The full-GPU name as NVML reports it (e.g. `NVIDIA H100 80GB HBM3`), if a source gives it.
    pub product_name: Option<String>,
    /// Where `product_name` comes from.
    pub product_name_source: Option<String>,
    /// Names older drivers reported for the same GPU.
    pub older_product_names: Vec<String>,
    /// PCI ids in mig-parted device-filter form (`0xDDDD10DE`), in data order.
    pub pci_ids: Vec<String>,
    /// The same PCI ids with their PCI ID Repository name and their source.
    pub pci_id_details: Vec<PciId>,
    /// Key of the MIG table this GPU uses, or `None` when it cannot be partitioned.
    pub mig_table: Option<String>,
    /// Supported sharing modes, in the canonical order of [`SharingMode::ALL`].
    pub sharing: Vec<SharingMode>,
    /// Free-text remark about the SKU (doubts, missing facts).
    pub note: Option<String>,
    /// The memory of one GPU in decimal GB as it is sold (the GB of a MIG table's whole-GPU
    /// profile plays this part for GPUs with one), for GPUs without a MIG table; `None` when no
    /// source gives it.
    pub memory_gb: Option<u32>,
}

/// One PCI id of a SKU, with the evidence for mapping it to that SKU.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PciId {
    /// The id in mig-parted device-filter form, e.g. `0x233010DE`.
    pub id: String,
    /// The device name in the PCI ID Repository snapshot used, when it lists the id.
    pub pci_ids_name: Option<String>,
    /// Where the mapping from this id to the SKU comes from.
    pub source: String,
}

/// How a GPU may be shared between workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SharingMode {
    /// One workload owns the whole GPU (`nvidia.com/gpu`).
    Exclusive,
    /// MIG with the device plugin's `mixed` strategy (`nvidia.com/mig-<profile>`).
    Mig,
    /// MIG with the device plugin's `single` strategy (every MIG device is an `nvidia.com/gpu`).
    MigSingle,
    /// Time-slicing replicas of the GPU.
    TimeSlice,
    /// CUDA MPS replicas of the GPU.
    Mps,
}

/// The MIG geometry of one GPU model.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigTable {
    /// The model key, e.g. `H100-80GB`.
    pub key: String,
    /// Architecture and compute capability, as text.
    pub architecture: Option<String>,
    /// Total compute (SM) slices: the `Ng` unit of profile names.
    pub compute_slices: u32,
    /// Total memory slices.
    pub memory_slices: u32,
    /// Length of the placement axis of `nvidia-smi mig -lgipp` (8, 4 on A30, 12 on RTX PRO 6000).
    pub placement_units: u32,
    /// Most GPU instances one GPU can hold.
    pub max_gpu_instances: u32,
    /// One of [`CONFIDENCE_LEVELS`].
    pub confidence: String,
    /// Why the confidence is not `high`, when it is not.
    #[serde(default)]
    pub confidence_note: Option<String>,
    /// Where the table comes from.
    pub sources: Vec<String>,
    /// Remarks that hold for the whole table (engine budgets, naming caveats).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Profile combinations that need a newer driver than the profiles alone.
    #[serde(default)]
    pub combination_rules: Vec<CombinationRule>,
    /// Names earlier drivers gave to this table's profiles.
    #[serde(default)]
    pub older_profile_names: Vec<ProfileNameGeneration>,
    /// The GPU-instance profiles, in data order.
    pub profiles: Vec<MigProfile>,
    /// True when any profile is inferred rather than observed (computed on load, not stored).
    #[serde(skip)]
    pub inferred: bool,
}

/// A combination of profiles that only works from some driver branch on.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CombinationRule {
    /// The profiles that, together on one GPU, need the driver.
    pub profiles: Vec<String>,
    /// The first driver branch (e.g. 510 for R510) that supports the combination.
    pub min_driver: u32,
    /// Where the rule comes from.
    pub source: String,
}

/// One generation of older profile names, mapped to the current names.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileNameGeneration {
    /// Which drivers or firmware reported these names.
    pub generation: String,
    /// Where the older names come from.
    pub source: String,
    /// Older name to current name; unchanged names map to themselves.
    pub names: BTreeMap<String, String>,
}

/// One GPU-instance profile of a MIG table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigProfile {
    /// The profile name as mig-parted and the device plugin spell it, e.g. `1g.10gb+me`.
    pub name: String,
    /// The `-lgip` profile id accepted by `nvidia-smi mig -cgi`, when known.
    pub profile_id: Option<u32>,
    /// Compute slices (the `Ng` of the name).
    pub compute_slices: u32,
    /// Memory slices the instance owns.
    pub memory_slices: u32,
    /// The GB number in the name (not the exact memory size).
    #[serde(rename = "memory_gb_in_name")]
    pub memory_gb: u32,
    /// Most instances of this profile on one GPU.
    pub max_count: u32,
    /// Allowed start indexes on the placement axis, ascending.
    pub placement_starts: Vec<u32>,
    /// Units the instance occupies on the placement axis.
    pub placement_size: u32,
    /// Name attributes: `me`, `me.all`, `gfx`, or `-me` for the negative one.
    pub attributes: Vec<String>,
    /// True when some fields were not observed on this GPU but filled by analogy.
    pub inferred: bool,
    /// Which fields are inferred.
    #[serde(default)]
    pub inferred_fields: Vec<String>,
    /// Why the inferred fields were filled the way they were.
    #[serde(default)]
    pub inferred_why: Option<String>,
    /// The first driver branch that offers this profile (e.g. 525 for R525), when a source says.
    #[serde(default)]
    pub min_driver: Option<u32>,
    /// Free-text remark about the profile.
    #[serde(default)]
    pub note: Option<String>,
    /// Engine counts from `-lgip`, where recorded.
    #[serde(default)]
    pub engines: Option<Engines>,
}

/// Media and copy engines of a GPU instance, as `nvidia-smi mig -lgip` prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Engines {
    /// Video decoders.
    pub nvdec: u32,
    /// Video encoders.
    pub nvenc: u32,
    /// JPEG decoders.
    pub jpeg: u32,
    /// Optical-flow accelerators.
    pub ofa: u32,
    /// Copy engines.
    pub copy_engines: u32,
}

/// A MIG profile name split into its parts by the go-nvlib grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileName {
    /// The `C` of a `<C>c.<G>g.<GB>gb` compute-instance name, or `None` for `<G>g.<GB>gb`.
    pub compute_instance_slices: Option<u64>,
    /// The `G`: GPU-instance slices.
    pub gpu_instance_slices: u64,
    /// The `GB` number.
    pub memory_gb: u64,
    /// Attributes after `+`, in written order.
    pub attributes: Vec<String>,
    /// Attributes after `-`, in written order.
    pub negative_attributes: Vec<String>,
}

/// Why catalog data could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogError {
    /// The text is not JSON of the catalog's shape (includes unknown fields).
    Parse(String),
    /// The JSON parsed but breaks catalog invariants; one message per problem.
    Invalid(Vec<String>),
}

/// The on-disk shape of the catalog file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    catalog_version: u32,
    description: String,
    skus: Vec<SkuEntry>,
    mig_tables: Vec<MigTable>,
}

/// The on-disk shape of one SKU.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkuEntry {
    key: String,
    generic: bool,
    product_name: Option<String>,
    product_name_source: Option<String>,
    #[serde(default)]
    older_product_names: Vec<String>,
    pci_ids: Vec<PciId>,
    mig_table: Option<String>,
    sharing: Vec<SharingMode>,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    memory_gb: Option<u32>,
    #[serde(default)]
    memory_gb_source: Option<String>,
}

impl Catalog {
    /// The catalog compiled into this binary, parsed and validated once.
    ///
    /// # Panics
    ///
    /// Only if the compiled-in data is invalid, which `builtin_catalog_parses_and_validates`
    /// rules out for every build that passed its tests.
    pub fn builtin() -> &'static Catalog {
        static BUILTIN: OnceLock<Catalog> = OnceLock::new();
        BUILTIN.get_or_init(|| {
            // The data is compiled in and `builtin_catalog_parses_and_validates` proves it loads,
            // so a failure here is a bug in this build, not a problem in user input.
            #[allow(clippy::expect_used)]
            Catalog::from_json(BUILTIN_JSON).expect("built-in catalog/gpus.json is invalid")
        })
    }

    /// Parses and validates catalog JSON, reporting every broken invariant at once.
    ///
    /// # Errors
    ///
    /// [`CatalogError::Parse`] when the text is not catalog-shaped JSON (unknown fields included),
    /// and [`CatalogError::Invalid`] with one message per broken invariant otherwise.
    pub fn from_json(text: &str) -> Result<Catalog, CatalogError> {
        let file: CatalogFile =
            serde_json::from_str(text).map_err(|err| CatalogError::Parse(err.to_string()))?;
        let problems = check::validate(&file);
        if !problems.is_empty() {
            return Err(CatalogError::Invalid(problems));
        }
        let tables = file
            .mig_tables
            .into_iter()
            .map(|mut table| {
                table.inferred = table.profiles.iter().any(|profile| profile.inferred);
                (table.key.clone(), table)
            })
            .collect();
        let skus = file
            .skus
            .into_iter()
            .map(|entry| {
                let sku = GpuSku {
                    key: entry.key,
                    generic: entry.generic,
                    product_name: entry.product_name,
                    product_name_source: entry.product_name_source,
                    older_product_names: entry.older_product_names,
                    pci_ids: entry.pci_ids.iter().map(|pci| pci.id.clone()).collect(),
                    pci_id_details: entry.pci_ids,
                    mig_table: entry.mig_table,
                    sharing: entry.sharing,
                    note: entry.note,
                    memory_gb: entry.memory_gb,
                };
                (sku.key.clone(), sku)
            })
            .collect();
        Ok(Catalog {
            catalog_version: file.catalog_version,
            description: file.description,
            skus,
            tables,
        })
    }

    /// A copy of this catalog with extra SKUs and MIG tables (a cell's own GPU models). An extra
    /// entry never replaces a catalog entry of the same key; validation reports such clashes.
    pub fn with_models(&self, skus: Vec<GpuSku>, tables: Vec<MigTable>) -> Catalog {
        let mut extended = self.clone();
        for table in tables {
            extended.tables.entry(table.key.clone()).or_insert(table);
        }
        for sku in skus {
            extended.skus.entry(sku.key.clone()).or_insert(sku);
        }
        extended
    }

    /// The SKU with exactly this key (case-sensitive).
    pub fn sku(&self, key: &str) -> Option<&GpuSku> {
        self.skus.get(key)
    }

    /// Every SKU key, sorted; meant for did-you-mean suggestions.
    pub fn sku_keys(&self) -> impl Iterator<Item = &str> {
        self.skus.keys().map(String::as_str)
    }

    /// The SKU key to suggest for an unknown GPU model name, preferring the same product
    /// family (the key's first `-`-separated part, such as `H100` or `GH200`) and form factor
    /// (`SXM`, `PCIe`, `NVL`): a suggestion from another family would put the wrong PCI device
    /// filter and profile names into the output.
    ///
    /// Within the family, non-generic keys come first, then the written form factor (`SXM`
    /// when none is written), then the written memory size, then the closest spelling, then
    /// key order. A name whose family no key has gets the closest spelling, if any is close.
    pub fn suggest_sku(&self, wanted: &str) -> Option<&str> {
        let parts: Vec<String> = wanted.split('-').map(str::to_ascii_lowercase).collect();
        let family = parts.first().map_or("", String::as_str);
        let form = parts
            .iter()
            .skip(1)
            .find(|part| FORM_FACTORS.contains(&part.as_str()))
            .map_or("sxm", String::as_str);
        let memory = parts
            .iter()
            .skip(1)
            .find(|part| part.ends_with("gb") && part.len() > 2);
        let wanted_lower = wanted.to_ascii_lowercase();
        let mut best: Option<(SuggestionRank, &str)> = None;
        for sku in self.skus.values() {
            let key_parts: Vec<String> = sku.key.split('-').map(str::to_ascii_lowercase).collect();
            if key_parts.first().map(String::as_str) != Some(family) {
                continue;
            }
            let closeness = strsim::jaro_winkler(&wanted_lower, &sku.key.to_ascii_lowercase());
            // Scaled to an integer so the rank is totally ordered; ties keep key order.
            let rank = (
                !sku.generic,
                key_parts.iter().skip(1).any(|part| part == form),
                memory.is_some_and(|memory| key_parts.contains(memory)),
                (closeness * 1_000_000.0) as u64,
            );
            if best.is_none_or(|(best_rank, _)| rank > best_rank) {
                best = Some((rank, sku.key.as_str()));
            }
        }
        best.map(|(_, key)| key)
            .or_else(|| crate::diag::did_you_mean(wanted, self.sku_keys()))
    }

    /// Every SKU, sorted by key.
    pub fn skus(&self) -> impl Iterator<Item = &GpuSku> {
        self.skus.values()
    }

    /// The MIG table with exactly this key (case-sensitive).
    pub fn table(&self, key: &str) -> Option<&MigTable> {
        self.tables.get(key)
    }

    /// Every MIG table key, sorted.
    pub fn table_keys(&self) -> impl Iterator<Item = &str> {
        self.tables.keys().map(String::as_str)
    }

    /// Every MIG table, sorted by key.
    pub fn tables(&self) -> impl Iterator<Item = &MigTable> {
        self.tables.values()
    }

    /// The MIG table of the SKU with this key, if the SKU exists and supports MIG.
    pub fn table_for_sku(&self, sku_key: &str) -> Option<&MigTable> {
        let table_key = self.sku(sku_key)?.mig_table.as_deref()?;
        self.table(table_key)
    }

    /// The SKU that owns this PCI id; the hex digits match case-insensitively.
    pub fn sku_by_pci_id(&self, pci_id: &str) -> Option<&GpuSku> {
        self.skus.values().find(|sku| {
            sku.pci_ids
                .iter()
                .any(|known| known.eq_ignore_ascii_case(pci_id))
        })
    }

    /// Keys of the SKUs whose MIG table has a profile of exactly this name, sorted.
    ///
    /// Used to explain a misplaced profile, e.g. that `1g.5gb` belongs to the A100-40GB SKUs.
    pub fn skus_with_profile(&self, profile: &str) -> Vec<&str> {
        self.skus
            .values()
            .filter(|sku| {
                sku.mig_table
                    .as_deref()
                    .and_then(|key| self.table(key))
                    .is_some_and(|table| table.profile(profile).is_some())
            })
            .map(|sku| sku.key.as_str())
            .collect()
    }

    /// SKUs whose table knew `name` under an older driver, each with the current name, sorted.
    pub fn skus_with_older_profile_name(&self, name: &str) -> Vec<(&str, &str)> {
        self.skus
            .values()
            .filter_map(|sku| {
                let table = self.table(sku.mig_table.as_deref()?)?;
                Some((sku.key.as_str(), table.current_name_of(name)?))
            })
            .collect()
    }
}

impl GpuSku {
    /// True when the SKU supports the sharing mode.
    pub fn supports(&self, mode: SharingMode) -> bool {
        self.sharing.contains(&mode)
    }

    /// The `nvidia.com/gpu.product` label GPU Feature Discovery derives from the product name.
    ///
    /// GFD drops characters outside `[A-Za-z0-9-_. ]` and turns whitespace runs into `-`.
    pub fn gfd_product_label(&self) -> Option<String> {
        let name = self.product_name.as_deref()?;
        let kept: String = name
            .chars()
            .filter(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.' | ' '))
            .collect();
        Some(kept.split_whitespace().collect::<Vec<_>>().join("-"))
    }
}

impl SharingMode {
    /// Every mode, in canonical order.
    pub const ALL: [SharingMode; 5] = [
        SharingMode::Exclusive,
        SharingMode::Mig,
        SharingMode::MigSingle,
        SharingMode::TimeSlice,
        SharingMode::Mps,
    ];

    /// The kebab-case spelling used in the catalog and in cell declarations.
    pub fn as_str(self) -> &'static str {
        match self {
            SharingMode::Exclusive => "exclusive",
            SharingMode::Mig => "mig",
            SharingMode::MigSingle => "mig-single",
            SharingMode::TimeSlice => "time-slice",
            SharingMode::Mps => "mps",
        }
    }

    /// Parses the exact kebab-case spelling; anything else is `None`.
    pub fn parse(text: &str) -> Option<SharingMode> {
        SharingMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == text)
    }

    /// True for the modes that need a MIG table (`mig`, `mig-single`).
    pub fn needs_mig(self) -> bool {
        matches!(self, SharingMode::Mig | SharingMode::MigSingle)
    }
}

impl fmt::Display for SharingMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl MigTable {
    /// The profile with exactly this name on this table (case-sensitive).
    pub fn profile(&self, name: &str) -> Option<&MigProfile> {
        self.profiles.iter().find(|profile| profile.name == name)
    }

    /// Profile names in data order.
    pub fn profile_names(&self) -> impl Iterator<Item = &str> {
        self.profiles.iter().map(|profile| profile.name.as_str())
    }

    /// The current name of a profile that an older driver called `older`, if one did.
    ///
    /// Returns `None` for names that are current already, so callers can tell a rename from a typo.
    pub fn current_name_of(&self, older: &str) -> Option<&str> {
        if self.profile(older).is_some() {
            return None;
        }
        self.older_profile_names
            .iter()
            .find_map(|generation| generation.names.get(older))
            .map(String::as_str)
    }

    /// What one unit of the placement axis is called in messages.
    ///
    /// On tables whose axis is the memory slices this is "memory slices", else "placement units".
    pub fn axis_unit_name(&self) -> &'static str {
        if self.placement_units == self.memory_slices {
            "memory slices"
        } else {
            "placement units"
        }
    }
}

impl MigProfile {
    /// The extended-resource name under the `mixed` strategy: `nvidia.com/mig-<name>` with `+`
    /// written as `.` (`1g.10gb+me` gives `nvidia.com/mig-1g.10gb.me`; `-me` is kept).
    pub fn resource_name(&self) -> String {
        format!("nvidia.com/mig-{}", self.name.replace('+', "."))
    }

    /// True when the name carries this attribute (`me`, `me.all`, `gfx`, or `-me`).
    pub fn has_attribute(&self, attribute: &str) -> bool {
        self.attributes.iter().any(|known| known == attribute)
    }
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CatalogError::Parse(message) => write!(f, "catalog json does not parse: {message}"),
            CatalogError::Invalid(problems) => {
                write!(f, "catalog breaks its invariants: {}", problems.join("; "))
            }
        }
    }
}

impl std::error::Error for CatalogError {}

/// True when `text` is a MIG profile name by the go-nvlib grammar.
///
/// The grammar is `<G>g.<GB>gb` or `<C>c.<G>g.<GB>gb`, optionally followed by `+attr[,attr...]`
/// or by `-attr[,attr...]` but never both; attributes are unique, start with a letter, and use
/// only ASCII letters, digits and inner dots (`me`, `me.all`, `gfx`).
/// Like go-nvlib's `strconv.Atoi`, numbers may have leading zeros; they must fit in an `i64`.
pub fn is_profile_name(text: &str) -> bool {
    parse_profile_name(text).is_some()
}

/// Splits a MIG profile name into its parts, or `None` when it breaks the go-nvlib grammar.
pub fn parse_profile_name(text: &str) -> Option<ProfileName> {
    let plus = text.split_once('+');
    let minus = text.split_once('-');
    let (base, suffix, negative) = match (plus, minus) {
        (Some(_), Some(_)) => return None,
        (Some((base, attrs)), None) => (base, Some(attrs), false),
        (None, Some((base, attrs))) => (base, Some(attrs), true),
        (None, None) => (text, None, false),
    };
    let fields: Vec<&str> = base.splitn(3, '.').collect();
    let (compute_instance_slices, gpu_instance_slices, memory_gb) = match fields.as_slice() {
        [compute, gpu, memory] => (
            Some(number_with_suffix(compute, "c")?),
            number_with_suffix(gpu, "g")?,
            number_with_suffix(memory, "gb")?,
        ),
        [gpu, memory] => (
            None,
            number_with_suffix(gpu, "g")?,
            number_with_suffix(memory, "gb")?,
        ),
        _ => return None,
    };
    let attributes = match suffix {
        Some(list) => parse_attributes(list)?,
        None => Vec::new(),
    };
    let (attributes, negative_attributes) = if negative {
        (Vec::new(), attributes)
    } else {
        (attributes, Vec::new())
    };
    Some(ProfileName {
        compute_instance_slices,
        gpu_instance_slices,
        memory_gb,
        attributes,
        negative_attributes,
    })
}

/// The device plugin's `mixed`-strategy resource name for any profile name, or `None`.
///
/// Only GPU-instance profiles get a resource, so compute-instance names whose `C` differs from
/// their `G` give `None`, as do names that break the grammar.
/// The name is canonicalised the way go-nvlib prints it (`1c.1g.5gb` gives `mig-1g.5gb`).
pub fn resource_name_for_profile(text: &str) -> Option<String> {
    let name = parse_profile_name(text)?;
    if name
        .compute_instance_slices
        .is_some_and(|compute| compute != name.gpu_instance_slices)
    {
        return None;
    }
    let mut canonical = format!("{}g.{}gb", name.gpu_instance_slices, name.memory_gb);
    if !name.attributes.is_empty() {
        canonical.push('.');
        canonical.push_str(&name.attributes.join(","));
    }
    if !name.negative_attributes.is_empty() {
        canonical.push('-');
        canonical.push_str(&name.negative_attributes.join(","));
    }
    Some(format!("nvidia.com/mig-{canonical}"))
}

/// How well a key matches an unknown name in [`Catalog::suggest_sku`]: not generic, same form
/// factor, same memory size, spelling closeness in millionths.
type SuggestionRank = (bool, bool, bool, u64);

/// The form factors SKU keys end in, lowercase, for [`Catalog::suggest_sku`].
const FORM_FACTORS: [&str; 3] = ["sxm", "pcie", "nvl"];

/// True when `text` is a PCI id in mig-parted device-filter form: `0x`, four upper-case hex
/// digits of the device, then the NVIDIA vendor id `10DE`.
pub fn is_pci_id(text: &str) -> bool {
    let Some(rest) = text.strip_prefix("0x") else {
        return false;
    };
    let Some(device) = rest.strip_suffix("10DE") else {
        return false;
    };
    device.len() == 4
        && device
            .chars()
            .all(|ch| ch.is_ascii_digit() || ('A'..='F').contains(&ch))
}

/// Parses `<digits><suffix>` the way go-nvlib does with `strconv.Atoi`.
fn number_with_suffix(field: &str, suffix: &str) -> Option<u64> {
    let digits = field.strip_suffix(suffix)?;
    if digits.is_empty() || !digits.chars().all(|ch| ch.is_ascii_digit()) {
        return None;
    }
    let value: u64 = digits.parse().ok()?;
    i64::try_from(value).is_ok().then_some(value)
}

/// Parses a comma-separated attribute list by go-nvlib's rules.
fn parse_attributes(list: &str) -> Option<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut attributes = Vec::new();
    for attribute in list.split(',') {
        let first = attribute.chars().next()?;
        let last = attribute.chars().last()?;
        let valid = !first.is_ascii_digit()
            && first != '.'
            && last != '.'
            && attribute
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '.');
        if !valid || !seen.insert(attribute) {
            return None;
        }
        attributes.push(attribute.to_owned());
    }
    Some(attributes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> &'static Catalog {
        Catalog::builtin()
    }

    #[test]
    fn pci_id_check_accepts_only_the_device_filter_form() {
        assert!(is_pci_id("0x233010DE"));
        assert!(is_pci_id("0x2BB510DE"));
        assert!(!is_pci_id("0x2bb510DE"));
        assert!(!is_pci_id("0x233010de"));
        assert!(!is_pci_id("233010DE"));
        assert!(!is_pci_id("0x23310DE"));
        assert!(!is_pci_id("0x2330100DE"));
        assert!(!is_pci_id("0x233010DE:0x16C110DE"));
        assert!(!is_pci_id("0x2G3010DE"));
    }

    #[test]
    fn grammar_accepts_go_nvlib_forms() {
        for name in [
            "1g.5gb",
            "1g.10gb+me",
            "1c.3g.20gb",
            "1g.24gb+me.all",
            "2g.48gb-me",
            "1c.1g.5gb+me",
            "1g.5gb+me,gfx",
            "7g.80gb",
            "01g.5gb",
        ] {
            assert!(is_profile_name(name), "{name}");
        }
    }

    #[test]
    fn grammar_rejects_malformed_names() {
        for name in [
            "",
            "1g",
            "g.5gb",
            "1g.gb",
            "1g.5GB",
            "1G.5gb",
            "1g.5gb+",
            "1g.5gb+me,",
            "1g.5gb+me,me",
            "1g.5gb+me-x",
            "1g.5gb+1me",
            "1g.5gb+.me",
            "1g.5gb+me.",
            "1g.5gb+m e",
            "1g.5gb+me_all",
            " 1g.5gb",
            "1g.5gb ",
            "1c.1g.5gb.x",
            "1x.1g.5gb",
            "1g.5.5gb",
            "99999999999999999999g.5gb",
        ] {
            assert!(!is_profile_name(name), "{name:?}");
        }
    }

    #[test]
    fn parses_negative_and_compute_instance_names() {
        let negative = parse_profile_name("2g.48gb-me");
        assert_eq!(
            negative,
            Some(ProfileName {
                compute_instance_slices: None,
                gpu_instance_slices: 2,
                memory_gb: 48,
                attributes: vec![],
                negative_attributes: vec!["me".to_owned()],
            })
        );
        let compute = parse_profile_name("1c.3g.20gb");
        assert_eq!(
            compute.map(|name| name.compute_instance_slices),
            Some(Some(1))
        );
    }

    #[test]
    fn resource_names_follow_the_device_plugin() {
        let h100 = catalog().table("H100-80GB");
        let me = h100.and_then(|table| table.profile("1g.10gb+me"));
        assert_eq!(
            me.map(MigProfile::resource_name).as_deref(),
            Some("nvidia.com/mig-1g.10gb.me")
        );
        let rtx = catalog().table("RTX-PRO-6000-Blackwell-96GB");
        let no_me = rtx.and_then(|table| table.profile("2g.48gb-me"));
        assert_eq!(
            no_me.map(MigProfile::resource_name).as_deref(),
            Some("nvidia.com/mig-2g.48gb-me")
        );
        let me_all = rtx.and_then(|table| table.profile("1g.24gb+me.all"));
        assert_eq!(
            me_all.map(MigProfile::resource_name).as_deref(),
            Some("nvidia.com/mig-1g.24gb.me.all")
        );
    }

    #[test]
    fn resource_name_for_profile_canonicalises_and_skips_compute_instances() {
        assert_eq!(
            resource_name_for_profile("1g.10gb+me").as_deref(),
            Some("nvidia.com/mig-1g.10gb.me")
        );
        assert_eq!(
            resource_name_for_profile("2g.48gb-me").as_deref(),
            Some("nvidia.com/mig-2g.48gb-me")
        );
        assert_eq!(
            resource_name_for_profile("1c.1g.5gb").as_deref(),
            Some("nvidia.com/mig-1g.5gb")
        );
        assert_eq!(resource_name_for_profile("1c.3g.20gb"), None);
        assert_eq!(resource_name_for_profile("not-a-profile"), None);
        for table in catalog().tables() {
            for profile in &table.profiles {
                assert_eq!(
                    resource_name_for_profile(&profile.name),
                    Some(profile.resource_name()),
                    "{}",
                    profile.name
                );
            }
        }
    }

    #[test]
    fn sku_lookup_is_exact_and_case_sensitive() {
        assert!(catalog().sku("H100-80GB-SXM").is_some());
        assert!(catalog().sku("h100-80gb-sxm").is_none());
        assert!(catalog().sku("H100-80GB").is_none());
        assert!(catalog().sku(" H100-80GB-SXM").is_none());
        assert!(catalog().table("H100-80GB").is_some());
        assert!(catalog().table("h100-80gb").is_none());
    }

    /// Issue 10 item 6: every key cut to its family (`H100-80GB-SXM` to `H100`) is answered with
    /// a key of that family, never a generic one when the family has another, and a family
    /// written with a form factor gets that form factor where the family has it.
    #[test]
    fn every_family_prefix_suggests_a_key_of_its_own_family() {
        let catalog = catalog();
        let family = |key: &str| key.split('-').next().unwrap_or("").to_string();
        for sku in catalog.skus() {
            let prefix = family(&sku.key);
            let members: Vec<&GpuSku> = catalog
                .skus()
                .filter(|other| family(&other.key) == prefix)
                .collect();
            for written in [prefix.clone(), prefix.to_lowercase()] {
                let suggested = catalog.suggest_sku(&written).unwrap();
                assert_eq!(family(suggested), prefix, "{written} suggested {suggested}");
                let chosen = catalog.sku(suggested).unwrap();
                if members.iter().any(|member| !member.generic) {
                    assert!(!chosen.generic, "{written} suggested generic {suggested}");
                }
            }
            for form in FORM_FACTORS {
                let has_form = |key: &str| key.to_lowercase().split('-').any(|part| part == form);
                if !members
                    .iter()
                    .any(|member| has_form(&member.key) && !member.generic)
                {
                    continue;
                }
                let written = format!("{prefix}-{form}");
                let suggested = catalog.suggest_sku(&written).unwrap();
                assert!(has_form(suggested), "{written} suggested {suggested}");
            }
        }
        assert_eq!(catalog.suggest_sku("H100"), Some("H100-80GB-SXM"));
        assert_eq!(catalog.suggest_sku("zzzz"), None);
    }

    #[test]
    fn sku_keys_are_sorted_and_include_the_documented_examples() {
        let keys: Vec<&str> = catalog().sku_keys().collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
        for key in [
            "H100-80GB-SXM",
            "H100-80GB-PCIe",
            "A100-40GB-SXM",
            "H200-141GB-SXM",
            "H200-141GB-NVL",
            "B200-180GB",
            "RTX-PRO-6000-Blackwell-Server",
            "L4",
            "L40S",
        ] {
            assert!(keys.contains(&key), "{key}");
        }
    }

    #[test]
    fn sharing_modes_follow_the_mig_table() {
        for sku in catalog().skus() {
            for mode in [
                SharingMode::Exclusive,
                SharingMode::TimeSlice,
                SharingMode::Mps,
            ] {
                assert!(sku.supports(mode), "{} lacks {mode}", sku.key);
            }
            let has_table = sku.mig_table.is_some();
            assert_eq!(sku.supports(SharingMode::Mig), has_table, "{}", sku.key);
            assert_eq!(
                sku.supports(SharingMode::MigSingle),
                has_table,
                "{}",
                sku.key
            );
        }
        let l4 = catalog().sku("L4");
        assert_eq!(l4.map(|sku| sku.mig_table.is_none()), Some(true));
    }

    #[test]
    fn sharing_mode_spellings_round_trip() {
        let spelled: Vec<&str> = SharingMode::ALL.iter().map(|mode| mode.as_str()).collect();
        assert_eq!(
            spelled,
            ["exclusive", "mig", "mig-single", "time-slice", "mps"]
        );
        for mode in SharingMode::ALL {
            assert_eq!(SharingMode::parse(mode.as_str()), Some(mode));
            assert_eq!(mode.to_string(), mode.as_str());
        }
        assert_eq!(SharingMode::parse("Exclusive"), None);
        assert_eq!(SharingMode::parse("time_slice"), None);
        assert_eq!(SharingMode::parse("timeslice"), None);
    }

    #[test]
    fn skus_with_profile_explains_name_collisions() {
        let owners = catalog().skus_with_profile("1g.5gb");
        assert_eq!(
            owners,
            ["A100-40GB-PCIe", "A100-40GB-SXM", "A800-40GB-PCIe"]
        );
        let ten = catalog().skus_with_profile("1g.10gb");
        assert!(ten.contains(&"A100-40GB-SXM"));
        assert!(ten.contains(&"H100-80GB-SXM"));
        assert!(ten.contains(&"A100-80GB-SXM"));
        assert!(!ten.contains(&"H200-141GB-SXM"));
        assert!(catalog().skus_with_profile("9g.1gb").is_empty());
        assert!(
            catalog()
                .skus_with_profile("1g.24gb")
                .contains(&"H100-94GB-NVL")
        );
        assert!(
            catalog()
                .skus_with_profile("1g.24gb")
                .contains(&"RTX-PRO-6000-Blackwell-Server")
        );
    }

    #[test]
    fn gb200_older_profile_names_map_to_current_names() {
        let gb200 = catalog().table("GB200-186GB");
        let current = |older: &str| gb200.and_then(|table| table.current_name_of(older));
        assert_eq!(current("1g.24gb"), Some("1g.23gb"));
        assert_eq!(current("1g.24gb+me"), Some("1g.23gb+me"));
        assert_eq!(current("3g.95gb"), Some("3g.93gb"));
        assert_eq!(current("4g.95gb"), Some("4g.93gb"));
        assert_eq!(current("7g.189gb"), Some("7g.186gb"));
        assert_eq!(current("1g.47gb"), None, "current names are not renames");
        assert_eq!(current("1g.99gb"), None);
        assert_eq!(
            catalog().skus_with_older_profile_name("3g.95gb"),
            [("GB200-186GB", "3g.93gb")]
        );
    }

    #[test]
    fn inferred_tables_are_exactly_those_with_inferred_profiles() {
        let inferred: Vec<&str> = catalog()
            .tables()
            .filter(|table| table.inferred)
            .map(|table| table.key.as_str())
            .collect();
        assert_eq!(
            inferred,
            [
                "A100-80GB",
                "B200-180GB",
                "B300",
                "GB200-186GB",
                "GB300",
                "GH200-144GB",
                "H100-96GB",
                "H200-141GB",
            ]
        );
        for table in catalog().tables() {
            for profile in &table.profiles {
                assert_eq!(profile.inferred, profile.inferred_why.is_some());
            }
        }
    }

    #[test]
    fn min_driver_branches_come_from_the_reference_notes() {
        let min = |table: &str, profile: &str| {
            catalog()
                .table(table)
                .and_then(|table| table.profile(profile))
                .and_then(|profile| profile.min_driver)
        };
        assert_eq!(min("A30-24GB", "1g.6gb+me"), Some(470));
        assert_eq!(min("A30-24GB", "2g.12gb+me"), Some(525));
        assert_eq!(min("A100-40GB", "1g.10gb"), Some(525));
        assert_eq!(min("A100-40GB", "1g.5gb"), None);
        let rules = catalog()
            .table("A100-40GB")
            .map(|t| t.combination_rules.clone());
        assert_eq!(rules.map(|rules| rules.len()), Some(1));
    }

    #[test]
    fn axis_unit_name_distinguishes_the_twelve_unit_axis() {
        assert_eq!(
            catalog().table("H100-80GB").map(MigTable::axis_unit_name),
            Some("memory slices")
        );
        assert_eq!(
            catalog()
                .table("RTX-PRO-6000-Blackwell-96GB")
                .map(MigTable::axis_unit_name),
            Some("placement units")
        );
    }

    #[test]
    fn gfd_product_labels_match_the_documented_examples() {
        let label = |key: &str| catalog().sku(key).and_then(GpuSku::gfd_product_label);
        assert_eq!(
            label("H100-80GB-SXM").as_deref(),
            Some("NVIDIA-H100-80GB-HBM3")
        );
        assert_eq!(
            label("A100-40GB-SXM").as_deref(),
            Some("NVIDIA-A100-SXM4-40GB")
        );
        assert_eq!(
            label("RTX-PRO-6000-Blackwell-Server").as_deref(),
            Some("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition")
        );
        assert_eq!(label("L40S").as_deref(), Some("NVIDIA-L40S"));
        assert_eq!(label("GH200-144GB"), None, "no product name is known");
    }

    #[test]
    fn sku_by_pci_id_matches_hex_case_insensitively() {
        let key = |id: &str| catalog().sku_by_pci_id(id).map(|sku| sku.key.as_str());
        assert_eq!(key("0x233010DE"), Some("H100-80GB-SXM"));
        assert_eq!(key("0x2bb510de"), Some("RTX-PRO-6000-Blackwell-Server"));
        assert_eq!(key("0x27B810DE"), Some("L4"));
        assert_eq!(key("0xFFFF10DE"), None);
    }
}
