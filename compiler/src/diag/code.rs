//! The registry of diagnostic codes.
//!
//! Consumes: nothing. Produces: [`Code`], one variant per finding, each with a stable kebab-case
//! name, a stage, the severities it is reported with and a one-line description.
//!
//! Invariant: names are unique and kebab-case (a test checks both, and snapshots the list so a
//! rename shows up in review); `docs/diagnostics.md` has one heading per name, and its
//! `Severity:` line names exactly the severities given here, in the same order (a test below);
//! every diagnostic a compile reports has a severity its code lists (tested on every case).

use super::Severity::{self, Error, Warning};

macro_rules! codes {
    ($($variant:ident => ($name:literal, $stage:literal, [$($severity:ident),+], $description:literal),)*) => {
        /// A diagnostic code: what was found, never how to fix it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $(
                #[doc = $description]
                $variant,
            )*
        }

        impl Code {
            /// Every code, in declaration order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The stable kebab-case name shown to users.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $name,)*
                }
            }

            /// The pipeline stage that reports this code.
            pub fn stage(self) -> &'static str {
                match self {
                    $(Code::$variant => $stage,)*
                }
            }

            /// The severities the code is reported with, the usual one first: most codes are
            /// always errors or always warnings; a few are either, depending on the finding (as
            /// `docs/diagnostics.md` says of each).
            pub fn severities(self) -> &'static [Severity] {
                match self {
                    $(Code::$variant => &[$($severity),+],)*
                }
            }

            /// A one-line description of the finding.
            pub fn description(self) -> &'static str {
                match self {
                    $(Code::$variant => $description,)*
                }
            }
        }
    };
}

