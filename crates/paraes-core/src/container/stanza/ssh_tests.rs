//! Tests of the two SSH stanza kinds and their text forms, with keys that `ssh-keygen` made
//! (OpenSSH 9.2): sealing and opening, the key tag, locked keys asked for their passphrase only
//! when their tag matches, and every hostile key refused in one line without a panic.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::ssh::{public_line, put_mpint, put_string, OPENSSH};
use super::{Identity, Recipient, Stanza};
use crate::container::identity::{
    parse_identity_file, parse_recipients, AskPassphrase, PublicRecipient, SecretIdentity, TextKeys,
};
use crate::container::keys::FileSecret;
use crate::container::ContainerError;

/// `ssh-keygen -t ed25519 -N '' -C test`.
pub(crate) const ED25519: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACB7py2hoIM84AKwY7C2ZBzvgtyc3Xb9pgllMDM4GgmrPQAAAIhKkUJgSpFC
YAAAAAtzc2gtZWQyNTUxOQAAACB7py2hoIM84AKwY7C2ZBzvgtyc3Xb9pgllMDM4GgmrPQ
AAAEDfhSdVS2l34JiuTfF42WcUDYIv8xVIIhGYYfoLPwoiu3unLaGggzzgArBjsLZkHO+C
3Jzddv2mCWUwMzgaCas9AAAABHRlc3QB
-----END OPENSSH PRIVATE KEY-----
";
/// Its public key line.
pub(crate) const ED25519_PUB: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHunLaGggzzgArBjsLZkHO+C3Jzddv2mCWUwMzgaCas9 test";
/// The same key with the passphrase `hunter2 hunter2` (`ssh-keygen -p`).
pub(crate) const ED25519_LOCKED: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABB4EVtAss
VDNgpYPDdzS0fKAAAAEAAAAAEAAAAzAAAAC3NzaC1lZDI1NTE5AAAAIHunLaGggzzgArBj
sLZkHO+C3Jzddv2mCWUwMzgaCas9AAAAkO5SfObWEQiQgUh4lGWGdI26zKRdQglIJBeCQl
7bLnBFbOs3eexlz4lGKTKfkwftK7/n2H8KBFp53IOz3EjXO3P0uf0ZhU716sqXoYQcaH/j
XocB9vLWDTN9n2PebX8JfWz1tNcS0gZL8UnZnKol/7Lh2bQDVSbGTgJ84I+YE9iDf1M2J1
M7NMxAXh+eL++Lmg==
-----END OPENSSH PRIVATE KEY-----
";
/// The locked key with its bcrypt rounds set to 100,000 (a hostile file).
pub(crate) const ED25519_ROUNDS: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABB4EVtAss
VDNgpYPDdzS0fKAAGGoAAAAAEAAAAzAAAAC3NzaC1lZDI1NTE5AAAAIHunLaGggzzgArBj
sLZkHO+C3Jzddv2mCWUwMzgaCas9AAAAkO5SfObWEQiQgUh4lGWGdI26zKRdQglIJBeCQl
7bLnBFbOs3eexlz4lGKTKfkwftK7/n2H8KBFp53IOz3EjXO3P0uf0ZhU716sqXoYQcaH/j
XocB9vLWDTN9n2PebX8JfWz1tNcS0gZL8UnZnKol/7Lh2bQDVSbGTgJ84I+YE9iDf1M2J1
M7NMxAXh+eL++Lmg==
-----END OPENSSH PRIVATE KEY-----
";
/// `ssh-keygen -t rsa -b 2048 -N '' -C test`.
pub(crate) const RSA: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAABFwAAAAdzc2gtcn
NhAAAAAwEAAQAAAQEAoqZQWyHGrf6t19CW1ossOiIq7LU1rP8qrwdzP4VDgAibn7TAGLUi
MN8bOOiRf5+JjpUSyo2n5x5dx5vGOrzni5nm7kO7NZuLuB9ig9VKsERFPpyh0Tusg7Mdf2
2y3eZlVPwK6xBcV/beFmgDUv8nSebaBWnCprfmRAPSJYvDcV5H2G9exBBr0j5pD4/cjU+j
wbXw+cz6KAQ/MBY17O0GJyrScdqDmTT0v+xaM4joQmqDxHIgDVUKnVh2M94udyDZQFM8Ml
H4ebPygifjn92NvXgJPxln2u3v4f+nZI5eCzHuV94eaYNpUmHofJMEirT8lraKhZEkFsMr
GifuhkjMBQAAA8Bygtz2coLc9gAAAAdzc2gtcnNhAAABAQCiplBbIcat/q3X0JbWiyw6Ii
rstTWs/yqvB3M/hUOACJuftMAYtSIw3xs46JF/n4mOlRLKjafnHl3Hm8Y6vOeLmebuQ7s1
m4u4H2KD1UqwREU+nKHRO6yDsx1/bbLd5mVU/ArrEFxX9t4WaANS/ydJ5toFacKmt+ZEA9
Ili8NxXkfYb17EEGvSPmkPj9yNT6PBtfD5zPooBD8wFjXs7QYnKtJx2oOZNPS/7FoziOhC
aoPEciANVQqdWHYz3i53INlAUzwyUfh5s/KCJ+Of3Y29eAk/GWfa7e/h/6dkjl4LMe5X3h
5pg2lSYeh8kwSKtPyWtoqFkSQWwysaJ+6GSMwFAAAAAwEAAQAAAQAEp5TKHtvUM+Met3nx
ltcDrOGkl4T7N+wtSR3LthEZ82Ucu2v56Qka8++P/9vWFqc1nN+GS2qAKzbM1RDlsm0/6f
4ZWHfdj19+u+syUaLLC5EduxbIaZhExpX0BRwmzIae2X2of3XdEJQHeR+LOwERVNltaTro
UX/191QGvgqwTlI69mlYk5LeboSj8EMPs29Zmwf8hxFf9YlCEOFzQ+EkNQHBb2Sc3ITl6U
+SoxU7VUYHpNLW9DtcGJZcbHgzEfzawIlJ0KviStoiYw4PzM19hJkx+PeuFWRSekwbQ812
zhFOVtmJbLpO+v3soDIqF6VgsFymJZS9QgFZDrDIErM7AAAAgQDAeoHV87OS42bTaO5V5z
uTrl7rjVQd74YuCw2Uva2ROttobcl9UeIcBBgXp+F1hKG3XmqKnHoBChdy6SfYNhA9rukD
GI1+7bBqQmAxD5sXG8uqLvOL6c89crZbzc8FzsLRVVf3L2PHzuiJTUOYJxRGnogeoAvVEt
gg5+xRiM4rDgAAAIEAzlymV03FPVrbSPU1PhehU0kI9v3jhjnhOkvD9ZOd3+PU9sJST73/
6s1Xn6ov5N2Ux+bYmtAgGPfgrXetFKshDpblFvUfcWZatQsY3b6f+qSr+B3wiaLQ5JQ4p3
H5n1H6iMTB01Gbd7oaFLvnyakkElKW3isMboKZVoFiLqdsi1MAAACBAMnF87XoJKDrFXLk
7cNALLQbzkTprqLQMBfZ3D9fnHzbyD9nk+9M0qhLI5MqDTUFoKe+XKUkN9X2AiEvAkP4D+
iXFhlzzThA6AahAXLS/r8Sx3cVQx91L57f8wIw+PiD6PbR8jNxI4+hP5UEJnJ22fHutlHa
3MPu1Q0qi8Kh/DhHAAAABHRlc3QBAgMEBQY=
-----END OPENSSH PRIVATE KEY-----
";
/// Its public key line.
pub(crate) const RSA_PUB: &str = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCiplBbIcat/q3X0JbWiyw6IirstTWs/yqvB3M/hUOACJuftMAYtSIw3xs46JF/n4mOlRLKjafnHl3Hm8Y6vOeLmebuQ7s1m4u4H2KD1UqwREU+nKHRO6yDsx1/bbLd5mVU/ArrEFxX9t4WaANS/ydJ5toFacKmt+ZEA9Ili8NxXkfYb17EEGvSPmkPj9yNT6PBtfD5zPooBD8wFjXs7QYnKtJx2oOZNPS/7FoziOhCaoPEciANVQqdWHYz3i53INlAUzwyUfh5s/KCJ+Of3Y29eAk/GWfa7e/h/6dkjl4LMe5X3h5pg2lSYeh8kwSKtPyWtoqFkSQWwysaJ+6GSMwF test";
/// The same key in PEM (PKCS#1): `ssh-keygen -p -N '' -m PEM`.
pub(crate) const RSA_PEM: &str = "-----BEGIN RSA PRIVATE KEY-----
MIIEpAIBAAKCAQEAoqZQWyHGrf6t19CW1ossOiIq7LU1rP8qrwdzP4VDgAibn7TA
GLUiMN8bOOiRf5+JjpUSyo2n5x5dx5vGOrzni5nm7kO7NZuLuB9ig9VKsERFPpyh
0Tusg7Mdf22y3eZlVPwK6xBcV/beFmgDUv8nSebaBWnCprfmRAPSJYvDcV5H2G9e
xBBr0j5pD4/cjU+jwbXw+cz6KAQ/MBY17O0GJyrScdqDmTT0v+xaM4joQmqDxHIg
DVUKnVh2M94udyDZQFM8MlH4ebPygifjn92NvXgJPxln2u3v4f+nZI5eCzHuV94e
aYNpUmHofJMEirT8lraKhZEkFsMrGifuhkjMBQIDAQABAoIBAASnlMoe29Qz4x63
efGW1wOs4aSXhPs37C1JHcu2ERnzZRy7a/npCRrz74//29YWpzWc34ZLaoArNszV
EOWybT/p/hlYd92PX3676zJRossLkR27FshpmETGlfQFHCbMhp7Zfah/dd0QlAd5
H4s7ARFU2W1pOuhRf/X3VAa+CrBOUjr2aViTkt5uhKPwQw+zb1mbB/yHEV/1iUIQ
4XND4SQ1AcFvZJzchOXpT5KjFTtVRgek0tb0O1wYllxseDMR/NrAiUnQq+JK2iJj
Dg/MzX2EmTH4964VZFJ6TBtDzXbOEU5W2Ylsuk76/eygMioXpWCwXKYllL1CAVkO
sMgSszsCgYEAzlymV03FPVrbSPU1PhehU0kI9v3jhjnhOkvD9ZOd3+PU9sJST73/
6s1Xn6ov5N2Ux+bYmtAgGPfgrXetFKshDpblFvUfcWZatQsY3b6f+qSr+B3wiaLQ
5JQ4p3H5n1H6iMTB01Gbd7oaFLvnyakkElKW3isMboKZVoFiLqdsi1MCgYEAycXz
tegkoOsVcuTtw0AstBvOROmuotAwF9ncP1+cfNvIP2eT70zSqEsjkyoNNQWgp75c
pSQ31fYCIS8CQ/gP6JcWGXPNOEDoBqEBctL+vxLHdxVDH3Uvnt/zAjD4+IPo9tHy
M3Ejj6E/lQQmcnbZ8e62Udrcw+7VDSqLwqH8OEcCgYBLWoOXH5vlcpbeRkPh34kW
O3YdksoRSnNW8TGmK/gbODucu4qI+c1IdSEI+YExpkPc1wvDRDpkQ6d0UF4QTQju
JeWTg4CuzPxUXa//0MrkIFt3Z59c8uoqfYFOi4zmQ24joQ1R19vYVUmOxqq19aBp
XGUgzUFl3SSW9PngJVy6ZwKBgQC3iBNyN0J6DNtpssqCe3EuMsyg6l4rQms8hrJM
As/40oGHCtQJKzvCUPZ++hUhUYkci48Bt7wCJs8xF+1bndv6mNNFO4xDyuZCgVkr
9Lg7XP2KWBDCIHm8bcBBEgKlKndRaw5/tD3Ae8+14ByIqYr9AUFdm1KL9kZcv4J4
+5bMKQKBgQDAeoHV87OS42bTaO5V5zuTrl7rjVQd74YuCw2Uva2ROttobcl9UeIc
BBgXp+F1hKG3XmqKnHoBChdy6SfYNhA9rukDGI1+7bBqQmAxD5sXG8uqLvOL6c89
crZbzc8FzsLRVVf3L2PHzuiJTUOYJxRGnogeoAvVEtgg5+xRiM4rDg==
-----END RSA PRIVATE KEY-----
";
/// The same key with the passphrase `hunter2 hunter2`.
pub(crate) const RSA_LOCKED: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABAjjhTpf3
BHC2DY3ph39FW/AAAAEAAAAAEAAAEXAAAAB3NzaC1yc2EAAAADAQABAAABAQCiplBbIcat
/q3X0JbWiyw6IirstTWs/yqvB3M/hUOACJuftMAYtSIw3xs46JF/n4mOlRLKjafnHl3Hm8
Y6vOeLmebuQ7s1m4u4H2KD1UqwREU+nKHRO6yDsx1/bbLd5mVU/ArrEFxX9t4WaANS/ydJ
5toFacKmt+ZEA9Ili8NxXkfYb17EEGvSPmkPj9yNT6PBtfD5zPooBD8wFjXs7QYnKtJx2o
OZNPS/7FoziOhCaoPEciANVQqdWHYz3i53INlAUzwyUfh5s/KCJ+Of3Y29eAk/GWfa7e/h
/6dkjl4LMe5X3h5pg2lSYeh8kwSKtPyWtoqFkSQWwysaJ+6GSMwFAAADwB8jfDesTz4ZHa
SlGFEB4FTPQST9ISbjxvgZ2h+2EIhNxGs1xI0KRJ6ggG1K6vr0XVIYKqJO/38IxvmHfkAp
G5pmOiAxR6WHboWrRrpfK6JIwBEZE94KNk7bFevToakGaypOfme/cJ98hbBMDvMoZynNtq
oLIuhy8gs/nAzICPeZFgCwJ1rXoCQvgVZWaYcxMD5Wlqid/ZX2uJ6wQYEySg9IzlwcIzhH
TxKcGeEI1u3h5y6xOt9TdMuFQJnQQGbDW2LP9h21Z3jfuFebLfoYqkHLgXoMeZ2BkG9Ik6
ftR+1AxLwivnH7WdB/Y47ClGTf8KQbaYb9Lnpqqw4cpfsNZ566pu4b2IOidkFFwMaDNjNV
djsYFoOFYx4aZ6Oajb4+wNrUP9h42AwQ5ErxgApHOnS9uGvd35FAzCacNQqXfHunRS+8NB
mBKZZXQ9buxnAzhF1YqdenyEzuQATVji8tYRCE/6mkT+4xPiSWCyta7mtQwX9qrIZTykoe
W2L+5q6USRkHLiELRFulPhOHHEBpHME1zmgpGEcPI5BkPl9yl5IjupawieLuTT2KAFGsLA
SDOTAs2rQBxsm/JObu4m1WW/SA13vFwWs7Ka/Rtgxx9BeSIJpRl7zXIvTNXR0wHMByLOnW
8stOYX8REiPUB9caJNl9pQ0wV+alBpWayxWBF9d7m4Y+iIZUn+43w2zlfPG6ccdgkMq3Zx
YVwxlhFadcZ9BeUKMYow+GF8Zk8v6KcuPY4xTvdRCBGHc/NgiaTAkUDcwahL89AOAST/tz
OkgAeBmdIe553cEuF23fRIk9YeMfvKFI4e4X6pk+9YN1+WjZGhfREkPnIzK0YAh6TtB8bM
34iIKvsMv2DwOTuU2EfW2B4NnEgGl1Bn9dfsifexasFwYinmKWvROZgPaJRBTU4wGVIFmm
rdsZzZJD0pqmYMetkMxuhfgybgY5mtoGnUycfa7ruDiTd+E4xrbbVdfBVnhL0bNQcAneIq
ip5asyd5RNbSlk6uvPsKmlLfuy+7BK38rnO9yH1cd87ZLKKCXdSDcd0Jmsl35IesecbLOw
jvmVVDlSk8XXtcc9GJtweVrWlEDxqoGXnb/QzYRf6qNTu0IPqeoaQfmnRnoqzqCCOocNRy
a48WKCt1uqqqqSjaDUddjPyxmulhtv4/NUsAhMVfebEshBIA8WxtbWQCxAEqXrW1sCROC6
L3BBQTkHzeO+Dv+DUs28j+odadS9gMST+RdyKtbcPkI2fxUGgyhEYOeEU2Yiwy8Rt04PiX
Oss5QoiQ==
-----END OPENSSH PRIVATE KEY-----
";
/// `ssh-keygen -t ecdsa -N ''`: a type paraes refuses.
pub(crate) const ECDSA: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAaAAAABNlY2RzYS
1zaGEyLW5pc3RwMjU2AAAACG5pc3RwMjU2AAAAQQQW/fVh5+oFxdV2GpsxCkaZMoSEmiz2
mzMcKnbImUjmFwnDjvJoNW7BPSY1xXKBdQiJN+0dUZ17gyv5VPB9x5gBAAAAoGCaC5dgmg
uXAAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBBb99WHn6gXF1XYa
mzEKRpkyhISaLPabMxwqdsiZSOYXCcOO8mg1bsE9JjXFcoF1CIk37R1RnXuDK/lU8H3HmA
EAAAAhAPeGF4l3xuktV5o0W3mlH/zg6AAKe7MPuJWyMS7YrVwuAAAABHRlc3QBAgM=
-----END OPENSSH PRIVATE KEY-----
";
/// Its public key line.
pub(crate) const ECDSA_PUB: &str = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBBb99WHn6gXF1XYamzEKRpkyhISaLPabMxwqdsiZSOYXCcOO8mg1bsE9JjXFcoF1CIk37R1RnXuDK/lU8H3HmAE= test";
/// A 1,024-bit RSA key's line (`ssh-keygen -t rsa -b 1024`): too small.
pub(crate) const RSA_1024_PUB: &str = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQCfh4+BAyxA092OTLljYa2bHdtggDqejpxM29sHEN926i4ttb7G2pJZ6DNzDaHaGU6AZpgEx4HZKfcj21Bn6/njvyk4fXMKyXiUq7t8NnWkYHORk2ux3uIxuF90bFLfD82FbCTxFeOhg4oO+st0oa9ZO9TbR54Ca6t+U5O9jxpCWw== small";

