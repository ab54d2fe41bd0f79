//! The chargeback recording rules of a cell (issue 20 item 2, `docs/chargeback.md`): one
//! `monitoring.coreos.com/v1` PrometheusRule in `<cell>/metering/`.
//!
//! Consumes: the cell's [`ChargebackPlan`] (its catalog figures, stranded MIG capacity,
//! namespace, rule labels and serving metric) and its name. Produces: the PrometheusRule, with a
//! group of catalog constants (one series per flavor and resource, as exact fractions) and a
//! group of rules over Kueue's, kube-state-metrics', DCGM's and the serving stack's metrics.
//!
//! Invariants:
//! - Every usage rule multiplies device counts by the catalog constants, so no rule counts a MIG
//!   slice or a time-sliced replica as a GPU; a fraction is written as PromQL division of two
//!   integers (`vector(1 / 7)`), never as a rounded decimal.
//! - A function of the plan alone; a cell without `metering` gets no rule.
//! - The rules only read metrics named in `docs/chargeback.md`, with their exporter's labels.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{body, managed_labels};
use crate::emit::{Body, InternalError};
use crate::kube::labels::{ORG_LABEL, TENANT_LABEL, WORKLOAD_LABEL};
use crate::kube::monitoring::{PrometheusRule, PrometheusRuleSpec, RecordingRule, RuleGroup};
use crate::model::WorkloadKind;
use crate::plan::chargeback::{ChargebackPlan, Fraction, RULE_NAME};
use crate::plan::{CellPlan, flavor_name};

/// Kueue v0.19's usage of admitted workloads per ClusterQueue, flavor and resource.
const KUEUE_USAGE: &str = "kueue_cluster_queue_resource_usage";
/// Kueue v0.19's nominal quota per ClusterQueue, flavor and resource.
const KUEUE_NOMINAL: &str = "kueue_cluster_queue_nominal_quota";

/// The objects of the cell's `metering/` folder: `(file, body)`.
pub(super) fn cell_objects(cell: &CellPlan) -> Result<Vec<(String, Body)>, InternalError> {
    let Some(plan) = &cell.chargeback else {
        return Ok(Vec::new());
    };
    let rule = prometheus_rule(plan);
    Ok(vec![(
        format!("prometheusrule-{RULE_NAME}.yaml"),
        body(&rule)?,
    )])
}

