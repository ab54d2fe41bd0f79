//! Platform templates: the platform team's own per-tenant and per-cell objects.
//!
//! Consumes: the templates under `templates/` (`templates/tenant/<name>.yaml.j2`, rendered once
//! per tenant per cell it runs in, and `templates/cell/<name>.yaml.j2`, rendered once per cell),
//! the plan, and the manifest `lower` made from it.
//! Produces: the rendered objects added to the manifest (a tenant's in
//! `<cell>/tenants/<tenant>/templates/<namespace>/`, a cell's in
//! `<cell>/templates/<namespace>/`, both listed in their kustomizations), or diagnostics located
//! in the template: `template-syntax`, `template-render`, `template-output-invalid` and
//! `template-object-forbidden`.
//!
//! Templates are minijinja templates with strict undefined values, no loader (an `include`
//! finds only other templates of `templates/`), no auto-escaping, bounded fuel and output, and
//! the variables of `context.rs` (`docs/templates.md` lists them).
//! The rendered text is read with the declarations' YAML parser (several documents allowed;
//! anchors, aliases and tags refused), each document is checked by `check.rs` (an allowed core
//! kind, known fields, a name, a namespace the scope may write, no object tenantc emits) and
//! written through the canonical YAML writer, never as the template's text.
//!
//! Invariants: pure and deterministic (templates, cells and tenants are walked in sorted order);
//! no template can place an object outside its tenant's own namespaces (a tenant template) or
//! in a tenant's namespace (a cell template), create a cluster-scoped object or a kind outside
//! the allowlist, or replace an object tenantc emits; every finding points into the template.

mod check;
pub mod context;
mod spans;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use minijinja::{Environment, UndefinedBehavior};

use crate::diag::{Code, Diagnostic};
use crate::emit::{Manifest, Object};
use crate::layout::TemplateScope;
use crate::limits::MAX_FILE_BYTES;
use crate::plan::{CellPlan, Plan, TenantPlan};
use crate::source::{FileId, SourceMap, Span};

pub use check::{ObjectKey, TemplateKind};

/// How many instructions one rendering may run before it is stopped.
pub const MAX_FUEL: u64 = 1_000_000;

/// How deep macros, includes and loops may nest in one rendering.
const MAX_RECURSION: usize = 64;

/// One loaded template.
#[derive(Debug, Clone)]
pub struct Template {
    /// Its path, such as `templates/tenant/chargeback.yaml.j2`.
    pub path: String,
    /// Its entry in the source map, which holds its text.
    pub file: FileId,
    /// What it is rendered for.
    pub scope: TemplateScope,
}

/// The template environment: every template that parsed, no loader, strict undefined values,
/// no auto-escaping, bounded fuel and recursion.
fn environment(
    templates: &[Template],
    sources: &SourceMap,
) -> (Environment<'static>, Vec<Diagnostic>) {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.set_fuel(Some(MAX_FUEL));
    env.set_recursion_limit(MAX_RECURSION);
    env.set_debug(true);
    let mut diagnostics = Vec::new();
    for template in templates {
        let text = sources
            .get(template.file)
            .map(|file| file.text.clone())
            .unwrap_or_default();
        if let Err(error) = env.add_template_owned(template.path.clone(), text) {
            diagnostics.push(
                Diagnostic::error(
                    Code::TemplateSyntax,
                    error_span(&error, template.file, sources),
                    format!("template does not parse: {}", detail(&error)),
                )
                .with_label("here")
                .with_help(
                    "write the template in Jinja syntax as minijinja reads it; see docs/templates.md",
                ),
            );
        }
    }
    (env, diagnostics)
}

/// Parses every template and reports those that do not, before anything is rendered, so a
/// syntax error is reported even when the declarations have errors.
pub fn check_syntax(templates: &[Template], sources: &SourceMap) -> Vec<Diagnostic> {
    environment(templates, sources).1
}

/// The message of a minijinja error without its debug dump, lowercase and without a final
/// period.
fn detail(error: &minijinja::Error) -> String {
    let kind = error.kind().to_string();
    let text = match error.detail() {
        Some(detail) => format!("{kind}: {detail}"),
        None => kind,
    };
    let mut text = text.trim_end_matches('.').to_string();
    if let Some(first) = text.get(..1) {
        let lower = first.to_lowercase();
        text.replace_range(..1, &lower);
    }
    text
}

