//! The paraes container: one API for writing ([`seal`]) and reading ([`UnverifiedHeader::read`] ->
//! [`UnverifiedHeader::open`] -> [`Opened`]) containers, used alike by the CLI, MPI ranks, fuzz
//! targets and `info`. Nothing unverified reaches the pipeline: only an [`Opened`] makes a
//! [`StreamSpec`](crate::pipeline::StreamSpec). Format v3 (what paraes writes): a random file key D
//! per file, wrapped by stanzas for keys, a passphrase and public-key recipients; the body is one
//! C2SP chunked-encryption message (Cobblestone) whose input key is derived from D, and whose key
//! commitment ties D to the body. Formats v1 and v2 are still read (v2's body has paraes's own
//! chunk tags). docs/FORMAT.md has the layouts and the security argument.

mod body;
mod errors;
mod header;
mod identity;
mod info;
mod keys;
mod open;
mod opened;
mod rekey;
mod seal;
mod stanza;
mod v1;
mod v2;
mod v3;
mod warnings;
mod ways;

pub(crate) use body::BodyCheck;
pub use body::{
    verify, verify_file, BodyAccess, BodyLayout, LayoutError, RangeError, SeekableReader,
};
pub use errors::ContainerError;
pub use header::UnverifiedHeader;
pub use identity::{is_identity_text, AskPassphrase, PublicRecipient, SecretIdentity};
pub use info::{Access, BodyParams, HeaderInfo, IgnoredSlot, SlotInfo};
pub use keys::{
    random_bytes, Argon2Params, Authenticator, FileSecret, DEFAULT_ARGON2_ITERATIONS,
    DEFAULT_ARGON2_LANES, DEFAULT_ARGON2_MEMORY_KIB, DEFAULT_MAX_KDF_MIB, MAX_ARGON2_ITERATIONS,
    MAX_ARGON2_LANES, MAX_ARGON2_MEMORY_KIB, TAG_LEN,
};
pub use open::Unlock;
pub use opened::{message_batch, Opened};
pub use rekey::{HeaderWrite, InPlace, Rekey, RekeyWay};
#[cfg(any(test, feature = "testing"))]
pub(crate) use seal::plant_slot;
#[cfg(any(test, feature = "testing"))]
pub use seal::seal_v2;
pub use seal::{seal, NewStanzas};
pub use stanza::{
    parse_identities, parse_identity_file, parse_recipients, HybridIdentity, HybridRecipient,
    Identity, Recipient, StanzaKind, X25519Identity, X25519Recipient, MAX_BCRYPT_ROUNDS,
    MAX_RSA_BITS, MIN_RSA_BITS,
};
pub use v1::V1KeySource;
pub use warnings::{seal_warnings, SealWarning};
pub use ways::{select, stanza_names, StanzaSelector};

use crate::cobblestone;
use errors::read_exact;

/// First bytes of every container: a high-bit byte (catches 7-bit channels), the name, and a
/// newline (catches newline translation), as PNG does.
pub const MAGIC: [u8; 8] = *b"\x89PARAES\n";
/// The format version paraes writes.
pub const VERSION: u8 = v3::VERSION;
/// Bytes of a v3 body's message before its first chunk: salt and key commitment.
pub const MESSAGE_PREFIX_LEN: usize = cobblestone::PREFIX_LEN;
/// Smallest chunk size a container may declare.
pub const MIN_CHUNK_SIZE: usize = 4 << 10;
/// Largest chunk size a container may declare: reading one chunk never allocates more.
pub const MAX_CHUNK_SIZE: usize = 64 << 20;
/// Most stanzas one header may hold.
pub const MAX_STANZAS: usize = v2::MAX_STANZAS;
/// The generation of a new file's stanza slot; each rekey adds one.
const FIRST_GENERATION: u64 = 1;

#[cfg(test)]
mod tests;
