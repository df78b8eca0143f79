//! Rekey in place and by rewrite: the body kept and who can open swapped, an interrupted
//! rekey, the generation limit, and the body check a rekey needs and the read-back it confirms.

use super::*;

#[test]
fn rekey_keeps_the_body_and_swaps_who_can_open() {
    let data = plain();
    let file = encrypt(&[Recipient::Key(key(1))], &data);
    let header_len = header_len(&file);
    let bob = SecretIdentity::generate_x25519().unwrap();
    let opened = open_file(&file, Identity::Key(key(1)));
    let plan = opened
        .rekey(&[Recipient::Key(key(2)), Recipient::Public(bob.recipient())])
        .unwrap();
    assert!(matches!(plan, Rekey::InPlace(_)));
    let rekeyed = plan.apply_to(&file);
    assert_eq!(
        rekeyed[header_len..],
        file[header_len..],
        "body bytes unchanged"
    );
    assert!(decrypt(&rekeyed, vec![Identity::Key(key(1))]).is_err());
    assert_eq!(
        decrypt(&rekeyed, vec![Identity::Key(key(2))]).unwrap(),
        data
    );
    assert_eq!(
        decrypt(&rekeyed, vec![Identity::Secret(bob.clone())]).unwrap(),
        data
    );
    // And again, from the other slot.
    let twice = open_file(&rekeyed, Identity::Secret(bob))
        .rekey(&[Recipient::Key(key(3))])
        .unwrap()
        .apply_to(&rekeyed);
    assert_eq!(decrypt(&twice, vec![Identity::Key(key(3))]).unwrap(), data);
    assert!(decrypt(&twice, vec![Identity::Key(key(2))]).is_err());
}

#[test]
fn rekey_that_does_not_fit_rewrites_the_header_and_keeps_the_body() {
    let data = plain();
    let file = encrypt(&[Recipient::Key(key(1))], &data);
    let old_len = header_len(&file);
    let ids: Vec<SecretIdentity> = (0..4)
        .map(|_| SecretIdentity::generate_hybrid().unwrap())
        .collect();
    let recipients: Vec<Recipient> = ids
        .iter()
        .map(|i| Recipient::Public(i.recipient()))
        .collect();
    let plan = open_file(&file, Identity::Key(key(1)))
        .rekey(&recipients)
        .unwrap();
    assert!(matches!(plan, Rekey::Rewrite { .. }));
    let rekeyed = plan.apply_to(&file);
    let new_len = header_len(&rekeyed);
    assert!(new_len > old_len);
    assert_eq!(rekeyed[new_len..], file[old_len..], "body bytes unchanged");
    for id in ids {
        assert_eq!(decrypt(&rekeyed, vec![Identity::Secret(id)]).unwrap(), data);
    }
    assert!(decrypt(&rekeyed, vec![Identity::Key(key(1))]).is_err());
}

/// A rekey killed at any point, even in the middle of a write (a torn sector), leaves a file
/// that the old or the new key opens, and the body intact.
#[test]
fn an_interrupted_rekey_leaves_a_file_the_old_or_the_new_key_opens() {
    let data = plain();
    let file = encrypt(&[Recipient::Key(key(1))], &data);
    let Rekey::InPlace(in_place) = open_file(&file, Identity::Key(key(1)))
        .rekey(&[Recipient::Key(key(2))])
        .unwrap()
    else {
        panic!("fits in place");
    };
    let mut states = 0;
    let mut current = file.clone();
    for write in in_place.writes() {
        let len = write.bytes.len();
        // Every byte offset: the reader refuses no torn state (no override needed).
        let cuts = 0..=len;
        for cut in cuts.filter(|&c| c <= len) {
            let mut torn = current.clone();
            let at = write.offset as usize;
            torn[at..at + cut].copy_from_slice(&write.bytes[..cut]);
            let old = decrypt(&torn, vec![Identity::Key(key(1))]);
            let new = decrypt(&torn, vec![Identity::Key(key(2))]);
            assert!(
                old.as_ref().is_ok_and(|p| *p == data) || new.as_ref().is_ok_and(|p| *p == data),
                "write at {} cut after {cut} bytes: neither key opens ({old:?} / {new:?})",
                write.offset
            );
            states += 1;
        }
        let at = write.offset as usize;
        current[at..at + len].copy_from_slice(&write.bytes);
    }
    assert!(decrypt(&current, vec![Identity::Key(key(1))]).is_err());
    assert!(states > 100);
}

