//! OpenSSH's text forms, read once for both SSH kinds (the registry's `OPENSSH`, which each SSH
//! kind's `Kind::text` returns): public key lines as in `authorized_keys` (for `-r` and `-R`),
//! private key files (OpenSSH's own format, and the older PEM forms of RSA keys) for `-i`. Each
//! key is made by its kind (`ssh_ed25519.rs`, `ssh_rsa.rs`). Key types paraes cannot encrypt to
//! (ECDSA, DSA, FIDO security keys, certificates) are refused with the reason, never skipped.

use std::sync::Arc;

use zeroize::Zeroizing;

use super::ssh::{magnitude, MAX_BCRYPT_ROUNDS, MAX_RSA_BITS};
use super::{ssh_ed25519, ssh_rsa};
use crate::container::identity::{AskPassphrase, PublicRecipient, SecretIdentity, TextKeys};

/// A PEM RSA private key (PKCS#1 or PKCS#8) longer than this is not one of at most
/// [`MAX_RSA_BITS`] bits (16384-bit keys take about 12.5 KB): refused before it is decoded.
const MAX_PEM_LEN: usize = 16 * 1024;

/// OpenSSH's public key lines and private key files.
pub(super) struct OpenSsh;

/// A key type of a public key line, named in errors only when it looks like one (short, of
/// the characters key types use): the line may hold anything.
fn shown_type(key_type: &str) -> String {
    if key_type.len() <= 64
        && key_type
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"@.-_".contains(&b))
    {
        format!("\"{key_type}\"")
    } else {
        "of an unknown type".into()
    }
}

/// Whether `word` is an SSH public key type (one paraes takes or one it refuses with a
/// reason): what makes a line OpenSSH's.
fn is_key_type(word: &str) -> bool {
    word.starts_with("ssh-")
        || word.starts_with("ecdsa-sha2-")
        || word.starts_with("sk-")
        || word.ends_with("@openssh.com")
}

/// The first word of `text` (up to ASCII whitespace) and the rest, trimmed.
fn first_word(text: &str) -> (&str, &str) {
    let text = text.trim_start();
    match text.find(|c: char| c.is_ascii_whitespace()) {
        Some(end) => (&text[..end], text[end..].trim_start()),
        None => (text, ""),
    }
}

/// The `authorized_keys` options at the start of `line` skipped (as sshd reads them: up to
/// the first space or tab outside double quotes, a backslash escaping a quote), or `None` if
/// they are unterminated.
fn skip_options(line: &str) -> Option<&str> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ' ' | '\t' if !quoted => return Some(line[i..].trim_start()),
            _ => {}
        }
    }
    None
}

/// The key type and base64 data of an OpenSSH public key line (`[options] TYPE DATA
/// [comment]`), or `None` when the line is not one.
fn public_key_words(line: &str) -> Option<(&str, &str)> {
    let (word, rest) = first_word(line);
    if is_key_type(word) {
        return Some((word, first_word(rest).0));
    }
    // Options first (`from="10.0.0.0/8",no-pty ssh-ed25519 AAAA...`), as in authorized_keys.
    let after = skip_options(line)?;
    let (word, rest) = first_word(after);
    is_key_type(word).then(|| (word, first_word(rest).0))
}

/// The first line of `text` (trimmed): a PEM or RFC 4716 armor line if `text` is armored.
fn armor_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default().trim()
}

/// Whether `first` (a first line) starts an RFC 4716 public key (`ssh-keygen -e`).
fn is_rfc4716(first: &str) -> bool {
    first.starts_with("---- BEGIN SSH2 PUBLIC KEY")
}

/// Whether `first` (a first line) starts a PEM public key (`-----BEGIN PUBLIC KEY-----`,
/// `-----BEGIN RSA PUBLIC KEY-----`).
fn is_pem_public(first: &str) -> bool {
    first.starts_with("-----BEGIN ") && first.ends_with("PUBLIC KEY-----")
}

