//! Tests of the stanza registry: every kind's stanzas in a whole container, the wrap of D,
//! and the kinds' text forms.

use super::test_key::{TestIdentity, TestRecipient, FIXED_KEY};
use super::text::bech32_forms;
use super::*;
use crate::cobblestone::Variant;
use crate::container::identity::{SecretIdentity, SECRET_PREFIX};
use crate::container::seal::seal_message;
use crate::container::v2::{slot_bytes_needed, Preamble};
use crate::container::{Access, BodyAccess, Unlock, UnverifiedHeader, FIRST_GENERATION};
use crate::cpu::CpuEngine;
use crate::engine::Direction;
use crate::key::{Key, KeySize};
use crate::pipeline;

/// A whole v3 container of a short text, whose slot holds `stanzas` (wrapping `file_key`).
fn sealed_with(stanzas: &[Stanza], file_key: FileSecret) -> Vec<u8> {
    let slot_len = Preamble::slot_len_for(slot_bytes_needed(stanzas));
    let variant = Variant::for_key_size(KeySize::Aes256).unwrap();
    let (mut file, opened) =
        seal_message(stanzas, file_key, variant, slot_len, FIRST_GENERATION).unwrap();
    let engine = CpuEngine::new(Some(1)).unwrap();
    let spec = opened.stream_spec(&engine, Direction::Encrypt);
    pipeline::run(&spec, &mut &b"hello"[..], &mut file, &|_| {}).unwrap();
    file
}

fn cheap() -> Argon2Params {
    Argon2Params {
        salt: [3; 16],
        memory_kib: 64,
        iterations: 1,
        lanes: 1,
    }
}

/// One recipient and one identity of every registered kind.
fn every_kind() -> Vec<(Recipient, Identity)> {
    let x = SecretIdentity::generate_x25519().unwrap();
    let pq = SecretIdentity::generate_hybrid().unwrap();
    let key = Key::new(&[5; 32]).unwrap();
    let passphrase = Zeroizing::new(b"pass words".to_vec());
    vec![
        (Recipient::Key(key.clone()), Identity::Key(key)),
        (
            Recipient::Passphrase(passphrase.clone(), cheap()),
            Identity::Passphrase(passphrase),
        ),
        (Recipient::Public(x.recipient()), Identity::Secret(x)),
        (Recipient::Public(pq.recipient()), Identity::Secret(pq)),
        // recipe-example: stanza-kind (its pair, checked against every other kind)
        (
            Recipient::Public(TestRecipient::fixed(20)),
            Identity::Secret(TestIdentity::of(FIXED_KEY)),
        ),
        (
            Recipient::Public(ssh_tests::recipient(ssh_tests::ED25519_PUB)),
            Identity::Secret(ssh_tests::identity(ssh_tests::ED25519)),
        ),
        (
            Recipient::Public(ssh_tests::recipient(ssh_tests::RSA_PUB)),
            Identity::Secret(ssh_tests::identity(ssh_tests::RSA)),
        ),
    ]
}

#[test]
fn the_registry_is_consistent() {
    for (i, kind) in KINDS.iter().enumerate() {
        let (min, max) = match kind.body_len() {
            BodyLen::Exact(len) => (len, len),
            BodyLen::Between(min, max) => (min, max),
        };
        assert!(WRAPPED_LEN <= min && min <= max, "{}", kind.name());
        assert!(max <= usize::from(u16::MAX), "{}", kind.name());
        for other in &KINDS[i + 1..] {
            assert_ne!(kind.byte(), other.byte(), "{}", kind.name());
            assert_ne!(kind.name(), other.name());
        }
        assert!(std::ptr::addr_eq(lookup(kind.byte()).unwrap(), *kind));
    }
    let forms = bech32_forms();
    for (i, form) in forms.iter().enumerate() {
        assert!(form.identity_prefix().starts_with(SECRET_PREFIX));
        assert!(!form.recipient_prefix().starts_with(SECRET_PREFIX));
        for other in &forms[i + 1..] {
            assert_ne!(form.recipient_prefix(), other.recipient_prefix());
            assert_ne!(form.identity_prefix(), other.identity_prefix());
        }
    }
}

