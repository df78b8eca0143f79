//! `keygen`: a random symmetric key, an X25519 or post-quantum identity, or the recipients of
//! an identity file (`-y`); secrets go to standard output or a new file of mode 0600.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, Result};
use paraes_core::container::{self, SecretIdentity};
use paraes_core::KeySize;

use crate::cli::KeygenArgs;

/// Creates `path` for a secret (mode 0600; refusing an existing file unless `force`).
fn create_private(path: &Path, force: bool) -> Result<fs::File> {
    let shown = path.display();
    let mut options = fs::OpenOptions::new();
    options.write(true).mode(0o600);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let file = options.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            anyhow::anyhow!("{shown} already exists: use --force to overwrite it")
        }
        _ => anyhow::Error::new(e).context(format!("cannot create {shown}")),
    })?;
    // Opening an existing file (--force) keeps its mode: make it private first.
    file.set_permissions(fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot make {shown} private"))?;
    Ok(file)
}

/// Writes a secret `text` to `-o PATH` (mode 0600) or standard output.
fn write_secret(output: Option<&Path>, force: bool, text: &str) -> Result<()> {
    match output.filter(|p| *p != Path::new("-")) {
        None => std::io::stdout()
            .write_all(text.as_bytes())
            .context("writing the key failed"),
        Some(path) => {
            let mut file = create_private(path, force)?;
            file.write_all(text.as_bytes())
                .and_then(|()| file.sync_all())
                .with_context(|| format!("writing {} failed", path.display()))
        }
    }
}

/// `keygen`: a symmetric key, an identity (`--x25519`, `--pq`), or the recipients of an
/// identity file (`-y`).
pub fn run(args: &KeygenArgs) -> Result<()> {
    if let Some(path) = &args.recipient_of {
        for identity in crate::keys::read_identity_file(path, &crate::job::warner(false))? {
            println!("{}", identity.recipient());
        }
        return Ok(());
    }
    if args.x25519 || args.pq {
        let identity = if args.pq {
            SecretIdentity::generate_hybrid()?
        } else {
            SecretIdentity::generate_x25519()?
        };
        let recipient = identity.recipient();
        let text = zeroize::Zeroizing::new(format!(
            "# paraes identity ({}); keep this file secret\n# recipient: {recipient}\n{}\n",
            if args.pq {
                "ML-KEM-768 + X25519"
            } else {
                "X25519"
            },
            identity.to_secret_text().as_str()
        ));
        write_secret(args.output.as_deref(), args.force, &text)?;
        eprintln!("recipient: {recipient}");
        return Ok(());
    }
    let size = args.bits.unwrap_or(KeySize::Aes256);
    let mut key = zeroize::Zeroizing::new([0u8; 32]);
    container::random_bytes(&mut key[..size.bytes()])?;
    let text = zeroize::Zeroizing::new(format!("{}\n", hex::encode(&key[..size.bytes()])));
    write_secret(args.output.as_deref(), args.force, &text)
}
