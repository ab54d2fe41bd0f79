//! A generated fleet for the benchmarks: cells with whole-GPU and MIG pools, and tenants that
//! reserve in them.
//!
//! Consumes: a cell count, a tenant count and how many cells each tenant uses. Produces:
//! in-memory `InputFile`s (`cells/cell-N.kdl`, `tenants/tenant-N.kdl`) that compile without
//! errors.
//!
//! Invariant: the same arguments give the same bytes, so benchmark runs are comparable.

use tenantc::InputFile;

/// The shape of a generated fleet.
#[derive(Debug, Clone, Copy)]
pub struct Fleet {
    /// Number of cells.
    pub cells: usize,
    /// Number of tenants.
    pub tenants: usize,
    /// Number of consecutive cells each tenant reserves in.
    pub cells_per_tenant: usize,
}

impl Fleet {
    /// Every declaration file of the fleet, cells first.
    pub fn inputs(&self) -> Vec<InputFile> {
        let mut inputs: Vec<InputFile> = (0..self.cells).map(|idx| self.cell(idx)).collect();
        inputs.extend((0..self.tenants).map(|idx| self.tenant(idx, 8)));
        inputs
    }

    /// Tenant `idx`, reserving `train_gpus` whole GPUs for training in each of its cells.
    pub fn tenant(&self, idx: usize, train_gpus: u32) -> InputFile {
        let quotas: String = (0..self.cells_per_tenant)
            .map(|offset| {
                let cell = (idx + offset) % self.cells;
                format!(
                    r#"    quota cell="cell-{cell}" cpu="64" memory="256Gi" pods=200 {{
        pool "train" reserved={train_gpus} burst=8 workload="train"
        pool "infer" profile="1g.10gb" reserved=4 workload="infer"
        pool "infer" profile="3g.40gb" reserved=1 workload="infer"
    }}
"#
                )
            })
            .collect();
        let text = format!(
            r#"tenant "tenant-{idx}" {{
    org "org-{org}"
    team "team-{idx}"
    trust "mig"
    groups admin="t{idx}-admins" member="t{idx}-members"
{quotas}    workload "train" service-account="trainer" priority="batch"
    workload "infer" service-account="server" priority="serving"
}}
"#,
            org = org_of(idx)
        );
        InputFile {
            path: format!("tenants/tenant-{idx}.kdl"),
            contents: text.into_bytes(),
        }
    }

    /// Cell `idx`: 4,000 whole-GPU nodes and 4,000 MIG nodes of H100s, listing the members of
    /// every org that has tenants in it.
    pub fn cell(&self, idx: usize) -> InputFile {
        let mut orgs: Vec<(usize, Vec<usize>)> = Vec::new();
        for tenant in 0..self.tenants {
            let first = tenant % self.cells;
            let here = (idx + self.cells - first) % self.cells < self.cells_per_tenant;
            if !here {
                continue;
            }
            match orgs.last_mut() {
                Some((org, members)) if *org == org_of(tenant) => members.push(tenant),
                _ => orgs.push((org_of(tenant), vec![tenant])),
            }
        }
        let orgs: String = orgs
            .iter()
            .map(|(org, members)| {
                let members: Vec<String> = members
                    .iter()
                    .map(|tenant| format!("\"tenant-{tenant}\""))
                    .collect();
                format!(
                    "    org \"org-{org}\" {{ tenants {}; }}\n",
                    members.join(" ")
                )
            })
            .collect();
        cell(idx, &orgs)
    }
}

/// The org of tenant `idx`: ten consecutive tenants share one.
fn org_of(idx: usize) -> usize {
    idx / 10
}

/// Cell `idx` with the given `org` nodes.
fn cell(idx: usize, orgs: &str) -> InputFile {
    let text = format!(
        r#"cell "cell-{idx}" {{
    cloud "aws" region="us-east-1"
    kubernetes "1.33"
    driver "570"
    priority "batch" value=1000 preempt=#false
    priority "serving" value=100000
{orgs}    pool "train" {{ gpu "H100-80GB-SXM"; nodes 4000 gpus-per-node=8; sharing "exclusive"; }}
    pool "infer" {{
        gpu "H100-80GB-SXM"
        nodes 4000 gpus-per-node=8
        sharing "mig"
        mig-layout "balanced" nodes=2000 {{ profile "3g.40gb" 1; profile "2g.20gb" 1; profile "1g.10gb" 2; }}
        mig-layout "small" nodes=2000 {{ profile "1g.10gb" 7; }}
    }}
}}
"#
    );
    InputFile {
        path: format!("cells/cell-{idx}.kdl"),
        contents: text.into_bytes(),
    }
}