/// Each recipient is taken by exactly one kind, and only its own identity opens the stanza.
#[test]
fn every_kind_wraps_for_its_own_recipients_and_opens_for_its_own_identities() {
    let file_key = FileSecret::random().unwrap();
    let all = every_kind();
    for (i, (recipient, identity)) in all.iter().enumerate() {
        let takers = KINDS.iter().filter(|k| k.wrap(recipient).is_some()).count();
        assert_eq!(takers, 1, "recipient {i}");
        let stanza = Stanza::wrap(recipient, &file_key).unwrap();
        let opened = stanza.unwrap(identity, u64::MAX).unwrap().unwrap();
        assert_eq!(opened.as_bytes(), file_key.as_bytes());
        for (j, (_, other)) in all.iter().enumerate() {
            if i != j {
                assert!(stanza.unwrap(other, u64::MAX).unwrap().is_none(), "{i} {j}");
            }
        }
    }
}

/// What `info` and the error messages say of each kind, word for word.
#[test]
fn kinds_are_named_as_before() {
    let file_key = FileSecret::random().unwrap();
    let names: Vec<String> = every_kind()
        .iter()
        .map(|(r, _)| {
            Stanza::wrap(r, &file_key)
                .unwrap()
                .kind()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        names,
        [
            "key file",
            "passphrase (Argon2id m=64 KiB t=1 p=1)",
            "X25519 recipient",
            "ML-KEM-768 + X25519 recipient",
            "test key",
            "ssh-ed25519 recipient (SSH key tag f71e6864)",
            "ssh-rsa recipient (SSH key tag 307b7497)",
        ]
    );
    let wrong = Stanza {
        kind: 1,
        body: vec![0; 63],
    };
    assert_eq!(
        wrong.kind().unwrap_err().to_string(),
        "damaged or hostile container header: a stanza of kind 1 is 63 bytes, not 64"
    );
}

/// An unknown kind byte, of any length, parses as "unknown stanza kind N", opens nothing
/// and is skipped: a file with one opens with the key of another stanza (docs/FORMAT.md).
#[test]
fn an_unknown_kind_is_listed_and_skipped() {
    let key = Key::new(&[7; 32]).unwrap();
    let file_key = FileSecret::random().unwrap();
    let unknown = [
        Stanza {
            kind: 9,
            body: vec![1, 2, 3],
        },
        Stanza {
            kind: 200,
            body: Vec::new(),
        },
        Stanza {
            kind: 0,
            body: vec![0; 2000],
        },
    ];
    for stanza in &unknown {
        assert!(lookup(stanza.kind).is_none());
        let kind = stanza.kind().unwrap();
        assert_eq!(
            kind.to_string(),
            format!("unknown stanza kind {}", stanza.kind)
        );
        assert_eq!((kind.byte(), kind.name()), (stanza.kind, None));
        for (_, identity) in every_kind() {
            assert!(stanza.unwrap(&identity, u64::MAX).unwrap().is_none());
        }
    }
    let mut stanzas = unknown.to_vec();
    stanzas.insert(
        1,
        Stanza::wrap(&Recipient::Key(key.clone()), &file_key).unwrap(),
    );
    let file = sealed_with(&stanzas, file_key);
    let header = UnverifiedHeader::read(&mut &file[..]).unwrap();
    let Access::Slots { slots, .. } = &header.info().access else {
        panic!("a v3 file has slots");
    };
    let listed: Vec<String> = slots[0].stanzas.iter().map(ToString::to_string).collect();
    assert_eq!(
        listed,
        [
            "unknown stanza kind 9",
            "key file",
            "unknown stanza kind 200",
            "unknown stanza kind 0"
        ]
    );
    let opens = |identity: Identity| {
        UnverifiedHeader::read(&mut &file[..])
            .unwrap()
            .open(&Unlock::new(vec![identity]), BodyAccess::Bytes(&file))
    };
    opens(Identity::Key(key)).unwrap();
    let refused = opens(Identity::Key(Key::new(&[8; 32]).unwrap()))
        .unwrap_err()
        .to_string();
    assert!(
        refused.ends_with("(it opens with: unknown stanza kind 9, key file, unknown stanza kind 200, unknown stanza kind 0)"),
        "{refused}"
    );
    // A file whose only stanza is of an unknown kind opens with nothing.
    let only_unknown = sealed_with(&unknown[..1], FileSecret::random().unwrap());
    let refused = UnverifiedHeader::read(&mut &only_unknown[..])
        .unwrap()
        .open(
            &Unlock::new(every_kind().into_iter().map(|(_, i)| i).collect()),
            BodyAccess::Bytes(&only_unknown),
        )
        .unwrap_err();
    assert!(
        matches!(&refused, ContainerError::NoMatchingStanza(what) if what == "unknown stanza kind 9"),
        "{refused}"
    );
}