/// The passphrase of the locked test keys.
pub(crate) const PASSPHRASE: &str = "hunter2 hunter2";

/// An [`AskPassphrase`] that counts its calls and answers `answer` (or has no terminal).
pub(crate) struct Asker {
    answer: Option<&'static str>,
    asked: AtomicUsize,
}

impl Asker {
    pub(crate) fn new(answer: Option<&'static str>) -> Arc<Self> {
        Arc::new(Asker {
            answer,
            asked: AtomicUsize::new(0),
        })
    }

    pub(crate) fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

impl AskPassphrase for Asker {
    fn ask(&self, what: &str) -> Result<Zeroizing<Vec<u8>>, String> {
        assert!(what.starts_with("SSH key "), "{what}");
        self.asked.fetch_add(1, Ordering::SeqCst);
        match self.answer {
            Some(answer) => Ok(Zeroizing::new(answer.as_bytes().to_vec())),
            None => Err("no terminal here".into()),
        }
    }
}

/// The one identity of the key file `text`, asking `ask`.
pub(crate) fn identity_with(
    text: &str,
    ask: &Arc<Asker>,
) -> Result<SecretIdentity, ContainerError> {
    let ask: Arc<dyn AskPassphrase> = ask.clone();
    let mut ids = parse_identity_file(text, "k", ask)?;
    assert_eq!(ids.len(), 1);
    Ok(ids.remove(0))
}

/// The identity of an unlocked test key file.
pub(crate) fn identity(text: &str) -> SecretIdentity {
    identity_with(text, &Asker::new(None)).unwrap()
}

/// The recipient of a public key line.
pub(crate) fn recipient(line: &str) -> PublicRecipient {
    line.parse().unwrap()
}

/// The error of a recipient line that must be refused.
fn refused(line: &str) -> String {
    match line.parse::<PublicRecipient>() {
        Ok(_) => panic!("accepted: {line}"),
        Err(e) => e.to_string(),
    }
}

/// The error of an identity file that must be refused.
fn refused_identity(text: &str) -> String {
    match identity_with(text, &Asker::new(Some(PASSPHRASE))) {
        Ok(_) => panic!("accepted an identity"),
        Err(e) => e.to_string(),
    }
}

/// The stanza that wraps `d` for `recipient`.
pub(crate) fn seal(recipient: &PublicRecipient, d: &FileSecret) -> Stanza {
    Stanza::wrap(&Recipient::Public(recipient.clone()), d).unwrap()
}

/// The file key that `id` takes from `stanza`, if it opens it.
pub(crate) fn opens(
    stanza: &Stanza,
    id: &SecretIdentity,
) -> Result<Option<Vec<u8>>, ContainerError> {
    Ok(stanza
        .unwrap(&Identity::Secret(id.clone()), u64::MAX)?
        .map(|d| d.as_bytes().to_vec()))
}

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

/// An `ssh-rsa` line of exponent `e` and modulus `n` (magnitudes), checked by nothing.
fn rsa_line(e: &[u8], n: &[u8]) -> String {
    let mut wire = Vec::new();
    put_string(&mut wire, b"ssh-rsa");
    put_mpint(&mut wire, e);
    put_mpint(&mut wire, n);
    public_line(&wire)
}

/// The `ssh-ed25519` line of a stranger's key (of the seed 0x5a...).
fn stranger_line() -> String {
    let point = curve25519_dalek::EdwardsPoint::mul_base_clamped([0x5a; 32]);
    ed25519_line(&point.compress().0)
}

/// An `ssh-ed25519` line of the 32 bytes `key`, checked by nothing.
fn ed25519_line(key: &[u8; 32]) -> String {
    let mut wire = Vec::new();
    put_string(&mut wire, b"ssh-ed25519");
    put_string(&mut wire, key);
    public_line(&wire)
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

#[test]
fn the_text_form_is_listed_once_and_tried_before_bech32() {
    let forms = super::text_forms();
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
        assert!(!super::names_a_key_too_often(&[one.clone(), one.clone()]));
        assert!(super::names_a_key_too_often(&[
            one.clone(),
            other.clone(),
            one.clone(),
            other.clone(),
            one.clone()
        ]));
        assert!(!super::names_a_key_too_often(&[
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