/// The cell's PrometheusRule.
pub fn prometheus_rule(plan: &ChargebackPlan) -> PrometheusRule {
    let mut labels: BTreeMap<String, String> = plan.rule_labels.clone();
    labels.extend(managed_labels());
    PrometheusRule::new(
        ObjectMeta {
            name: Some(RULE_NAME.to_string()),
            namespace: Some(plan.namespace.clone()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        PrometheusRuleSpec {
            groups: vec![
                RuleGroup {
                    name: format!("{RULE_NAME}-catalog"),
                    interval: None,
                    rules: catalog_rules(plan),
                },
                RuleGroup {
                    name: RULE_NAME.to_string(),
                    interval: None,
                    rules: usage_rules(plan),
                },
            ],
        },
    )
}

/// A fraction as a PromQL scalar expression: `7`, or `1 / 7`.
fn scalar(fraction: Fraction) -> String {
    if fraction.denominator == 1 {
        fraction.numerator.to_string()
    } else {
        format!("{} / {}", fraction.numerator, fraction.denominator)
    }
}

fn constant(record: &str, value: Fraction, labels: &[(&str, &str)]) -> RecordingRule {
    RecordingRule {
        record: record.to_string(),
        expr: format!("vector({})", scalar(value)),
        labels: labels
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect(),
    }
}

/// What one device of each flavor and resource is worth, and the stranded capacity of each MIG
/// pool: constants, so every usage rule multiplies by the catalog's figure.
fn catalog_rules(plan: &ChargebackPlan) -> Vec<RecordingRule> {
    let mut rules = Vec::new();
    for device in &plan.devices {
        let labels = [
            ("flavor", device.flavor.as_str()),
            ("resource", device.resource.as_str()),
            ("sku", device.gpu.as_str()),
        ];
        rules.push(constant(
            "tenantc:resource_gpu_equivalent:ratio",
            device.gpu_equivalent,
            &labels,
        ));
    }
    for device in &plan.devices {
        if let Some(hbm) = device.hbm_gigabytes {
            let labels = [
                ("flavor", device.flavor.as_str()),
                ("resource", device.resource.as_str()),
                ("sku", device.gpu.as_str()),
            ];
            rules.push(constant("tenantc:resource_hbm:gigabytes", hbm, &labels));
        }
    }
    for device in &plan.devices {
        if let Some(profile) = &device.profile {
            let labels = [
                ("flavor", device.flavor.as_str()),
                ("profile", profile.as_str()),
                ("resource", device.resource.as_str()),
            ];
            let one = Fraction {
                numerator: 1,
                denominator: 1,
            };
            rules.push(constant("tenantc:resource_mig_profile:info", one, &labels));
        }
    }
    for pool in &plan.stranded {
        let labels = [("pool", pool.pool.as_str()), ("sku", pool.gpu.as_str())];
        rules.push(constant(
            "tenantc:pool_mig_stranded:gpus",
            pool.gpus,
            &labels,
        ));
    }
    rules
}

fn rule(record: &str, expr: String) -> RecordingRule {
    RecordingRule {
        record: record.to_string(),
        expr,
        labels: BTreeMap::new(),
    }
}

/// The label kube-state-metrics exports a Kubernetes label key as: `label_` and the key with
/// every character other than a letter, digit or `_` written `_`.
fn state_metrics_label(key: &str) -> String {
    let sanitized: String = key
        .chars()
        .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' })
        .collect();
    format!("label_{sanitized}")
}

/// Kueue's per-queue series with `tenant` (the ClusterQueue, named after its tenant) and `pool`
/// (the flavor, `pool-<pool>`) labels.
fn kueue_series(metric: &str) -> String {
    let flavor_pattern = flavor_name("(.+)");
    format!(
        "label_replace(label_replace(\n  sum by (cluster_queue, flavor, resource) ({metric}{{resource=~\"nvidia.com/.+\"}}),\n  \"tenant\", \"$1\", \"cluster_queue\", \"(.+)\"), \"pool\", \"$1\", \"flavor\", \"{flavor_pattern}\")\n"
    )
}

/// Devices times a catalog constant, summed by `by`.
fn weighted(devices: &str, constant: &str, by: &str, extra: &str) -> String {
    format!(
        "sum by ({by}) (\n  {devices} * on (flavor, resource) group_left ({extra}) {constant})\n"
    )
}

fn usage_rules(plan: &ChargebackPlan) -> Vec<RecordingRule> {
    let usage = "tenantc:kueue_usage:devices";
    let nominal = "tenantc:kueue_nominal:devices";
    let ratio = "tenantc:resource_gpu_equivalent:ratio";
    let hbm = "tenantc:resource_hbm:gigabytes";
    let profile = "tenantc:resource_mig_profile:info";
    let per_flavor = "tenant, pool, flavor, resource";
    let mut rules = vec![
        rule(usage, kueue_series(KUEUE_USAGE)),
        rule(nominal, kueue_series(KUEUE_NOMINAL)),
        rule(
            "tenantc:tenant_pool_gpus:allocated",
            weighted(usage, ratio, "tenant, pool", ""),
        ),
        rule(
            "tenantc:tenant_pool_gpu_hours:allocated_1h",
            "avg_over_time(tenantc:tenant_pool_gpus:allocated[1h])".to_string(),
        ),
        rule(
            "tenantc:tenant_profile_mig_instances:allocated",
            weighted(usage, profile, "tenant, pool, profile", "profile"),
        ),
        rule(
            "tenantc:tenant_profile_mig_hours:allocated_1h",
            "avg_over_time(tenantc:tenant_profile_mig_instances:allocated[1h])".to_string(),
        ),
        rule(
            "tenantc:tenant_pool_hbm_gigabytes:allocated",
            weighted(usage, hbm, "tenant, pool", ""),
        ),
        rule(
            "tenantc:tenant_pool_hbm_gigabyte_hours:allocated_1h",
            "avg_over_time(tenantc:tenant_pool_hbm_gigabytes:allocated[1h])".to_string(),
        ),
        // Usage above the nominal quota is borrowed; the rest of it is the reservation used.
        rule(
            "tenantc:tenant_flavor_devices:borrowed",
            format!("clamp_min({usage} - on ({per_flavor}) {nominal}, 0)\n"),
        ),
        rule(
            "tenantc:tenant_flavor_devices:reserved_used",
            format!("{usage} - on ({per_flavor}) tenantc:tenant_flavor_devices:borrowed\n"),
        ),
        // Reserved minus used; a queue without usage idles its whole reservation. Stranded MIG
        // capacity is a constant of its own and never part of it.
        rule(
            "tenantc:tenant_flavor_devices:reserved_idle",
            format!("clamp_min({nominal} - on ({per_flavor})\n  ({usage} or {nominal} * 0), 0)\n"),
        ),
        rule(
            "tenantc:tenant_pool_gpus:reserved_idle",
            weighted(
                "tenantc:tenant_flavor_devices:reserved_idle",
                ratio,
                "tenant, pool",
                "",
            ),
        ),
        rule(
            "tenantc:tenant_pool_gpus:borrowed",
            weighted(
                "tenantc:tenant_flavor_devices:borrowed",
                ratio,
                "tenant, pool",
                "",
            ),
        ),
    ];
    // kube-state-metrics v2 (with the namespace labels on its allowlist): each tenant namespace,
    // its tenant, org and workload.
    let tenant = state_metrics_label(TENANT_LABEL);
    let org = state_metrics_label(ORG_LABEL);
    let workload = state_metrics_label(WORKLOAD_LABEL);
    rules.push(rule(
        "tenantc:namespace_tenant:info",
        format!(
            "max by (namespace, tenant, org, workload) (label_replace(label_replace(label_replace(\n  kube_namespace_labels{{{tenant}!=\"\"}},\n  \"tenant\", \"$1\", \"{tenant}\", \"(.+)\"),\n  \"org\", \"$1\", \"{org}\", \"(.*)\"),\n  \"workload\", \"$1\", \"{workload}\", \"(.*)\"))\n"
        ),
    ));
    rules.push(rule(
        "tenantc:tenant_resource_devices:requested",
        "sum by (tenant, resource) (\n  kube_pod_container_resource_requests{resource=~\"nvidia_com_.+\"}\n  * on (namespace) group_left (tenant) tenantc:namespace_tenant:info)\n".to_string(),
    ));
    rules.push(rule(
        "tenantc:tenant_profile_mig_instances:in_use",
        "count by (tenant, GPU_I_PROFILE) (\n  DCGM_FI_DEV_FB_USED{GPU_I_PROFILE!=\"\"}\n  * on (namespace) group_left (tenant) tenantc:namespace_tenant:info)\n".to_string(),
    ));
    if let Some(metric) = &plan.serving_metric {
        // Each running request holds a KV-cache seat; inference namespaces only.
        let infer = WorkloadKind::Infer.as_str();
        rules.push(rule(
            "tenantc:tenant_kv_seats:in_use",
            format!(
                "sum by (tenant) (\n  {metric}\n  * on (namespace) group_left (tenant) tenantc:namespace_tenant:info{{workload=\"{infer}\"}})\n"
            ),
        ));
        rules.push(rule(
            "tenantc:tenant_kv_seat_hours:in_use_1h",
            "avg_over_time(tenantc:tenant_kv_seats:in_use[1h])".to_string(),
        ));
    }
    rules
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use crate::emit::OutputTree;
    use crate::testing::support::{CELL, compile_files};

    const RULE: &str = "c1/metering/prometheusrule-tenantc-chargeback.yaml";

    /// The output of the test cell with `lines` after its driver (and, for `gitops`, synced).
    fn tree(lines: &str) -> OutputTree {
        let cell = CELL.replacen(
            "    driver \"570\"\n",
            &format!("    driver \"570\"\n{lines}"),
            1,
        );
        let compilation = compile_files(&[("cells/c1.kdl", &cell)]);
        assert!(!compilation.has_errors(), "{:#?}", compilation.diagnostics);
        compilation.output.unwrap()
    }

    const METERING: &str = "    metrics namespace=\"monitoring\"\n    metering rule-label=\"release=prom\" serving-metric=\"vllm:num_requests_running\"\n";

    #[test]
    fn a_cell_with_metering_gets_one_prometheus_rule_in_its_metering_folder() {
        let tree = tree(METERING);
        let text = String::from_utf8(tree[RULE].clone()).unwrap();
        assert!(text.contains("kind: PrometheusRule\n"), "{text}");
        assert!(text.contains("  namespace: monitoring\n"), "{text}");
        assert!(text.contains("    release: prom\n"), "{text}");
        assert!(text.contains("vllm:num_requests_running"), "{text}");
        assert!(
            tree["c1/metering/kustomization.yaml"]
                .ends_with(b"resources:\n- prometheusrule-tenantc-chargeback.yaml\n")
        );
    }

    #[test]
    fn a_cell_without_metering_gets_no_rule_and_without_a_serving_metric_no_kv_seat_rule() {
        let without = tree("");
        assert!(without.keys().all(|path| !path.starts_with("c1/metering/")));
        let no_metric = tree("    metering namespace=\"prometheus\"\n");
        let text = String::from_utf8(no_metric[RULE].clone()).unwrap();
        assert!(text.contains("namespace: prometheus"), "{text}");
        assert!(!text.contains("kv_seat"), "{text}");
    }

    #[test]
    fn every_usage_rule_over_kueue_devices_multiplies_by_a_catalog_constant() {
        let cell = crate::testing::support::compile_files(&[(
            "cells/c1.kdl",
            &CELL.replacen(
                "    driver \"570\"\n",
                &format!("    driver \"570\"\n{METERING}"),
                1,
            ),
        )]);
        let plan = cell.plan.unwrap();
        let rule = prometheus_rule(plan.cells[0].chargeback.as_ref().unwrap());
        let usage = &rule.spec.groups[1].rules;
        for record in [
            "tenantc:tenant_pool_gpus:allocated",
            "tenantc:tenant_pool_hbm_gigabytes:allocated",
            "tenantc:tenant_pool_gpus:reserved_idle",
            "tenantc:tenant_pool_gpus:borrowed",
            "tenantc:tenant_profile_mig_instances:allocated",
        ] {
            let found = usage.iter().find(|rule| rule.record == record).unwrap();
            assert!(
                found.expr.contains("group_left") && found.expr.contains("tenantc:resource_"),
                "{record}: {}",
                found.expr
            );
        }
    }

    #[test]
    fn the_metering_folder_is_synced_last_by_argo_cd_and_flux() {
        let argo = tree(&format!(
            "{METERING}    gitops \"argocd\" repo=\"https://git.example.com/fleet.git\"\n"
        ));
        let set = String::from_utf8(argo["argocd/applicationset-c1.yaml"].clone()).unwrap();
        let order: Vec<&str> = set
            .lines()
            .filter_map(|line| line.trim().strip_prefix("- name: c1-"))
            .collect();
        assert_eq!(order.last(), Some(&"metering"), "{set}");
        assert!(
            set.contains("path: out/c1/metering\n        step: \"5\""),
            "{set}"
        );
        let flux = tree(&format!("{METERING}    gitops \"flux\"\n"));
        let unit = String::from_utf8(flux["flux/kustomization-c1-metering.yaml"].clone()).unwrap();
        assert!(
            unit.contains("dependsOn:\n  - name: c1-cluster\n"),
            "{unit}"
        );
        assert!(unit.contains("path: \"./out/c1/metering\""), "{unit}");
    }

    #[test]
    fn every_emitted_expression_parses_as_promql() {
        let compilation = compile_files(&[(
            "cells/c1.kdl",
            &CELL.replacen(
                "    driver \"570\"\n",
                &format!("    driver \"570\"\n{METERING}"),
                1,
            ),
        )]);
        let plan = compilation.plan.unwrap();
        let rule = prometheus_rule(plan.cells[0].chargeback.as_ref().unwrap());
        let mut parsed = 0;
        for group in &rule.spec.groups {
            for recording in &group.rules {
                if let Err(error) = promql_parser::parser::parse(&recording.expr) {
                    panic!("{}: {error}\n{}", recording.record, recording.expr);
                }
                parsed += 1;
            }
        }
        assert!(parsed > 20, "{parsed} expressions");
        // The parser does refuse what PromQL cannot read (a metric spelt with dashes is a
        // subtraction, so take one that is no expression at all).
        assert!(promql_parser::parser::parse("sum by (tenant (x)").is_err());
    }

    #[test]
    fn fractions_are_written_as_integer_division() {
        assert_eq!(scalar(Fraction::new(1, 7).unwrap()), "1 / 7");
        assert_eq!(scalar(Fraction::new(80, 1).unwrap()), "80");
        assert_eq!(scalar(Fraction::new(6, 4).unwrap()), "3 / 2");
    }

    #[test]
    fn kube_state_metrics_labels_are_the_sanitized_keys() {
        assert_eq!(
            state_metrics_label(TENANT_LABEL),
            "label_tenant_platform_tenant"
        );
    }
}
