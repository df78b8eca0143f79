//! Opening: every stanza kind and mixes of them, wrong identities and what the error says
//! opens the file, the body key and the body itself (v2), at most one passphrase, opening with
//! the file's secret, and format v1 headers.

use super::*;

#[test]
fn every_stanza_kind_opens_and_mixes_each_open() {
    let x = SecretIdentity::generate_x25519().unwrap();
    let pq = SecretIdentity::generate_hybrid().unwrap();
    let alice = SecretIdentity::generate_x25519().unwrap();
    let recipients = vec![
        Recipient::Key(key(1)),
        Recipient::Passphrase(passphrase("pass words"), cheap(3)),
        Recipient::Public(x.recipient()),
        Recipient::Public(pq.recipient()),
        Recipient::Public(alice.recipient()),
    ];
    let data = plain();
    let file = encrypt(&recipients, &data);
    for identity in [
        Identity::Key(key(1)),
        Identity::Passphrase(passphrase("pass words")),
        Identity::Secret(x.clone()),
        Identity::Secret(pq.clone()),
        Identity::Secret(alice.clone()),
    ] {
        assert_eq!(decrypt(&file, vec![identity]).unwrap(), data);
    }
    // Each alone, too.
    for (recipient, identity) in [
        (Recipient::Key(key(9)), Identity::Key(key(9))),
        (
            Recipient::Public(pq.recipient()),
            Identity::Secret(pq.clone()),
        ),
    ] {
        let file = encrypt(&[recipient], &data);
        assert_eq!(decrypt(&file, vec![identity]).unwrap(), data);
    }
}

#[test]
fn wrong_identities_fail_cleanly_and_say_what_opens_the_file() {
    let x = SecretIdentity::generate_x25519().unwrap();
    let other = SecretIdentity::generate_x25519().unwrap();
    let other_pq = SecretIdentity::generate_hybrid().unwrap();
    let file = encrypt(
        &[Recipient::Key(key(1)), Recipient::Public(x.recipient())],
        &plain(),
    );
    let err = decrypt(
        &file,
        vec![
            Identity::Key(key(2)),
            Identity::Key(Key::new(&[1; 16]).unwrap()),
            Identity::Passphrase(passphrase("guess")),
            Identity::Secret(other),
            Identity::Secret(other_pq),
        ],
    )
    .unwrap_err();
    assert!(err.contains("none of the given"), "{err}");
    assert!(err.contains("key file, X25519 recipient"), "{err}");
}

#[test]
fn the_body_key_is_neither_the_users_key_nor_shared_between_files() {
    let (_, a) = seal_v2(params(Mode::Ctr), &[Recipient::Key(key(1))]).unwrap();
    let (_, b) = seal_v2(params(Mode::Ctr), &[Recipient::Key(key(1))]).unwrap();
    assert_ne!(a.data_key().as_bytes(), key(1).as_bytes());
    assert_ne!(a.data_key().as_bytes(), b.data_key().as_bytes());
    assert_ne!(a.secret().as_bytes(), a.data_key().as_bytes());
}

#[test]
fn the_body_is_plain_ctr_under_the_body_key_and_counter() {
    let data = plain();
    let (mut file, opened) = seal_v2(params(Mode::Ctr), &[Recipient::Key(key(1))]).unwrap();
    let header_len = file.len();
    let engine = CpuEngine::new(Some(1)).unwrap();
    let spec = opened.stream_spec(&engine, Direction::Encrypt);
    pipeline::run(&spec, &mut &data[..], &mut file, &|_| {}).unwrap();
    let body: Vec<u8> = file[header_len..]
        .chunks(CHUNK + TAG_LEN)
        .flat_map(|c| c[..c.len() - TAG_LEN].to_vec())
        .collect();
    let mut expected = data.clone();
    let key = opened.data_key().expand();
    let job = crate::Job::ctr(&key, opened.info().counter, 0);
    crate::modes::apply(crate::AesImpl::Portable, &job, &mut expected).unwrap();
    assert!(body == expected);
    assert_eq!(header_len % v2::HEADER_ALIGN, 0, "the body starts aligned");
}

#[test]
fn one_passphrase_at_most_and_at_least_one_recipient() {
    let two = [
        Recipient::Passphrase(passphrase("a"), cheap(1)),
        Recipient::Passphrase(passphrase("b"), cheap(2)),
    ];
    assert!(matches!(
        seal_v2(params(Mode::Ctr), &two),
        Err(ContainerError::BadRecipients(_))
    ));
    assert!(seal_v2(params(Mode::Ctr), &[]).is_err());
    // A header carrying two passphrase stanzas is refused when read.
    let file = encrypt(
        &[Recipient::Passphrase(passphrase("a"), cheap(1))],
        &plain(),
    );
    let doubled = edit_stanzas(&file, |s| s.push(s[0].clone()));
    assert!(UnverifiedHeader::read(&mut &doubled[..]).is_err());
}

#[test]
fn open_with_secret_checks_the_header() {
    let file = encrypt(&[Recipient::Key(key(1))], &plain());
    let opened = UnverifiedHeader::read(&mut &file[..])
        .unwrap()
        .open(
            &Unlock::new(vec![Identity::Key(key(1))]),
            BodyAccess::Stream { first: &[] },
        )
        .unwrap();
    let again = UnverifiedHeader::read(&mut &file[..])
        .unwrap()
        .open_with_secret(opened.secret())
        .unwrap();
    assert_eq!(again.data_key().as_bytes(), opened.data_key().as_bytes());
    let wrong = FileSecret::from_bytes(&[0; 32]);
    assert!(UnverifiedHeader::read(&mut &file[..])
        .unwrap()
        .open_with_secret(&wrong)
        .is_err());
}

#[test]
fn format_v1_headers_still_open() {
    let k = Key::new(&[7; 24]).unwrap();
    let v1_params = BodyParams {
        mode: Mode::Ecb,
        key_size: KeySize::Aes192,
        chunk_size: CHUNK,
    };
    let header = V1Header::seal_for_tests(v1_params, [4; 16], V1KeySource::RawKey, &k);
    let parsed = UnverifiedHeader::read(&mut &header[..]).unwrap();
    assert_eq!(parsed.info().version, 1);
    assert_eq!(parsed.info().header_len, header.len());
    let opened = parsed
        .open(
            &Unlock::new(vec![Identity::Key(k.clone())]),
            BodyAccess::Stream { first: &[] },
        )
        .unwrap();
    assert_eq!(
        opened.data_key().as_bytes(),
        k.as_bytes(),
        "v1's body key is K"
    );
    assert!(opened.rekey(&[Recipient::Key(k.clone())]).is_err());
    let wrong = UnverifiedHeader::read(&mut &header[..]).unwrap().open(
        &Unlock::new(vec![Identity::Key(Key::new(&[8; 24]).unwrap())]),
        BodyAccess::Stream { first: &[] },
    );
    assert!(matches!(
        wrong,
        Err(ContainerError::WrongKeyOrDamagedHeader)
    ));
    for i in 0..header.len() {
        let mut bad = header.clone();
        bad[i] ^= 0x10;
        let refused = UnverifiedHeader::read(&mut &bad[..]).and_then(|h| {
            h.open(
                &Unlock::new(vec![Identity::Key(k.clone())]),
                BodyAccess::Stream { first: &[] },
            )
        });
        assert!(refused.is_err(), "v1 flip of byte {i} accepted");
    }
}
