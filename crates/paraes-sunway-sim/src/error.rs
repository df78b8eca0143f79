//! Why the simulator cannot be set up.

use paraes_core::EngineError;

/// Why the simulator cannot be set up.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// A bad setting.
    #[error("{0}")]
    Config(String),
    /// The kernel's data does not fit in a CPE's local memory.
    #[error(
        "LDM overflow: '{region}' needs {requested} bytes but only {} of the CPE's {capacity} \
         bytes are left: use a smaller LDM buffer",
        capacity - used
    )]
    LdmOverflow {
        /// The region that did not fit.
        region: String,
        /// Its size in bytes.
        requested: usize,
        /// Bytes already allocated.
        used: usize,
        /// LDM size in bytes.
        capacity: usize,
    },
}

impl From<SimError> for EngineError {
    fn from(error: SimError) -> Self {
        EngineError::Unavailable(error.to_string())
    }
}
