//! The backends a cell declares: its `scheduler`, `admission` and `devices`, against what tenantc
//! emits and against the cell's Kubernetes version.
//!
//! Consumes: the fleet's cells. Produces: `kubernetes-too-old-for-admission-policies` for a
//! ValidatingAdmissionPolicy floor (the default) before Kubernetes 1.30, and for a Kyverno or
//! Gatekeeper floor before 1.27; `kubernetes-too-old-for-dra` for `devices "dra"` before 1.34.
//! Every value of the three backends is lowered, so none is refused for its own sake.
//!
//! Invariant: the backends are read only through `facts::backends`, which applies the defaults,
//! and every finding points at the declaration that asks for what cannot run (the version for
//! the default floor, since nothing else was written), with the other half of the combination as
//! a secondary label where it was written.

use crate::diag::{Code, Diagnostic};
use crate::facts::backends::{
    AdmissionEngine, POLICY_ENGINE_MINOR, admission_minor, backends, devices_minor,
};
use crate::model::{Cell, Fleet};

/// Every finding about the cells' backends.
pub(super) fn check(fleet: &Fleet, diagnostics: &mut Vec<Diagnostic>) {
    for cell in &fleet.cells {
        versions(cell, diagnostics);
    }
}

/// A backend the cell's Kubernetes version cannot run.
fn versions(cell: &Cell, diagnostics: &mut Vec<Diagnostic>) {
    // A version that could not be read is reported already; nothing is checked against it.
    let Some(kubernetes) = &cell.kubernetes else {
        return;
    };
    let (_, minor) = kubernetes.value;
    let declared = backends(cell);
    if let Some(first) = admission_minor(declared.admission)
        && minor < first
    {
        let text = format!("1.{minor}");
        let (message, label, secondary) = match declared.admission {
            AdmissionEngine::Vap => (
                format!("Kubernetes `{text}` has no ValidatingAdmissionPolicy v1"),
                format!(
                    "admission policies are `admissionregistration.k8s.io/v1` from 1.{first} on"
                ),
                "the tenant admission floor is a ValidatingAdmissionPolicy",
            ),
            AdmissionEngine::Kyverno | AdmissionEngine::Gatekeeper => (
                format!(
                    "Kubernetes `{text}` is older than tenantc builds a `{}` floor for",
                    declared.admission
                ),
                format!("a Kyverno or Gatekeeper floor is built for 1.{first} and newer"),
                "the tenant admission floor runs in this policy engine",
            ),
        };
        let mut diagnostic = Diagnostic::error(
            Code::KubernetesTooOldForAdmissionPolicies,
            kubernetes.span,
            message,
        )
        .with_label(label);
        if let Some(admission) = &cell.admission {
            diagnostic = diagnostic.with_secondary(admission.span, secondary);
        }
        diagnostics.push(diagnostic.with_help(format!(
            "upgrade the cell to Kubernetes 1.{first} or newer: tenantc guards the objects it \
             manages and each tenant's pods with admission policies{}",
            match declared.admission {
                AdmissionEngine::Vap => format!(
                    ", or declare `admission \"kyverno\"` or `admission \"gatekeeper\"` to run the floor in a policy engine from 1.{POLICY_ENGINE_MINOR} on"
                ),
                AdmissionEngine::Kyverno | AdmissionEngine::Gatekeeper => String::new(),
            }
        )));
    }
    if let Some(devices) = &cell.devices
        && let Some(first) = devices_minor(devices.value)
        && minor < first
    {
        diagnostics.push(
            Diagnostic::error(
                Code::KubernetesTooOldForDra,
                devices.span,
                format!(
                    "cell `{}` declares `devices \"{}\"` on Kubernetes 1.{minor}",
                    cell.name.value, devices.value
                ),
            )
            .with_label(format!(
                "Dynamic Resource Allocation is `resource.k8s.io/v1` from 1.{first} on"
            ))
            .with_secondary(kubernetes.span, "the cell's Kubernetes version")
            .with_help(format!(
                "upgrade the cell to Kubernetes 1.{first} or newer, or remove `devices` to keep the device plugin"
            )),
        );
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use crate::validate::test_support::compile_files;

    const TENANT: &str = r#"tenant "t1" {
    org "o"
    team "t"
    trust "hard"
    groups admin="t1-admins" member="t1"
    quota cell="c1" cpu="8" memory="64Gi" pods=10 {
        pool "train" reserved=8
    }
    workload "train" service-account="trainer" priority="batch"
    registry "registry.example.com/t1"
}
"#;

    fn cell(lines: &str) -> String {
        format!(
            r#"cell "c1" {{
    cloud "aws" region="us-east-1"
{lines}
    driver "570"
    priority "batch" value=1000
    pool "train" {{ gpu "H100-80GB-SXM"; nodes 1 gpus-per-node=8; sharing "exclusive"; taint "p" "train" effect="NoSchedule"; }}
}}
"#
        )
    }

    /// The codes a fleet of one tenant and the cell with `lines` reports.
    fn codes(lines: &str) -> Vec<&'static str> {
        let cell = cell(lines);
        let compilation =
            compile_files(&[("cells/c1.kdl", cell.as_str()), ("tenants/t1.kdl", TENANT)]);
        compilation
            .diagnostics
            .iter()
            .map(|diagnostic| diagnostic.code.as_str())
            .collect()
    }

    #[test]
    fn accepts_every_emitted_backend_on_a_version_that_runs_it() {
        for lines in [
            "    kubernetes \"1.30\"",
            "    kubernetes \"1.33\"\n    scheduler \"kueue\"\n    admission \"vap\"\n    devices \"device-plugin\"",
            "    kubernetes \"1.34\"\n    scheduler \"volcano\"",
            "    kubernetes \"1.34\"\n    devices \"dra\"",
            "    kubernetes \"1.36\"\n    scheduler \"volcano\"\n    devices \"dra\"",
        ] {
            assert_eq!(codes(lines), Vec::<&str>::new(), "{lines}");
        }
    }

    #[test]
    fn refuses_the_default_floor_before_kubernetes_1_30() {
        assert_eq!(
            codes("    kubernetes \"1.29\""),
            ["kubernetes-too-old-for-admission-policies"]
        );
        assert_eq!(
            codes("    kubernetes \"1.27\"\n    admission \"vap\""),
            ["kubernetes-too-old-for-admission-policies"]
        );
    }

    #[test]
    fn accepts_kyverno_and_gatekeeper_floors_from_kubernetes_1_27() {
        for version in ["1.27", "1.29", "1.33"] {
            for engine in ["kyverno", "gatekeeper"] {
                let lines = format!("    kubernetes \"{version}\"\n    admission \"{engine}\"");
                assert_eq!(codes(&lines), Vec::<&str>::new(), "{lines}");
            }
        }
    }

    #[test]
    fn refuses_a_policy_engine_floor_before_kubernetes_1_27() {
        assert_eq!(
            codes("    kubernetes \"1.26\"\n    admission \"kyverno\""),
            ["kubernetes-too-old-for-admission-policies"]
        );
    }

    #[test]
    fn refuses_dra_before_kubernetes_1_34() {
        assert_eq!(
            codes("    kubernetes \"1.33\"\n    devices \"dra\""),
            ["kubernetes-too-old-for-dra"]
        );
    }

    #[test]
    fn an_unknown_backend_is_a_value_error_and_never_the_default() {
        assert_eq!(
            codes("    kubernetes \"1.33\"\n    scheduler \"slurm\""),
            ["value-unknown"]
        );
    }
}
