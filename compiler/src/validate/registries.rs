//! Registry ownership: no tenant may declare another tenant's image registry or a parent of it.
//!
//! Consumes: the [`Fleet`]. Produces: `registry-claimed-by-another-tenant` diagnostics.
//!
//! The admission floor admits an image when it starts with one of the tenant's registries
//! followed by `/`, so a tenant that declares another tenant's registry, or a prefix of it (the
//! bare host, a parent path), may run that tenant's images. Registries are compared as the
//! container runtime resolves them: the host without case, a trailing `.` or its port (the
//! runtime reads `:0443` as the default 443, and every port of a host is the same machine, so
//! one owner's), Docker Hub's aliases as `docker.io`, and the path component by component
//! (`a/b` is a parent of `a/b/c`, not of `a/bc`), without case and empty components. A host
//! that is an IP address is refused (`registry-host-is-an-address`): no comparison of names
//! can tell whose registry an address serves.
//!
//! Invariant: pure; for each pair of tenants and each pair of their registries where one
//! covers the other, one finding, at the covering (broader) declaration, with a secondary label
//! at the covered one; two equal registries are reported at the tenant that sorts later.
//! Registries of one tenant are never compared with each other (duplicates are `name-duplicate`).

use std::collections::BTreeMap;

use crate::diag::{Code, Diagnostic};
use crate::model::{Fleet, Spanned};

/// Docker Hub's other host names, which the container runtimes resolve to the same registry.
const DOCKER_HUB_ALIASES: [&str; 2] = ["index.docker.io", "registry-1.docker.io"];

/// A registry as the runtime resolves it: a normalised host and path components.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryKey {
    /// The host, lowercase, without a trailing `.` or a port.
    pub host: String,
    /// The path components, lowercase, without empty ones.
    pub path: Vec<String>,
}

impl RegistryKey {
    /// Normalises a declared registry prefix (`host[:port][/path…]`).
    pub fn parse(registry: &str) -> Self {
        let (host, path) = registry.split_once('/').unwrap_or((registry, ""));
        // Every port of a host is one owner's: the runtime reads `:0443` as 443, and another
        // port of the same host is the same machine.
        let host = host.rsplit_once(':').map_or(host, |(name, _)| name);
        let mut host = host.to_ascii_lowercase();
        while let Some(bare) = host.strip_suffix('.') {
            host = bare.to_string();
        }
        if DOCKER_HUB_ALIASES.contains(&host.as_str()) {
            host = "docker.io".to_string();
        }
        let path = path
            .split('/')
            .filter(|part| !part.is_empty())
            .map(str::to_ascii_lowercase)
            .collect();
        Self { host, path }
    }

    /// Whether every image under `other` is also under `self`: same host, and `self`'s path
    /// is `other`'s or a parent of it.
    pub fn covers(&self, other: &Self) -> bool {
        self.host == other.host && other.path.starts_with(&self.path)
    }
}

/// A declared registry with its normalised key.
type Keyed<'a> = (&'a Spanned<String>, RegistryKey);

