//! `rekey`: new stanzas for the same file key, written in place when they fit the header
//! (each write durable before the next) or into a rewritten copy renamed over the file; the
//! body bytes never change.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{bail, Context, Result};
use paraes_core::container::{Rekey, UnverifiedHeader};

use crate::plan::RekeyPlan;
use crate::signals::{named_done, set_pending, Pending};

/// `rekey`: new stanzas for the same file key; in place when they fit, else a rewritten file
/// renamed over the old one. The body bytes never change.
pub fn run(args: &RekeyPlan) -> Result<()> {
    let warn = crate::job::warner(args.quiet);
    let shown = args.file.display();
    let mut file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&args.file)
        .with_context(|| format!("cannot open {shown} for rekeying"))?;
    if !file.metadata()?.is_file() {
        bail!("{shown} is not a regular file");
    }
    let unverified = UnverifiedHeader::read(&mut std::io::BufReader::new(&file))
        .with_context(|| format!("{shown}"))?;
    let unlock = args.open.unlock(&warn)?;
    let opened = unverified.open(&unlock)?;
    let recipients = args.new.recipients(&warn)?;
    match opened.rekey(&recipients)? {
        Rekey::InPlace(writes) => {
            use std::os::unix::fs::FileExt;
            for write in writes {
                // Each write is durable before the next: at every instant the old or the new
                // stanzas open the file (docs/FORMAT.md).
                file.write_all_at(&write.bytes, write.offset)
                    .and_then(|()| file.sync_data())
                    .with_context(|| format!("writing the new header of {shown} failed (the file still opens with the old or the new keys)"))?;
            }
            if !args.quiet {
                eprintln!("paraes: rekeyed {shown} in place (body untouched)");
            }
        }
        Rekey::Rewrite {
            header,
            body_offset,
        } => {
            let dir = args
                .file
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let mut temp = tempfile::Builder::new()
                .prefix(".paraes-rekey.")
                .tempfile_in(dir)
                .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
            // A signal removes it (SIGKILL can leave this hidden, clearly named file).
            set_pending(Pending::Named(temp.path().to_path_buf()));
            let mode = file.metadata()?.permissions().mode();
            use std::io::{Seek, SeekFrom};
            let copied = temp
                .as_file()
                .set_permissions(fs::Permissions::from_mode(mode))
                .and_then(|()| temp.write_all(&header))
                .and_then(|()| file.seek(SeekFrom::Start(body_offset)))
                .and_then(|_| std::io::copy(&mut file, temp.as_file_mut()))
                .and_then(|_| temp.as_file().sync_all());
            copied.with_context(|| {
                format!("writing the rekeyed copy of {shown} failed ({shown} is unchanged)")
            })?;
            let temp_path = temp.path().to_path_buf();
            let persisted = temp.persist(&args.file);
            named_done(&temp_path);
            set_pending(Pending::Nothing);
            persisted
                .map_err(|e| e.error)
                .with_context(|| format!("replacing {shown} failed ({shown} is unchanged)"))?;
            if !args.quiet {
                eprintln!("paraes: rekeyed {shown} (the new stanzas needed a larger header: the body was copied unchanged)");
            }
        }
    }
    Ok(())
}
