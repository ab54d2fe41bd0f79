//! MIG layout placement: a layout is valid only if it can be placed on one GPU.
//!
//! Consumes: a [`MigLayout`] whose profiles all exist in the pool's MIG table. Produces:
//! `mig-layout-unplaceable` with every failing budget (max count, compute slices, memory slices
//! or placement units) and the numbers, `mig-placement-too-complex` when the search runs out of
//! steps, and a warning when the table's facts are inferred.
//!
//! Invariant: the verdict comes from the catalog's exact placement search, not from adding up
//! slices, so `3g + 3g + 1g` (7 compute slices, 9 of 8 memory slices) is rejected; the search is
//! bounded by `limits::MAX_PLACEMENT_STEPS`, so no layout can stall the build.

use crate::catalog::MigTable;
use crate::catalog::placement::{self, PlacementError};
use crate::diag::{Code, Diagnostic};
use crate::limits::MAX_PLACEMENT_STEPS;
use crate::model::MigLayout;

/// Checks that the layout fits one GPU of the table's model.
pub(super) fn check(
    layout: &MigLayout,
    sku_key: &str,
    table: &MigTable,
    diagnostics: &mut Vec<Diagnostic>,
) {
    check_within(layout, sku_key, table, MAX_PLACEMENT_STEPS, diagnostics);
}

/// [`check`] with the placement search bounded by `budget` steps.
fn check_within(
    layout: &MigLayout,
    sku_key: &str,
    table: &MigTable,
    budget: u64,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let request: Vec<(String, u32)> = layout
        .profiles
        .iter()
        .map(|(name, count)| {
            (
                name.value.clone(),
                u32::try_from(count.value).unwrap_or(u32::MAX),
            )
        })
        .collect();
    match placement::place_within(table, &request, budget).result {
        Ok(_) => {}
        Err(errors) if matches!(errors.as_slice(), [PlacementError::TooComplex { .. }]) => {
            let reason = errors
                .first()
                .map(|error| error.render(table, &request))
                .unwrap_or_default();
            diagnostics.push(
                Diagnostic::error(
                    Code::MigPlacementTooComplex,
                    layout.name.span,
                    format!(
                        "tenantc could not decide whether layout `{}` fits one `{sku_key}` GPU",
                        layout.name.value
                    ),
                )
                .with_label(reason)
                .with_note(format!(
                    "the placement search stops after {budget} steps so that no declaration can stall the build"
                ))
                .with_help(format!(
                    "simplify the placement table of `{sku_key}` (fewer profiles with the same size but different starts), or split the layout"
                )),
            );
            return;
        }
        Err(errors) => {
            // An unplaceable layout is the finding; whether its table is inferred is then moot.
            let mut lines = errors.iter().map(|error| error.render(table, &request));
            let first = lines.next().unwrap_or_default();
            let mut diagnostic = Diagnostic::error(
                Code::MigLayoutUnplaceable,
                layout.name.span,
                format!(
                    "layout `{}` cannot be placed on one `{sku_key}` GPU",
                    layout.name.value
                ),
            )
            .with_label(first);
            for line in lines {
                diagnostic = diagnostic.with_note(line);
            }
            for error in &errors {
                if let PlacementError::MaxCount { profile, .. } = error
                    && let Some((name, _)) =
                        layout.profiles.iter().find(|(n, _)| &n.value == profile)
                {
                    diagnostic = diagnostic.with_secondary(name.span, "too many of this profile");
                }
            }
            diagnostics.push(diagnostic.with_help(format!(
                "choose a layout that fits {} compute slices and {} {} per GPU; docs/catalog.md lists the profiles of table `{}`",
                table.compute_slices,
                table.placement_units,
                table.axis_unit_name(),
                table.key
            )));
            return;
        }
    }
    check_media_engines(layout, sku_key, table, diagnostics);
    let inferred: Vec<&str> = layout
        .profiles
        .iter()
        .filter_map(|(name, _)| table.profile(&name.value))
        .filter(|profile| profile.inferred)
        .map(|profile| profile.name.as_str())
        .collect();
    if !inferred.is_empty() {
        diagnostics.push(
            Diagnostic::warning(
                Code::MigTableInferred,
                layout.name.span,
                format!(
                    "the MIG facts for {} on `{sku_key}` are inferred, not observed",
                    crate::diag::list_names(inferred.iter().copied())
                ),
            )
            .with_label("placement checked against an inferred table")
            .with_note(format!(
                "catalog confidence for table `{}`: {}",
                table.key, table.confidence
            ))
            .with_help(
                "confirm with `nvidia-smi mig -lgipp` on one node before relying on this layout",
            ),
        );
    }
}

