//! The house rules over the whole workspace: no .rs file over 700 lines, no import cycle.
//!
//! Read from the sources; today's exceptions are allow-listed below, and the lists only shrink.
//! Sizes: every .rs file under src/, tests/, benches/, fuzz/, and crates/*/{src,tests,examples,
//! benches}, plus the build scripts (target/ directories skipped; a file's inline
//! `#[cfg(test)]` module counts). Cycles: the files of src/ and of each crates/*/src, joined by
//! their `crate::` and `super::` paths (in `use` lines or in code, brace groups expanded;
//! comments and everything from `#[cfg(test)] mod tests` on ignored), a path resolved to the
//! longest module file it names; a cycle is a strongly connected component of 2+ files (the
//! heuristic of shared/tools/cycles.py, nested brace groups expanded too). The binary's
//! top-level modules, each taken whole, have no cycle either (no exceptions).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most lines a source file may have.
const MAX_LINES: usize = 700;

/// Files allowed over `MAX_LINES`, each with its line count as its ceiling: a listed file may
/// shrink but not grow, and leaves the list once it is down to `MAX_LINES`. Empty since issue
/// 36 split the last one; never add one.
const LONG_FILES: &[(&str, usize)] = &[];

/// Import cycles allowed, each exactly as found (its files, sorted): a listed cycle may lose
/// files or go away (then its entry shrinks or goes), but no file may join one, and no new
/// cycle may appear. Empty since issue 36 broke the last two; never add one.
const CYCLES: &[&[&str]] = &[];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn no_file_is_over_700_lines() {
    let files = line_counts(root());
    assert!(files.len() > 150, "read only {} files", files.len());
    let problems = size_problems(&files, LONG_FILES);
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

#[test]
fn no_crate_has_an_import_cycle() {
    let (files, cycles) = import_cycles(root());
    assert!(files > 100, "read only {files} files");
    let problems = cycle_problems(&cycles, CYCLES);
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

/// The binary's top-level modules (`src/X.rs` or `src/X/`, each taken whole) depend on each
/// other without a cycle either; no exceptions.
#[test]
fn the_binary_s_top_level_modules_have_no_import_cycle() {
    let modules = modules(&root().join("src"));
    let top = |m: &Module| m.iter().take(1).cloned().collect::<Module>();
    let mut tops: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (from, to) in graph(&modules) {
        for m in to.iter().map(|m| top(m)).filter(|m| *m != top(from)) {
            tops.entry(m.clone()).or_default();
            tops.entry(top(from)).or_default().insert(m);
        }
    }
    assert!(tops.len() > 10, "read the modules: {tops:?}");
    let view = tops
        .iter()
        .map(|(m, to)| (m, to.iter().collect()))
        .collect();
    let cycles: Vec<String> = strongly_connected(&view)
        .iter()
        .map(|c| c.iter().map(|m| m.join("")).collect::<Vec<_>>().join(", "))
        .collect();
    assert!(
        cycles.is_empty(),
        "import cycle among the binary's modules [{}]: break it by moving the item they share \
         down into a module that imports neither, so the imports run one way",
        cycles.join("], [")
    );
}

/// The checks fail where they should: a planted long file and a planted cycle, and allow-list
/// entries that are no longer needed.
#[test]
fn the_checks_catch_a_long_file_a_cycle_and_a_stale_entry() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("crates/x/src/lib.rs", "mod a;\nmod b;\nmod c;\n");
    write("crates/x/src/a.rs", "use crate::{b::{B, other}, c};\n");
    write(
        "crates/x/src/b.rs",
        "// use crate::c;\npub fn f() { super::a::g() }\n",
    );
    write(
        "crates/x/src/c.rs",
        "#[cfg(test)]\nmod tests {\n    use crate::a;\n}\n",
    );
    write("crates/x/tests/long.rs", &"//\n".repeat(MAX_LINES + 2));
    write(
        "crates/x/target/debug/huge.rs",
        &"//\n".repeat(MAX_LINES + 1),
    );
    write("src/main.rs", "fn main() {}\n");

    let files = line_counts(dir.path());
    assert_eq!(files.len(), 6, "{files:?}");
    let problems = size_problems(&files, &[]);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("crates/x/tests/long.rs has 702 lines"),
        "{problems:?}"
    );
    assert!(size_problems(&files, &[("crates/x/tests/long.rs", 702)]).is_empty());
    let grown = size_problems(&files, &[("crates/x/tests/long.rs", 701)]);
    assert!(grown[0].contains("over its allowed 701"), "{grown:?}");
    let stale = size_problems(
        &files,
        &[("crates/x/tests/long.rs", 702), ("src/main.rs", 800)],
    );
    assert!(
        stale[0].contains("src/main.rs has 1 lines: remove"),
        "{stale:?}"
    );

    let (_, cycles) = import_cycles(dir.path());
    let found = vec![vec![
        "crates/x/src/a.rs".to_owned(),
        "crates/x/src/b.rs".to_owned(),
    ]];
    assert_eq!(cycles, found);
    assert!(cycle_problems(&cycles, &[])[0].contains("import cycle"));
    assert!(cycle_problems(&cycles, &[&["crates/x/src/a.rs", "crates/x/src/b.rs"]]).is_empty());
    let wider: &[&str] = &[
        "crates/x/src/a.rs",
        "crates/x/src/b.rs",
        "crates/x/src/c.rs",
    ];
    assert!(cycle_problems(&cycles, &[wider])[0].contains("shrank"));
    let gone = cycle_problems(&[], &[&["crates/x/src/a.rs", "crates/x/src/b.rs"]]);
    assert!(gone[0].contains("no longer a cycle"), "{gone:?}");
}

