//! `tenantc weights lock --all` and `tenantc weights lock --list FILE`: many lock entries from
//! one read of the project.
//!
//! Consumes: the project under the root, read and parsed once, and the requests: every declared
//! model with its bundle at `weights/<tenant>/<model>-<version>.sig.json` (`--all`), or the lines
//! of a list (`TENANT MODEL SOURCE [SIGNATURE]`). Produces: each tenant's `weights/<tenant>.lock`
//! with its new entries, one line per locked model and a summary on stdout.
//!
//! Invariants:
//! - All or nothing: if one request names nothing or one entry does not verify, no lock file
//!   is written, and every failure is printed, not only the first.
//! - Each entry is verified exactly as `tenantc weights lock` verifies one (the same
//!   `weights::lock_into`), against the lock as the earlier entries of the batch left it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use tenantc::load;
use tenantc::weights::{LockError, Material};

use super::disk;
use super::error::{Exit, Fatal};
use super::output::print_out;
use super::weights::{has_tenant_file, signed_source};

/// One model to lock, and where it was asked for (a line of the list).
struct Request {
    tenant: String,
    model: String,
    source: PathBuf,
    signature: Option<PathBuf>,
    line: Option<usize>,
}

/// `tenantc weights lock --all` or `--list FILE`.
pub fn lock_many(all: bool, list: Option<&Path>, root: &Path) -> Result<Exit, Fatal> {
    let loaded = load::load(root)
        .map_err(|error| Fatal::new(format!("cannot read {}: {error}", root.display())))?;
    let tenants = tenantc::read_tenants(&loaded.inputs);
    let requests = match list {
        Some(list) if !all => read_list(list)?,
        // `--all`: every declared model of every tenant, from its bundle at the documented place.
        _ => tenants
            .iter()
            .flat_map(|(name, tenant)| {
                tenant.models.iter().map(move |model| Request {
                    tenant: name.clone(),
                    model: model.name.value.clone(),
                    source: root.join(tenantc::weights::bundle_path(
                        name,
                        &model.name.value,
                        &model.version.value,
                    )),
                    signature: None,
                    line: None,
                })
            })
            .collect(),
    };
    if requests.is_empty() {
        return Err(Fatal::new(match list {
            Some(list) if !all => format!(
                "{} lists no model; write one `TENANT MODEL SOURCE [SIGNATURE]` per line",
                load::escape_str(&list.display().to_string())
            ),
            _ => format!(
                "no tenant under {} declares a model",
                root.join("tenants").display()
            ),
        }));
    }
    let mut material: Material = loaded
        .inputs
        .iter()
        .filter(|input| tenantc::weights::is_material(&input.path))
        .map(|input| (input.path.clone(), input.contents.clone()))
        .collect();
    let shown_list = list.map(|list| load::escape_str(&list.display().to_string()));
    let mut locked = Vec::new();
    let mut failures: Vec<(String, Exit)> = Vec::new();
    let mut changed: BTreeSet<String> = BTreeSet::new();
    for request in &requests {
        let at = match (&shown_list, request.line) {
            (Some(list), Some(line)) => format!("{list}:{line}: "),
            _ => String::new(),
        };
        let what = format!(
            "{at}{} {}",
            load::escape_str(&request.tenant),
            load::escape_str(&request.model)
        );
        let Some(declared) = tenants.get(&request.tenant) else {
            let failure = if has_tenant_file(&loaded, &request.tenant) {
                (
                    format!(
                        "{what}: the declaration of tenant `{}` has errors; fix what `tenantc check` reports first",
                        load::escape_str(&request.tenant)
                    ),
                    Exit::Errors,
                )
            } else {
                (
                    format!(
                        "{what}: tenant `{}` is not declared under {}",
                        load::escape_str(&request.tenant),
                        root.join("tenants").display()
                    ),
                    Exit::Failure,
                )
            };
            failures.push(failure);
            continue;
        };
        let (hashed, relative) =
            match signed_source(root, &request.source, request.signature.clone()) {
                Ok(source) => source,
                Err(fatal) => {
                    failures.push((format!("{what}: {}", fatal.message()), fatal.exit()));
                    continue;
                }
            };
        match tenantc::weights::lock_into(
            declared,
            &request.model,
            hashed,
            &relative,
            &mut material,
        ) {
            Ok(entry) => {
                changed.insert(tenantc::weights::lock_path(&request.tenant));
                locked.push(format!(
                    "locked {} {} {} ({} files, {}) in {}\n",
                    entry.name,
                    entry.version,
                    entry.digest,
                    entry.files.len(),
                    entry.signature.format,
                    tenantc::weights::lock_path(&request.tenant)
                ));
            }
            Err(error) => {
                let exit = match error {
                    LockError::Usage(_) => Exit::Failure,
                    LockError::NotVerified(_) => Exit::Errors,
                };
                failures.push((
                    format!("{what}: {}", load::escape_str(error.message())),
                    exit,
                ));
            }
        }
    }
    if !failures.is_empty() {
        for (failure, _) in &failures {
            eprintln!("error: {failure}");
        }
        let exit = if failures.iter().any(|(_, exit)| *exit == Exit::Failure) {
            Exit::Failure
        } else {
            Exit::Errors
        };
        let message = format!(
            "{} of {} models not locked; no lock file was written",
            failures.len(),
            requests.len()
        );
        return Err(match exit {
            Exit::Errors => Fatal::declarations(message),
            _ => Fatal::new(message),
        });
    }
    for path in &changed {
        let Some(bytes) = material.get(path) else {
            return Err(Fatal::bug(format!(
                "the lock {path} was made but is missing"
            )));
        };
        let file = root.join(path);
        disk::write_atomically(&file, bytes)
            .map_err(|error| Fatal::new(format!("cannot write {}: {error}", file.display())))?;
    }
    let mut text: String = locked.concat();
    text.push_str(&format!(
        "locked {} models in {} lock files\n",
        locked.len(),
        changed.len()
    ));
    Ok(print_out(&text))
}

/// The requests of a list file (`-`: stdin): one `TENANT MODEL SOURCE [SIGNATURE]` per line,
/// fields separated by white space; blank lines and lines starting with `#` are skipped. Paths
/// are read from the current folder, as on the command line.
fn read_list(list: &Path) -> Result<Vec<Request>, Fatal> {
    let shown = load::escape_str(&list.display().to_string());
    let text = if list == Path::new("-") {
        std::io::read_to_string(std::io::stdin())
            .map_err(|error| Fatal::new(format!("cannot read the list from stdin: {error}")))?
    } else {
        disk::read_text(list)
            .map_err(|error| Fatal::new(format!("cannot read {shown}: {error}")))?
    };
    let mut requests = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_number = index + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = trimmed.split_whitespace().collect();
        let (tenant, model, source, signature) = match fields.as_slice() {
            [tenant, model, source] => (tenant, model, source, None),
            [tenant, model, source, signature] => {
                (tenant, model, source, Some(PathBuf::from(signature)))
            }
            _ => {
                return Err(Fatal::new(format!(
                    "{shown}:{line_number}: expected `TENANT MODEL SOURCE [SIGNATURE]`, found {} fields",
                    fields.len()
                )));
            }
        };
        requests.push(Request {
            tenant: tenant.to_string(),
            model: model.to_string(),
            source: PathBuf::from(source),
            signature,
            line: Some(line_number),
        });
    }
    Ok(requests)
}
