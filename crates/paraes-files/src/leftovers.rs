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
                || entry_name
                    .strip_prefix(&ours)
                    .and_then(|rest| rest.strip_suffix(".paraes-tmp"))
                    .is_some_and(is_random_part)
        })
        .map(|entry| entry.path())
        .collect();
    found.sort();
    found
}

/// Whether `part` is what a hidden temporary's name holds between `.NAME.` and `.paraes-tmp`:
/// tempfile's 6 random letters and digits ([`crate::output`]'s `named_in`), or the 12 hex
/// digits of an unnamed file's linked name (`link_anonymous`). Anything else is another file's
/// (`.a.paraes.bak.XXXXXX.paraes-tmp` belongs to `a.paraes.bak`).
fn is_random_part(part: &str) -> bool {
    matches!(part.len(), 6 | 12) && part.bytes().all(|b| b.is_ascii_alphanumeric())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the temporaries of the container itself: `.NAME.` and the 6 or 12 characters of
    /// a random part (tempfile's, or the linked name's hex) before `.paraes-tmp`. Before,
    /// every name that began `.NAME.` was one, so the temporary of a file whose name merely
    /// begins with the container's (`a.paraes.bak`) was reported as this container's.
    #[test]
    fn only_the_containers_own_temporaries_are_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let ours = [
            ".a.paraes.Xy12Ab.paraes-tmp",
            ".a.paraes.0123456789ab.paraes-tmp",
        ];
        let others = [
            ".a.paraes.bak.Xy12Ab.paraes-tmp",
            ".a.paraes.old.0123456789ab.paraes-tmp",
            ".a.paraes..paraes-tmp",
            ".a.paraes.Xy1-Ab.paraes-tmp",
        ];
        for name in ours.iter().chain(&others) {
            fs::write(dir.path().join(name), b"").unwrap();
        }
        let found = leftovers(&dir.path().join("a.paraes"));
        let expected: Vec<PathBuf> = {
            let mut names: Vec<PathBuf> = ours.iter().map(|n| dir.path().join(n)).collect();
            names.sort();
            names
        };
        assert_eq!(found, expected);
    }
}

#[cfg(test)]
mod long_names {
    use super::*;
    use crate::output::{Output, OutputOptions, Reach};

    /// Names that share the first 200 bytes a hidden temporary repeats (`N.paraes` and
    /// `N.paraes.bak`, N that long) had one temporary prefix, so a temporary of one was
    /// reported as the other's; the cut names now carry a hash of the whole name.
    #[test]
    fn long_names_that_share_their_start_keep_their_own_temporaries() {
        let dir = tempfile::tempdir().unwrap();
        let stem = "n".repeat(200);
        let options = OutputOptions {
            reach: Reach::OtherMachines,
            ..OutputOptions::default()
        };
        let container = dir.path().join(format!("{stem}.paraes"));
        let other = dir.path().join(format!("{stem}.paraes.bak"));
        let unfinished = Output::create(Some(&other), &options).unwrap();
        let temp = unfinished.shared_path().expect("a named temporary");
        assert!(temp.file_name().unwrap().len() <= 255);
        assert_eq!(leftovers(&container), Vec::<PathBuf>::new());
        assert_eq!(leftovers(&other), vec![temp]);
    }
}