/// What is wrong with these files' sizes against the allow-list `allowed`, each with what to do.
fn size_problems(files: &[(String, usize)], allowed: &[(&str, usize)]) -> Vec<String> {
    let mut problems = Vec::new();
    let counts: BTreeMap<&str, usize> = files.iter().map(|(p, n)| (p.as_str(), *n)).collect();
    for (path, lines) in &counts {
        match allowed.iter().find(|(p, _)| p == path) {
            _ if *lines <= MAX_LINES => {}
            None => problems.push(format!(
                "{path} has {lines} lines, over {MAX_LINES}: split it by what it does (one \
                 concern per file), and move long inline tests to a sibling tests.rs"
            )),
            Some((_, ceiling)) if lines > ceiling => problems.push(format!(
                "{path} has {lines} lines, over its allowed {ceiling} (tests/house.rs \
                 LONG_FILES): an allow-listed file may shrink, never grow; move what you added \
                 (or more) into a file of its own, or long inline tests to a sibling tests.rs"
            )),
            Some(_) => {}
        }
    }
    for (path, _) in allowed {
        match counts.get(path) {
            None => problems.push(format!(
                "{path} is in tests/house.rs LONG_FILES but is gone: remove its entry"
            )),
            Some(lines) if *lines <= MAX_LINES => problems.push(format!(
                "{path} has {lines} lines: remove its entry from tests/house.rs LONG_FILES, so \
                 it stays at {MAX_LINES} or below"
            )),
            Some(_) => {}
        }
    }
    problems
}

/// What is wrong with the cycles found against the allow-list `allowed`, each with what to do.
fn cycle_problems(found: &[Vec<String>], allowed: &[&[&str]]) -> Vec<String> {
    let fix = "break it by moving the item they share down into a file that imports neither \
               (or into the lower one), so the imports run one way";
    let mut problems = Vec::new();
    let same = |cycle: &[String], entry: &[&str]| cycle.iter().eq(entry.iter());
    for cycle in found {
        let files = cycle.join(", ");
        if allowed.iter().any(|entry| same(cycle, entry)) {
            continue;
        }
        match allowed
            .iter()
            .find(|entry| cycle.iter().all(|f| entry.contains(&f.as_str())))
        {
            Some(entry) => problems.push(format!(
                "the import cycle [{}] shrank to [{files}]: replace its entry in tests/house.rs \
                 CYCLES with the smaller one",
                entry.join(", ")
            )),
            None => problems.push(format!(
                "import cycle among [{files}] (not in tests/house.rs CYCLES, or grown past its \
                 entry): {fix}"
            )),
        }
    }
    for entry in allowed {
        let within = |cycle: &&Vec<String>| cycle.iter().all(|f| entry.contains(&f.as_str()));
        if !found.iter().any(|cycle| same(cycle, entry)) && !found.iter().any(|c| within(&c)) {
            problems.push(format!(
                "[{}] is no longer a cycle: remove its entry from tests/house.rs CYCLES",
                entry.join(", ")
            ));
        }
    }
    problems
}

