//! A changed header is refused: every byte of it, stanzas added, removed, reordered or
//! altered, absurd slots (before anything is allocated), the Argon2id cost cap (per stanza and
//! over both slots), and a slot that names one SSH key too often; damage in the idle slot
//! changes nothing that is used.

use super::*;

#[test]
fn every_header_byte_change_is_refused() {
    let file = encrypt(&[Recipient::Key(key(1))], &plain());
    let header_len = header_len(&file);
    // Every byte of the preamble and the used part of slot 0 (stanza, tag), and a sample of its
    // zero padding. (The idle slot 1 is not authenticated by design: a rekey writes it while
    // slot 0 keeps the file open, so damage there is ignored; see the test below.)
    let used = v2::PREAMBLE_LEN + 10 + 3 + 64 + 32 + 8;
    let slot_end = (header_len + v2::PREAMBLE_LEN) / 2;
    let positions = (0..used).chain((used..slot_end).step_by(97));
    for i in positions {
        for bit in [0, 3, 7] {
            let mut bad = file.clone();
            bad[i] ^= 1 << bit;
            assert!(
                decrypt(&bad, vec![Identity::Key(key(1))]).is_err(),
                "flip of byte {i} bit {bit} accepted"
            );
        }
    }
}

#[test]
fn damage_in_the_idle_slot_changes_nothing_that_is_used() {
    let data = plain();
    let file = encrypt(&[Recipient::Key(key(1))], &data);
    let header_len = header_len(&file);
    let idle = (header_len + v2::PREAMBLE_LEN) / 2;
    let mut garbage = file.clone();
    for (i, b) in garbage[idle..header_len].iter_mut().enumerate() {
        *b = (i * 13 + 1) as u8;
    }
    assert_eq!(
        decrypt(&garbage, vec![Identity::Key(key(1))]).unwrap(),
        data
    );
    assert!(decrypt(&garbage, vec![Identity::Key(key(2))]).is_err());
}

#[test]
fn stanzas_added_removed_reordered_or_altered_are_refused() {
    let alice = SecretIdentity::generate_x25519().unwrap();
    let file = encrypt(
        &[Recipient::Key(key(1)), Recipient::Public(alice.recipient())],
        &plain(),
    );
    let mallory_key = key(66);
    let mallory = Stanza::wrap(
        &Recipient::Key(mallory_key.clone()),
        &FileSecret::random().unwrap(),
    )
    .unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "removed",
            edit_stanzas(&file, |s| {
                s.remove(1);
            }),
        ),
        ("reordered", edit_stanzas(&file, |s| s.swap(0, 1))),
        ("added", edit_stanzas(&file, |s| s.push(mallory.clone()))),
        ("altered", edit_stanzas(&file, |s| s[1].body[5] ^= 1)),
    ];
    for (what, bad) in cases {
        for identity in [
            Identity::Key(key(1)),
            Identity::Secret(alice.clone()),
            Identity::Key(mallory_key.clone()),
        ] {
            assert!(
                decrypt(&bad, vec![identity]).is_err(),
                "stanza {what} accepted"
            );
        }
    }
}

#[test]
fn costly_passphrase_stanzas_are_refused_before_argon2_runs() {
    let costly = Argon2Params {
        salt: [1; 16],
        memory_kib: MAX_ARGON2_MEMORY_KIB,
        iterations: MAX_ARGON2_ITERATIONS,
        lanes: 4,
    };
    // Sealing with costly parameters would run Argon2id: build the stanza of a cheap seal and
    // raise its parameters in the header instead.
    let file = encrypt(
        &[Recipient::Passphrase(passphrase("a"), cheap(1))],
        &plain(),
    );
    let costly_file = edit_stanzas(&file, |s| s[0].body[..28].copy_from_slice(&costly.encode()));
    let started = std::time::Instant::now();
    let err = decrypt(&costly_file, vec![Identity::Passphrase(passphrase("a"))]).unwrap_err();
    assert!(err.contains("above the cap"), "{err}");
    assert!(started.elapsed().as_secs() < 5, "Argon2id ran");
    // A key that opens another stanza still opens the file.
    let mixed = encrypt(
        &[
            Recipient::Passphrase(passphrase("a"), cheap(1)),
            Recipient::Key(key(1)),
        ],
        &plain(),
    );
    let costly_mixed = edit_stanzas(&mixed, |s| {
        s[0].body[..28].copy_from_slice(&costly.encode())
    });
    let opened = UnverifiedHeader::read(&mut &costly_mixed[..])
        .unwrap()
        .open(
            &Unlock::new(vec![
                Identity::Passphrase(passphrase("a")),
                Identity::Key(key(1)),
            ]),
            BodyAccess::Bytes(&costly_mixed),
        );
    // The slot tag covers the changed parameters, so the key's stanza opens but the header
    // does not verify: refused as damaged, never by running the costly Argon2id.
    assert!(
        matches!(opened, Err(ContainerError::DamagedHeader)),
        "{opened:?}"
    );
    let mut unlock = Unlock::new(vec![Identity::Passphrase(passphrase("a"))]);
    unlock.max_kdf_mib = 0;
    let err = UnverifiedHeader::read(&mut &file[..])
        .unwrap()
        .open(&unlock, BodyAccess::Bytes(&file))
        .unwrap_err();
    assert!(matches!(err, ContainerError::KdfTooCostly { .. }), "{err}");
}

