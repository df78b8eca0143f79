//! Format v3: the body is a Cobblestone message under the shown data key and context, its
//! key commitment ties the header to the body, a cut body does not open, and the upgrade
//! from v2.

use super::*;

/// v3's exit door: from `body_offset` on, the file is one Cobblestone message under the data
/// key (IK) and context that the opened header shows, at both key sizes and at the lengths
/// around a chunk.
#[test]
fn a_v3_body_is_a_cobblestone_message_under_the_shown_data_key_and_context() {
    use crate::cobblestone;
    let chunk = cobblestone::CHUNK_LEN;
    for (size, variant) in [
        (KeySize::Aes128, Variant::Cobblestone128),
        (KeySize::Aes256, Variant::Cobblestone256),
    ] {
        for len in [0, 1, chunk - 1, chunk, chunk + 1, 3 * chunk + 5] {
            let data: Vec<u8> = (0..len).map(|i| (i * 13 + 5) as u8).collect();
            let file = encrypt_sealed(seal(size, &[Recipient::Key(key(1))]).unwrap(), &data);
            let opened = opened_with(&file, Identity::Key(key(1))).unwrap();
            let info = opened.info();
            assert_eq!((info.version, info.params.key_size), (3, size));
            assert_eq!(opened.data_key().size(), size);
            assert_ne!(
                opened.data_key().as_bytes(),
                &opened.secret().as_bytes()[..size.bytes()]
            );
            let context = opened.message_context().unwrap();
            assert_eq!(context, &file[..16]);
            let body = &file[info.header_len..];
            assert_eq!(body.len() as u64, cobblestone::sealed_len(len as u64));
            let read = cobblestone::open(variant, opened.data_key().as_bytes(), context, body);
            assert_eq!(read.unwrap(), data, "{size:?} {len}");
            assert_eq!(decrypt(&file, vec![Identity::Key(key(1))]).unwrap(), data);
        }
    }
}

/// The commitment ties the file key to the body: a header from another file (same slot
/// length, same key), a changed salt or a changed commitment is refused before any chunk is
/// decrypted, by `open` and by an MPI rank's `open_with_secret`.
#[test]
fn a_v3_header_from_another_file_or_a_changed_salt_fails_the_commitment() {
    let a = encrypt(&[Recipient::Key(key(1))], &plain());
    let b = encrypt(&[Recipient::Key(key(1))], &plain());
    let at = header_len(&a);
    assert_eq!(at, header_len(&b));
    let mut swapped = a[..at].to_vec();
    swapped.extend_from_slice(&b[at..]);
    let mut salt = a.clone();
    salt[at + 3] ^= 1;
    let mut commitment = a.clone();
    commitment[at + 24 + 31] ^= 0x80;
    for (what, file) in [
        ("swapped", &swapped),
        ("salt", &salt),
        ("commitment", &commitment),
    ] {
        let refused = opened_with(file, Identity::Key(key(1))).unwrap_err();
        assert!(
            matches!(refused, ContainerError::CommitmentMismatch),
            "{what}: {refused}"
        );
        let streamed = UnverifiedHeader::read(&mut &file[..]).unwrap().open(
            &Unlock::new(vec![Identity::Key(key(1))]),
            BodyAccess::Stream { first: &[] },
        );
        assert!(
            matches!(streamed, Err(ContainerError::CommitmentMismatch)),
            "{what}"
        );
        let secret = opened_with(&a, Identity::Key(key(1)))
            .unwrap()
            .secret()
            .clone();
        let rank = UnverifiedHeader::read(&mut &file[..])
            .unwrap()
            .open_with_secret(&secret);
        assert!(
            matches!(rank, Err(ContainerError::CommitmentMismatch)),
            "{what}"
        );
    }
}

/// A v3 body cut at a chunk boundary or inside its salt and commitment, or with a damaged last
/// chunk, is refused when the file is opened, before anything is decrypted.
#[test]
fn a_v3_file_cut_at_a_chunk_boundary_or_with_a_bad_last_chunk_does_not_open() {
    use crate::cobblestone::{CHUNK_LEN, RECORD_LEN};
    let data = vec![7u8; 2 * CHUNK_LEN + 100];
    let file = encrypt(&[Recipient::Key(key(1))], &data);
    let start = header_len(&file) + MESSAGE_PREFIX_LEN;
    let cut = &file[..start + 2 * RECORD_LEN];
    let mut damaged = file.clone();
    *damaged.last_mut().unwrap() ^= 1;
    let refused = opened_with(&damaged, Identity::Key(key(1))).unwrap_err();
    assert!(
        matches!(refused, ContainerError::BodyKeyMismatch(2)),
        "damaged: {refused}"
    );
    // A length no writer makes says nothing about the keys: it is refused before any is
    // tried (a wrong key gets the same answer, and no passphrase stanza runs Argon2id).
    for identity in [Identity::Key(key(1)), Identity::Key(key(9))] {
        let refused = opened_with(cut, identity).unwrap_err();
        assert!(
            matches!(refused, ContainerError::BodyCutOrExtended(_)),
            "cut: {refused}"
        );
    }
    let in_prefix = &file[..header_len(&file) + 30];
    let refused = UnverifiedHeader::read(&mut &in_prefix[..]).unwrap_err();
    assert!(
        matches!(refused, ContainerError::BodyCutOrExtended(_)),
        "{refused}"
    );
}

