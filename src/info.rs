//! `info`: a container's header fields, and what can be checked without a key: that the
//! body's length is one the chunk layout allows (else the file was truncated or extended).
//! Nothing it shows is authenticated (that needs a key), so it advises nothing because of a
//! stanza slot; it reports temporaries an interrupted rekey left beside the file.

use anyhow::{bail, Result};
use paraes_core::container::{Access, ContainerError, StanzaKind, UnverifiedHeader, V1KeySource};
use paraes_core::Mode;

use crate::cli::InfoArgs;
use crate::output::Input;

/// Names a stanza kind list.
fn list_stanzas(stanzas: &[StanzaKind]) -> String {
    stanzas
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `info`.
pub fn run(args: &InfoArgs) -> Result<()> {
    let mut input = Input::open(Some(&args.file))?;
    let header = UnverifiedHeader::read(&mut input).map_err(|e| match e {
        ContainerError::NotAContainer => anyhow::anyhow!(
            "{} is not a paraes container (it does not start with a paraes header)",
            args.file.display()
        ),
        other => other.into(),
    })?;
    let info = header.info();
    println!("format:       paraes container v{}", info.version);
    println!(
        "mode:         AES-{}-{}",
        info.params.key_size, info.params.mode
    );
    println!("chunk size:   {} bytes", info.params.chunk_size);
    let counter_name = match info.params.mode {
        Mode::Ctr => "counter:",
        Mode::Ecb => "nonce:",
    };
    println!("{counter_name:<14}{}", hex::encode(info.counter));
    match &info.access {
        Access::V1(V1KeySource::RawKey) => println!("key:          raw key"),
        Access::V1(V1KeySource::Passphrase(p)) => println!(
            "key:          passphrase, Argon2id m={} KiB t={} p={} salt={}",
            p.memory_kib,
            p.iterations,
            p.lanes,
            hex::encode(p.salt)
        ),
        Access::V2 { slots, ignored } => {
            for slot in slots {
                println!(
                    "slot {}:       generation {}: {}",
                    slot.position,
                    slot.generation,
                    list_stanzas(&slot.stanzas)
                );
            }
            if slots.len() > 1 {
                println!("              (two slots: a key shows whether both are authentic)");
            }
            for (position, why) in ignored {
                println!(
                    "slot {position}:       ignored: does not parse ({})",
                    crate::advice::one_line(why)
                );
            }
        }
    }
    let mut broken = None;
    if let Some(len) = input.len() {
        let body = len.saturating_sub(info.header_len as u64);
        match info.params.layout(body) {
            Ok(layout) => println!(
                "chunks:       {} ({} bytes of ciphertext)",
                layout.chunks, layout.ciphertext_len
            ),
            Err(why) => {
                println!("chunks:       INVALID: {why}");
                broken = Some(why);
            }
        }
    }
    println!("authenticity: not checked (that needs the key: paraes dec)");
    if let Some(path) = input.path() {
        let stale = crate::output::leftovers(path);
        if !stale.is_empty() {
            println!("leftovers:    {}", crate::output::leftovers_warning(&stale));
        }
    }
    if let Some(why) = broken {
        bail!(
            "{} is damaged: {why}, so it was truncated or had bytes appended",
            args.file.display()
        );
    }
    Ok(())
}