/// Why a recipient written in armor (PEM or RFC 4716, the text's first line says) is refused,
/// or `None` if it is not armored: a private key file; a public key in another form than
/// OpenSSH's line, with the `ssh-keygen` command that makes the line; another PEM file. The
/// reason names nothing of the text.
fn refused_armor(text: &str) -> Option<String> {
    let first = armor_line(text);
    // `mode`: ssh-keygen's `-m` for the form (none for RFC 4716, its default).
    let convert = |form: &str, mode: &str| {
        format!(
            "that is a public key in {form} form (as `ssh-keygen -e{mode}` writes it), not an \
             OpenSSH public key line: make the line with `ssh-keygen -i{mode} -f KEY` and give \
             that"
        )
    };
    if is_rfc4716(first) {
        return Some(convert("RFC 4716", ""));
    }
    if !first.starts_with("-----BEGIN ") {
        return None;
    }
    Some(if first.contains("PRIVATE KEY") {
        "that is a private key file, not a public key: give its public key (the .pub file, or \
         `ssh-keygen -y -f KEY`)"
            .into()
    } else if first == "-----BEGIN RSA PUBLIC KEY-----" {
        convert("PEM (PKCS#1)", " -m PEM")
    } else if is_pem_public(first) {
        convert("PEM (PKCS#8)", " -m PKCS8")
    } else {
        "that is a PEM file holding no public key: give an OpenSSH public key line (ssh-ed25519 \
         or ssh-rsa, as in a .pub file) or a paraes recipient"
            .into()
    })
}

/// Why paraes cannot encrypt to a key of type `key_type` (not ssh-ed25519 or ssh-rsa).
fn refused_type(key_type: &str) -> String {
    if key_type.ends_with("-cert-v01@openssh.com") {
        "an OpenSSH certificate, not a key: give the key it certifies (the .pub file, without \
         -cert), as an ssh-ed25519 or ssh-rsa line"
            .into()
    } else if key_type.starts_with("sk-") {
        format!(
            "a FIDO security key ({}), which cannot decrypt: its private key stays on the token, \
             which only signs; give an ssh-ed25519 or ssh-rsa key, or a paraes recipient",
            shown_type(key_type)
        )
    } else if key_type.starts_with("ecdsa-sha2-") {
        format!(
            "an ECDSA key ({}), which paraes does not encrypt to (as age does not): give an \
             ssh-ed25519 or ssh-rsa key, or a paraes recipient",
            shown_type(key_type)
        )
    } else if key_type == "ssh-dss" {
        "a DSA key (ssh-dss), which paraes does not encrypt to: give an ssh-ed25519 or ssh-rsa \
         key, or a paraes recipient"
            .into()
    } else {
        format!(
            "an SSH key {}, which paraes does not encrypt to: it takes ssh-ed25519 and ssh-rsa \
             keys",
            shown_type(key_type)
        )
    }
}

/// The public key of the line `key_type data`, as ssh-key decodes it (the data's own type must
/// be `key_type`, and nothing may follow the key in it).
fn decode_public(key_type: &str, data: &str) -> Result<ssh_key::PublicKey, String> {
    ssh_key::PublicKey::from_openssh(&format!("{key_type} {data}")).map_err(|_| {
        format!(
            "its key data is not a whole {key_type} key (cut short, damaged, or of another \
             type): copy the line again"
        )
    })
}

impl TextKeys for OpenSsh {
    fn recipient(&self, line: &str) -> Option<Result<PublicRecipient, String>> {
        if let Some(why) = refused_armor(line) {
            return Some(Err(why));
        }
        let (key_type, data) = public_key_words(line)?;
        Some((|| match key_type {
            "ssh-ed25519" => {
                let key = decode_public(key_type, data)?;
                let public = key
                    .key_data()
                    .ed25519()
                    .expect("an ssh-ed25519 line holds an Ed25519 key");
                ssh_ed25519::recipient(&public.0)
            }
            "ssh-rsa" => {
                let key = decode_public(key_type, data)?;
                let public = key
                    .key_data()
                    .rsa()
                    .expect("an ssh-rsa line holds an RSA key");
                ssh_rsa::recipient(magnitude(&public.e), magnitude(&public.n))
            }
            other => Err(refused_type(other)),
        })())
    }

