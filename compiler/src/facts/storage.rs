//! Where a shared base is granted: per bucket, keyed by the bucket's cloud and name.
//!
//! Consumes: the fleet's cells (their `storage`: buckets, identity and shared-base grants).
//! Produces: for a tenant's shared base in a cell, the buckets of that cell on which the tenant
//! may read it.
//!
//! A bucket is its cloud and its name (`aws` `models` and `gcp` `models` are two buckets). The
//! grants on a bucket are the shared-base grants of every cell that declares it; a grant
//! licenses a base in each bucket of its cell. On a bucket with grants, a tenant reads a base
//! only inside a grant that names it; on a bucket no cell grants on, every base is open, as it
//! was before cells listed their shared bases.
//!
//! Invariant: the decision is per bucket, never per cell: a grant on one bucket says nothing
//! about another bucket of the same cell, nor about a bucket of the same name in another cloud.

use crate::model::{Cell, Fleet, SharedBaseGrant};

/// A bucket as grants see it: the cloud of the cell's storage identity and its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct BucketKey<'a> {
    /// `aws` or `gcp`.
    pub cloud: &'static str,
    /// The bucket's name.
    pub name: &'a str,
}

/// The buckets a cell's storage declares, in declaration order; none without storage.
pub fn buckets_of(cell: &Cell) -> Vec<BucketKey<'_>> {
    cell.storage
        .as_ref()
        .map(|storage| {
            storage
                .buckets
                .iter()
                .map(|bucket| BucketKey {
                    cloud: storage.identity.cloud(),
                    name: &bucket.value,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every grant on `bucket`, from every cell of the fleet that declares it, with that cell.
pub fn grants_on<'a>(
    fleet: &'a Fleet,
    bucket: BucketKey<'_>,
) -> Vec<(&'a Cell, &'a SharedBaseGrant)> {
    fleet
        .cells
        .iter()
        .filter(|cell| buckets_of(cell).contains(&bucket))
        .filter_map(|cell| cell.storage.as_ref().map(|storage| (cell, storage)))
        .flat_map(|(cell, storage)| storage.shared_bases.iter().map(move |grant| (cell, grant)))
        .collect()
}

/// Whether `grant` licenses the base `base` to `tenant`: the base lies inside the grant's
/// prefix and the grant names the tenant.
pub fn grant_names(grant: &SharedBaseGrant, tenant: &str, base: &str) -> bool {
    base.starts_with(&grant.prefix.value)
        && grant.tenants.iter().any(|reader| reader.value == tenant)
}

/// The buckets of `cell` on which `tenant` may read its shared base `base`, in the cell's
/// declaration order: those no cell grants on, and those with a grant that names it.
pub fn granted_buckets<'a>(
    fleet: &Fleet,
    cell: &'a Cell,
    tenant: &str,
    base: &str,
) -> Vec<&'a str> {
    buckets_of(cell)
        .into_iter()
        .filter(|bucket| {
            let grants = grants_on(fleet, *bucket);
            grants.is_empty()
                || grants
                    .iter()
                    .any(|(_, grant)| grant_names(grant, tenant, base))
        })
        .map(|bucket| bucket.name)
        .collect()
}

#[cfg(test)]
mod tests;
