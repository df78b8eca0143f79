//! Tests of the container (v3, and v2 where its body differs): every stanza kind and mixes,
//! wrong identities, header tampering, the Argon2id cost cap, rekey in place and by rewrite,
//! interrupted rekeys, planted slots, v3's key commitment and the upgrade from v2: one topic a
//! file under `tests/`, and here the helpers they share.

use super::seal::{make_stanzas, seal_message, slotted_header};
use super::stanza::Stanza;
use super::v1::V1Header;
use super::v2::{Preamble, SlottedHeader};
use super::*;
use crate::cobblestone::Variant;
use crate::cpu::CpuEngine;
use crate::engine::{Direction, Mode};
use crate::key::{Key, KeySize};
use crate::pipeline;

const CHUNK: usize = 4096;

fn params(mode: Mode) -> BodyParams {
    BodyParams {
        mode,
        key_size: KeySize::Aes256,
        chunk_size: CHUNK,
    }
}

fn cheap(salt: u8) -> Argon2Params {
    Argon2Params {
        salt: [salt; 16],
        memory_kib: 64,
        iterations: 1,
        lanes: 1,
    }
}

fn key(byte: u8) -> Key {
    Key::new(&[byte; 32]).unwrap()
}

fn passphrase(text: &str) -> Zeroizing<Vec<u8>> {
    Zeroizing::new(text.as_bytes().to_vec())
}

use zeroize::Zeroizing;

/// A function that seals a plaintext for recipients into a whole container.
type Writer = fn(&[Recipient], &[u8]) -> Vec<u8>;

/// Seals `plain` for `recipients` into a whole v3 container (what paraes writes).
fn encrypt(recipients: &[Recipient], plain: &[u8]) -> Vec<u8> {
    encrypt_sealed(seal(KeySize::Aes256, recipients).unwrap(), plain)
}

/// Seals `plain` for `recipients` into a whole v2 container (as paraes wrote before v3).
fn encrypt_v2(recipients: &[Recipient], plain: &[u8]) -> Vec<u8> {
    encrypt_sealed(seal_v2(params(Mode::Ctr), recipients).unwrap(), plain)
}

/// The header bytes of a sealed container, then `plain` encrypted under it.
fn encrypt_sealed((mut out, opened): (Vec<u8>, Opened), plain: &[u8]) -> Vec<u8> {
    let engine = CpuEngine::new(Some(1)).unwrap();
    let spec = opened.stream_spec(&engine, Direction::Encrypt);
    pipeline::run(&spec, &mut &plain[..], &mut out, &|_| {}).unwrap();
    out
}

fn decrypt(file: &[u8], identities: Vec<Identity>) -> Result<Vec<u8>, String> {
    decrypt_with(file, &Unlock::new(identities))
}

fn decrypt_with(file: &[u8], unlock: &Unlock) -> Result<Vec<u8>, String> {
    let mut input = file;
    let opened = UnverifiedHeader::read(&mut input)
        .and_then(|h| h.open(unlock, BodyAccess::Bytes(file)))
        .map_err(|e| e.to_string())?;
    let engine = CpuEngine::new(Some(1)).unwrap();
    let spec = opened.stream_spec(&engine, Direction::Decrypt);
    let mut out = Vec::new();
    pipeline::run(&spec, &mut input, &mut out, &|_| {}).map_err(|e| e.to_string())?;
    Ok(out)
}

/// Bytes of the header of `file` (where its body starts).
fn header_len(file: &[u8]) -> usize {
    UnverifiedHeader::read(&mut &file[..])
        .unwrap()
        .info()
        .header_len
}

fn plain() -> Vec<u8> {
    (0..3 * CHUNK + 77)
        .map(|i| (i * 7 + i / 251) as u8)
        .collect()
}

/// Re-encodes slot 0 of `file` with `edit` applied to its stanzas, keeping the old tag bytes.
fn edit_stanzas(file: &[u8], edit: impl FnOnce(&mut Vec<Stanza>)) -> Vec<u8> {
    let header = SlottedHeader::read(file[..32].try_into().unwrap(), &mut &file[32..]).unwrap();
    let slot = &header.slots[0];
    let old_tag_at = v2::PREAMBLE_LEN + v2::slot_bytes_needed(&slot.stanzas) - 32;
    let old_tag = file[old_tag_at..old_tag_at + 32].to_vec();
    let mut stanzas = slot.stanzas.clone();
    edit(&mut stanzas);
    let mut out = file.to_vec();
    let mut bytes = slot.generation.to_be_bytes().to_vec();
    bytes.extend_from_slice(&(stanzas.len() as u16).to_be_bytes());
    for s in &stanzas {
        bytes.push(s.kind);
        bytes.extend_from_slice(&(s.body.len() as u16).to_be_bytes());
        bytes.extend_from_slice(&s.body);
    }
    bytes.extend_from_slice(&old_tag);
    bytes.resize(header.preamble.slot_len, 0);
    out[v2::PREAMBLE_LEN..v2::PREAMBLE_LEN + header.preamble.slot_len].copy_from_slice(&bytes);
    out
}

fn open_file(file: &[u8], identity: Identity) -> Opened {
    UnverifiedHeader::read(&mut &file[..])
        .unwrap()
        .open(&Unlock::new(vec![identity]), BodyAccess::Bytes(file))
        .unwrap()
}

/// Offset of slot `position` (0 or 1) in `file`.
fn slot_offset(file: &[u8], position: usize) -> usize {
    let header = SlottedHeader::read(file[..32].try_into().unwrap(), &mut &file[32..]).unwrap();
    header.preamble.slot_offset(position)
}

/// `file` with `bytes` written at `at`.
fn planted(file: &[u8], at: usize, bytes: &[u8]) -> Vec<u8> {
    let mut out = file.to_vec();
    out[at..at + bytes.len()].copy_from_slice(bytes);
    out
}

/// The 13 bytes of issue 25's P0: a slot of generation `generation` with one empty stanza of
/// an unknown kind, planted in the idle slot by someone with no key.
fn planted_generation(file: &[u8], generation: u64) -> Vec<u8> {
    let mut slot = generation.to_be_bytes().to_vec();
    slot.extend_from_slice(&[0, 1, 9, 0, 0]);
    planted(file, slot_offset(file, 1), &slot)
}

fn allowing(identities: Vec<Identity>) -> Unlock {
    Unlock {
        allow_unverified_slot: true,
        ..Unlock::new(identities)
    }
}

/// Rekeys the whole container `file` (opened with `unlock`) to `recipients`, in memory.
fn rekeyed(file: &[u8], unlock: &Unlock, recipients: &[Recipient]) -> Result<Vec<u8>, String> {
    let opened = UnverifiedHeader::read(&mut &file[..])
        .and_then(|h| h.open(unlock, BodyAccess::Bytes(file)))
        .map_err(|e| e.to_string())?;
    let plan = opened.rekey(recipients).map_err(|e| e.to_string())?;
    let out = plan.apply_to(file);
    opened
        .confirm_rekey(&plan, BodyAccess::Bytes(&out))
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// The opened container of a whole `file` (the body at hand) with `identity`.
fn opened_with(file: &[u8], identity: Identity) -> Result<Opened, ContainerError> {
    UnverifiedHeader::read(&mut &file[..])?
        .open(&Unlock::new(vec![identity]), BodyAccess::Bytes(file))
}

mod opening;
mod planted;
mod prompts;
mod rekey;
mod slots;
mod tampering;
mod v3;
