//! `info`: a container's header fields, and what can be checked without a key: that the
//! body's length is one the chunk layout allows (else the file was truncated or extended).
//! Nothing it shows is authenticated (that needs a key), so it advises nothing because of a
//! stanza slot; it reports temporaries an interrupted rekey left beside the file. `--json`
//! prints the same facts as one JSON object (docs/FORMAT.md, "Reading a v3 body without
//! paraes"): each slot's stanzas as text, and as objects with their kind byte, name and, for
//! SSH stanzas, the key tag (which SSH key a stanza claims to be for). Each stanza also has the
//! name `rekey --remove` takes (its kind, an SSH key tag, `#N` where a kind repeats). An armored
//! container (docs/FORMAT.md, "ASCII armor") is decoded to its end, so its armor is checked and
//! its length known.

use std::io::Write;

use anyhow::{bail, Context, Result};
use paraes_core::container::{
    stanza_names, Access, BodyLayout, ContainerError, HeaderInfo, LayoutError, StanzaKind,
    UnverifiedHeader, V1KeySource,
};
use paraes_core::Mode;
use serde_json::json;

use crate::cli::InfoArgs;
use paraes_files::{Input, InputKinds};

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
    let mut input = Input::open(Some(&args.file), InputKinds::FilesAndStreams)?.dearmored()?;
    let header = UnverifiedHeader::read(&mut input).map_err(|e| match e {
        ContainerError::NotAContainer => anyhow::anyhow!(
            "{} is not a paraes container (no paraes header)",
            args.file.display()
        ),
        ContainerError::Io(io) => {
            anyhow::Error::new(io).context(format!("reading {} failed", args.file.display()))
        }
        other => other.into(),
    })?;
    let info = header.info();
    let armored = input.is_armored();
    let len = match &mut input {
        Input::Armored(armored) => {
            std::io::copy(armored, &mut std::io::sink())
                .with_context(|| format!("reading {} failed", args.file.display()))?;
            Some(armored.bytes_decoded())
        }
        other => other.len(),
    };
    let layout = len.map(|len| info.layout(len));
    let stale = input
        .path()
        .map(paraes_files::leftovers)
        .unwrap_or_default();
    // A full disk or a reader that left (`| head`) is an error to report, not a panic.
    let mut out = std::io::stdout().lock();
    print_facts(&mut out, args.json, info, layout.as_ref(), armored, &stale)
        .and_then(|()| out.flush())
        .context("writing standard output failed")?;
    if let Some(Err(why)) = layout {
        bail!(
            "{} is damaged: {why}, so it was truncated or had bytes appended",
            args.file.display()
        );
    }
    Ok(())
}

/// The facts, as JSON or as text, with the armor and the leftovers found beside the file.
fn print_facts(
    out: &mut impl Write,
    json: bool,
    info: &HeaderInfo,
    layout: Option<&Result<BodyLayout, LayoutError>>,
    armored: bool,
    stale: &[std::path::PathBuf],
) -> std::io::Result<()> {
    if json {
        let mut facts = as_json(info, layout, stale.len());
        facts["armored"] = json!(armored);
        return writeln!(out, "{facts}");
    }
    print_text(out, info, layout)?;
    if armored {
        writeln!(
            out,
            "armor:        ASCII armor (docs/FORMAT.md), read whole: well formed"
        )?;
    }
    if !stale.is_empty() {
        writeln!(
            out,
            "leftovers:    {}",
            paraes_files::leftovers_warning(stale)
        )?;
    }
    Ok(())
}

