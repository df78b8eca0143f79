//! The error of an option rule broken by the command line itself: exit status 2, like clap's
//! own errors, with a pointer to the subcommand's help (`main.rs` prints it).

/// An option rule broken by the command line itself.
#[derive(Debug)]
pub struct UsageError {
    /// What is wrong and what to do.
    pub message: String,
    /// The subcommand whose help describes the options.
    pub command: &'static str,
}

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UsageError {}
