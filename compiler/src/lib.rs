//! tenantc: a build-time compiler for multi-tenant GPU fleets.
//!
//! Consumes: tenant and cell declarations (KDL v2 or YAML) as in-memory files.
//! Produces: a [`Compilation`]: every diagnostic of the run, sorted, and, when there is no error,
//! the output tree of per-cell Kubernetes manifests.
//!
//! The pipeline is `load` (disk, in the binary; [`compile_loaded`] takes its result) → the
//! [`intake`] of each file ([`parse`] → [`diag::allow`] → [`schema`]) → [`validate`] →
//! [`weights`] → resolve ([`plan`]) → [`lower`] → [`template`] → [`emit`] → the storage IAM
//! audit of `validate/audit.rs`, each stage a function from its typed input to its output and
//! findings, and every finding into one sink that decides what runs next and sorts and caps
//! them; see `ARCHITECTURE.md` for the stage map, the import table and the invariants.
//!
//! Invariant: [`compile`] is pure: no IO, no clock, no environment; the same inputs give the
//! same bytes.

pub mod catalog;
pub mod describe;
pub mod diag;
pub mod emit;
pub mod escape;
pub mod facts;
pub mod git;
pub mod hardware;
pub mod intake;
pub mod json_strict;
pub mod keyless;
pub mod kube;
pub mod layout;
pub mod limits;
pub mod load;
pub mod lower;
pub mod model;
pub mod names;
pub mod parse;
pub mod plan;
pub mod policy;
pub mod quantity;
pub mod report;
pub mod review;
pub mod schema;
pub mod source;
pub mod template;
#[cfg(test)]
mod testing;
pub mod validate;
pub mod weights;
pub mod what_if;

pub use layout::classify;
pub use load::InputFile;

use diag::Diagnostic;
use emit::OutputTree;
use layout::DeclKind;
use source::SourceMap;

/// The result of one compilation.
#[derive(Debug, Clone)]
pub struct Compilation {
    /// Every input file, for rendering diagnostics.
    pub sources: SourceMap,
    /// Every finding, sorted by file, position and code, at most as many per file as
    /// `limits.rs` allows; a `diagnostics-truncated` diagnostic after a file's last one counts
    /// the rest (see [`diag::truncate`]).
    pub diagnostics: Vec<Diagnostic>,
    /// The warnings an `allow` of the declarations silenced, in the order of `diagnostics`,
    /// each with its reason (see [`diag::allow`]).
    pub suppressed: Vec<diag::allow::Suppressed>,
    /// The resolved plan, present when the declarations validated (even if the plan's own
    /// checks then found errors).
    pub plan: Option<plan::Plan>,
    /// The validated declarations the plan was resolved from (what the storage IAM audit
    /// locates its findings at).
    pub fleet: model::Fleet,
    /// The output tree, present only when no diagnostic is an error.
    pub output: Option<OutputTree>,
    /// A broken invariant of the compiler itself (a bug, not a user mistake).
    pub internal_error: Option<String>,
}