/// `upgrade` re-encrypts a v2 body as v3 under the same file key and keeps every stanza: each
/// recipient of the v2 file, present or not, opens the upgraded file. v1 and v3 are refused.
#[test]
fn upgrade_keeps_every_stanza_and_the_plaintext() {
    let data = plain();
    let x = SecretIdentity::generate_x25519().unwrap();
    let pq = SecretIdentity::generate_hybrid().unwrap();
    let recipients = [
        Recipient::Key(key(1)),
        Recipient::Passphrase(passphrase("pass"), cheap(3)),
        Recipient::Public(x.recipient()),
        Recipient::Public(pq.recipient()),
    ];
    let old = encrypt_v2(&recipients, &data);
    let opened = opened_with(&old, Identity::Key(key(1))).unwrap();
    for size in [KeySize::Aes128, KeySize::Aes256] {
        let (header, upgraded) = opened.upgrade(size).unwrap();
        // The body: the v2 plaintext, decrypted and encrypted again.
        let engine = CpuEngine::new(Some(1)).unwrap();
        let mut plaintext = Vec::new();
        let start = opened.info().chunks_start() as usize;
        let spec = opened.stream_spec(&engine, Direction::Decrypt);
        pipeline::run(&spec, &mut &old[start..], &mut plaintext, &|_| {}).unwrap();
        let file = encrypt_sealed((header, upgraded), &plaintext);
        assert_eq!(
            UnverifiedHeader::read(&mut &file[..])
                .unwrap()
                .info()
                .version,
            3
        );
        for identity in [
            Identity::Key(key(1)),
            Identity::Passphrase(passphrase("pass")),
            Identity::Secret(x.clone()),
            Identity::Secret(pq.clone()),
        ] {
            let again = opened_with(&file, identity).unwrap();
            assert_eq!(again.secret().as_bytes(), opened.secret().as_bytes());
            assert_eq!(again.info().params.key_size, size);
        }
        assert_eq!(decrypt(&file, vec![Identity::Key(key(1))]).unwrap(), data);
        let Access::Slots { slots, .. } = &opened_with(&file, Identity::Key(key(1)))
            .unwrap()
            .info
            .access
        else {
            panic!("slots");
        };
        let Access::Slots {
            slots: old_slots, ..
        } = &opened.info().access
        else {
            panic!("slots");
        };
        assert_eq!(slots[0].stanzas, old_slots[0].stanzas);
        let v3 = opened_with(&file, Identity::Key(key(1))).unwrap();
        assert!(v3.upgrade(KeySize::Aes256).is_err());
    }
    assert!(opened.upgrade(KeySize::Aes192).is_err());
}

/// A v2 file whose rekey published its new slot but did not wipe the old one (both slots
/// verify under D) is not upgraded: keeping either stanza set alone would undo or lose that
/// rekey (a hostile review upgraded such a file and lost the new key's stanza).
#[test]
fn upgrade_refuses_a_file_whose_rekey_did_not_finish() {
    let old = encrypt_v2(&[Recipient::Key(key(1))], &plain());
    let opened = opened_with(&old, Identity::Key(key(1))).unwrap();
    let Rekey::InPlace(in_place) = opened.rekey(&[Recipient::Key(key(2))]).unwrap() else {
        panic!("fits in place");
    };
    let mut half = old.clone();
    for write in &in_place.publish {
        let at = write.offset as usize;
        half[at..at + write.bytes.len()].copy_from_slice(&write.bytes);
    }
    for id in [key(1), key(2)] {
        let opened = opened_with(&half, Identity::Key(id)).unwrap();
        let refused = opened.upgrade(KeySize::Aes256).unwrap_err();
        assert!(
            refused.to_string().contains("rekey did not finish"),
            "{refused}"
        );
    }
}
