//! Hostile public and private keys, each refused in one line without a panic.

use super::*;

/// An `ssh-rsa` line of exponent `e` and modulus `n` (magnitudes), checked by nothing.
fn rsa_line(e: &[u8], n: &[u8]) -> String {
    let mut wire = Vec::new();
    put_string(&mut wire, b"ssh-rsa");
    put_mpint(&mut wire, e);
    put_mpint(&mut wire, n);
    public_line(&wire)
}

#[test]
fn hostile_public_keys_are_refused_in_one_line() {
    let data = ED25519_PUB.split(' ').nth(1).unwrap();
    let rsa_data = RSA_PUB.split(' ').nth(1).unwrap();
    let mut cases: Vec<(String, &str)> = vec![
        // Truncated base64, truncated key data, a wrong type.
        (
            format!("ssh-ed25519 {}", &data[..40]),
            "not a whole ssh-ed25519 key",
        ),
        (
            format!("ssh-ed25519 {}", &data[..data.len() - 4]),
            "not a whole",
        ),
        (
            format!("ssh-ed25519 {rsa_data}"),
            "not a whole ssh-ed25519 key",
        ),
        (format!("ssh-rsa {data}"), "not a whole ssh-rsa key"),
        ("ssh-ed25519".into(), "not a whole"),
        ("ssh-ed25519 !!!!".into(), "not a whole"),
        // Tiny and huge RSA moduli.
        (RSA_1024_PUB.into(), "1024 bits"),
    ];
    let mut n = vec![0xff; 2049];
    n[0] = 1;
    cases.push((rsa_line(&[1, 0, 1], &n), "16385 bits"));
    let mut n = vec![0xff; 256];
    n[0] = 0x7f;
    cases.push((rsa_line(&[1, 0, 1], &n), "2047 bits"));
    // Bad RSA numbers.
    let n = vec![0xc5; 256];
    cases.push((
        rsa_line(&[1, 0, 1], &{
            let mut n = n.clone();
            n[255] = 0xc4;
            n
        }),
        "even",
    ));
    cases.push((rsa_line(&[1], &n), "exponent is below 3"));
    cases.push((rsa_line(&[], &n), "exponent is below 3"));
    cases.push((rsa_line(&[2], &n), "exponent is even"));
    cases.push((rsa_line(&[0x02, 0, 0, 0, 1], &n), "too large"));
    // Ed25519: not a point, the identity and a point of order 8, a non-canonical encoding.
    let mut not_a_point = [0u8; 32];
    not_a_point[0] = 2;
    cases.push((ed25519_line(&not_a_point), "not a point"));
    let mut identity_point = [0u8; 32];
    identity_point[0] = 1;
    cases.push((ed25519_line(&identity_point), "small-order point"));
    let order_8 = hex_bytes("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05");
    cases.push((ed25519_line(&order_8), "small-order point"));
    let mut non_canonical = [0xffu8; 32];
    non_canonical[0] = 0xee; // p + 1 - 2^255 ... y = 2^255 - 18 + ... >= p
    non_canonical[31] = 0x7f;
    cases.push((ed25519_line(&non_canonical), "not a point"));
    for (line, needle) in &cases {
        let err = refused(line);
        assert!(err.contains(needle), "{line}: {err}");
        assert!(!err.contains('\n'), "{err}");
    }
    // The limits themselves are accepted: a 16384-bit and a 2048-bit modulus.
    let mut n = vec![0xc5; 2048];
    n[0] = 0x80;
    let big = recipient(&rsa_line(&[1, 0, 1], &n));
    let stanza = seal(&big, &FileSecret::random().unwrap());
    assert_eq!(stanza.body.len(), 4 + 2048 + 48);
    let mut n = vec![0xc5; 256];
    n[0] = 0x80;
    recipient(&rsa_line(&[3], &n));
}

fn hex_bytes(text: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap();
    }
    out
}

#[test]
fn hostile_private_keys_are_refused_in_one_line() {
    let cut = &ED25519[..ED25519.len() / 2];
    let cut_rsa = &RSA[..RSA.len() - 200];
    let cut_pem = &RSA_PEM[..RSA_PEM.len() / 2];
    let mut flipped = RSA_PEM.to_string().into_bytes();
    flipped[200] = if flipped[200] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();
    let encrypted_pem = RSA_PEM.replacen(
        "-----BEGIN RSA PRIVATE KEY-----\n",
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\n",
        1,
    );
    for (text, needle) in [
        (cut, "does not parse"),
        (cut_rsa, "does not parse"),
        (cut_pem, "does not parse"),
        (&flipped[..], "does not parse"),
        (ED25519_PUB, "public key, not a private key"),
        (RSA_PUB, "public key, not a private key"),
        (ED25519_ROUNDS, "100000 bcrypt rounds"),
        (&encrypted_pem[..], "ssh-keygen -p -f k"),
        (
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
            "ssh-keygen -p -f k",
        ),
        (
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            "PKCS#8",
        ),
    ] {
        let err = refused_identity(text);
        assert!(err.contains(needle), "{needle}: {err}");
        assert!(!err.contains('\n'), "{err}");
    }
    // A key whose private half does not give its public half (both copies of the public key
    // agree, so only deriving it tells), and an RSA key whose d does not fit n.
    let ed = ssh_key::PrivateKey::from_openssh(ED25519).unwrap();
    let mut pair = ed.key_data().ed25519().unwrap().clone();
    pair.private = ssh_key::private::Ed25519PrivateKey::from_bytes(&[0x5a; 32]);
    let forged = ssh_key::PrivateKey::new(ssh_key::private::KeypairData::Ed25519(pair), "x")
        .unwrap()
        .to_openssh(ssh_key::LineEnding::LF)
        .unwrap();
    let err = refused_identity(&forged);
    assert!(err.contains("does not give its public key"), "{err}");
    let rsa = ssh_key::PrivateKey::from_openssh(RSA).unwrap();
    let mut pair = rsa.key_data().rsa().unwrap().clone();
    let mut d = pair.private.d.as_positive_bytes().unwrap().to_vec();
    d[10] ^= 1;
    pair.private.d = ssh_key::Mpint::from_positive_bytes(&d).unwrap();
    let forged = ssh_key::PrivateKey::new(ssh_key::private::KeypairData::Rsa(pair), "x")
        .unwrap()
        .to_openssh(ssh_key::LineEnding::LF)
        .unwrap();
    let err = refused_identity(&forged);
    assert!(err.contains("not consistent"), "{err}");
    // What an identity gives as its secret text is the key file.
    assert!(identity(ED25519)
        .to_secret_text()
        .contains("OPENSSH PRIVATE KEY"));
}
