//! The second stanza slot: a slot planted by someone with no key (issue 25: generations
//! 2^64 - 1 and 2^64 - 2), a valid slot planted for the victim's recipient, and two slots that
//! wrap different file keys: never another content, never a lent generation.

use super::*;

#[test]
fn a_planted_slot_of_generation_2_pow_64_minus_1_is_ignored_and_rekey_keeps_the_file() {
    let data = plain();
    let file = planted_generation(&encrypt(&[Recipient::Key(key(1))], &data), u64::MAX);
    // It does not parse, so it changes nothing: the file opens, and two rekeys in a row
    // leave a file the newest key opens (the old code wrapped the generation to 0 and lost it).
    assert_eq!(decrypt(&file, vec![Identity::Key(key(1))]).unwrap(), data);
    let once = rekeyed(
        &file,
        &Unlock::new(vec![Identity::Key(key(1))]),
        &[Recipient::Key(key(2))],
    )
    .unwrap();
    assert_eq!(decrypt(&once, vec![Identity::Key(key(2))]).unwrap(), data);
    let twice = rekeyed(
        &once,
        &Unlock::new(vec![Identity::Key(key(2))]),
        &[Recipient::Key(key(3))],
    )
    .unwrap();
    assert_eq!(decrypt(&twice, vec![Identity::Key(key(3))]).unwrap(), data);
}

#[test]
fn a_planted_slot_of_generation_2_pow_64_minus_2_is_ignored_in_v3_refused_in_v2_and_lends_no_generation(
) {
    let data = plain();
    let writers: [Writer; 2] = [encrypt, encrypt_v2];
    for encrypt in writers {
        let file = planted_generation(&encrypt(&[Recipient::Key(key(1))], &data), u64::MAX - 1);
        // It parses but no key authenticates it. v3: the key commitment decides, the file
        // opens and the slot is named as ignored. v2: refused by default, named as such.
        let opened = UnverifiedHeader::read(&mut &file[..]).and_then(|h| {
            h.open(
                &Unlock::new(vec![Identity::Key(key(1))]),
                BodyAccess::Bytes(&file),
            )
        });
        let unlock = if file[8] == 3 {
            let ignored = opened.unwrap().ignored_slot().cloned().expect("named");
            assert_eq!((ignored.position, ignored.generation), (1, u64::MAX - 1));
            assert!(
                ignored.warning().contains("stanza slot 1"),
                "{}",
                ignored.warning()
            );
            assert_eq!(decrypt(&file, vec![Identity::Key(key(1))]).unwrap(), data);
            Unlock::new(vec![Identity::Key(key(1))])
        } else {
            let refused = opened.unwrap_err().to_string();
            assert!(refused.contains("does not authenticate"), "{refused}");
            allowing(vec![Identity::Key(key(1))])
        };
        // The rekey takes its generation from the slot the key opened (2, not 2^64 - 1) and
        // overwrites the planted slot; each file after it opens with no override.
        let once = rekeyed(&file, &unlock, &[Recipient::Key(key(2))]).unwrap();
        assert_eq!(decrypt(&once, vec![Identity::Key(key(2))]).unwrap(), data);
        assert!(decrypt(&once, vec![Identity::Key(key(1))]).is_err());
        let twice = rekeyed(
            &once,
            &Unlock::new(vec![Identity::Key(key(2))]),
            &[Recipient::Key(key(3))],
        )
        .unwrap();
        assert_eq!(decrypt(&twice, vec![Identity::Key(key(3))]).unwrap(), data);
        let header = UnverifiedHeader::read(&mut &twice[..]).unwrap();
        let Access::Slots { slots, .. } = &header.info().access else {
            panic!("v2 or v3");
        };
        assert_eq!(slots.len(), 1);
        assert_eq!(slots[0].generation, 3, "1, then 2, then 3");
    }
}

#[test]
fn a_valid_slot_planted_for_the_victims_recipient_never_replaces_the_real_one() {
    for encrypt in [encrypt, encrypt_v2] {
        a_valid_slot_planted_for_the_victims_recipient(encrypt);
    }
}

