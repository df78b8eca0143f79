//! What sealing a container for a set of recipients warns about, as values: the core never
//! prints; each front end says them its own way (the CLI on standard error, Python through
//! `warnings.warn`).

use super::stanza::Recipient;

/// A warning about the recipients a container is sealed (or rekeyed) for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SealWarning {
    /// Post-quantum recipients share the file with classical public-key ones (X25519, SSH):
    /// whoever breaks a classical stanza opens the file, so it is no safer than them.
    #[error("the post-quantum (paraespq1...) recipients share this file with classical public-key recipients (X25519 or SSH keys), whose stanzas a quantum computer could open: the file is only as safe as those; encrypt to the post-quantum recipients alone to keep their protection")]
    QuantumMixedWithClassical,
}

/// The warnings about sealing for `recipients`.
pub fn seal_warnings(recipients: &[Recipient]) -> Vec<SealWarning> {
    let public = || {
        recipients.iter().filter_map(|r| match r {
            Recipient::Public(public) => Some(public),
            _ => None,
        })
    };
    let mut warnings = Vec::new();
    if public().any(|r| r.is_post_quantum()) && public().any(|r| !r.is_post_quantum()) {
        warnings.push(SealWarning::QuantumMixedWithClassical);
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::{seal, NewStanzas, SecretIdentity};
    use crate::KeySize;

    /// The rule lives in the seal: mixed post-quantum and classical public-key recipients
    /// warn, one kind alone does not; a rekey's new stanzas say the same.
    #[test]
    fn sealing_for_mixed_public_key_recipients_warns_as_a_value() {
        let pq = Recipient::Public(SecretIdentity::generate_hybrid().unwrap().recipient());
        let classical = Recipient::Public(SecretIdentity::generate_x25519().unwrap().recipient());
        let mixed = [pq.clone(), classical.clone()];
        let (_, opened) = seal(KeySize::Aes256, &mixed).unwrap();
        assert_eq!(opened.warnings(), [SealWarning::QuantumMixedWithClassical]);
        let new = NewStanzas::prepare(&mixed).unwrap();
        assert_eq!(new.warnings(), [SealWarning::QuantumMixedWithClassical]);
        for alone in [[pq.clone(), pq], [classical.clone(), classical]] {
            assert!(seal(KeySize::Aes256, &alone)
                .unwrap()
                .1
                .warnings()
                .is_empty());
        }
    }
}
