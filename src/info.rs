//! `info`: a container's header fields, and what can be checked without a key: that the
//! body's length is one the chunk layout allows (else the file was truncated or extended).

use anyhow::{bail, Result};
use paraes_core::container::{
    self, Access, ContainerError, StanzaKind, UnverifiedHeader, V1KeySource,
};
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
        Access::V2 { stanzas, older } => {
            println!("opens with:   {}", list_stanzas(stanzas));
            if let Some(older) = older {
                println!(
                    "also:         {} (an older stanza set: a rekey was interrupted; rekey again to finish it)",
                    list_stanzas(older)
                );
            }
        }
    }
    let mut broken = None;
    if let Some(len) = input.len() {
        let body = len.saturating_sub(info.header_len as u64);
        match chunk_layout(body, info.params.chunk_size as u64, info.params.mode) {
            Ok((chunks, payload)) => {
                println!("chunks:       {chunks} ({payload} bytes of ciphertext)")
            }
            Err(why) => {
                println!("chunks:       INVALID: {why}");
                broken = Some(why);
            }
        }
    }
    println!("authenticity: not checked (that needs the key: paraes dec)");
    if let Some(why) = broken {
        bail!(
            "{} is damaged: {why}, so it was truncated or had bytes appended",
            args.file.display()
        );
    }
    Ok(())
}

/// The number of chunks and ciphertext bytes of a body of `body` bytes, if the layout of
/// docs/FORMAT.md allows that length: chunks of `chunk` bytes each followed by a tag, the last
/// one 1..=chunk bytes (CTR; 0 only when it is the only chunk) or 16..=chunk bytes in whole
/// blocks (ECB, which always pads).
fn chunk_layout(body: u64, chunk: u64, mode: Mode) -> Result<(u64, u64), String> {
    let tag = container::TAG_LEN as u64;
    let record = chunk + tag;
    if body < tag {
        return Err(format!(
            "the body has {body} bytes, fewer than one {tag}-byte tag"
        ));
    }
    let chunks = body.div_ceil(record);
    let last = body - (chunks - 1) * record;
    if last < tag {
        return Err(format!(
            "the last chunk has {last} bytes, fewer than its {tag}-byte tag"
        ));
    }
    let last_payload = last - tag;
    match mode {
        Mode::Ctr if last_payload == 0 && chunks > 1 => {
            return Err("the body ends in an empty chunk after full ones".to_owned())
        }
        Mode::Ecb if last_payload == 0 || !last_payload.is_multiple_of(16) => {
            return Err(format!(
                "the last ECB chunk has {last_payload} bytes of ciphertext, not a positive multiple of 16"
            ))
        }
        _ => {}
    }
    Ok((chunks, body - chunks * tag))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_that_a_writer_makes_are_valid() {
        let c = 4096;
        assert_eq!(chunk_layout(16, c, Mode::Ctr), Ok((1, 0)));
        assert_eq!(chunk_layout(17, c, Mode::Ctr), Ok((1, 1)));
        assert_eq!(chunk_layout(c + 16, c, Mode::Ctr), Ok((1, c)));
        assert_eq!(chunk_layout(c + 16 + 17, c, Mode::Ctr), Ok((2, c + 1)));
        assert_eq!(chunk_layout(32, c, Mode::Ecb), Ok((1, 16)));
        assert_eq!(chunk_layout(c + 16 + 32, c, Mode::Ecb), Ok((2, c + 16)));
    }

    #[test]
    fn cut_or_extended_layouts_are_not() {
        let c = 4096;
        assert!(chunk_layout(15, c, Mode::Ctr).is_err());
        assert!(chunk_layout(c + 16 + 5, c, Mode::Ctr).is_err());
        assert!(chunk_layout(c + 16 + 16, c, Mode::Ctr).is_err());
        assert!(chunk_layout(16, c, Mode::Ecb).is_err());
        assert!(chunk_layout(16 + 20, c, Mode::Ecb).is_err());
    }
}