/// Checks every pair of tenants' registries.
pub(super) fn check(fleet: &Fleet, diagnostics: &mut Vec<Diagnostic>) {
    for tenant in &fleet.tenants {
        for registry in &tenant.registries {
            if is_address(&RegistryKey::parse(&registry.value).host) {
                diagnostics.push(
                    Diagnostic::error(
                        Code::RegistryHostIsAnAddress,
                        registry.span,
                        format!(
                            "registry `{}` of tenant `{}` names its host by IP address",
                            registry.value, tenant.name.value
                        ),
                    )
                    .with_label("an address")
                    .with_note("registries are owned by host name and path; an address may serve another tenant's registry under a name the comparison cannot see")
                    .with_help("declare the registry by its DNS name"),
                );
            }
        }
    }
    let keyed: Vec<(&str, Vec<Keyed<'_>>)> = fleet
        .tenants
        .iter()
        .map(|tenant| {
            (
                tenant.name.value.as_str(),
                tenant
                    .registries
                    .iter()
                    .map(|registry| (registry, RegistryKey::parse(&registry.value)))
                    .collect(),
            )
        })
        .collect();
    for (first, second) in covering_pairs(&keyed) {
        let ((first, first_key), first_tenant) = first;
        let ((second, second_key), second_tenant) = second;
        // The broader registry is the claim; of two equal ones, the later tenant's.
        let claim = if second_key.covers(first_key) {
            Some(((second, second_tenant), (first, first_tenant)))
        } else if first_key.covers(second_key) {
            Some(((first, first_tenant), (second, second_tenant)))
        } else {
            None
        };
        if let Some(((claim, claimant), (owned, owner))) = claim {
            diagnostics.push(finding(claim, claimant, owned, owner));
        }
    }
}

/// A registry with its key and its tenant's name.
type Owned<'k, 'a> = (&'k Keyed<'a>, &'a str);

/// The registries by host and path: each as its tenant's position and its own among the
/// tenant's registries.
type Index<'k> = BTreeMap<(&'k str, &'k [String]), Vec<(usize, usize)>>;

/// Every pair of registries of two tenants where one may cover the other (same host, one path
/// a prefix of the other's), in the order of a walk over every pair: by the first tenant, then
/// the second tenant after it, then the first tenant's registry, then the second's.
///
/// The pairs are found through an index of the keys by host and path, in which the registries
/// under a path are one range; comparing every pair instead would be quadratic in the tenants
/// (two million pairs at 2,000 tenants).
fn covering_pairs<'k, 'a>(
    keyed: &'k [(&'a str, Vec<Keyed<'a>>)],
) -> Vec<(Owned<'k, 'a>, Owned<'k, 'a>)> {
    let mut index: Index<'_> = BTreeMap::new();
    for (position, (_, registries)) in keyed.iter().enumerate() {
        for (number, (_, key)) in registries.iter().enumerate() {
            index
                .entry((key.host.as_str(), key.path.as_slice()))
                .or_default()
                .push((position, number));
        }
    }
    let mut pairs = Vec::new();
    for (position, (first_tenant, first_registries)) in keyed.iter().enumerate() {
        // (second tenant, first's registry, second's registry)
        let mut found: Vec<(usize, usize, usize)> = Vec::new();
        for (number, (_, key)) in first_registries.iter().enumerate() {
            let mut later = |holders: &Vec<(usize, usize)>| {
                for &(second, other) in holders {
                    if second > position {
                        found.push((second, number, other));
                    }
                }
            };
            // The registries that may cover this one: its path and every parent of it.
            for depth in 0..=key.path.len() {
                let parent = key.path.get(..depth).unwrap_or_default();
                if let Some(holders) = index.get(&(key.host.as_str(), parent)) {
                    later(holders);
                }
            }
            // The registries this one may cover: its path and every path under it.
            let under = index
                .range((key.host.as_str(), key.path.as_slice())..)
                .take_while(|((host, path), _)| *host == key.host && path.starts_with(&key.path));
            for (_, holders) in under {
                later(holders);
            }
        }
        found.sort_unstable();
        found.dedup();
        for (second, number, other) in found {
            let Some((second_tenant, second_registries)) = keyed.get(second) else {
                continue;
            };
            if let (Some(first), Some(second)) =
                (first_registries.get(number), second_registries.get(other))
            {
                pairs.push(((first, *first_tenant), (second, *second_tenant)));
            }
        }
    }
    pairs
}

/// Whether a normalised registry host is an IPv4 address, or an IPv6 one (bracketed, or
/// with the colons that no host name has).
fn is_address(host: &str) -> bool {
    host.starts_with('[')
        || host.contains(':')
        || host.parse::<std::net::Ipv4Addr>().is_ok()
        || (host.split('.').count() == 4
            && host
                .split('.')
                .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit())))
}