    fn identities(
        &self,
        text: &str,
        name: &str,
        ask: &Arc<dyn AskPassphrase>,
    ) -> Option<Result<Vec<SecretIdentity>, String>> {
        // Comment lines (a paraes identity file may start with some) say nothing of the form.
        let first = text
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty() && !line.starts_with('#'))?;
        let what = format!("SSH key {name}");
        let text = text.trim();
        let parsed = if first == "-----BEGIN OPENSSH PRIVATE KEY-----" {
            openssh_private_key(text, &what, ask)
        } else if first == "-----BEGIN RSA PRIVATE KEY-----" {
            pem_rsa_key(text, &what, name, false)
        } else if first == "-----BEGIN PRIVATE KEY-----" {
            pem_rsa_key(text, &what, name, true)
        } else if first == "-----BEGIN ENCRYPTED PRIVATE KEY-----" {
            Err(convert_advice("a PKCS#8 key with a passphrase", name))
        } else if first == "-----BEGIN EC PRIVATE KEY-----" {
            Err(
                "an ECDSA private key, which paraes does not decrypt with (as age does not): \
                 use an ssh-ed25519 or ssh-rsa key"
                    .into(),
            )
        } else if first == "-----BEGIN DSA PRIVATE KEY-----" {
            Err(refused_type("ssh-dss"))
        } else if is_rfc4716(first) || is_pem_public(first) {
            Err(
                "it holds a public key (in PEM or RFC 4716 form), not a private key: give the \
                 private key file (id_ed25519, not id_ed25519.pub)"
                    .into(),
            )
        } else if first.starts_with("-----BEGIN ") && first.contains("PRIVATE KEY") {
            Err(
                "a private key in a PEM form paraes does not read: it reads OpenSSH private \
                 keys (ssh-keygen's) and RSA keys in PEM (PKCS#1 or PKCS#8, without a passphrase)"
                    .into(),
            )
        } else if public_key_words(first).is_some() {
            Err(
                "it holds an SSH public key, not a private key: give the private key file \
                 (id_ed25519, not id_ed25519.pub)"
                    .into(),
            )
        } else {
            return None;
        };
        Some(parsed.map(|identity| vec![identity]))
    }
}

/// The advice for a private key in a form paraes does not read: convert it.
fn convert_advice(what: &str, name: &str) -> String {
    format!(
        "{what}, which paraes does not read: convert the file to OpenSSH's format with \
         `ssh-keygen -p -f {name}` (it asks for the passphrase, and may keep it)"
    )
}

/// The identity of an OpenSSH private key file (`-----BEGIN OPENSSH PRIVATE KEY-----`).
fn openssh_private_key(
    text: &str,
    what: &str,
    ask: &Arc<dyn AskPassphrase>,
) -> Result<SecretIdentity, String> {
    let key = ssh_key::PrivateKey::from_openssh(&*rewrapped(text)).map_err(|_| {
        "the OpenSSH private key in it does not parse: it is cut short or damaged".to_string()
    })?;
    if let ssh_key::Kdf::Bcrypt { rounds, .. } = key.kdf() {
        if *rounds > MAX_BCRYPT_ROUNDS {
            return Err(format!(
                "its passphrase is stretched with {rounds} bcrypt rounds, above paraes's cap of \
                 {MAX_BCRYPT_ROUNDS}: set the passphrase again with fewer (`ssh-keygen -p -a 100 \
                 -f FILE`)"
            ));
        }
    }
    if key.is_encrypted() != key.kdf().is_some() {
        return Err(
            "the OpenSSH private key in it is damaged: its cipher and key derivation disagree"
                .into(),
        );
    }
    match key.public_key().key_data() {
        ssh_key::public::KeyData::Ed25519(_) => ssh_ed25519::identity(key, what, ask),
        ssh_key::public::KeyData::Rsa(_) => ssh_rsa::identity(key, what, ask),
        _ => Err(refused_type(key.algorithm().as_str())),
    }
}