impl Compilation {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// The declaration of tenant `name` among `inputs`, if a tenant file declares it readably
/// (for `tenantc weights lock`, which needs the model's version, prefix and signer).
pub fn read_tenant(inputs: &[InputFile], name: &str) -> Option<model::Tenant> {
    let mut found = None;
    read_tenant_files(inputs, |tenant| {
        if tenant.name.value == name {
            found = Some(tenant);
            false
        } else {
            true
        }
    });
    found
}

/// Every tenant whose declaration file reads as one, by name, each file parsed once (the first
/// file of a name wins, as in [`read_tenant`]): what a command that works on many tenants reads.
pub fn read_tenants(inputs: &[InputFile]) -> std::collections::BTreeMap<String, model::Tenant> {
    let mut tenants = std::collections::BTreeMap::new();
    read_tenant_files(inputs, |tenant| {
        tenants.entry(tenant.name.value.clone()).or_insert(tenant);
        true
    });
    tenants
}

/// Reads each tenant declaration file in `inputs` order and hands the tenant it declares to
/// `each`, until `each` returns false.
fn read_tenant_files(inputs: &[InputFile], mut each: impl FnMut(model::Tenant) -> bool) {
    let mut sources = SourceMap::new();
    for input in inputs {
        let Some((DeclKind::Tenant, Some(format))) = classify(&input.path) else {
            continue;
        };
        let Ok(text) = std::str::from_utf8(&input.contents) else {
            continue;
        };
        let file = sources.add(input.path.clone(), text.to_string());
        let text = sources.get(file).map(|f| f.text.as_str()).unwrap_or("");
        let (mut document, _) = parse::parse(file, text, format);
        let _ = diag::allow::extract(&mut document);
        if let (Some(schema::Declaration::Tenant(tenant)), _) =
            schema::read(&document, DeclKind::Tenant, &sources)
            && !each(*tenant)
        {
            return;
        }
    }
}

/// Compiles the given files.
///
/// A path with a name that [`load::name_problem`] refuses is reported as `path-unsafe` and the
/// file is not compiled, so only safe paths reach the output.
pub fn compile(inputs: &[InputFile]) -> Compilation {
    compile_with_findings(inputs, &[])
}

/// Compiles what [`load::load`] found: its files, and its findings about the files and folders
/// it refused, each as a diagnostic located at the refused path.
pub fn compile_loaded(loaded: &load::Loaded) -> Compilation {
    compile_with_findings(&loaded.inputs, &loaded.findings)
}

/// Compiles what [`load::load`] found, as [`compile_loaded`] does, taking it: the files' bytes
/// are dropped as soon as intake has read them into the source map, so they are not held beside
/// the output (what `tenantc build` and `check` call).
pub fn compile_loaded_owned(loaded: load::Loaded) -> Compilation {
    let intake = intake::read(&loaded.inputs, &loaded.findings);
    drop(loaded);
    compile_intake(intake, None)
}

/// Compiles what [`load::load`] found, as [`compile_loaded_owned`] does, but hands the files of
/// each cell to `parts` as soon as they are rendered and audited, on the thread that lowered
/// the cell and in no fixed order, so the output tree is never held whole; `output` then holds
/// only the rest of the tree (the kustomizations, the templates' objects, the fleet's reports
/// and the marker). Together, the parts and the rest are exactly the tree [`compile_loaded`]
/// returns, with the same findings; `output` is `None` exactly when it is `None` there, and the
/// parts handed over must then be discarded (what `tenantc build` and `check` call). One check
/// moves to the sink: a cell's file whose path another part or the rest also holds (a bug, which
/// [`compile_loaded`] reports as an internal error) is no longer seen here, so the sink refuses
/// a path handed twice, as `emit::fs::Staging` and `emit::fs::Comparing` do.
pub fn compile_streaming(loaded: load::Loaded, parts: &dyn emit::PartSink) -> Compilation {
    let intake = intake::read(&loaded.inputs, &loaded.findings);
    drop(loaded);
    compile_intake(intake, Some(parts))
}

/// The pipeline of `ARCHITECTURE.md`: intake, then each stage as a function from its typed
/// input to its output and findings, every finding into one [`Sink`], which decides what runs
/// next and sorts and caps them.
fn compile_with_findings(inputs: &[InputFile], refused: &[load::Finding]) -> Compilation {
    compile_intake(intake::read(inputs, refused), None)
}

/// [`compile_with_findings`] after intake (load's findings → parse → allow → schema, file by
/// file, which `intake` is).
fn compile_intake(
    intake: (intake::Intake, Vec<Diagnostic>),
    parts: Option<&dyn emit::PartSink>,
) -> Compilation {
    let catalog = catalog::Catalog::builtin();
    let mut sink = Sink::default();
    let intake::Intake {
        sources,
        declarations,
        unreadable,
        material,
        templates,
        allows,
    } = sink.take(intake);
    // Templates are parsed whatever the declarations hold, so a syntax error shows at once.
    sink.report(template::check_syntax(&templates, &sources));
    let fleet = sink.take(validate::validate(declarations, &unreadable, catalog));
    // Weights and resolve run only on a fleet that validated: their checks assume sound
    // references. A model that fails verification is an error and keeps the tree from being
    // written like any other, but the plan is still resolved (for `describe` and the checks).
    let plan = sink.clean().then(|| {
        let verified = sink.take(weights::verify(&fleet, &material));
        sink.take(plan::resolve(&fleet, &verified, &sources, catalog))
    });
    // The signing material is read only by the weights stage.
    drop(material);
    // Every check has reported: silence what the declarations acknowledge, then sort and cap.
    let suppressed = sink.allow(&allows, &sources);
    // lower → template → emit → audit, only when nothing is an error.
    let mut output = None;
    let mut internal_error = None;
    if let Some(plan) = plan.as_ref().filter(|_| sink.clean()) {
        match build(plan, &fleet, &templates, &sources, parts) {
            Ok(built) => output = sink.take_late(built, &sources),
            Err(error) => internal_error = Some(error.to_string()),
        }
    }
    Compilation {
        sources,
        diagnostics: sink.diagnostics,
        suppressed,
        plan,
        fleet,
        output,
        internal_error,
    }
}

/// The stages after the checks: lowers the plan, renders the platform templates into the
/// manifest, writes it as a tree and audits the tree's storage IAM, each only when the one
/// before found no error. The tree is withheld when any of them found one.
///
/// Each cell's objects and files are rendered as soon as the cell is lowered, on the thread that
/// lowered it, and the cell's IAM documents audited there, keeping only the keys a template
/// object could collide with; so the lowered objects of the whole fleet (their texts, folders
/// and sources, about as large again as the output) are never held beside each other. With
/// `parts`, a cell's files go there at once, so the fleet's files are not held either. The bytes
/// and findings are those of `lower` → `template` → `emit` → audit run one after the other on
/// the whole manifest.
fn build(
    plan: &plan::Plan,
    fleet: &model::Fleet,
    templates: &[template::Template],
    sources: &SourceMap,
    parts: Option<&dyn emit::PartSink>,
) -> Result<(Option<OutputTree>, Vec<Diagnostic>), emit::InternalError> {
    let cells = lower::lower_each(plan, |mut cell| {
        let keys = template::emitted_keys(&cell);
        let mut rendered = emit::Rendered::default();
        rendered.add_objects(std::mem::take(&mut cell.objects))?;
        rendered.add_extras(std::mem::take(&mut cell.extras))?;
        // The security audit judges the bytes that would be written.
        let audit = validate::audit::audit(rendered.files(), plan, fleet);
        if let Some(parts) = parts {
            let files = rendered.take_files()?;
            // A cell whose audit fails is not handed over: the tree is withheld anyway.
            if !audit.iter().any(Diagnostic::is_error) {
                parts.take(files);
            }
        }
        Ok((rendered, keys, cell.folders, audit))
    })?;
    let mut rendered = emit::Rendered::default();
    let mut emitted = std::collections::BTreeSet::new();
    let mut audit = Vec::new();
    // The rest of the output: the cells' folders, then the fleet's reports, as `lower::lower`
    // joins them.
    let mut rest = emit::Manifest::default();
    for (cell_rendered, keys, folders, cell_audit) in cells {
        rendered.merge(cell_rendered)?;
        emitted.extend(keys);
        rest.folders.extend(folders);
        audit.extend(cell_audit);
    }
    let fleet_files = lower::fleet_manifest(plan);
    emitted.extend(template::emitted_keys(&fleet_files));
    rendered.add_objects(fleet_files.objects)?;
    rest.extras.extend(fleet_files.extras);
    rest.folders.extend(fleet_files.folders);
    let findings = template::apply_beside(&mut rest, emitted, plan, templates, sources);
    if findings.iter().any(Diagnostic::is_error) {
        return Ok((None, findings));
    }
    let mut rest_rendered = emit::Rendered::default();
    rest_rendered.add_objects(std::mem::take(&mut rest.objects))?;
    rest_rendered.add_extras(std::mem::take(&mut rest.extras))?;
    audit.extend(validate::audit::audit(rest_rendered.files(), plan, fleet));
    rendered.merge(rest_rendered)?;
    let tree = rendered.finish(&rest.folders, Vec::new())?;
    let mut findings = findings;
    findings.extend(audit);
    let tree = (!findings.iter().any(Diagnostic::is_error)).then_some(tree);
    Ok((tree, findings))
}

/// Where every stage's findings go: it keeps them, says whether the next stage may run, and is
/// the one place that sorts them by file, position and code and caps each file's share
/// ([`diag::truncate`]).
#[derive(Debug, Default)]
struct Sink {
    diagnostics: Vec<Diagnostic>,
}

impl Sink {
    /// Keeps a stage's findings and hands on its output.
    fn take<T>(&mut self, (output, findings): (T, Vec<Diagnostic>)) -> T {
        self.diagnostics.extend(findings);
        output
    }

