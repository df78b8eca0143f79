//! ARCHITECTURE.md stays true: every path it names exists, and each "How to add" recipe names
//! exactly the files its worked example touches. The examples are the test-only engine
//! (`src/engines/reference.rs`), stanza kind (`stanza/test_key.rs`) and Python function
//! (`_recipe_example`); each file one touches carries a `recipe-example: KIND` marker comment,
//! and the recipe's "Example files:" line lists the same files.

use std::collections::BTreeSet;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn architecture() -> String {
    std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md")
}

/// Every backquoted word of `text` that reads as a path in the repository: it has a `/` or
/// a file extension, and no spaces, `::`, `*` or placeholders in capitals (`NAME`).
fn named_paths(text: &str) -> BTreeSet<String> {
    let mut paths = BTreeSet::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 0 || part.contains([' ', '*', '<', '(', '$', '=']) || part.contains("::") {
            continue;
        }
        let looks_like_file = [".rs", ".md", ".py", ".pyi", ".toml", ".sh", ".cu", ".json"]
            .iter()
            .any(|ext| part.ends_with(ext));
        let looks_like_dir = part.ends_with('/') && part.len() > 1;
        if !(looks_like_file || looks_like_dir) || !part.contains('/') {
            continue;
        }
        let placeholder = part
            .split(['/', '.', '_', '-'])
            .any(|piece| piece.len() > 1 && piece.chars().all(|c| c.is_ascii_uppercase()));
        if !placeholder {
            paths.insert(part.trim_start_matches("./").to_owned());
        }
    }
    paths
}

#[test]
fn every_path_architecture_md_names_exists() {
    let paths = named_paths(&architecture());
    assert!(
        paths.len() > 40,
        "read only {} paths: {paths:?}",
        paths.len()
    );
    let missing: Vec<&String> = paths
        .iter()
        .filter(|p| !root().join(p.as_str()).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

/// The files under the repository (sources of every crate, Python included) that carry
/// `recipe-example: KIND`.
fn marked(kind: &str) -> BTreeSet<String> {
    let marker = format!("recipe-example: {kind}");
    let mut found = BTreeSet::new();
    let mut stack = vec![root().to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                if !(name.starts_with('.') || name == "target" || name == "docs") {
                    stack.push(path);
                }
            } else if [".rs", ".py", ".pyi", ".toml"]
                .iter()
                .any(|e| name.ends_with(e))
            {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                if text.contains(&marker) {
                    let rel = path.strip_prefix(root()).expect("under the root");
                    found.insert(rel.to_string_lossy().into_owned());
                }
            }
        }
    }
    found
}

/// The files the recipe for `kind` lists in its "Example files (recipe-example: KIND):"
/// paragraph (up to the next blank line).
fn recipe_files(kind: &str) -> BTreeSet<String> {
    let text = architecture();
    let label = format!("Example files (recipe-example: {kind}):");
    let start = text
        .find(&label)
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no paragraph {label:?}"));
    let paragraph = text[start..].split("\n\n").next().unwrap_or_default();
    named_paths(paragraph)
}

#[test]
fn each_recipe_names_exactly_the_files_its_example_touches() {
    for kind in ["engine", "stanza-kind", "python-function"] {
        let listed = recipe_files(kind);
        let marked = marked(kind);
        assert!(
            !marked.is_empty(),
            "no file is marked recipe-example: {kind}"
        );
        assert_eq!(
            listed, marked,
            "the {kind} recipe in ARCHITECTURE.md lists other files than the example touches"
        );
    }
}

#[test]
fn the_path_reader_sees_paths_and_skips_placeholders_and_prose() {
    let read = named_paths(
        "`src/cli.rs` `crates/NAME/src/lib.rs` `a b/c.rs` `x.rs` `docs/` `paraes_core::Engine`",
    );
    assert_eq!(
        read,
        BTreeSet::from(["src/cli.rs".to_owned(), "docs/".to_owned()])
    );
}