#[test]
fn rekey_refuses_a_generation_past_2_pow_64_minus_2() {
    let (_, sealed) = seal_v2(params(Mode::Ctr), &[Recipient::Key(key(1))]).unwrap();
    let state = sealed.rekey.unwrap();
    let (header, _) = slotted_header(
        state.preamble,
        &make_stanzas(&[Recipient::Key(key(1))], &sealed.secret).unwrap(),
        &sealed.secret,
        v2::MAX_GENERATION,
    );
    let engine = CpuEngine::new(Some(1)).unwrap();
    let spec = sealed.stream_spec(&engine, Direction::Encrypt);
    let mut file = header;
    pipeline::run(&spec, &mut &plain()[..], &mut file, &|_| {}).unwrap();
    assert_eq!(
        decrypt(&file, vec![Identity::Key(key(1))]).unwrap(),
        plain()
    );
    let refused = rekeyed(
        &file,
        &Unlock::new(vec![Identity::Key(key(1))]),
        &[Recipient::Key(key(2))],
    )
    .unwrap_err();
    assert!(refused.contains("generation is at its limit"), "{refused}");
}

#[test]
fn rekey_needs_the_body_checked_and_confirms_what_it_wrote() {
    for encrypt in [encrypt, encrypt_v2] {
        rekey_needs_the_body_checked(encrypt(&[Recipient::Key(key(1))], &plain()));
    }
}

fn rekey_needs_the_body_checked(file: Vec<u8>) {
    let streamed = UnverifiedHeader::read(&mut &file[..])
        .unwrap()
        .open(
            &Unlock::new(vec![Identity::Key(key(1))]),
            BodyAccess::Stream { first: &[] },
        )
        .unwrap();
    assert!(matches!(
        streamed.rekey(&[Recipient::Key(key(2))]),
        Err(ContainerError::RekeyNotConfirmed(_))
    ));
    let opened = open_file(&file, Identity::Key(key(1)));
    let plan = opened.rekey(&[Recipient::Key(key(2))]).unwrap();
    let Rekey::InPlace(in_place) = &plan else {
        panic!("fits in place");
    };
    // What publish wrote, read back: confirmed; with a byte of the new slot lost: refused.
    let mut published = file.clone();
    for write in &in_place.publish {
        let at = write.offset as usize;
        published[at..at + write.bytes.len()].copy_from_slice(&write.bytes);
    }
    opened
        .confirm_rekey(&plan, BodyAccess::Bytes(&published))
        .unwrap();
    let mut lost = published.clone();
    lost[in_place.publish[1].offset as usize + 20] ^= 1;
    assert!(opened
        .confirm_rekey(&plan, BodyAccess::Bytes(&lost))
        .is_err());
    // A rewrite whose body copy lost its last byte is refused before any rename.
    let big: Vec<Recipient> = (0..4)
        .map(|_| Recipient::Public(SecretIdentity::generate_hybrid().unwrap().recipient()))
        .collect();
    let plan = opened.rekey(&big).unwrap();
    assert!(matches!(plan, Rekey::Rewrite { .. }));
    let copy = plan.apply_to(&file);
    opened
        .confirm_rekey(&plan, BodyAccess::Bytes(&copy))
        .unwrap();
    assert!(opened
        .confirm_rekey(&plan, BodyAccess::Bytes(&copy[..copy.len() - 1]))
        .is_err());
}

