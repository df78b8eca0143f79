//! `man`: the manual pages, rendered by clap_mangen from the same definitions as `--help`:
//! paraes(1) on standard output, or with `--dir DIR` paraes.1 and one page per subcommand
//! (paraes-enc.1, ...), the pages paraes(1) names.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::cli::Cli;

/// Runs `man`: paraes(1) to standard output, or every page into `dir`.
pub fn run(dir: Option<&Path>) -> Result<()> {
    match dir {
        // Rendered whole, then written: a closed pipe (`| head`) is a normal end, not a panic.
        None => {
            let (_, page) = pages()?.swap_remove(0);
            crate::progress::print_out(&page)
        }
        Some(dir) => write_pages(dir),
    }
}

/// Every page as (file name, roff): paraes.1 first, then paraes-SUBCOMMAND.1 for each
/// subcommand, which paraes.1's SUBCOMMANDS section names.
pub fn pages() -> Result<Vec<(String, Vec<u8>)>> {
    // clap's `help` subcommand has no page (`paraes help enc` is `paraes enc --help`), so the
    // top page does not name one. Building names each subcommand `paraes-SUB` for its page.
    let mut top = Cli::command().disable_help_subcommand(true);
    top.build();
    let mut pages = vec![render(top.clone())?];
    for sub in top.get_subcommands() {
        pages.push(render(sub.clone())?);
    }
    Ok(pages)
}

/// One command's page and its file name.
fn render(command: clap::Command) -> Result<(String, Vec<u8>)> {
    let man = clap_mangen::Man::new(command);
    let mut page = Vec::new();
    man.render(&mut page)?;
    Ok((man.get_filename(), page))
}

/// Writes every page into `dir` (created if missing), each whole or not at all: written to a
/// temporary file beside it and renamed over any older page of that name, readable by all.
fn write_pages(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| {
        format!(
            "cannot create the manual directory {}: give --dir a directory",
            dir.display()
        )
    })?;
    for (name, page) in pages()? {
        let target = dir.join(&name);
        let failed = || format!("cannot write the manual page {}", target.display());
        let mut temporary = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .tempfile_in(dir)
            .with_context(failed)?;
        temporary.write_all(&page).with_context(failed)?;
        temporary
            .as_file()
            .set_permissions(fs::Permissions::from_mode(0o644))
            .with_context(failed)?;
        temporary.persist(&target).with_context(failed)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of `page`'s section `heading`, up to the next section.
    fn section<'a>(page: &'a str, heading: &str) -> &'a str {
        let start = page
            .find(&format!(".SH {heading}\n"))
            .unwrap_or_else(|| panic!("no {heading} section"));
        let rest = &page[start + 1..];
        &rest[..rest.find("\n.SH ").unwrap_or(rest.len())]
    }

    /// Each subcommand's page describes every long option of that subcommand in its OPTIONS
    /// section (roff writes `-` as `\-`), and the top page's SUBCOMMANDS section names exactly
    /// the pages there are.
    #[test]
    fn every_subcommand_has_a_page_with_all_its_long_options() {
        let pages = pages().unwrap();
        let text = |name: &str| {
            let (_, page) = pages.iter().find(|(n, _)| n == name).unwrap();
            String::from_utf8_lossy(page).into_owned()
        };
        let mut command = Cli::command();
        command.build();
        for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
            let page = text(&format!("paraes-{}.1", sub.get_name()));
            let options = section(&page, "OPTIONS");
            for long in sub.get_arguments().filter_map(|a| a.get_long()) {
                let roff = format!("\\fB\\-\\-{}\\fR", long.replace('-', "\\-"));
                assert!(
                    options.contains(&roff),
                    "paraes-{} lacks --{long}",
                    sub.get_name()
                );
            }
        }
        let top = text("paraes.1");
        let named: Vec<String> = section(&top, "SUBCOMMANDS")
            .split("\n.TP\n")
            .skip(1)
            .map(|entry| entry.split("(1)").next().unwrap().replace("\\-", "-") + ".1")
            .collect();
        let files: Vec<String> = pages.iter().skip(1).map(|(n, _)| n.clone()).collect();
        assert_eq!(named, files);
        assert_eq!(files.len(), command.get_subcommands().count() - 1);
    }
}
