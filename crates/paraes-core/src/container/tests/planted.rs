//! Planted stanza slots (issue 35): a valid slot for the victim's public recipient under a
//! forger's file key, of generations 1, 2, 7, 2^64 - 2 and 2^64 - 1, in either slot position.
//! In v3 the file opens without the override (the key commitment decides) and names the
//! ignored slot; in v2 it is refused unless the override is given. Rekey in place and by
//! rewrite, and every point where either could be cut (a crash, `kill -9`), leave a file the
//! old or the new secret opens, never with other content; an undo puts back what a rekey
//! overwrote by the same protocol.

use super::*;

const GENERATIONS: [u64; 5] = [1, 2, 7, u64::MAX - 1, u64::MAX];

/// A container for `victim` whose live slot is `live` (0: fresh; 1: rekeyed once), and the
/// plaintext.
fn victim_file(encrypt: Writer, victim: &SecretIdentity, live: usize) -> Vec<u8> {
    let me = [Recipient::Public(victim.recipient())];
    let file = encrypt(&me, &plain());
    if live == 0 {
        return file;
    }
    let unlock = Unlock::new(vec![Identity::Secret(victim.clone())]);
    rekeyed(&file, &unlock, &me).unwrap()
}

/// How the victim opens `file`: v3 with nothing more, v2 only with the override.
fn victims_unlock(file: &[u8], victim: &SecretIdentity) -> Unlock {
    let me = vec![Identity::Secret(victim.clone())];
    if file[8] == 3 {
        Unlock::new(me)
    } else {
        allowing(me)
    }
}

/// Every state a crash can leave while `writes` are made in order over `start` (each write
/// cut after 0, 1, 8, half and all of its bytes), the state after all of them last.
fn crash_states(start: &[u8], writes: &[HeaderWrite]) -> Vec<Vec<u8>> {
    let mut states = Vec::new();
    let mut current = start.to_vec();
    for write in writes {
        let len = write.bytes.len();
        let at = write.offset as usize;
        for cut in [0, 1, 8.min(len), len / 2, len] {
            let mut torn = current.clone();
            torn[at..at + cut].copy_from_slice(&write.bytes[..cut]);
            states.push(torn);
        }
        current[at..at + len].copy_from_slice(&write.bytes);
    }
    states.push(current);
    states
}

/// `state` opens with `old` or with `new`, and whatever opens it gives the plaintext.
fn opens_with_old_or_new(state: &[u8], old: &Unlock, new: &Unlock, what: &str) {
    let by_old = decrypt_with(state, old);
    let by_new = decrypt_with(state, new);
    for content in [&by_old, &by_new].into_iter().flatten() {
        assert!(*content == plain(), "{what}: other content");
    }
    assert!(
        by_old.is_ok() || by_new.is_ok(),
        "{what}: neither opens ({by_old:?} / {by_new:?})"
    );
}

#[test]
fn a_planted_slot_in_either_position_of_any_generation_never_shows_other_content() {
    let victim = SecretIdentity::generate_x25519().unwrap();
    let writers: [Writer; 2] = [encrypt, encrypt_v2];
    for encrypt in writers {
        for live in [0, 1] {
            let file = victim_file(encrypt, &victim, live);
            let version = file[8];
            for generation in GENERATIONS {
                let what = format!("v{version}, live slot {live}, planted generation {generation}");
                let planted = 1 - live;
                let attacked = plant_slot(
                    &file,
                    planted,
                    &[Recipient::Public(victim.recipient())],
                    generation,
                )
                .unwrap();
                let parses = generation != u64::MAX;
                let me = Unlock::new(vec![Identity::Secret(victim.clone())]);
                let opened = UnverifiedHeader::read(&mut &attacked[..])
                    .and_then(|h| h.open(&me, BodyAccess::Bytes(&attacked)));
                match (version, parses) {
                    (3, true) => {
                        let ignored = opened.unwrap().ignored_slot().cloned();
                        assert_eq!(ignored.map(|s| s.position), Some(planted), "{what}");
                    }
                    (_, false) => assert!(opened.unwrap().ignored_slot().is_none(), "{what}"),
                    _ => assert!(
                        matches!(opened, Err(ContainerError::UnverifiedSlot)),
                        "{what}: {opened:?}"
                    ),
                }
                let unlock = victims_unlock(&attacked, &victim);
                assert_eq!(decrypt_with(&attacked, &unlock).unwrap(), plain(), "{what}");
                rekeys_over_a_planted_slot(&attacked, &unlock, &what);
            }
        }
    }
}

