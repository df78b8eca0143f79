//! The temporaries a killed write or rekey can leave beside a container, found by name.

use std::fs;
use std::path::{Path, PathBuf};

/// Temporaries that a killed write or rekey of `container` can leave beside it: the hidden
/// `.NAME.*.paraes-tmp` that [`named_in`] and [`link_anonymous`] name, and older versions'
/// `.paraes-rekey.*`.
pub fn leftovers(container: &Path) -> Vec<PathBuf> {
    let dir = match container.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let Some(name) = container.file_name() else {
        return Vec::new();
    };
    let ours = crate::output::hidden_prefix(name);
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok())
        .filter(|entry| {
            let entry_name = entry.file_name();
            let entry_name = entry_name.to_string_lossy();
            entry_name.starts_with(".paraes-rekey.")
                || (entry_name.starts_with(&ours) && entry_name.ends_with(".paraes-tmp"))
        })
        .map(|entry| entry.path())
        .collect();
    found.sort();
    found
}

/// The warning about `stale` temporaries.
pub fn leftovers_warning(stale: &[PathBuf]) -> String {
    let names: Vec<String> = stale
        .iter()
        .map(|p| crate::error::one_line(&p.display().to_string()))
        .collect();
    format!(
        "{} temporary file(s) of an interrupted rekey or write lie beside this container ({}): remove them once no paraes runs there",
        stale.len(),
        names.join(", ")
    )
}