fn finding(
    claim: &Spanned<String>,
    claimant: &str,
    owned: &Spanned<String>,
    owner: &str,
) -> Diagnostic {
    let relation = if RegistryKey::parse(&claim.value) == RegistryKey::parse(&owned.value) {
        "is the same registry as"
    } else {
        "covers"
    };
    Diagnostic::error(
        Code::RegistryClaimedByAnotherTenant,
        claim.span,
        format!(
            "registry `{}` of tenant `{claimant}` {relation} tenant `{owner}`'s `{}`",
            claim.value, owned.value
        ),
    )
    .with_label(format!(
        "pods of `{claimant}` could run every image under `{}`",
        owned.value
    ))
    .with_secondary(owned.span, format!("declared by tenant `{owner}`"))
    .with_help(format!(
        "declare a repository path of `{claimant}`'s own that is neither equal to nor a parent of another tenant's registry"
    ))
}

#[cfg(test)]
mod tests {
    use super::RegistryKey;
    use crate::diag::Code;
    use crate::validate::test_support::{CELL, codes, tenant};

    fn with_registry(name: &str, registry: &str) -> String {
        tenant(name, "hard", "pool \"train\" reserved=8").replace(
            "    quota cell",
            &format!("    registry \"{registry}\"\n    quota cell"),
        )
    }

    fn claims(first: &str, second: &str) -> usize {
        codes(&[
            ("cells/c1.kdl", CELL),
            ("tenants/a.kdl", &with_registry("a", first)),
            ("tenants/b.kdl", &with_registry("b", second)),
        ])
        .into_iter()
        .filter(|code| *code == Code::RegistryClaimedByAnotherTenant)
        .count()
    }

    #[test]
    fn refuses_another_tenants_registry_and_its_parents() {
        for (first, second) in [
            (
                "registry.acme.internal/research",
                "registry.acme.internal/research",
            ),
            ("registry.acme.internal/research", "registry.acme.internal"),
            (
                "registry.acme.internal/research/team",
                "registry.acme.internal/research",
            ),
            (
                "registry.acme.internal/research",
                "REGISTRY.Acme.Internal/research",
            ),
            (
                "registry.acme.internal/research",
                "registry.acme.internal:443/research",
            ),
            (
                "registry.acme.internal/research",
                "registry.acme.internal.:80/Research",
            ),
            ("docker.io/acme/research", "index.docker.io/acme"),
            ("registry-1.docker.io/acme", "docker.io/acme"),
            // The runtime reads `0443` as 443, and another port is the same machine.
            (
                "registry.acme.internal/research",
                "registry.acme.internal:0443/research",
            ),
            (
                "registry.acme.internal/research",
                "registry.acme.internal:5000/research",
            ),
        ] {
            assert_eq!(claims(first, second), 1, "{first} and {second}");
            assert_eq!(claims(second, first), 1, "{second} and {first}");
        }
    }

    #[test]
    fn refuses_a_registry_host_that_is_an_address() {
        for (registry, address) in [
            ("10.1.2.3/research", true),
            ("10.1.2.3:5000/research", true),
            ("010.001.002.003/research", true),
            ("registry.acme.internal/research", false),
            ("10.1.2.3.nip.io/research", false),
            ("r2d2.example/research", false),
        ] {
            assert_eq!(
                super::is_address(&RegistryKey::parse(registry).host),
                address,
                "{registry}"
            );
        }
        let codes = codes(&[
            ("cells/c1.kdl", CELL),
            ("tenants/a.kdl", &with_registry("a", "10.1.2.3/research")),
        ]);
        assert_eq!(codes, [Code::RegistryHostIsAnAddress]);
    }

    #[test]
    fn accepts_sibling_paths_and_other_hosts() {
        for (first, second) in [
            (
                "registry.acme.internal/research",
                "registry.acme.internal/serving",
            ),
            (
                "registry.acme.internal/research",
                "registry.acme.internal/research-2",
            ),
            (
                "registry.acme.internal/research",
                "mirror.acme.internal/research",
            ),
        ] {
            assert_eq!(claims(first, second), 0, "{first} and {second}");
        }
    }

    #[test]
    fn covering_is_component_wise_and_normalised() {
        let parent = RegistryKey::parse("Registry.Example.COM:443/a");
        assert!(parent.covers(&RegistryKey::parse("registry.example.com/a/b")));
        assert!(!parent.covers(&RegistryKey::parse("registry.example.com/ab")));
        assert!(!RegistryKey::parse("registry.example.com/a/b").covers(&parent));
        assert_eq!(
            RegistryKey::parse("registry.example.com./a//b/"),
            RegistryKey::parse("registry.example.com/a/b")
        );
    }