/// The stanzas of slot `position` of `file`, as stored.
fn slot_stanzas(file: &[u8], position: usize) -> Vec<Stanza> {
    let header = SlottedHeader::read(file[..32].try_into().unwrap(), &mut &file[32..]).unwrap();
    header
        .slots
        .into_iter()
        .find(|slot| slot.index == position)
        .expect("the slot parses")
        .stanzas
}

/// An edit keeps every stanza it does not remove byte for byte (so a recipient who is not
/// present still opens the file), adds the new ones after them, and the opener is known.
#[test]
fn an_edit_keeps_the_other_stanzas_byte_for_byte_and_adds() {
    let data = plain();
    let bob = SecretIdentity::generate_x25519().unwrap();
    let file = encrypt(
        &[Recipient::Key(key(1)), Recipient::Public(bob.recipient())],
        &data,
    );
    let before = slot_stanzas(&file, 0);
    let opened = open_file(&file, Identity::Key(key(1)));
    assert_eq!(opened.opened_by(), Some(0));
    assert_eq!(opened.opening_identity(), Some(0));
    let add = NewStanzas::prepare(&[Recipient::Key(key(2))]).unwrap();
    let added = opened
        .edit_with(&[], Some(&add), RekeyWay::InPlaceWhereTheyFit)
        .unwrap()
        .apply_to(&file);
    let after = slot_stanzas(&added, 1);
    assert_eq!(after[..2], before[..], "the old stanzas, byte for byte");
    assert_eq!(after.len(), 3);
    for identity in [
        Identity::Key(key(1)),
        Identity::Key(key(2)),
        Identity::Secret(bob.clone()),
    ] {
        assert_eq!(decrypt(&added, vec![identity]).unwrap(), data);
    }
    // Removing the first key file keeps bob's and key 2's stanzas as they were.
    let opened = open_file(&added, Identity::Key(key(2)));
    assert_eq!(opened.opened_by(), Some(2));
    let removed = opened
        .edit_with(&[0], None, RekeyWay::InPlaceWhereTheyFit)
        .unwrap()
        .apply_to(&added);
    assert_eq!(slot_stanzas(&removed, 0), after[1..]);
    assert!(decrypt(&removed, vec![Identity::Key(key(1))]).is_err());
    assert_eq!(
        decrypt(&removed, vec![Identity::Key(key(2))]).unwrap(),
        data
    );
    // Removing every stanza, or adding a second passphrase, is refused.
    let opened = open_file(&removed, Identity::Key(key(2)));
    assert!(matches!(
        opened.edit_with(&[0, 1], None, RekeyWay::InPlaceWhereTheyFit),
        Err(ContainerError::BadStanzaChange(_))
    ));
}

/// `info`'s names: a label, with `#N` only where a label repeats; selectors name exactly one.
#[test]
fn stanza_names_and_selectors() {
    let bob = SecretIdentity::generate_x25519().unwrap();
    let carol = SecretIdentity::generate_x25519().unwrap();
    let file = encrypt(
        &[
            Recipient::Key(key(1)),
            Recipient::Public(bob.recipient()),
            Recipient::Public(carol.recipient()),
        ],
        &plain(),
    );
    let kinds = open_file(&file, Identity::Key(key(1)))
        .stanza_kinds()
        .unwrap();
    assert_eq!(stanza_names(&kinds), ["key-file", "x25519#2", "x25519#3"]);
    let pick = |text: &str| select(&kinds, &[text.parse::<StanzaSelector>().unwrap()]);
    assert_eq!(pick("key-file").unwrap(), [0]);
    assert_eq!(pick("KEY-FILE#1").unwrap(), [0]);
    assert_eq!(pick("x25519#3").unwrap(), [2]);
    assert!(pick("x25519").is_err(), "two stanzas: ambiguous");
    assert!(pick("x25519#1").is_err(), "stanza 1 is a key file");
    assert!(pick("passphrase").is_err(), "none");
    for bad in ["frob", "x25519#0", "ssh-ed25519:xyz", "x25519#"] {
        assert!(bad.parse::<StanzaSelector>().is_err(), "{bad}");
    }
}
