//! Locked keys: asked for their passphrase once, and only when a stanza's tag names them;
//! failing in one line without a terminal or with a wrong passphrase; one key given twice
//! asked for once, and merging keeping every other identity in order.

use super::*;

#[test]
fn a_locked_key_asks_once_and_only_when_a_tag_matches() {
    let d = FileSecret::random().unwrap();
    for (locked, public) in [(ED25519_LOCKED, ED25519_PUB), (RSA_LOCKED, RSA_PUB)] {
        let ask = Asker::new(Some(PASSPHRASE));
        let id = identity_with(locked, &ask).unwrap();
        assert_eq!(ask.asked(), 0, "reading the key asks nothing");
        assert_eq!(
            id.recipient(),
            recipient(public),
            "its public half is in the clear"
        );
        // Stanzas for other keys: skipped by their tag, nothing asked.
        let x = SecretIdentity::generate_x25519().unwrap();
        for other in [
            seal(&x.recipient(), &d),
            seal(&recipient(&stranger_line()), &d),
            seal(
                &recipient(if public == RSA_PUB {
                    ED25519_PUB
                } else {
                    RSA_PUB
                }),
                &d,
            ),
        ] {
            assert_eq!(opens(&other, &id).unwrap(), None);
        }
        assert_eq!(ask.asked(), 0, "no stanza of its own yet");
        // Its own stanzas, twice: asked once.
        let own = [seal(&recipient(public), &d), seal(&recipient(public), &d)];
        for stanza in &own {
            assert_eq!(opens(stanza, &id).unwrap(), Some(d.as_bytes().to_vec()));
        }
        assert_eq!(ask.asked(), 1);
        // Its clones share the unlocked key.
        assert_eq!(
            opens(&own[0], &id.clone()).unwrap(),
            Some(d.as_bytes().to_vec())
        );
        assert_eq!(ask.asked(), 1);
    }
}

#[test]
fn a_locked_key_without_a_terminal_or_with_a_wrong_passphrase_fails_in_one_line() {
    let d = FileSecret::random().unwrap();
    let stanza = seal(&recipient(ED25519_PUB), &d);
    for (answer, needle) in [
        (None, "no terminal here"),
        (Some("wrong"), "the passphrase is wrong"),
    ] {
        let ask = Asker::new(answer);
        let id = identity_with(ED25519_LOCKED, &ask).unwrap();
        let err = opens(&stanza, &id).unwrap_err();
        assert!(
            matches!(err, ContainerError::IdentityLocked { .. }),
            "{err}"
        );
        let text = err.to_string();
        assert!(text.starts_with("cannot unlock SSH key k: "), "{text}");
        assert!(text.contains(needle) && !text.contains('\n'), "{text}");
        // The failure is kept: not asked again.
        assert!(opens(&stanza, &id).is_err());
        assert_eq!(ask.asked(), 1);
    }
    // parse_identities has no one to ask.
    let id = crate::container::parse_identities(ED25519_LOCKED)
        .unwrap()
        .remove(0);
    let err = opens(&stanza, &id).unwrap_err().to_string();
    assert!(err.contains("no way to ask"), "{err}");
}

/// One key given twice (`-i k -i k`, one key file through two paths, a locked copy beside one
/// without a passphrase) is asked for its passphrase at most once: its identities are merged
/// into one ([`Identity::merge_same_keys`]), which keeps a copy without a passphrase if there
/// is one. Unmerged, a wrong passphrase for the first copy made the second ask again.
#[test]
fn one_key_given_twice_is_asked_for_once() {
    use crate::container::{BodyAccess, Unlock, UnverifiedHeader};
    for (locked, unlocked, public) in [
        (ED25519_LOCKED, ED25519, ED25519_PUB),
        (RSA_LOCKED, RSA, RSA_PUB),
    ] {
        let (header, _) = crate::container::seal(
            crate::key::KeySize::Aes256,
            &[Recipient::Public(recipient(public))],
        )
        .unwrap();
        let open = |identities: Vec<Identity>| {
            UnverifiedHeader::read(&mut &header[..])
                .unwrap()
                .open(&Unlock::new(identities), BodyAccess::Stream { first: &[] })
                .map(|_| ())
        };
        let copies = |ask: &Arc<Asker>, texts: &[&str]| -> Vec<Identity> {
            texts
                .iter()
                .map(|text| Identity::Secret(identity_with(text, ask).unwrap()))
                .collect()
        };
        // Unmerged, the issue: each copy asks.
        let ask = Asker::new(Some("wrong"));
        let err = open(copies(&ask, &[locked, locked])).unwrap_err();
        assert!(
            matches!(err, ContainerError::IdentityLocked { .. }),
            "{err}"
        );
        assert_eq!(ask.asked(), 2);
        // Merged: one identity, asked once, whatever the passphrase.
        for (answer, opens) in [("wrong", false), (PASSPHRASE, true)] {
            let ask = Asker::new(Some(answer));
            let merged = Identity::merge_same_keys(copies(&ask, &[locked, locked, locked]));
            assert_eq!(merged.len(), 1);
            assert_eq!(open(merged).is_ok(), opens, "{answer}");
            assert_eq!(ask.asked(), 1, "{answer}");
        }
        // A copy without a passphrase, before or after the locked one: kept in the first
        // one's place, nothing asked.
        for texts in [[locked, unlocked], [unlocked, locked]] {
            let ask = Asker::new(None);
            let merged = Identity::merge_same_keys(copies(&ask, &texts));
            assert_eq!(merged.len(), 1);
            assert!(!merged[0].may_prompt());
            open(merged).unwrap();
            assert_eq!(ask.asked(), 0);
        }
    }
}

/// Merging keeps every other identity, in order: keys, passphrases, and other keys (of the
/// other SSH kind, or paraes's), each in its first place.
#[test]
fn merging_identities_keeps_the_others_in_order() {
    let ask = Asker::new(None);
    let x = SecretIdentity::generate_x25519().unwrap();
    let key = Identity::Key(crate::key::Key::new(&[7; 32]).unwrap());
    let passphrase = Identity::Passphrase(Zeroizing::new(b"words".to_vec()));
    let ed = || Identity::Secret(identity_with(ED25519_LOCKED, &ask).unwrap());
    let merged = Identity::merge_same_keys(vec![
        ed(),
        key.clone(),
        Identity::Secret(identity(RSA)),
        passphrase.clone(),
        Identity::Secret(x.clone()),
        ed(),
        Identity::Secret(identity(RSA_PEM)),
        Identity::Secret(x.clone()),
        key,
        passphrase,
    ]);
    let shown: Vec<String> = merged
        .iter()
        .map(|identity| match identity {
            Identity::Key(_) => "key".to_string(),
            Identity::Passphrase(_) => "passphrase".to_string(),
            Identity::Secret(secret) => secret.recipient().to_string(),
        })
        .collect();
    let line = |public: &str| recipient(public).to_string();
    assert_eq!(
        shown,
        [
            line(ED25519_PUB),
            "key".into(),
            line(RSA_PUB),
            "passphrase".into(),
            x.recipient().to_string(),
            "key".into(),
            "passphrase".into(),
        ]
    );
    assert!(merged[0].may_prompt(), "the locked key is still locked");
    assert_eq!(ask.asked(), 0);
}