    /// Generated fleets of tenants with several registries each: the indexed search finds the
    /// pairs, in the order, that comparing every registry of every later tenant finds.
    #[test]
    fn the_index_finds_the_pairs_of_the_walk_over_every_pair_in_its_order() {
        use crate::model::Spanned;
        use crate::source::{FileId, Span};
        let mut rng = crate::testing::Rng(0x0d1c_e5ee_d0c0_ffee);
        let mut pairs = 0;
        let hosts = [
            "r.example.com",
            "R.example.com:5000",
            "s.example.com",
            "docker.io",
            "index.docker.io",
        ];
        let parts = ["a", "b", "ab", "A", ""];
        for _ in 0..30 {
            let tenants: Vec<(String, Vec<Spanned<String>>)> = (0..rng.below(12))
                .map(|number| {
                    let registries = (0..rng.below(4))
                        .map(|place| {
                            let host = rng.pick(&hosts);
                            let path: Vec<&str> =
                                (0..rng.below(4)).map(|_| rng.pick(&parts)).collect();
                            let span =
                                Span::new(FileId(u32::try_from(number).unwrap()), place..place);
                            Spanned::new(format!("{host}/{}", path.join("/")), span)
                        })
                        .collect();
                    (format!("t{number}"), registries)
                })
                .collect();
            let keyed: Vec<(&str, Vec<super::Keyed<'_>>)> = tenants
                .iter()
                .map(|(name, registries)| {
                    let keys = registries
                        .iter()
                        .map(|registry| (registry, RegistryKey::parse(&registry.value)))
                        .collect();
                    (name.as_str(), keys)
                })
                .collect();
            let mut every_pair = Vec::new();
            for (position, (first_tenant, first_registries)) in keyed.iter().enumerate() {
                for (second_tenant, second_registries) in keyed.iter().skip(position + 1) {
                    for first in first_registries {
                        for second in second_registries {
                            if first.1.covers(&second.1) || second.1.covers(&first.1) {
                                every_pair.push((
                                    first.0.span,
                                    *first_tenant,
                                    second.0.span,
                                    *second_tenant,
                                ));
                            }
                        }
                    }
                }
            }
            let indexed: Vec<_> = super::covering_pairs(&keyed)
                .into_iter()
                .map(|((first, first_tenant), (second, second_tenant))| {
                    (first.0.span, first_tenant, second.0.span, second_tenant)
                })
                .collect();
            assert_eq!(indexed, every_pair, "{tenants:?}");
            pairs += indexed.len();
        }
        assert!(pairs > 30, "the generated fleets hold {pairs} pairs");
    }

    /// Generated pairs: a claim is reported exactly when one registry's normalised components
    /// start with the other's, whatever case, port or trailing `.` the host is written with.
    #[test]
    fn reports_a_claim_exactly_when_one_registry_covers_the_other() {
        let mut rng = crate::testing::Rng(0x8a11_0c8e_5eed_0008);
        let hosts = [
            "r.example.com",
            "R.Example.com.",
            "r.example.com:443",
            "s.example.com",
        ];
        let parts = ["a", "b", "ab"];
        let generate = |rng: &mut crate::testing::Rng| {
            let host = rng.pick(&hosts);
            let depth = rng.below(3);
            let path: Vec<&str> = (0..depth).map(|_| rng.pick(&parts)).collect();
            if path.is_empty() {
                host.to_string()
            } else {
                format!("{host}/{}", path.join("/"))
            }
        };
        for _ in 0..40 {
            let first = generate(&mut rng);
            let second = generate(&mut rng);
            let (first_key, second_key) = (RegistryKey::parse(&first), RegistryKey::parse(&second));
            let same_host = first_key.host == second_key.host;
            let expected = usize::from(
                same_host
                    && (first_key.path.starts_with(&second_key.path)
                        || second_key.path.starts_with(&first_key.path)),
            );
            assert_eq!(claims(&first, &second), expected, "{first} and {second}");
        }
    }
}
