//! Tests of the two SSH stanza kinds and their text forms, with keys that `ssh-keygen` made
//! (OpenSSH 9.2): sealing and opening, the key tag, locked keys asked for their passphrase only
//! when their tag matches, and every hostile key refused in one line without a panic: one topic
//! a file under `ssh_tests/`, and here the keys and helpers they share.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::ssh::{public_line, put_mpint, put_string};
use super::{parse_identity_file, parse_recipients, Identity, Recipient, Stanza, OPENSSH};
use crate::container::identity::{AskPassphrase, PublicRecipient, SecretIdentity, TextKeys};
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

mod hostile;
mod locked;
mod sealing;
mod text;
