//! Which secrets are tried first (issue 35 item 5): a locked SSH key's passphrase is asked only
//! when no other secret given opens the file, whatever the order of the stanzas and of the
//! secrets.

use super::*;
use crate::container::stanza::ssh_tests::{identity_with, Asker, ED25519_LOCKED, PASSPHRASE};

#[test]
fn a_locked_key_is_asked_only_when_no_other_secret_opens_the_file() {
    let ask = Asker::new(Some(PASSPHRASE));
    let locked = identity_with(ED25519_LOCKED, &ask).unwrap();
    // The SSH stanza comes first in the slot, and the locked key first among the secrets.
    let file = encrypt(
        &[
            Recipient::Public(locked.recipient()),
            Recipient::Key(key(1)),
        ],
        &plain(),
    );
    let both = Unlock::new(vec![
        Identity::Secret(locked.clone()),
        Identity::Key(key(1)),
    ]);
    assert_eq!(decrypt_with(&file, &both).unwrap(), plain());
    assert_eq!(ask.asked(), 0, "asked although the key file opens the file");
    // With a wrong key beside it, the locked key is asked, once, and opens the file.
    let wrong = Unlock::new(vec![
        Identity::Secret(locked.clone()),
        Identity::Key(key(2)),
    ]);
    assert_eq!(decrypt_with(&file, &wrong).unwrap(), plain());
    assert_eq!(ask.asked(), 1);
    // Unlocked now: it needs no prompt, and is tried with the others.
    assert!(!Identity::Secret(locked).may_prompt());
}