/// Where a minijinja error points in its template: its byte range when minijinja knows it,
/// else the start of its line, else the template's start.
fn error_span(error: &minijinja::Error, file: FileId, sources: &SourceMap) -> Span {
    let Some(source) = sources.get(file) else {
        return Span::new(file, 0..0);
    };
    let len = source.text.len();
    if let Some(range) = error.range()
        && range.start <= range.end
        && range.end <= len
        && source.text.is_char_boundary(range.start)
        && source.text.is_char_boundary(range.end)
    {
        return Span::new(file, range);
    }
    let start = error
        .line()
        .and_then(|line| source.line_range(line.saturating_sub(1)))
        .map_or(0, |range| range.start);
    Span::new(file, start..start)
}

/// A writer that refuses to hold more than [`MAX_FILE_BYTES`], so a template's output is bounded
/// like a declaration file.
struct Capped(Vec<u8>);

impl Write for Capped {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let cap = usize::try_from(MAX_FILE_BYTES).unwrap_or(usize::MAX);
        if self.0.len().saturating_add(bytes.len()) > cap {
            return Err(std::io::Error::other("output too large"));
        }
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Renders every template for every cell and tenant of the plan and adds the objects to the
/// manifest; returns the findings (the manifest must not be emitted if any is an error).
pub fn apply(
    manifest: &mut Manifest,
    plan: &Plan,
    templates: &[Template],
    sources: &SourceMap,
) -> Vec<Diagnostic> {
    let emitted = emitted_keys(manifest);
    apply_beside(manifest, emitted, plan, templates, sources)
}

/// The keys of the objects of `manifest` that a template object could collide with: those of
/// the kinds a template may create ([`TemplateKind`]), which is every key [`apply`] compares.
pub fn emitted_keys(manifest: &Manifest) -> BTreeSet<ObjectKey> {
    check::emitted_keys(manifest)
}

/// [`apply`] beside objects that were already rendered, whose keys ([`emitted_keys`]) the
/// caller kept: the template objects are added to `manifest`, which holds the rest of the
/// output (its folders and extras) but not those objects.
///
/// Cells are rendered on their own, in parallel on the current rayon pool (an object's key
/// holds its cell, so a rendering is compared only with the keys of its own cell), and joined
/// in the plan's cell order; so the objects and findings are the same on any number of threads.
pub fn apply_beside(
    manifest: &mut Manifest,
    emitted: BTreeSet<ObjectKey>,
    plan: &Plan,
    templates: &[Template],
    sources: &SourceMap,
) -> Vec<Diagnostic> {
    use rayon::prelude::*;
    if templates.is_empty() {
        return Vec::new();
    }
    let (env, mut diagnostics) = environment(templates, sources);
    if !diagnostics.is_empty() {
        return diagnostics;
    }
    let mut sorted: Vec<&Template> = templates.iter().collect();
    sorted.sort_by(|left, right| left.path.cmp(&right.path));
    let mut emitted_by_cell = keys_by_cell(emitted);
    let cells: Vec<(&CellPlan, BTreeSet<ObjectKey>)> = plan
        .cells
        .iter()
        .map(|cell| {
            let keys = emitted_by_cell.remove(&cell.name).unwrap_or_default();
            (cell, keys)
        })
        .collect();
    let rendered: Vec<CellRendered> = cells
        .into_par_iter()
        .map(|(cell, mut emitted)| apply_cell(&env, cell, &sorted, sources, &mut emitted))
        .collect();
    for (cell, rendered) in plan.cells.iter().zip(rendered) {
        if rendered.cell_has_templates
            && let Some((children, _)) = manifest.folders.get_mut(&cell.name)
        {
            children.insert(crate::layout::TEMPLATES.to_string());
        }
        manifest.objects.extend(rendered.objects);
        diagnostics.extend(rendered.diagnostics);
    }
    dedup(&mut diagnostics);
    diagnostics
}

/// What the templates made for one cell: its objects (the cell templates' first), whether a
/// cell template made any, and the findings, in rendering order.
struct CellRendered {
    objects: Vec<Object>,
    cell_has_templates: bool,
    diagnostics: Vec<Diagnostic>,
}

/// The keys of `emitted` grouped by their cell, each group sorted as in `emitted`.
fn keys_by_cell(emitted: BTreeSet<ObjectKey>) -> BTreeMap<String, BTreeSet<ObjectKey>> {
    let mut groups: BTreeMap<String, Vec<ObjectKey>> = BTreeMap::new();
    for key in emitted {
        groups.entry(key.0.clone()).or_default().push(key);
    }
    groups
        .into_iter()
        .map(|(cell, keys)| (cell, keys.into_iter().collect()))
        .collect()
}

/// Renders every cell template for `cell`, then every tenant template for each of its tenants,
/// comparing each object with `emitted` (the keys of the cell's objects so far) and adding it.
fn apply_cell(
    env: &Environment<'static>,
    cell: &CellPlan,
    sorted: &[&Template],
    sources: &SourceMap,
    emitted: &mut BTreeSet<ObjectKey>,
) -> CellRendered {
    let mut objects = Vec::new();
    let mut diagnostics = Vec::new();
    for template in sorted.iter().filter(|t| t.scope == TemplateScope::Cell) {
        let ctx = context::CellContext {
            cell: context::cell_view(cell),
        };
        let target = Target {
            cell,
            tenant: None,
            template,
        };
        if let Some(rendered) = render(env, template, &ctx, sources, &target, &mut diagnostics) {
            check::place(
                &mut objects,
                &rendered,
                &target,
                sources,
                emitted,
                &mut diagnostics,
            );
        }
    }
    let cell_has_templates = !objects.is_empty();
    for tenant in &cell.tenants {
        for template in sorted.iter().filter(|t| t.scope == TemplateScope::Tenant) {
            let ctx = context::TenantContext {
                tenant: context::tenant_view(tenant, cell),
                cell: context::cell_view(cell),
            };
            let target = Target {
                cell,
                tenant: Some(tenant),
                template,
            };
            if let Some(rendered) = render(env, template, &ctx, sources, &target, &mut diagnostics)
            {
                check::place(
                    &mut objects,
                    &rendered,
                    &target,
                    sources,
                    emitted,
                    &mut diagnostics,
                );
            }
        }
    }
    CellRendered {
        objects,
        cell_has_templates,
        diagnostics,
    }
}

/// One rendering: which template, for which cell and (for a tenant template) tenant.
pub(crate) struct Target<'a> {
    /// The cell.
    pub cell: &'a CellPlan,
    /// The tenant, for a tenant template.
    pub tenant: Option<&'a TenantPlan>,
    /// The template.
    pub template: &'a Template,
}