fn a_valid_slot_planted_for_the_victims_recipient(encrypt: Writer) {
    let data = plain();
    let victim = SecretIdentity::generate_x25519().unwrap();
    let file = encrypt(&[Recipient::Public(victim.recipient())], &data);
    // The attacker knows only the victim's public recipient: a slot of generation 7 wrapping
    // a file key D' of their own, with a correct tag under D'.
    let attacked = plant_slot(&file, 1, &[Recipient::Public(victim.recipient())], 7).unwrap();
    let me = || vec![Identity::Secret(victim.clone())];
    // v3: the planted D' fails the key commitment, the real slot opens the file, and the
    // planted one is named as ignored; a rekey overwrites it. v2: refused by default (the
    // slots disagree, and nothing tells which is real), before any rekey writes anything;
    // with the override, the planted D' fails the body check and the real slot opens it.
    let unlock = if file[8] == 3 {
        Unlock::new(me())
    } else {
        let refused = decrypt(&attacked, me()).unwrap_err();
        assert!(refused.contains("does not authenticate"), "{refused}");
        let refused =
            rekeyed(&attacked, &Unlock::new(me()), &[Recipient::Key(key(2))]).unwrap_err();
        assert!(refused.contains("does not authenticate"), "{refused}");
        allowing(me())
    };
    assert_eq!(decrypt_with(&attacked, &unlock).unwrap(), data);
    let after = rekeyed(&attacked, &unlock, &[Recipient::Key(key(2))]).unwrap();
    assert_eq!(decrypt(&after, vec![Identity::Key(key(2))]).unwrap(), data);
    // On a pipe, the key commitment (v3) or the first record read ahead (v2) does the same:
    // the real slot opens the file.
    let info = UnverifiedHeader::read(&mut &attacked[..])
        .unwrap()
        .info()
        .clone();
    let body = &attacked[info.chunks_start() as usize..];
    let first = if info.is_message() {
        &[][..]
    } else {
        &body[..CHUNK + TAG_LEN]
    };
    let streamed = UnverifiedHeader::read(&mut &attacked[..])
        .unwrap()
        .open(&unlock, BodyAccess::Stream { first })
        .unwrap();
    assert_eq!(streamed.ignored_slot().map(|s| s.position), Some(1));
    let engine = CpuEngine::new(Some(1)).unwrap();
    let spec = streamed.stream_spec(&engine, Direction::Decrypt);
    let mut out = Vec::new();
    pipeline::run(&spec, &mut &body[..], &mut out, &|_| {}).unwrap();
    assert_eq!(out, data);
    // A stream opened so cannot be rekeyed (its last chunk was not checked).
    assert!(streamed.rekey(&[Recipient::Key(key(2))]).is_err());
}

/// Issue 25's P1: two slots that wrap different file keys, each with a valid tag under its
/// own key (Alice's and Bob's), so the file could show each a different authenticated
/// plaintext. v2: each recipient's reader refuses it. v3: the body commits to Alice's file
/// key, so Alice reads it (Bob's slot ignored and named) and Bob is refused: nobody sees
/// other content.
#[test]
fn two_slots_wrapping_different_file_keys_never_show_two_contents() {
    let data = plain();
    let alice = SecretIdentity::generate_x25519().unwrap();
    let bob = SecretIdentity::generate_x25519().unwrap();
    for encrypt in [encrypt, encrypt_v2] {
        let file = encrypt(&[Recipient::Public(alice.recipient())], &data);
        let two_faced = plant_slot(&file, 1, &[Recipient::Public(bob.recipient())], 1).unwrap();
        if file[8] == 3 {
            let me = vec![Identity::Secret(alice.clone())];
            assert_eq!(decrypt(&two_faced, me).unwrap(), data);
            refused_for_each(&two_faced, [("bob", &bob)]);
        } else {
            refused_for_each(&two_faced, [("alice", &alice), ("bob", &bob)]);
        }
    }
}

/// Opening `two_faced` with each identity fails: one slot does not authenticate the other,
/// or the forger's file key does not belong to the body.
fn refused_for_each<const N: usize>(two_faced: &[u8], recipients: [(&str, &SecretIdentity); N]) {
    for (who, id) in recipients {
        for body in [
            BodyAccess::Bytes(two_faced),
            BodyAccess::Stream { first: &[] },
        ] {
            let opened = UnverifiedHeader::read(&mut &two_faced[..])
                .unwrap()
                .open(&Unlock::new(vec![Identity::Secret(id.clone())]), body);
            assert!(
                matches!(
                    opened,
                    Err(ContainerError::UnverifiedSlot
                        | ContainerError::BodyKeyMismatch(_)
                        | ContainerError::CommitmentMismatch)
                ),
                "{who} {body:?}: {opened:?}"
            );
        }
    }
}