codes! {
    FileNotUtf8 => ("file-not-utf8", "load", [Error], "a declaration file is not valid UTF-8"),
    FileIgnored => ("file-ignored", "load", [Warning], "a file in tenants/ or cells/ is not a declaration and is skipped"),
    AllowInvalid => ("allow-invalid", "schema", [Error], "an `allow` entry names no known diagnostic code, gives no reason, or is not a code with a reason"),
    AllowUnused => ("allow-unused", "report", [Warning], "an `allow` entry silences no warning in the node it applies to"),
    PathUnsafe => ("path-unsafe", "load", [Error], "a file or folder name under tenants/ or cells/ has characters that may not reach generated output"),
    SymlinkOutsideRoot => ("symlink-outside-root", "load", [Error], "a symbolic link under tenants/ or cells/ leads outside the project root"),
    SymlinkBroken => ("symlink-broken", "load", [Error], "a symbolic link leads nowhere, into a loop of links, or to a folder that contains it"),
    SymlinkIntoOutput => ("symlink-into-output", "load", [Error], "a symbolic link leads into a folder that tenantc writes, whose files would be read as declarations"),
    FileUnreadable => ("file-unreadable", "load", [Error], "a file or folder under tenants/ or cells/ exists but cannot be read"),
    FileTooLarge => ("file-too-large", "load", [Error], "a declaration file is larger than the compiler reads"),
    FileNotRegular => ("file-not-regular", "load", [Warning, Error], "a FIFO, socket or device under tenants/ or cells/ is skipped unopened"),
    FolderTooDeep => ("folder-too-deep", "load", [Error], "folders under tenants/ or cells/ nest deeper than the compiler reads"),
    KdlSyntax => ("kdl-syntax", "parse", [Error], "a KDL file does not parse as KDL v2"),
    YamlSyntax => ("yaml-syntax", "parse", [Error], "a YAML file does not parse"),
    YamlUnsupported => ("yaml-unsupported", "parse", [Error], "a YAML feature that declarations do not allow (anchors, aliases, tags, complex keys)"),
    KdlUnsupported => ("kdl-unsupported", "parse", [Error], "a KDL feature that declarations do not allow (type annotations, nesting beyond the limit)"),
    DocumentShape => ("document-shape", "parse", [Error], "a file does not hold exactly one tenant or cell declaration"),
    DeclarationKindMismatch => ("declaration-kind-mismatch", "schema", [Error], "a tenant declared under cells/ or a cell declared under tenants/"),
    FileNameMismatch => ("file-name-mismatch", "schema", [Error], "the declared name differs from the file name"),
    FieldUnknown => ("field-unknown", "schema", [Error], "a field that the declaration model does not have"),
    FieldMissing => ("field-missing", "schema", [Error], "a required field is absent"),
    FieldDuplicate => ("field-duplicate", "schema", [Error], "a field that may appear once appears more than once"),
    TypeMismatch => ("type-mismatch", "schema", [Error], "a value has the wrong type"),
    ArgumentUnexpected => ("argument-unexpected", "schema", [Error], "a KDL node has more positional arguments than its field takes"),
    ValueUnknown => ("value-unknown", "schema", [Error], "a value is not one of the allowed choices"),
    NumberOutOfRange => ("number-out-of-range", "schema", [Error], "a number is outside the range the field allows"),
    NameInvalid => ("name-invalid", "schema", [Error], "a name is not a valid Kubernetes name where it will be used"),
    MetricNameInvalid => ("metric-name-invalid", "schema", [Error], "a cell's serving metric is not a Prometheus metric name, or names a series the chargeback rules record"),
    QuantityInvalid => ("quantity-invalid", "schema", [Error], "a value is not a valid Kubernetes quantity"),
    KubernetesVersionUnsupported => ("kubernetes-version-unsupported", "schema", [Error], "a cell targets a Kubernetes version tenantc does not generate for"),
    RuntimeClassMissing => ("runtime-class-missing", "validate", [Error], "a tenant reserves GPUs in a cell whose runtime classes allow none for its trust class"),
    RuntimeClassPoolsUnselectable => ("runtime-class-pools-unselectable", "resolve", [Error], "the pools of a runtime class share no node label, so no node selector keeps its pods on them"),
    NameDuplicate => ("name-duplicate", "validate", [Error], "two declarations of the same kind share a name"),
    NamespaceCollision => ("namespace-collision", "validate", [Error], "a tenant namespace is a platform namespace (reserved, or an add-on namespace of a cell) or another tenant's namespace"),
    CellUnknown => ("cell-unknown", "validate", [Error], "a reference to a cell that is not declared"),
    PoolUnknown => ("pool-unknown", "validate", [Error], "a reference to a pool that the cell does not declare"),
    PoolOwnedByAnotherTenant => ("pool-owned-by-another-tenant", "validate", [Error], "a tenant's quota names a pool that its cell reserves for another tenant with `owner`"),
    PoolOwnerUnknown => ("pool-owner-unknown", "validate", [Error], "a pool's `owner` names no declared tenant"),
    OwnedPoolNotClosed => ("owned-pool-not-closed", "validate", [Error], "an owned pool has no repelling taint of its own: the toleration another pool's flavor gives its tenants also tolerates every taint of the owned pool"),
    WorkloadUnknown => ("workload-unknown", "validate", [Error], "a quota names a workload the tenant does not declare"),
    PriorityUnknown => ("priority-unknown", "validate", [Error], "a workload names a priority that a cell it runs in does not declare"),
    PriorityNameReserved => ("priority-name-reserved", "schema", [Error], "a priority name starts with the reserved `system-` prefix"),
    GroupReserved => ("group-reserved", "validate", [Error], "a tenant binds a `system:` or wildcard-like RBAC group that a cell it runs in does not allow"),
    KubernetesTooOldForAdmissionPolicies => ("kubernetes-too-old-for-admission-policies", "validate", [Error], "a cell whose admission floor is ValidatingAdmissionPolicy (the default) runs a Kubernetes version before 1.30, which has no ValidatingAdmissionPolicy v1 for tenantc's guards, or runs its floor in Kyverno or Gatekeeper before 1.27"),
    GitopsSourceInvalid => ("gitops-source-invalid", "schema", [Error], "a cell's gitops declaration names a repository, revision, path or destination its controller cannot use, or a field of the other controller"),
    PodSecurityExceptionNotAllowed => ("pod-security-exception-not-allowed", "validate", [Error, Warning], "a Pod Security exception is declared for a tenant that is not `hard`, or for a workload that reserves no exclusive pool in a cell of the tenant"),
    GpuModelUnknown => ("gpu-model-unknown", "validate", [Error], "a pool names a GPU model that is neither in the catalog nor declared in the cell"),
    GpuModelInvalid => ("gpu-model-invalid", "validate", [Error], "a GPU model declared in a cell has facts that contradict each other or the MIG grammar"),
    SharingUnsupported => ("sharing-unsupported", "validate", [Error], "a pool uses a sharing mode its GPU model does not support"),
    MigLayoutMissing => ("mig-layout-missing", "validate", [Error], "a MIG pool declares no MIG layout"),
    FieldNotApplicable => ("field-not-applicable", "validate", [Error], "a field that does not apply to the pool's sharing mode"),
    MigNodeGroupsMismatch => ("mig-node-groups-mismatch", "validate", [Error], "the node groups of a pool's MIG layouts do not add up to the pool's nodes"),
    MigLayoutUnplaceable => ("mig-layout-unplaceable", "validate", [Error], "a MIG layout cannot be placed on one GPU of the pool's model"),
    MigPlacementTooComplex => ("mig-placement-too-complex", "validate", [Error], "the placement search for a MIG layout ran out of steps before it could prove the layout placeable or not"),
    MigProfileUnknown => ("mig-profile-unknown", "validate", [Error], "a MIG profile that the pool's GPU model does not have"),
    MigProfileWithoutResource => ("mig-profile-without-resource", "validate", [Error], "a MIG layout creates devices that the device plugin advertises as no resource a quota can deny"),
    MigProfileNeedsNewerDriver => ("mig-profile-needs-newer-driver", "validate", [Error], "a MIG profile or profile combination needs a newer driver branch than the cell runs"),
    MigMediaEnginesContended => ("mig-media-engines-contended", "validate", [Warning], "a MIG layout asks for more media engines than the GPU has (an inferred rule)"),
    MigTableInferred => ("mig-table-inferred", "validate", [Warning], "a MIG layout relies on catalog facts that were inferred, not observed on hardware"),
    QuotaResourceUnknown => ("quota-resource-unknown", "validate", [Error], "a quota on a resource the pool does not offer"),
    QuotaOverCapacity => ("quota-over-capacity", "validate", [Error], "tenants reserve more of a pool resource than the pool has"),
    ReservationWorkloadAmbiguous => ("reservation-workload-ambiguous", "validate", [Error], "a reservation of a tenant with several workloads does not say which workload's namespace it is for"),
    SharedPoolCrossesOrgs => ("shared-pool-crosses-orgs", "validate", [Error], "tenants of different orgs reserve in the same time-sliced or MPS pool"),
    OrgMembershipUndeclared => ("org-membership-undeclared", "validate", [Error], "a tenant with a quota in a cell declares an org the cell does not list it under, where the cell lists the org's members or two or more of the cell's tenants declare the org"),
    OrgMemberMismatch => ("org-member-mismatch", "validate", [Error, Warning], "a cell lists a tenant under an org the tenant does not declare, lists it twice, or lists a name that is no tenant with a quota in the cell"),
    TrustSharingMismatch => ("trust-sharing-mismatch", "validate", [Error], "a tenant's trust class forbids the sharing mode of a pool it has quota in"),
    PoolReachableByForbiddenTenant => ("pool-reachable-by-forbidden-tenant", "resolve", [Error], "a tenant could place pods on a pool its trust class or org forbids, because the pool is untainted and offers a resource the tenant has quota for"),
    ModelPrefixOutsideTenant => ("model-prefix-outside-tenant", "validate", [Error], "a model's weight prefix does not lie under the tenant's own `models/<tenant>/` prefix, where its storage IAM grants read"),
    RegistryClaimedByAnotherTenant => ("registry-claimed-by-another-tenant", "validate", [Error], "a tenant's image registry equals another tenant's or is a parent of it (host without case or port, path component by component), so its pods could run the other tenant's images"),
    RegistryHostIsAnAddress => ("registry-host-is-an-address", "validate", [Error], "a tenant's image registry names its host by IP address, which no ownership check can tell from another tenant's registry"),
    ChargebackLabelInvalid => ("chargeback-label-invalid", "schema", [Error], "a tenant's chargeback label key is not a short Kubernetes label key, or its value is not a non-empty label value"),
    ChargebackLabelReserved => ("chargeback-label-reserved", "validate", [Error], "a tenant's chargeback label key is under a prefix tenantc or Kubernetes owns, or reads like one once case, `-`, `_`, `.` and `/` are ignored"),
    ChargebackLabelDuplicate => ("chargeback-label-duplicate", "validate", [Error], "a tenant declares two chargeback labels whose keys are the same without case, `-`, `_`, `.` and `/`, and so reach one kube-state-metrics label"),
    ChargebackLabelForbidden => ("chargeback-label-forbidden", "validate", [Error], "a tenant's chargeback label key is on the built-in forbidden list or the `forbidden-label-keys` of a cell it has quota in, compared as the admission floor compares pod labels"),
    SharedBasePrefixInvalid => ("shared-base-prefix-invalid", "validate", [Error], "a tenant's shared-base prefix is not a plain `shared/…/` object prefix, so a read grant on it could reach other tenants' objects"),
    SharedBaseNotGranted => ("shared-base-not-granted", "validate", [Error], "a tenant reads a shared base that its cell's storage does not grant it, where the cell lists the shared bases it grants, or a grant names no declared tenant"),
    ServingTenantUnknown => ("serving-tenant-unknown", "validate", [Error], "a served model names a tenant that no file declares, or names a tenant twice"),
    ServingTenantNotInCell => ("serving-tenant-not-in-cell", "validate", [Error], "a served model names a tenant that has no `infer` workload with a quota in the model's cell"),
    ServingPrefixCacheAcrossTrust => ("serving-prefix-cache-across-trust", "validate", [Error], "a model whose prefix cache is shared serves tenants of different trust classes"),
    ServingLimitsOverCapacity => ("serving-limits-over-capacity", "validate", [Warning], "the request rates or concurrency limits of a served model's tenants add up to more than the model's declared capacity"),
    StorageIdentityMismatch => ("storage-identity-mismatch", "validate", [Error], "a cell's storage identity is not for the cell's cloud, or declares options of another identity kind"),
    TemplateSyntax => ("template-syntax", "template", [Error], "a platform template under `templates/` does not parse as a Jinja template"),
    TemplateRender => ("template-render", "template", [Error], "a platform template fails while it is rendered, such as on an undefined variable, or renders more than a file may hold"),
    TemplateOutputInvalid => ("template-output-invalid", "template", [Error], "the text a platform template renders is not YAML, or a rendered object has an unknown field, an invalid name, label or type, or metadata a template may not set"),
    TemplateObjectForbidden => ("template-object-forbidden", "template", [Error], "a platform template renders an object it may not create: a kind outside the allowlist, a cluster-scoped object, a namespace its tenant does not own, or an object tenantc already emits"),
    IamGrantTooBroad => ("iam-grant-too-broad", "audit", [Error], "an emitted storage IAM document grants more than the tenant's own prefixes, writes outside its checkpoints or trusts another ServiceAccount"),
    TenantWithoutQuota => ("tenant-without-quota", "validate", [Warning], "a tenant has no quota in any cell, so nothing is generated for it"),
    NetworkCidrInvalid => ("network-cidr-invalid", "schema", [Error], "an address block of a cell's network declarations is not an IPv4 or IPv6 address or canonical CIDR"),
    NetworkEgressTooBroad => ("network-egress-too-broad", "validate", [Error], "an endpoint's address block would open egress to a large part of the address space, such as 0.0.0.0/0"),
    LendAboveReserved => ("lend-above-reserved", "validate", [Error], "a reservation lends more devices than it reserves (Kueue lendingLimit above nominalQuota)"),
    BurstOversubscribed => ("burst-oversubscribed", "validate", [Warning], "the reserved plus burst devices of all tenants in a pool resource exceed its capacity times the cell's oversubscription ratio"),
    TopologyNotTree => ("topology-not-tree", "validate", [Error], "a pool's topology levels do not form a strict tree from coarse to fine over its nodes and NVLink domains"),
    GangExceedsDomain => ("gang-exceeds-domain", "validate", [Error], "a reservation's largest gang does not fit one NVLink domain or one domain of the topology level it must stay within"),
    GangExceedsQuota => ("gang-exceeds-quota", "validate", [Error], "a reservation's largest gang needs more GPUs than its reserved plus burst, so the job is never admitted"),
    ReservationSplitsNvlinkDomain => ("reservation-splits-nvlink-domain", "validate", [Warning], "a reservation in an exclusive pool is not a whole number of NVLink domains, so one domain is split with another tenant"),
    CeilingSplitMismatch => ("ceiling-split-mismatch", "validate", [Error, Warning], "the explicit splits of a tenant's cpu, memory and pods ceilings do not list each workload once or do not add up to the ceilings"),
    FleetReservationMismatch => ("fleet-reservation-mismatch", "validate", [Error], "a fleet reservation does not split into its cells, or a cell's part differs from what the tenant reserves there"),
    KueueLimitExceeded => ("kueue-limit-exceeded", "validate", [Error], "a declaration exceeds a limit of the Kueue objects made from it (flavor labels and taints, covered resources, flavors, label-valued names)"),
    PoolCeilingMissing => ("pool-ceiling-missing", "validate", [Error], "a pool of a quota whose ClusterQueue counts cpu, memory and pods per pool (a topology pool, or a declared part) has no part of one of the tenant's ceilings"),
    PoolCeilingsExceedCeiling => ("pool-ceilings-exceed-ceiling", "validate", [Error], "the per-pool parts of a tenant's cpu, memory or pods ceiling in a cell add up to more than the ceiling"),
    DiagnosticsTruncated => ("diagnostics-truncated", "report", [Error, Warning], "a file has more diagnostics than are shown; the rest are counted"),
    StringCharacterForbidden => ("string-character-forbidden", "schema", [Error], "a string holds a control, bidirectional-formatting, separator or noncharacter code point"),
    WeightsSignerMissing => ("weights-signer-missing", "weights", [Error], "a model declares no key or keyless identity that must have signed its weights"),
    WeightsSignerUnreadable => ("weights-signer-unreadable", "weights", [Error], "a model's public key or trust root is missing, outside the tenant's `keys/` folder, or not a usable key"),
    WeightsLockMissing => ("weights-lock-missing", "weights", [Error], "a model version has no entry in the tenant's lock file, or the tenant has no lock file"),
    WeightsLockInvalid => ("weights-lock-invalid", "weights", [Error], "a tenant's lock file is not a valid lock file"),
    WeightsLockStale => ("weights-lock-stale", "weights", [Error], "a lock entry no longer matches the model's declaration or its signature file"),
    WeightsSignatureInvalid => ("weights-signature-invalid", "weights", [Error], "no signature of a model's bundle verifies with the tenant's own signers"),
    WeightsManifestMismatch => ("weights-manifest-mismatch", "weights", [Error], "the signed files or root digest of a model differ from its lock entry"),
    KubernetesTooOldForDra => ("kubernetes-too-old-for-dra", "validate", [Error], "a cell declares `devices \"dra\"` on a Kubernetes version before 1.34, which serves no `resource.k8s.io/v1`"),
    SchedulerFeatureUnsupported => ("scheduler-feature-unsupported", "validate", [Error], "a cell's scheduler cannot hold what a declaration asks of it: Volcano with a pool topology, a reservation `within` a topology level, or Kueue's chargeback rules (`metering`)"),
    VolcanoResourceInSeveralPools => ("volcano-resource-in-several-pools", "validate", [Error], "a tenant reserves one GPU resource in two pools of a Volcano cell, whose queue counts a resource once across pools, so neither pool's part would hold"),
    VolcanoGuaranteeOnSharedResource => ("volcano-guarantee-on-shared-resource", "validate", [Error], "a reservation in a Volcano cell keeps devices from lending (`lend` below `reserved`) of a resource another pool of the cell also offers, and Volcano's guarantee counts a resource across pools"),
    PoolReachableWithoutReservation => ("pool-reachable-without-reservation", "resolve", [Error], "in a Volcano cell, a tenant's pods can reach a pool that offers a resource its queue holds, where it reserves none of it, so its queue could keep devices other tenants reserved there"),
    DraSharingUnsupported => ("dra-sharing-unsupported", "validate", [Error], "a pool of a cell with `devices \"dra\"` shares GPUs by time-slicing, MPS or MIG's single strategy, which tenantc does not lower to DRA: only `exclusive` and `mig` pools"),
    DraProductNameUnknown => ("dra-product-name-unknown", "validate", [Error], "a pool of a cell with `devices \"dra\"` names a GPU model whose NVML product name the catalog does not know, so no DeviceClass can select its devices"),
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use std::collections::BTreeSet;

    /// The severities the `Severity:` line of a code's section in `docs/diagnostics.md` names, in
    /// the order it names them.
    fn documented_severities(docs: &str, code: &str) -> Vec<&'static str> {
        let heading = format!("## `{code}`\n");
        let Some(start) = docs.find(&heading) else {
            return Vec::new();
        };
        let section = &docs[start + heading.len()..];
        let section = &section[..section.find("\n## ").unwrap_or(section.len())];
        let line = section
            .lines()
            .find_map(|line| line.strip_prefix("Severity: "))
            .unwrap_or("");
        let mut found: Vec<(usize, &'static str)> = ["error", "warning"]
            .into_iter()
            .filter_map(|word| line.find(word).map(|at| (at, word)))
            .collect();
        found.sort_unstable();
        found.into_iter().map(|(_, word)| word).collect()
    }

    #[test]
    fn each_codes_severities_are_those_its_reference_section_names() {
        let docs = include_str!("../../../docs/diagnostics.md");
        let mismatched: Vec<String> = Code::ALL
            .iter()
            .filter_map(|code| {
                let registered: Vec<&str> = code
                    .severities()
                    .iter()
                    .map(|severity| severity.as_str())
                    .collect();
                let documented = documented_severities(docs, code.as_str());
                (registered != documented).then(|| {
                    format!(
                        "{}: registry {registered:?}, docs {documented:?}",
                        code.as_str()
                    )
                })
            })
            .collect();
        assert!(mismatched.is_empty(), "{mismatched:#?}");
        // Both severities are in use, and a code that may be either says so.
        assert!(
            Code::ALL
                .iter()
                .any(|code| code.severities() == [Severity::Warning])
        );
        assert!(Code::FileNotRegular.severities().len() == 2);
    }

    #[test]
    fn code_names_are_unique_and_kebab_case() {
        let mut seen = BTreeSet::new();
        for code in Code::ALL {
            let name = code.as_str();
            assert!(seen.insert(name), "duplicate code name {name}");
            assert!(
                name.split('-').all(|part| !part.is_empty()
                    && part
                        .chars()
                        .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit())),
                "{name} is not kebab-case"
            );
            let description = code.description();
            assert!(
                !description.ends_with('.'),
                "{name}: description ends with a period"
            );
            assert!(
                description.starts_with(|ch: char| ch.is_lowercase()),
                "{name}: description must start lowercase"
            );
        }
    }

    #[test]
    fn code_list_is_stable() {
        let listing: String = Code::ALL
            .iter()
            .map(|code| {
                format!(
                    "{} [{}]: {}\n",
                    code.as_str(),
                    code.stage(),
                    code.description()
                )
            })
            .collect();
        insta::assert_snapshot!(listing);
    }
}