/// Every .rs file that the size rule covers, as (path relative to `root`, lines).
fn line_counts(root: &Path) -> Vec<(String, usize)> {
    let mut dirs: Vec<PathBuf> = ["src", "tests", "benches", "fuzz"]
        .map(|d| root.join(d))
        .into();
    let mut files: Vec<PathBuf> = vec![root.join("build.rs")];
    for krate in crates(root) {
        dirs.extend(["src", "tests", "examples", "benches"].map(|d| krate.join(d)));
        files.push(krate.join("build.rs"));
    }
    for dir in dirs {
        rs_files(&dir, &mut files);
    }
    let mut counted: Vec<(String, usize)> = files
        .iter()
        .filter(|path| path.is_file())
        .map(|path| {
            let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
            (relative(root, path), text.lines().count())
        })
        .collect();
    counted.sort();
    counted
}

/// The crates/* directories.
fn crates(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root.join("crates")) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// The .rs files under `dir`, target/ directories skipped, symbolic links not followed.
fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let entry = entry.unwrap();
        let (path, kind) = (entry.path(), entry.file_type().unwrap());
        if kind.is_dir() && entry.file_name() != "target" {
            rs_files(&path, out);
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn relative(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap();
    let parts: Vec<_> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect();
    parts.join("/")
}

/// The number of files read, and the import cycles of every crate's src/ (each sorted, and
/// sorted), as paths relative to `root`.
fn import_cycles(root: &Path) -> (usize, Vec<Vec<String>>) {
    let mut srcs = vec![root.join("src")];
    srcs.extend(crates(root).iter().map(|krate| krate.join("src")));
    let (mut read, mut cycles) = (0, Vec::new());
    for src in srcs.iter().filter(|src| src.is_dir()) {
        let modules = modules(src);
        read += modules.len();
        let graph = graph(&modules);
        for component in strongly_connected(&graph) {
            let mut files: Vec<String> = component
                .iter()
                .map(|m| relative(root, &modules[*m]))
                .collect();
            files.sort();
            cycles.push(files);
        }
    }
    cycles.sort();
    (read, cycles)
}

type Module = Vec<String>;

/// Each .rs file of a crate's src/ by its module path (`a/b.rs` and `a/b/mod.rs` are `a::b`;
/// lib.rs and main.rs the root, `[]`).
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut files = Vec::new();
    rs_files(src, &mut files);
    files.sort();
    let mut modules = BTreeMap::new();
    for path in files {
        let relative = relative(src, &path);
        let mut module: Module = relative
            .trim_end_matches(".rs")
            .split('/')
            .map(str::to_owned)
            .collect();
        if module.last().is_some_and(|last| last == "mod") {
            module.pop();
        }
        if module == ["lib"] || module == ["main"] {
            module.clear();
        }
        modules.insert(module, path);
    }
    modules
}

/// Which modules each module's code names (itself and the crate root left out).
fn graph(modules: &BTreeMap<Module, PathBuf>) -> BTreeMap<&Module, BTreeSet<&Module>> {
    let mut graph = BTreeMap::new();
    for (module, path) in modules {
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
        let mut uses = BTreeSet::new();
        for (base, parts) in paths(&code(&text)) {
            let mut target: Module = if base == "super" {
                module[..module.len().saturating_sub(1)].to_vec()
            } else {
                Vec::new()
            };
            target.extend(parts);
            // The longest prefix of the path that is a module file.
            let found = (0..=target.len())
                .rev()
                .find_map(|k| modules.get_key_value(&target[..k]));
            if let Some((named, _)) = found {
                if named != module && !named.is_empty() {
                    uses.insert(named);
                }
            }
        }
        graph.insert(module, uses);
    }
    graph
}

