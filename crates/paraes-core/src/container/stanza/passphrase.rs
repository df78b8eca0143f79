//! The passphrase stanza (kind 2): D wrapped under HKDF-SHA256 of Argon2id(passphrase), with
//! the Argon2id salt and parameters as the stanza's args; `info` shows the parameters, and
//! their cost is weighed against the reader's cap before Argon2id runs.

use super::{hkdf, BodyLen, Identity, Kind, Recipient, StanzaKind, Wrap, WrapKey, WRAPPED_LEN};
use crate::container::keys::Argon2Params;
use crate::container::ContainerError;

/// The passphrase stanza kind.
pub(super) struct Passphrase;

/// HKDF-SHA256 info of a passphrase stanza's wrap key (after Argon2id).
const INFO: &[u8] = b"paraes 2026-11 container v2 passphrase stanza wrap key";
/// Bytes of the encoded Argon2id parameters (salt, memory, passes, lanes), the stanza's args.
const ARGS_LEN: usize = 28;

impl Kind for Passphrase {
    fn byte(&self) -> u8 {
        2
    }

    fn name(&self) -> &'static str {
        "passphrase"
    }

    fn label(&self) -> &'static str {
        "passphrase"
    }

    fn body_len(&self) -> BodyLen {
        BodyLen::Exact(ARGS_LEN + WRAPPED_LEN)
    }

    fn describe(&self, args: &[u8]) -> Result<StanzaKind, ContainerError> {
        let params = decode(args);
        params.check()?;
        Ok(StanzaKind::known(self.byte(), self.name()).with_argon2(params))
    }

    fn wrap(&self, recipient: &Recipient) -> Option<Result<Wrap, ContainerError>> {
        let Recipient::Passphrase(passphrase, params) = recipient else {
            return None;
        };
        Some(wrap_key(passphrase, params).map(|key| Wrap {
            args: params.encode().to_vec(),
            key,
        }))
    }

    fn unwrap(
        &self,
        args: &[u8],
        identity: &Identity,
        max_kdf_mib: u64,
    ) -> Result<Option<WrapKey>, ContainerError> {
        let Identity::Passphrase(passphrase) = identity else {
            return Ok(None);
        };
        let params = decode(args);
        if params.cost_mib() > max_kdf_mib {
            return Err(ContainerError::KdfTooCostly {
                cost_mib: params.cost_mib(),
                cap_mib: max_kdf_mib,
                slots: 1,
            });
        }
        wrap_key(passphrase, &params).map(Some)
    }
}

fn decode(args: &[u8]) -> Argon2Params {
    Argon2Params::decode(args.try_into().expect("length checked by its kind"))
}

fn wrap_key(passphrase: &[u8], params: &Argon2Params) -> Result<WrapKey, ContainerError> {
    let mut stretched = zeroize::Zeroizing::new([0u8; 32]);
    params.derive_into(passphrase, &mut stretched[..])?;
    Ok(hkdf(None, &stretched[..], INFO))
}
