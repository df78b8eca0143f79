//! Sealing and opening with keys that `ssh-keygen` made: each kind's stanza and key tag,
//! a stranger's key and other kinds opening nothing, age's stanzas opening nothing, and at most
//! two stanzas of a slot naming one key.

use super::*;

/// SHA-256 of `wire`, first 4 bytes, as hex: the tag `info` shows.
fn tag_hex(wire: &[u8]) -> String {
    hex_of(&Sha256::digest(wire)[..4])
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The base64 data of a public key line.
fn blob(line: &str) -> Vec<u8> {
    let key = ssh_key::PublicKey::from_openssh(line).unwrap();
    key.to_bytes().unwrap()
}

#[test]
fn both_kinds_seal_and_open_with_keys_ssh_keygen_made() {
    for (private, public, kind, len) in [
        (ED25519, ED25519_PUB, 5, 4 + 32 + 48),
        (RSA, RSA_PUB, 6, 4 + 256 + 48),
        (RSA_PEM, RSA_PUB, 6, 4 + 256 + 48),
    ] {
        let id = identity(private);
        let to = recipient(public);
        assert_eq!(id.recipient(), to, "the private key's public half");
        // The recipient's text is the key line without its comment.
        assert_eq!(
            format!("{to} test"),
            public.trim(),
            "{kind}: the canonical line"
        );
        let d = FileSecret::random().unwrap();
        let stanza = seal(&to, &d);
        assert_eq!((stanza.kind, stanza.body.len()), (kind, len));
        assert_eq!(opens(&stanza, &id).unwrap(), Some(d.as_bytes().to_vec()));
        // The tag is SHA-256 of the key's wire encoding (the line's base64 data), first 4 bytes.
        let tag = tag_hex(&blob(public));
        assert_eq!(hex_of(&stanza.body[..4]), tag);
        let shown = stanza.kind().unwrap();
        assert_eq!(shown.ssh_tag().map(|t| hex_of(&t)), Some(tag.clone()));
        assert!(shown
            .to_string()
            .ends_with(&format!("recipient (SSH key tag {tag})")));
    }
}

#[test]
fn a_stranger_s_key_and_other_kinds_open_nothing() {
    let d = FileSecret::random().unwrap();
    let ed = seal(&recipient(ED25519_PUB), &d);
    let rsa = seal(&recipient(RSA_PUB), &d);
    // The other SSH kind's identity, and a paraes one, are not tried.
    assert_eq!(opens(&ed, &identity(RSA)).unwrap(), None);
    assert_eq!(opens(&rsa, &identity(ED25519)).unwrap(), None);
    let x = SecretIdentity::generate_x25519().unwrap();
    assert_eq!(opens(&ed, &x).unwrap(), None);
    // A stanza for another key with this key's tag (a forged tag) does not open either.
    let mut forged = seal(&recipient(&stranger_line()), &d);
    forged.body[..4].copy_from_slice(&ed.body[..4]);
    assert_eq!(opens(&forged, &identity(ED25519)).unwrap(), None);
}

#[test]
fn paraes_stanzas_are_not_age_s() {
    // An RSA-OAEP ciphertext under age's label (and the same wrap) opens nothing in paraes.
    use rsa::Oaep;
    let d = FileSecret::random().unwrap();
    let mut stanza = seal(&recipient(RSA_PUB), &d);
    let key = {
        use rsa::pkcs1::DecodeRsaPrivateKey;
        rsa::PrivateKey::from_pkcs1_pem(RSA_PEM).unwrap()
    };
    let public = rsa::PublicKey::from(&key);
    let mut rng = rsa::rand_core::UnwrapErr(TestRng);
    let age = public
        .encrypt(
            &mut rng,
            Oaep::<sha2::Sha256>::new_with_label(&b"age-encryption.org/v1/ssh-rsa"[..]),
            &[9; 32],
        )
        .unwrap();
    stanza.body[4..260].copy_from_slice(&age);
    assert_eq!(opens(&stanza, &identity(RSA)).unwrap(), None);
}

/// A deterministic generator for the one test above (not secret).
struct TestRng;

impl rsa::rand_core::TryRng for TestRng {
    type Error = std::convert::Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        Ok(7)
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        Ok(7)
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        dst.fill(7);
        Ok(())
    }
}

impl rsa::rand_core::TryCryptoRng for TestRng {}

/// A slot may name one key (kind and public tag) at most twice: a reader does not try a slot
/// that names it more often (a planted header of 255 stanzas with a victim's public RSA tag
/// made the victim's key do 255 private-key operations: 24 s for an 8192-bit key), and no
/// writer makes one. Other keys' stanzas neither count nor reset the count.
#[test]
fn a_slot_naming_one_key_more_than_twice_is_refused_and_never_written() {
    let d = FileSecret::random().unwrap();
    let other = seal(&recipient(&stranger_line()), &d);
    for public in [ED25519_PUB, RSA_PUB] {
        let to = recipient(public);
        let one = seal(&to, &d);
        assert!(!crate::container::stanza::names_a_key_too_often(&[
            one.clone(),
            one.clone()
        ]));
        assert!(crate::container::stanza::names_a_key_too_often(&[
            one.clone(),
            other.clone(),
            one.clone(),
            other.clone(),
            one.clone()
        ]));
        assert!(!crate::container::stanza::names_a_key_too_often(&[
            one.clone(),
            other.clone(),
            other.clone(),
            one.clone()
        ]));
        let r = Recipient::Public(to);
        let refused =
            crate::container::seal(crate::key::KeySize::Aes256, &[r.clone(), r.clone(), r])
                .unwrap_err();
        assert!(refused.to_string().contains("give it once"), "{refused}");
    }
}