impl Target<'_> {
    /// The note that says which rendering a finding comes from.
    pub fn note(&self) -> String {
        match self.tenant {
            Some(tenant) => format!(
                "rendered for tenant `{}` in cell `{}`",
                tenant.name, self.cell.name
            ),
            None => format!("rendered for cell `{}`", self.cell.name),
        }
    }
}

/// Renders one template; a failure is a `template-render` finding at the failing expression.
fn render<S: serde::Serialize>(
    env: &Environment<'static>,
    template: &Template,
    ctx: &S,
    sources: &SourceMap,
    target: &Target<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<(String, spans::SpanMap)> {
    let compiled = env.get_template(&template.path).ok()?;
    let ctx = minijinja::Value::from(minijinja::value::Serde(ctx));
    // The first rendering is bounded in size; the second, the same text, records where each
    // piece of it came from.
    let mut out = Capped(Vec::new());
    let result = compiled
        .render_captured_to(ctx.clone(), &mut out)
        .and_then(|_| compiled.render_with_spans(ctx));
    match result {
        Ok((text, spans)) => Some((text, spans::SpanMap::new(spans))),
        Err(error) => {
            let message = if error.kind() == minijinja::ErrorKind::WriteFailure {
                format!("template renders more than the {MAX_FILE_BYTES} bytes a file may hold")
            } else {
                format!("template cannot be rendered: {}", detail(&error))
            };
            // An error inside an included template points at that template.
            let file = error
                .name()
                .and_then(|name| env.get_template(name).ok().map(|_| name))
                .and_then(|name| sources.iter().find(|(_, file)| file.path == name))
                .map_or(template.file, |(id, _)| id);
            diagnostics.push(
                Diagnostic::error(
                    Code::TemplateRender,
                    error_span(&error, file, sources),
                    message,
                )
                .with_label("fails here")
                .with_note(target.note())
                .with_help(
                    "use only the variables docs/templates.md lists; give optional ones a \
                         default with `| default(…)`",
                ),
            );
            None
        }
    }
}

/// Drops repeated findings: a template that fails the same way for every tenant is reported
/// once, with the note of the first rendering.
fn dedup(diagnostics: &mut Vec<Diagnostic>) {
    let mut seen = BTreeSet::new();
    diagnostics.retain(|diagnostic| {
        let span = diagnostic
            .primary_span()
            .map(|span| (span.file, span.start, span.end));
        seen.insert((diagnostic.code, span, diagnostic.message.clone()))
    });
}

#[cfg(test)]
mod tests;
