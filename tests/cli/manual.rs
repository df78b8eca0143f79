//! The manual and the text around it (issue 39): `paraes man --dir` writes a page per
//! subcommand with every option its `--help` lists, and the top page names only pages that
//! exist; README's install lines for completions and pages run as written in a fresh home;
//! README's quick start leaves nothing in the checkout that git would show; `dec --help` says
//! what `--show-data-key` prints for each format version.

use std::fs;
use std::process::{Command, Stdio};

use crate::common::{assert_success, bin, Scratch};

/// The subcommands `paraes --help` lists (clap's `help` aside).
fn subcommands() -> Vec<String> {
    let out = Command::new(bin()).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let listed = help
        .split("Commands:\n")
        .nth(1)
        .expect("a Commands section")
        .split("\n\n")
        .next()
        .unwrap()
        .to_owned();
    listed
        .lines()
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The long options `paraes SUB --help` lists.
fn long_options(sub: &str) -> Vec<String> {
    let out = Command::new(bin()).args([sub, "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut longs: Vec<String> = help
        .lines()
        // Option headers are indented two spaces (six without a short flag); their
        // descriptions ten.
        .filter(|line| line.len() - line.trim_start().len() <= 6)
        .map(str::trim_start)
        .filter(|line| line.starts_with('-'))
        .filter_map(|line| {
            line.split([' ', ',', '='])
                .find(|word| word.starts_with("--"))
                .map(str::to_owned)
        })
        .filter(|long| long != "--help")
        .collect();
    longs.dedup();
    longs
}

#[test]
fn man_dir_writes_a_page_per_subcommand_with_all_its_options() {
    let s = Scratch::new();
    let out = Command::new(bin())
        .args(["man", "--dir"])
        .arg(s.path("man/man1"))
        .output()
        .unwrap();
    assert_success(&out, "man --dir");
    assert!(long_options("dec").contains(&"--range".to_owned()));
    let subs = subcommands();
    assert!(subs.len() >= 10, "{subs:?}");
    for sub in &subs {
        let page = fs::read_to_string(s.path(&format!("man/man1/paraes-{sub}.1")))
            .unwrap_or_else(|e| panic!("paraes-{sub}.1: {e}"));
        let options = longs_in_roff(&page);
        for long in long_options(sub) {
            assert!(options.contains(&long), "paraes-{sub}.1 lacks {long}");
        }
    }
    let top = fs::read_to_string(s.path("man/man1/paraes.1")).unwrap();
    for range in ["--range", "--recursive"] {
        let page = fs::read_to_string(s.path(if range == "--range" {
            "man/man1/paraes-dec.1"
        } else {
            "man/man1/paraes-enc.1"
        }))
        .unwrap();
        assert!(longs_in_roff(&page).contains(&range.to_owned()));
    }
    // Every page the top page names (NAME(1)) is one that was written.
    let named: Vec<&str> = top
        .match_indices("(1)")
        .map(|(at, _)| {
            let before = &top[..at];
            &before[before.rfind(['\n', ' ']).map_or(0, |i| i + 1)..]
        })
        .collect();
    assert!(!named.is_empty(), "{top}");
    for name in named {
        let file = format!("man/man1/{}.1", name.replace("\\-", "-"));
        assert!(
            s.exists(&file),
            "paraes.1 names {name}, which is not written"
        );
    }
    // Without --dir, paraes(1) on standard output, as before.
    let out = Command::new(bin()).arg("man").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), top);
}

/// The long options a page describes (`\fB\-\-name\fR` in roff), as `--name`.
fn longs_in_roff(page: &str) -> Vec<String> {
    page.split("\\fB\\-\\-")
        .skip(1)
        .filter_map(|rest| rest.split("\\fR").next())
        .map(|name| format!("--{}", name.replace("\\-", "-")))
        .collect()
}

/// The sh block of README after `marker`, one command per line (comments dropped).
fn readme_block(marker: &str) -> Vec<String> {
    let readme = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let block = readme
        .split(marker)
        .nth(1)
        .and_then(|rest| rest.split("```sh\n").nth(1))
        .and_then(|rest| rest.split("```").next())
        .unwrap_or_else(|| panic!("README has a sh block after {marker:?}"));
    block
        .lines()
        .map(|line| line.split("   #").next().unwrap().trim().to_owned())
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect()
}

/// Runs `command` with bash in `s`, HOME there, `paraes` the binary under test.
fn bash_in_home(s: &Scratch, command: &str) -> std::process::Output {
    Command::new("bash")
        .args([
            "-c",
            &format!("paraes() {{ \"$PARAES\" \"$@\"; }}\n{command}"),
        ])
        .env("PARAES", bin())
        .env("HOME", s.path(""))
        .current_dir(s.path(""))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn readme_install_lines_run_as_written_in_a_fresh_home() {
    let commands = readme_block("Shell completions and the man pages are generated");
    assert_eq!(commands.len(), 4, "{commands:?}");
    let s = Scratch::new();
    for command in &commands {
        let out = bash_in_home(&s, command);
        let err = assert_success(&out, command);
        assert!(err.is_empty(), "{command}: {err}");
    }
    for file in [
        ".local/share/bash-completion/completions/paraes",
        ".zfunc/_paraes",
        ".config/fish/completions/paraes.fish",
        ".local/share/man/man1/paraes.1",
        ".local/share/man/man1/paraes-enc.1",
        ".local/share/man/man1/paraes-rekey.1",
    ] {
        assert!(s.exists(file), "{file}");
    }
    // man finds the pages with ~/.local/bin on PATH, as README says (where man is installed).
    if Command::new("man").arg("-w").arg("man").output().is_ok() {
        let out = bash_in_home(&s, "PATH=\"$HOME/.local/bin:$PATH\" man -w paraes-enc");
        assert_success(&out, "man -w paraes-enc");
    }
}

#[test]
fn readme_quick_start_leaves_nothing_in_the_checkout() {
    let readme = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let quick = readme
        .split("## Quick start")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap();
    let line = quick
        .lines()
        .find(|line| line.starts_with("cargo build --release &&"))
        .expect("the quick start's one line");
    // Run as written, with the built binary, a small file and no cargo build.
    let command = line
        .replacen("cargo build --release", "true", 1)
        .replace("target/release/paraes", "\"$PARAES\"")
        .replace("head -c 256M", "head -c 1M");
    let s = Scratch::new();
    let out = bash_in_home(&s, &format!("{command}\necho \"$demo\""));
    assert_success(&out, "the quick start");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(said.contains("round trip OK"), "{said}");
    let demo = said.lines().last().unwrap().to_owned();
    assert!(std::path::Path::new(&demo).join("demo.bin.paraes").exists());
    assert!(
        s.names().is_empty(),
        "wrote {:?} in the working directory",
        s.names()
    );
    assert!(quick.contains("rm -r \"$demo\""), "the cleanup line");
    fs::remove_dir_all(&demo).unwrap();
    // And demo files written in a checkout by an older quick start are ignored by git.
    let ignore = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/.gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "/demo.*"), "{ignore}");
}

#[test]
fn dec_help_says_what_show_data_key_prints_for_each_format() {
    let out = Command::new(bin())
        .args(["dec", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let entry = help
        .split("--show-data-key")
        .nth(1)
        .and_then(|rest| rest.split("\n      -").next())
        .unwrap();
    let entry = entry.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        entry.contains("for format v3, its data key and context"),
        "{entry}"
    );
    assert!(
        entry.contains("for v2, the body's AES key and counter block"),
        "{entry}"
    );
    assert!(entry.contains("refused for v1"), "{entry}");
}