/// An OpenSSH private key file's text with its base64 in lines of 70 characters, as OpenSSH
/// writes them and as `ssh-key` requires them (other writers, pyca for one, use 64): the
/// first and last lines kept, every other line's whitespace dropped.
fn rewrapped(text: &str) -> Zeroizing<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut out = Zeroizing::new(String::with_capacity(text.len() + text.len() / 70 + 8));
    let (Some(first), Some(last)) = (lines.first(), lines.last()) else {
        return out;
    };
    out.push_str(first);
    out.push('\n');
    let inner = lines
        .get(1..lines.len().saturating_sub(1))
        .unwrap_or_default();
    let mut column = 0;
    for c in inner.iter().flat_map(|line| line.chars()) {
        if column == 70 {
            out.push('\n');
            column = 0;
        }
        out.push(c);
        column += 1;
    }
    out.push('\n');
    out.push_str(last);
    out.push('\n');
    out
}

/// The identity of an RSA private key in PEM without a passphrase: PKCS#1 (`-----BEGIN RSA
/// PRIVATE KEY-----`, `ssh-keygen -m PEM`) or, with `pkcs8`, PKCS#8.
fn pem_rsa_key(text: &str, what: &str, name: &str, pkcs8: bool) -> Result<SecretIdentity, String> {
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(convert_advice(
            "an RSA key in the old PEM format with a passphrase",
            name,
        ));
    }
    if text.len() > MAX_PEM_LEN {
        return Err(format!(
            "the RSA key in it is larger than one of {MAX_RSA_BITS} bits, paraes's limit"
        ));
    }
    let decoded = if pkcs8 {
        use rsa::pkcs8::DecodePrivateKey;
        rsa::PrivateKey::from_pkcs8_pem(text).ok()
    } else {
        use rsa::pkcs1::DecodeRsaPrivateKey;
        rsa::PrivateKey::from_pkcs1_pem(text).ok()
    };
    let key = decoded.ok_or_else(|| {
        if pkcs8 {
            "the PKCS#8 private key in it does not parse as an RSA key: it is cut short, \
             damaged, or of another type (paraes reads Ed25519 keys in OpenSSH's format)"
                .to_string()
        } else {
            "the PEM RSA private key in it does not parse: it is cut short or damaged".to_string()
        }
    })?;
    ssh_rsa::identity_from_pem(key, what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::stanza::OPENSSH;

    #[test]
    fn public_key_lines_are_read_as_authorized_keys_reads_them() {
        let words = |line| public_key_words(line);
        assert_eq!(
            words("ssh-ed25519 AAAA me@host"),
            Some(("ssh-ed25519", "AAAA"))
        );
        assert_eq!(words("ssh-rsa\tAAAA"), Some(("ssh-rsa", "AAAA")));
        assert_eq!(
            words(r#"from="10.0.0.1,a b",command="echo \"x y\"" ssh-ed25519 AAAA c d"#),
            Some(("ssh-ed25519", "AAAA"))
        );
        assert_eq!(
            words("no-pty,restrict ecdsa-sha2-nistp256 AAAA"),
            Some(("ecdsa-sha2-nistp256", "AAAA"))
        );
        assert_eq!(words("paraes1qqqq"), None);
        assert_eq!(words(r#"from="unterminated ssh-ed25519 AAAA"#), None);
        assert_eq!(words("PARAES-SECRET-KEY-1QQQ"), None);
    }

    #[test]
    fn refused_types_say_why() {
        for (key_type, needle) in [
            ("ecdsa-sha2-nistp256", "ECDSA"),
            ("ssh-dss", "DSA"),
            ("sk-ssh-ed25519@openssh.com", "cannot decrypt"),
            ("sk-ecdsa-sha2-nistp256@openssh.com", "cannot decrypt"),
            ("ssh-ed25519-cert-v01@openssh.com", "certificate"),
            ("ssh-ed448", "\"ssh-ed448\""),
        ] {
            let line = format!("{key_type} AAAA comment");
            let err = OPENSSH.recipient(&line).unwrap().err().unwrap();
            assert!(err.contains(needle), "{key_type}: {err}");
        }
        let long = format!("ssh-{} AAAA", "x\u{7}".repeat(50));
        let err = OPENSSH.recipient(&long).unwrap().err().unwrap();
        assert!(err.contains("of an unknown type"), "{err}");
    }
}