    /// Keeps the findings of a stage without other output.
    fn report(&mut self, findings: Vec<Diagnostic>) {
        self.diagnostics.extend(findings);
    }

    /// Whether no finding so far is an error, so that the next stage may run.
    fn clean(&self) -> bool {
        !self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Applies the declarations' `allow` entries to the warnings of the checks (an allow is
    /// reported unused only when every check ran, that is when nothing is an error), then
    /// settles. Returns the silenced warnings, in the order of the sorted findings.
    fn allow(
        &mut self,
        allows: &[diag::allow::Allow],
        sources: &SourceMap,
    ) -> Vec<diag::allow::Suppressed> {
        diag::sort(&mut self.diagnostics, sources);
        let report_unused = self.clean();
        let (diagnostics, suppressed) =
            diag::allow::apply(std::mem::take(&mut self.diagnostics), allows, report_unused);
        self.diagnostics = diagnostics;
        self.settle(sources);
        suppressed
    }

    /// Keeps the output and findings of a stage after the `allow` entries were applied, and
    /// settles again when it found anything.
    fn take_late<T>(&mut self, stage: (T, Vec<Diagnostic>), sources: &SourceMap) -> T {
        let found = !stage.1.is_empty();
        let output = self.take(stage);
        if found {
            self.settle(sources);
        }
        output
    }

    /// Sorts every finding and caps each file's share; the hidden findings are counted, and
    /// still fail the run.
    fn settle(&mut self, sources: &SourceMap) {
        let mut diagnostics = std::mem::take(&mut self.diagnostics);
        diag::sort(&mut diagnostics, sources);
        self.diagnostics = diag::truncate(diagnostics);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Code;

    #[test]
    fn an_invalid_byte_after_a_byte_order_mark_is_located_where_the_reader_sees_it() {
        for (contents, line_col) in [
            (&b"\xef\xbb\xbfab\xff"[..], (1, 3)),
            (&b"ab\xff"[..], (1, 3)),
            (&b"\xef\xbb\xbfa\nb\xffc"[..], (2, 2)),
        ] {
            let compilation = compile(&[InputFile {
                path: "tenants/t.kdl".into(),
                contents: contents.to_vec(),
            }]);
            let diagnostic = compilation
                .diagnostics
                .iter()
                .find(|diagnostic| diagnostic.code == Code::FileNotUtf8)
                .unwrap();
            let span = diagnostic.labels.first().unwrap().span;
            let file = compilation.sources.get(span.file).unwrap();
            assert_eq!(file.line_col(span.start as usize), line_col, "{contents:?}");
        }
    }
}
