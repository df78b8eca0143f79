//! OpenSSH's text forms: authorized_keys lines with options and comments, refused key types
//! with their reason, the one form tried before Bech32, private keys in lines of any width, a
//! paraes identity file whose comment names an SSH key type, and public keys in PEM or RFC 4716
//! form refused with the command that converts them.

use super::*;

#[test]
fn authorized_keys_files_are_read_with_options_and_comments() {
    let text = format!(
        "# the team\n\n{ED25519_PUB}\nfrom=\"10.0.0.0/8\",command=\"echo \\\"a b\\\"\" {RSA_PUB}  \n  # done\n"
    );
    let list = parse_recipients(&text).unwrap();
    assert_eq!(list, vec![recipient(ED25519_PUB), recipient(RSA_PUB)]);
    // Mixed with paraes recipients.
    let x = SecretIdentity::generate_x25519().unwrap();
    let text = format!("{}\n{ED25519_PUB}\n", x.recipient());
    assert_eq!(parse_recipients(&text).unwrap().len(), 2);
    // A refused line names its line number and the reason.
    let text = format!("{ED25519_PUB}\n{ECDSA_PUB}\n");
    let err = parse_recipients(&text).unwrap_err().to_string();
    assert!(err.contains("line 2") && err.contains("ECDSA"), "{err}");
}

#[test]
fn refused_key_types_say_why() {
    assert!(refused(ECDSA_PUB).contains("ECDSA key"));
    // A FIDO key: sk-ssh-ed25519@openssh.com, its key and application.
    let mut wire = Vec::new();
    put_string(&mut wire, b"sk-ssh-ed25519@openssh.com");
    put_string(&mut wire, &[7; 32]);
    put_string(&mut wire, b"ssh:");
    let line = format!(
        "sk-ssh-ed25519@openssh.com {} me",
        &public_line(&wire)[27..]
    );
    let err = refused(&line);
    assert!(
        err.contains("FIDO") && err.contains("cannot decrypt"),
        "{err}"
    );
    let err = refused("sk-ecdsa-sha2-nistp256@openssh.com AAAA me");
    assert!(err.contains("cannot decrypt"), "{err}");
    let err = refused("ssh-ed25519-cert-v01@openssh.com AAAA me");
    assert!(err.contains("certificate"), "{err}");
    let err = refused("ssh-dss AAAA me");
    assert!(err.contains("DSA"), "{err}");
    // Private key files.
    assert!(refused_identity(ECDSA).contains("ECDSA"));
    let err = refused(ED25519.lines().next().unwrap());
    assert!(err.contains("private key file"), "{err}");
}

#[test]
fn the_text_form_is_listed_once_and_tried_before_bech32() {
    let forms = crate::container::stanza::text::text_forms();
    assert_eq!(forms.len(), 1, "both SSH kinds share one form");
    assert!(OPENSSH.recipient("paraes1qqqq").is_none());
    assert!(OPENSSH
        .identities(
            "PARAES-SECRET-KEY-1QQQ\n",
            "k",
            &(Asker::new(None) as Arc<dyn AskPassphrase>)
        )
        .is_none());
}

#[test]
fn openssh_keys_in_lines_of_any_width_are_read() {
    // pyca and others write OpenSSH private keys in lines of 64 characters; OpenSSH, 70.
    let lines: Vec<&str> = ED25519.lines().collect();
    let base64: String = lines[1..lines.len() - 1].concat();
    for width in [64, 76, 1000] {
        let mut text = format!("{}\n", lines[0]);
        for chunk in base64.as_bytes().chunks(width) {
            text.push_str(std::str::from_utf8(chunk).unwrap());
            text.push_str("\r\n");
        }
        text.push_str(lines[lines.len() - 1]);
        assert_eq!(
            identity(&text).recipient(),
            recipient(ED25519_PUB),
            "{width}"
        );
    }
}

/// A paraes identity file whose first line is a comment that happens to name an SSH key type
/// or look like an authorized_keys line is still a paraes identity file (a review found such
/// files refused as "an SSH public key").
#[test]
fn a_comment_naming_an_ssh_key_type_does_not_make_a_file_an_ssh_key() {
    let x = SecretIdentity::generate_x25519().unwrap();
    for comment in [
        "# ssh-ed25519 keys are in ~/.ssh",
        "# alice@openssh.com",
        "#ssh-rsa AAAA",
    ] {
        let text = format!("{comment}\n{}\n", x.to_secret_text().as_str());
        let found = identity_with(&text, &Asker::new(None)).unwrap();
        assert_eq!(found.recipient(), x.recipient(), "{comment}");
    }
}

/// A public key in PEM (`ssh-keygen -e -m PKCS8`, `-m PEM`) or RFC 4716 (`ssh-keygen -e`) form
/// is refused as a recipient with the command that makes its OpenSSH line (it was called "a
/// private key file"), and as an identity as a public key; other PEM files are not called
/// private keys either.
#[test]
fn public_keys_in_pem_or_rfc_4716_form_are_refused_with_the_command_that_converts_them() {
    let pkcs8 = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAx/fWh6YFIiz8crFKnDvC\n-----END PUBLIC KEY-----\n";
    let pkcs1 = "-----BEGIN RSA PUBLIC KEY-----\nMIIBCgKCAQEAx/fWh6YFIiz8crFKnDvC5nb6DPh9COpvvRUf8sgQ669LEuTJaX9G\n-----END RSA PUBLIC KEY-----\n";
    let rfc4716 = "---- BEGIN SSH2 PUBLIC KEY ----\nComment: \"256-bit ED25519, converted by me@host from OpenSSH\"\nAAAAC3NzaC1lZDI1NTE5AAAAIHunLaGggzzgArBjsLZkHO+C3Jzddv2mCWUwMzgaCas9\n---- END SSH2 PUBLIC KEY ----\n";
    for (text, form, command) in [
        (pkcs8, "PEM (PKCS#8)", "`ssh-keygen -i -m PKCS8 -f KEY`"),
        (pkcs1, "PEM (PKCS#1)", "`ssh-keygen -i -m PEM -f KEY`"),
        (rfc4716, "RFC 4716", "`ssh-keygen -i -f KEY`"),
    ] {
        // As `-r "$(cat KEY)"` gives it, and as the first line of a recipients file.
        for given in [text.trim(), text.lines().next().unwrap()] {
            let err = refused(given);
            assert!(
                err.contains(&format!("a public key in {form} form"))
                    && err.contains(command)
                    && !err.contains("private key"),
                "{err}"
            );
        }
        let err = parse_recipients(text).unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains(command), "{err}");
        let err = refused_identity(text);
        assert!(
            err.contains("public key") && err.contains("not a private key"),
            "{err}"
        );
    }
    let err = refused("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----");
    assert!(
        err.contains("no public key") && !err.contains("private key"),
        "{err}"
    );
    let err = refused(RSA_PEM.trim());
    assert!(err.contains("private key file"), "{err}");
}