#[test]
fn absurd_slots_are_refused_before_allocation() {
    let file = encrypt(&[Recipient::Key(key(1))], &plain());
    let mut huge = file.clone();
    huge[32..36].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(
        UnverifiedHeader::read(&mut &huge[..]),
        Err(ContainerError::BadHeader(_))
    ));
    let mut count = file.clone();
    count[v2::PREAMBLE_LEN + 8..v2::PREAMBLE_LEN + 10].copy_from_slice(&u16::MAX.to_be_bytes());
    assert!(UnverifiedHeader::read(&mut &count[..]).is_err());
    let mut long = file.clone();
    long[v2::PREAMBLE_LEN + 11..v2::PREAMBLE_LEN + 13].copy_from_slice(&u16::MAX.to_be_bytes());
    assert!(UnverifiedHeader::read(&mut &long[..]).is_err());
    let mut reserved = file.clone();
    reserved[40] = 1;
    assert!(UnverifiedHeader::read(&mut &reserved[..]).is_err());
    assert!(matches!(
        UnverifiedHeader::read(&mut &file[..100]),
        Err(ContainerError::TruncatedHeader)
    ));
    let mut future = file.clone();
    future[8] = 4;
    assert!(matches!(
        UnverifiedHeader::read(&mut &future[..]),
        Err(ContainerError::UnsupportedVersion(4))
    ));
}

#[test]
fn the_argon2_cap_holds_for_both_slots_together() {
    let data = plain();
    let cost = cheap(1).cost_mib();
    let file = encrypt(&[Recipient::Passphrase(passphrase("a"), cheap(1))], &data);
    // A rekey interrupted after publishing: both slots hold a passphrase stanza.
    let Rekey::InPlace(in_place) = open_file(&file, Identity::Passphrase(passphrase("a")))
        .rekey(&[Recipient::Passphrase(passphrase("b"), cheap(2))])
        .unwrap()
    else {
        panic!("fits in place");
    };
    let mut both = file.clone();
    for write in &in_place.publish {
        let at = write.offset as usize;
        both[at..at + write.bytes.len()].copy_from_slice(&write.bytes);
    }
    let capped = |cap: u64| Unlock {
        max_kdf_mib: cap,
        ..Unlock::new(vec![Identity::Passphrase(passphrase("a"))])
    };
    assert_eq!(decrypt_with(&both, &capped(2 * cost)).unwrap(), data);
    let refused = decrypt_with(&both, &capped(2 * cost - 1)).unwrap_err();
    assert!(
        refused.contains("in all (two stanza slots ask"),
        "{refused}"
    );
    assert!(refused.contains("above the cap"), "{refused}");
    // One slot alone stays within a cap of one stanza's cost.
    assert_eq!(decrypt_with(&file, &capped(cost)).unwrap(), data);
}

/// A reader does not try a slot that names one SSH key more than twice (a planted header could
/// otherwise make the victim's key do a private-key operation per stanza); with two, it opens.
#[test]
fn a_slot_naming_one_ssh_key_three_times_is_not_tried() {
    use crate::container::stanza::ssh_tests;
    let to = Recipient::Public(ssh_tests::recipient(ssh_tests::ED25519_PUB));
    let unlock = Unlock::new(vec![Identity::Secret(ssh_tests::identity(
        ssh_tests::ED25519,
    ))]);
    for (copies, opens) in [(2, true), (3, false)] {
        let d = FileSecret::random().unwrap();
        let stanza = Stanza::wrap(&to, &d).unwrap();
        let stanzas = vec![stanza; copies];
        let slot_len = Preamble::slot_len_for(v2::slot_bytes_needed(&stanzas));
        let (header, _) = seal_message(
            &stanzas,
            d,
            Variant::Cobblestone256,
            slot_len,
            FIRST_GENERATION,
        )
        .unwrap();
        let opened = UnverifiedHeader::read(&mut &header[..])
            .unwrap()
            .open(&unlock, BodyAccess::Stream { first: &[] });
        match (opens, opened) {
            (true, Ok(_)) => {}
            (false, Err(ContainerError::KeyNamedTooOften)) => {}
            (_, other) => panic!("{copies} copies: {other:?}"),
        }
    }
}