/// Rekeys `attacked` to a new key in place and by rewrite: both open with the new key alone,
/// and every crash state of the in-place rekey opens with the old or the new secret.
fn rekeys_over_a_planted_slot(attacked: &[u8], unlock: &Unlock, what: &str) {
    let opened = UnverifiedHeader::read(&mut &attacked[..])
        .and_then(|h| h.open(unlock, BodyAccess::Bytes(attacked)))
        .unwrap();
    let new = NewStanzas::prepare(&[Recipient::Key(key(9))]).unwrap();
    let new_key = if attacked[8] == 3 {
        Unlock::new(vec![Identity::Key(key(9))])
    } else {
        allowing(vec![Identity::Key(key(9))])
    };
    for way in [RekeyWay::InPlaceWhereTheyFit, RekeyWay::Rewrite] {
        let plan = opened.rekey_with(&new, way).unwrap();
        let after = plan.apply_to(attacked);
        opened
            .confirm_rekey(&plan, BodyAccess::Bytes(&after))
            .unwrap();
        // The planted slot is gone: the new key opens the file with no override.
        assert_eq!(
            decrypt(&after, vec![Identity::Key(key(9))]).unwrap(),
            plain(),
            "{what}, {way:?}"
        );
        assert!(decrypt_with(&after, unlock).is_err(), "{what}, {way:?}");
        match &plan {
            Rekey::InPlace(in_place) => {
                assert_eq!(way, RekeyWay::InPlaceWhereTheyFit);
                let writes: Vec<HeaderWrite> = in_place.writes().cloned().collect();
                for (i, state) in crash_states(attacked, &writes).iter().enumerate() {
                    opens_with_old_or_new(state, unlock, &new_key, &format!("{what}, state {i}"));
                }
            }
            Rekey::Rewrite { .. } => assert_eq!(way, RekeyWay::Rewrite, "{what}: fits in place"),
        }
    }
}

#[test]
fn an_undo_puts_back_what_publish_overwrote_and_a_cut_undo_leaves_no_torn_slot() {
    let victim = SecretIdentity::generate_x25519().unwrap();
    let writers: [Writer; 2] = [encrypt, encrypt_v2];
    for encrypt in writers {
        // The idle slot holds something of its own (here a slot planted for the victim), which
        // an undo must put back byte for byte.
        let file = victim_file(encrypt, &victim, 1);
        let attacked = plant_slot(&file, 0, &[Recipient::Public(victim.recipient())], 7).unwrap();
        let unlock = victims_unlock(&attacked, &victim);
        let opened = UnverifiedHeader::read(&mut &attacked[..])
            .and_then(|h| h.open(&unlock, BodyAccess::Bytes(&attacked)))
            .unwrap();
        let plan = opened.rekey(&[Recipient::Key(key(9))]).unwrap();
        let Rekey::InPlace(in_place) = &plan else {
            panic!("fits in place");
        };
        let (at, len) = in_place.overwritten();
        let (at, len) = (at as usize, len);
        let record = &attacked[at..at + len];
        assert!(in_place.undo(&record[1..]).is_none(), "a short record");
        let undo = in_place.undo(record).unwrap();
        let mut published = attacked.clone();
        for write in &in_place.publish {
            let o = write.offset as usize;
            published[o..o + write.bytes.len()].copy_from_slice(&write.bytes);
        }
        let new_key = allowing(vec![Identity::Key(key(9))]);
        let states = crash_states(&published, &undo);
        assert_eq!(
            states.last().unwrap(),
            &attacked,
            "the undo puts every byte back"
        );
        for (i, state) in states.iter().enumerate() {
            opens_with_old_or_new(
                state,
                &unlock,
                &new_key,
                &format!("v{} undo state {i}", file[8]),
            );
        }
        // The generation goes back last: until then the slot does not parse.
        assert!(undo[0].bytes.iter().all(|&b| b == 0));
        assert_eq!(undo[2].bytes, record[..8]);
    }
}
