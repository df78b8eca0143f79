//! The options of `rekey`: how to open the file now, and what changes: ways in added
//! (`--add-*`), removed by name (`--remove`), or every one replaced (`--new-*`).

use std::path::PathBuf;

use clap::Args;

use super::{KeyArgs, UnlockArgs};

/// The options of `rekey`.
#[derive(Args, Debug)]
#[command(after_help = "\
Names (--remove): `paraes info` lists each stanza's name: its kind (key-file, passphrase,
x25519, mlkem768-x25519, ssh-ed25519, ssh-rsa), an SSH stanza's key tag after a colon
(ssh-ed25519:1a2b3c4d), and #N, its place in the slot, where the kind repeats (x25519#3).
A shorter name works where it names one stanza.

Examples:
  paraes rekey -k my.key --add-recipient paraes1... f.paraes   my.key still opens it
  paraes rekey -k my.key --remove x25519#2 f.paraes
  paraes rekey -k my.key --remove passphrase --add-passphrase f.paraes
  paraes rekey -k old.key --new-key-file new.key --force f.paraes
                                                 only new.key opens it")]
pub struct RekeyArgs {
    /// The container (changed in place when the new stanzas fit, else a renamed copy).
    pub file: PathBuf,

    /// How to open it now.
    #[command(flatten)]
    pub keys: KeyArgs,

    #[command(flatten)]
    pub unlock: UnlockArgs,

    /// Add a key file that opens the file, keeping every stanza it has (repeatable).
    #[arg(long, value_name = "PATH")]
    pub add_key_file: Vec<PathBuf>,

    /// Add a recipient that opens the file, keeping every stanza it has (repeatable).
    #[arg(long, value_name = "RECIPIENT")]
    pub add_recipient: Vec<String>,

    /// Add the recipients listed in FILE, keeping every stanza it has (repeatable).
    #[arg(long, value_name = "FILE")]
    pub add_recipients_file: Vec<PathBuf>,

    /// Add a passphrase, asked on the terminal (twice), keeping every stanza it has.
    #[arg(long)]
    pub add_passphrase: bool,

    /// Add a passphrase from a file's first line, keeping every stanza it has.
    #[arg(long, value_name = "PATH", conflicts_with = "add_passphrase")]
    pub add_passphrase_file: Option<PathBuf>,

    /// Remove the stanza of this NAME, as `paraes info` names it (repeatable); the others are
    /// kept as they are.
    #[arg(long, value_name = "NAME")]
    pub remove: Vec<String>,

    /// Replace every stanza: a key file that opens the file (repeatable).
    #[arg(long, value_name = "PATH")]
    pub new_key_file: Vec<PathBuf>,

    /// Replace every stanza: a recipient that opens the file (repeatable).
    #[arg(long, value_name = "RECIPIENT")]
    pub new_recipient: Vec<String>,

    /// Replace every stanza: the recipients listed in FILE (repeatable).
    #[arg(long, value_name = "FILE")]
    pub new_recipients_file: Vec<PathBuf>,

    /// Replace every stanza: a passphrase from a file's first line.
    #[arg(long, value_name = "PATH")]
    pub new_passphrase_file: Option<PathBuf>,

    /// Drop or remove the stanza that opened the file (the key given to open it then no
    /// longer does). Removing the last way in is refused even so.
    #[arg(short, long)]
    pub force: bool,

    /// Write a copy and rename it over the file, never in place (NFS, FUSE: no write lease).
    #[arg(long)]
    pub rewrite: bool,

    /// Print nothing but errors: no warnings, and no line saying what changed.
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Say how the file was guarded against other writers.
    #[arg(short, long)]
    pub verbose: bool,
}