/// A file's code: everything before its `#[cfg(test)] mod tests`, line comments removed.
fn code(text: &str) -> String {
    let mut end = text.len();
    for (at, _) in text.match_indices("#[cfg(test)]") {
        if text[at + 12..].trim_start().starts_with("mod tests") {
            end = at;
            break;
        }
    }
    text[..end]
        .lines()
        .map(|line| line.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Every `crate::a::b` or `super::a::b` path in `code` as ("crate" or "super", [a, b]), brace
/// groups expanded (`crate::{a, b::{c, d}}` is `crate::a`, `crate::b::c`, `crate::b::d`).
fn paths(code: &str) -> Vec<(&'static str, Vec<String>)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let base = ["crate", "super"]
            .into_iter()
            .find(|b| bytes[at..].starts_with(b.as_bytes()));
        match base {
            Some(base) if at == 0 || !is_ident(bytes[at - 1]) => {
                let mut named = Vec::new();
                at = path_tail(bytes, at + base.len(), Vec::new(), &mut named);
                found.extend(named.into_iter().map(|parts| (base, parts)));
            }
            _ => at += 1,
        }
    }
    found
}

/// Reads `::a::b`, `::{...}` from `at` on, after the path `prefix`; pushes each whole path with
/// at least one part onto `out`; returns where the path ends.
fn path_tail(
    bytes: &[u8],
    mut at: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    while bytes[at..].starts_with(b"::") {
        let start = at + 2;
        match bytes.get(start) {
            Some(&c) if c.is_ascii_alphabetic() || c == b'_' => {
                let len = bytes[start..].iter().take_while(|c| is_ident(**c)).count();
                prefix.push(String::from_utf8_lossy(&bytes[start..start + len]).into_owned());
                at = start + len;
            }
            Some(b'{') => return group(bytes, start + 1, &prefix, out),
            _ => break,
        }
    }
    if !prefix.is_empty() {
        out.push(prefix);
    }
    at
}

/// Reads the items of a brace group from `at` (just inside its `{`) after the path `prefix`;
/// returns where the group ends (after its `}`).
fn group(bytes: &[u8], mut at: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    loop {
        while bytes
            .get(at)
            .is_some_and(|c| c.is_ascii_whitespace() || *c == b',')
        {
            at += 1;
        }
        match bytes.get(at) {
            None => return at,
            Some(b'}') => return at + 1,
            Some(&c) if c.is_ascii_alphabetic() || c == b'_' => {
                let len = bytes[at..].iter().take_while(|c| is_ident(**c)).count();
                let mut path = prefix.to_vec();
                path.push(String::from_utf8_lossy(&bytes[at..at + len]).into_owned());
                at = path_tail(bytes, at + len, path, out);
            }
            Some(b'{') => at = group(bytes, at + 1, prefix, out),
            Some(b'*') if !prefix.is_empty() => {
                out.push(prefix.to_vec());
                at += 1;
            }
            Some(_) => at += 1,
        }
        // Skip to this item's end (past `as name`).
        while bytes.get(at).is_some_and(|c| *c != b',' && *c != b'}') {
            at += 1;
        }
    }
}

/// The strongly connected components of 2+ modules (Tarjan's algorithm).
fn strongly_connected<'a>(
    graph: &BTreeMap<&'a Module, BTreeSet<&'a Module>>,
) -> Vec<Vec<&'a Module>> {
    struct Tarjan<'g, 'a> {
        graph: &'g BTreeMap<&'a Module, BTreeSet<&'a Module>>,
        index: BTreeMap<&'a Module, (usize, usize)>,
        stack: Vec<&'a Module>,
        out: Vec<Vec<&'a Module>>,
    }
    impl<'a> Tarjan<'_, 'a> {
        fn visit(&mut self, v: &'a Module) {
            let i = self.index.len();
            self.index.insert(v, (i, i));
            self.stack.push(v);
            let graph = self.graph;
            for &w in &graph[v] {
                let low = match self.index.get(w) {
                    None => {
                        self.visit(w);
                        self.index[w].1
                    }
                    Some(&(index, _)) if self.stack.contains(&w) => index,
                    Some(_) => continue,
                };
                let entry = self.index.get_mut(v).unwrap();
                entry.1 = entry.1.min(low);
            }
            if self.index[v].0 == self.index[v].1 {
                let at = self.stack.iter().rposition(|m| *m == v).unwrap();
                let component = self.stack.split_off(at);
                if component.len() > 1 {
                    self.out.push(component);
                }
            }
        }
    }
    let mut tarjan = Tarjan {
        graph,
        index: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !tarjan.index.contains_key(v) {
            tarjan.visit(v);
        }
    }
    tarjan.out
}