/// Media-extension profiles claim the GPU's shared media engines (JPEG, OFA, and on the RTX PRO
/// 6000 all decoders and encoders with `+me.all`), which placement tables do not show: at most
/// one such instance fits, and `+me.all` only beside `-me` instances. The rule is inferred from
/// NVIDIA's engine notes, not observed, so it is a warning.
fn check_media_engines(
    layout: &MigLayout,
    sku_key: &str,
    table: &MigTable,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut media = 0_i64;
    let mut takes_all = false;
    let mut with_engines = 0_i64;
    for (name, count) in &layout.profiles {
        let Some(profile) = table.profile(&name.value) else {
            continue;
        };
        let is_media = profile.has_attribute("me") || profile.has_attribute("me.all");
        if is_media {
            media += count.value;
        }
        if profile.has_attribute("me.all") {
            takes_all = true;
        } else if !profile.has_attribute("-me") {
            with_engines += count.value;
        }
    }
    let all_conflicts = takes_all && (with_engines > 0 || media > 1);
    if media > 1 || all_conflicts {
        diagnostics.push(
            Diagnostic::warning(
                Code::MigMediaEnginesContended,
                layout.name.span,
                format!(
                    "layout `{}` asks for more media engines than one `{sku_key}` GPU has",
                    layout.name.value
                ),
            )
            .with_label(if takes_all {
                "`+me.all` takes every media engine; only `-me` instances fit beside it"
            } else {
                "media-extension (`+me`) instances share the GPU's single JPEG and OFA engines"
            })
            .with_note("placement tables do not show media engines; this rule follows NVIDIA's engine notes and is inferred")
            .with_help("keep one `+me` instance per GPU, and put only `-me` instances beside a `+me.all`"),
        );
    }
}

