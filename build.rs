//! Build script of the `paraes` binary: records the git commit the binary was built from as
//! `PARAES_GIT_COMMIT` (12 hex digits, `-dirty` when the sources differ from it, `unknown`
//! without git or outside a git checkout), so `paraes bench` documents can say what measured.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The files and folders whose contents make the binary: a change there can make the build
/// dirty (documentation and test changes do not change what is measured).
const SOURCES: [&str; 6] = [
    "src",
    "crates",
    "kernels",
    "Cargo.toml",
    "Cargo.lock",
    "build.rs",
];

/// `git ARGS` in the package folder; `None` when git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// Asks cargo to rerun this script when `path` (relative to `dir`, or absolute) changes, if it
/// exists (a missing path would make cargo rerun it on every build).
fn watch(dir: &Path, path: &str) {
    let path = dir.join(path);
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    for source in SOURCES {
        watch(&dir, source);
    }
    let commit = git(&dir, &["rev-parse", "--short=12", "HEAD"]);
    if commit.is_some() {
        // HEAD (a file of its own in a worktree), the branch it points to, and the packed refs
        // and index that commits and checkouts rewrite.
        let mut paths = vec!["HEAD".to_string(), "packed-refs".into(), "index".into()];
        if let Some(reference) = git(&dir, &["symbolic-ref", "-q", "HEAD"]) {
            paths.push(reference);
        }
        for path in paths {
            if let Some(file) = git(&dir, &["rev-parse", "--git-path", &path]) {
                watch(&dir, &file);
            }
        }
    }
    let version = match commit {
        Some(commit) if !commit.is_empty() => {
            let mut args = vec!["status", "--porcelain", "--"];
            args.extend(SOURCES);
            match git(&dir, &args) {
                Some(status) if status.is_empty() => commit,
                Some(_) => format!("{commit}-dirty"),
                None => format!("{commit}-unknown-status"),
            }
        }
        _ => "unknown".to_string(),
    };
    println!("cargo:rustc-env=PARAES_GIT_COMMIT={version}");
}