/// The facts as text, one per line.
fn print_text(
    out: &mut impl Write,
    info: &HeaderInfo,
    layout: Option<&Result<BodyLayout, LayoutError>>,
) -> std::io::Result<()> {
    writeln!(out, "format:       paraes container v{}", info.version)?;
    if info.is_message() {
        writeln!(
            out,
            "body:         Cobblestone-{} (C2SP chunked encryption, AES-{}-GCM) from byte {}",
            info.params.key_size, info.params.key_size, info.header_len
        )?;
    } else {
        writeln!(
            out,
            "mode:         AES-{}-{}",
            info.params.key_size, info.params.mode
        )?;
        writeln!(out, "chunk size:   {} bytes", info.params.chunk_size)?;
        let counter_name = match info.params.mode {
            Mode::Ctr => "counter:",
            Mode::Ecb => "nonce:",
        };
        writeln!(out, "{counter_name:<14}{}", hex::encode(info.counter))?;
    }
    match &info.access {
        Access::V1(V1KeySource::RawKey) => writeln!(out, "key:          raw key")?,
        Access::V1(V1KeySource::Passphrase(p)) => writeln!(
            out,
            "key:          passphrase, Argon2id m={} KiB t={} p={} salt={}",
            p.memory_kib,
            p.iterations,
            p.lanes,
            hex::encode(p.salt)
        )?,
        Access::Slots { slots, ignored } => {
            for slot in slots {
                writeln!(
                    out,
                    "slot {}:       generation {}: {}",
                    slot.position,
                    slot.generation,
                    list_stanzas(&slot.stanzas)
                )?;
                writeln!(
                    out,
                    "              named: {}",
                    stanza_names(&slot.stanzas).join(", ")
                )?;
            }
            if slots.len() > 1 {
                writeln!(
                    out,
                    "              (two slots: a key shows whether both are authentic)"
                )?;
            }
            for (position, why) in ignored {
                writeln!(
                    out,
                    "slot {position}:       ignored: does not parse ({})",
                    crate::advice::one_line(why)
                )?;
            }
        }
    }
    match layout {
        Some(Ok(layout)) => writeln!(
            out,
            "chunks:       {} ({} bytes of ciphertext)",
            layout.chunks, layout.ciphertext_len
        )?,
        Some(Err(why)) => writeln!(out, "chunks:       INVALID: {why}")?,
        None => {}
    }
    writeln!(
        out,
        "authenticity: not checked (that needs the key: paraes dec)"
    )?;
    Ok(())
}

/// One stanza as a JSON object: its name in its slot (what `rekey --remove` takes), its kind
/// byte, its kind's name (null for a kind this paraes does not know), and the SSH key tag of an
/// SSH stanza, as hex.
fn stanza_json(kind: &StanzaKind, name: String) -> serde_json::Value {
    let mut object = json!({
        "name": name,
        "kind_byte": kind.byte(),
        "kind": kind.name(),
    });
    if let Some(tag) = kind.ssh_tag() {
        object["ssh_key_tag"] = json!(hex::encode(tag));
    }
    object
}

/// The facts as one JSON object. Nothing is authenticated without a key: every slot says so.
fn as_json(
    info: &HeaderInfo,
    layout: Option<&Result<BodyLayout, LayoutError>>,
    leftovers: usize,
) -> serde_json::Value {
    let body = if info.is_message() {
        json!({
            "construction": format!("Cobblestone-{}", info.params.key_size),
            "aead": format!("AES-{}-GCM", info.params.key_size),
            "chunk_size": info.params.chunk_size,
        })
    } else {
        json!({
            "construction": format!("paraes v{} chunks", info.version),
            "mode": info.params.mode.lower(),
            "key_bits": info.params.key_size.bits(),
            "chunk_size": info.params.chunk_size,
            "counter": hex::encode(info.counter),
        })
    };
    let (access, slots, ignored) = match &info.access {
        Access::V1(V1KeySource::RawKey) => ("raw key", vec![], vec![]),
        Access::V1(V1KeySource::Passphrase(_)) => ("passphrase", vec![], vec![]),
        Access::Slots { slots, ignored } => (
            "stanza slots",
            slots
                .iter()
                .map(|slot| {
                    json!({
                        "position": slot.position,
                        "generation": slot.generation,
                        "authenticated": false,
                        "stanzas": slot.stanzas.iter().map(ToString::to_string).collect::<Vec<_>>(),
                        "stanza_kinds": slot.stanzas.iter().zip(stanza_names(&slot.stanzas)).map(|(kind, name)| stanza_json(kind, name)).collect::<Vec<_>>(),
                    })
                })
                .collect(),
            ignored
                .iter()
                .map(|(position, why)| json!({"position": position, "why": why}))
                .collect(),
        ),
    };
    let chunks = match layout {
        Some(Ok(layout)) => json!({
            "count": layout.chunks,
            "ciphertext_bytes": layout.ciphertext_len,
        }),
        Some(Err(why)) => json!({ "invalid": why.to_string() }),
        None => serde_json::Value::Null,
    };
    json!({
        "format": info.version,
        "body_offset": info.header_len,
        "body": body,
        "access": access,
        "slots": slots,
        "ignored_slots": ignored,
        "chunks": chunks,
        "leftovers": leftovers,
    })
}