/// Checks the layout's profiles and profile combinations against the cell's driver branch.
pub(super) fn check_driver(
    cell: &crate::model::Cell,
    layout: &MigLayout,
    sku_key: &str,
    table: &MigTable,
    diagnostics: &mut Vec<Diagnostic>,
) {
    // A driver branch that could not be read is not checked against.
    let Some(driver_decl) = &cell.driver else {
        return;
    };
    let driver = driver_decl.value;
    for (name, _) in &layout.profiles {
        let Some(min) = table.profile(&name.value).and_then(|p| p.min_driver) else {
            continue;
        };
        if driver < min {
            diagnostics.push(
                Diagnostic::error(
                    Code::MigProfileNeedsNewerDriver,
                    name.span,
                    format!(
                        "`{}` on `{sku_key}` needs driver R{min} or newer",
                        name.value
                    ),
                )
                .with_label(format!("the cell runs R{driver}"))
                .with_secondary(driver_decl.span, "driver branch set here")
                .with_help(format!(
                    "upgrade the cell's driver to R{min}+, or use another profile"
                )),
            );
        }
    }
    for rule in &table.combination_rules {
        let present = rule.profiles.iter().all(|wanted| {
            layout
                .profiles
                .iter()
                .any(|(name, _)| &name.value == wanted)
        });
        if present && driver < rule.min_driver {
            diagnostics.push(
                Diagnostic::error(
                    Code::MigProfileNeedsNewerDriver,
                    layout.name.span,
                    format!(
                        "{} together on `{sku_key}` need driver R{} or newer",
                        crate::diag::list_names(rule.profiles.iter().map(String::as_str)),
                        rule.min_driver
                    ),
                )
                .with_label(format!("the cell runs R{driver}"))
                .with_secondary(driver_decl.span, "driver branch set here")
                .with_note(rule.source.clone())
                .with_help(format!(
                    "upgrade the cell's driver to R{}+, or split the layout",
                    rule.min_driver
                )),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::catalog::Catalog;
    use crate::diag::Code;
    use crate::model::{MigLayout, Spanned};
    use crate::source::{SourceMap, Span};
    use crate::validate::test_support::compile_files;

    /// A cell declaring the issue 6 adversarial model: `k` size-2 profiles at the even starts
    /// and one size-1 profile whose only start is 1, all used once in one layout.
    pub(crate) fn adversarial_cell(k: u32) -> String {
        let starts: Vec<String> = (0..k).map(|idx| (2 * idx).to_string()).collect();
        let mut profiles = String::new();
        let mut layout = String::new();
        for idx in 0..k {
            profiles.push_str(&format!(
                "            profile \"1g.{}gb\" compute=1 memory=1 max=1 size=2 {{ starts {}; }}\n",
                idx + 10,
                starts.join(" ")
            ));
            layout.push_str(&format!("profile \"1g.{}gb\" 1; ", idx + 10));
        }
        format!(
            "cell \"c1\" {{\n  cloud \"aws\" region=\"r\"\n  kubernetes \"1.33\"\n  driver \"570\"\n  gpu-model \"ADV-X\" {{\n    pci-ids \"0x1A2B10DE\"\n    sharing \"exclusive\" \"mig\"\n    mig compute-slices=16 memory-slices=16 placement-units={} {{\n{profiles}            profile \"1g.5gb\" compute=1 memory=1 max=1 size=1 {{ starts 1; }}\n    }}\n  }}\n  pool \"p\" {{\n    gpu \"ADV-X\"\n    nodes 1 gpus-per-node=1\n    sharing \"mig\"\n    mig-layout \"l\" {{ {layout}profile \"1g.5gb\" 1; }}\n  }}\n}}\n",
            2 * k + 1
        )
    }

    #[test]
    fn rejects_the_largest_adversarial_model_the_schema_allows_at_once() {
        // k = 15 fills the schema's bounds (16 compute slices, 31 of 32 units); the old search
        // did not finish it in 30 seconds.
        let result = compile_files(&[("cells/c1.kdl", &adversarial_cell(15))]);
        let codes: Vec<Code> = result.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, [Code::MigLayoutUnplaceable]);
        let label = &result.diagnostics[0].labels[0].message;
        assert!(
            label.contains("no allowed start positions avoid overlap"),
            "{label}"
        );
    }

    #[test]
    fn reports_a_layout_the_search_cannot_decide_within_its_budget() {
        let mut sources = SourceMap::new();
        let file = sources.add("cells/c1.kdl".to_owned(), "x".repeat(64));
        let span = |at: usize| Span::new(file, at..at + 1);
        let layout = MigLayout {
            span: span(0),
            name: Spanned::new("balanced".to_owned(), span(1)),
            nodes: None,
            profiles: ["3g.40gb", "2g.20gb", "1g.10gb"]
                .iter()
                .enumerate()
                .map(|(idx, name)| {
                    (
                        Spanned::new((*name).to_owned(), span(10 + idx)),
                        Spanned::new(1, span(20 + idx)),
                    )
                })
                .collect(),
        };
        let Some(table) = Catalog::builtin().table("H100-80GB") else {
            panic!("no H100-80GB table");
        };
        let mut diagnostics = Vec::new();
        super::check_within(&layout, "H100-80GB-SXM", table, 2, &mut diagnostics);
        assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
        let found = &diagnostics[0];
        assert_eq!(found.code, Code::MigPlacementTooComplex);
        assert_eq!(
            found.message,
            "tenantc could not decide whether layout `balanced` fits one `H100-80GB-SXM` GPU"
        );
        assert_eq!(found.labels[0].span, span(1));
        assert_eq!(
            found.labels[0].message,
            "3g.40gb + 2g.20gb + 1g.10gb was neither placed nor ruled out on H100-80GB within 2 search steps"
        );
        assert!(found.help.contains("split the layout"), "{}", found.help);
        // With the real budget the same layout is placed.
        let mut diagnostics = Vec::new();
        super::check(&layout, "H100-80GB-SXM", table, &mut diagnostics);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
    }

    fn layout_cell(gpu: &str, profiles: &str) -> String {
        format!(
            "cell \"c1\" {{\n  cloud \"aws\" region=\"r\"\n  kubernetes \"1.33\"\n  driver \"570\"\n  pool \"p\" {{\n    gpu \"{gpu}\"\n    nodes 1 gpus-per-node=8\n    sharing \"mig\"\n    mig-layout \"l\" {{ {profiles} }}\n  }}\n}}\n"
        )
    }

    #[test]
    fn rejects_3g_3g_1g_for_memory_slices() {
        let cell = layout_cell(
            "H100-80GB-SXM",
            "profile \"3g.40gb\" 2; profile \"1g.10gb\" 1",
        );
        let result = compile_files(&[("cells/c1.kdl", &cell)]);
        let codes: Vec<Code> = result.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, [Code::MigLayoutUnplaceable]);
        let label = &result.diagnostics[0].labels[0].message;
        assert!(label.contains("needs 9 of 8 memory slices"), "{label}");
    }

    #[test]
    fn accepts_4g_plus_3g() {
        let cell = layout_cell(
            "H100-80GB-SXM",
            "profile \"4g.40gb\" 1; profile \"3g.40gb\" 1",
        );
        assert!(
            compile_files(&[("cells/c1.kdl", &cell)])
                .diagnostics
                .is_empty()
        );
    }

    #[test]
    fn warns_when_the_table_is_inferred() {
        let cell = layout_cell("B200-180GB", "profile \"1g.23gb\" 7");
        let codes: Vec<Code> = compile_files(&[("cells/c1.kdl", &cell)])
            .diagnostics
            .iter()
            .map(|d| d.code)
            .collect();
        assert_eq!(codes, [Code::MigTableInferred]);
    }
}
