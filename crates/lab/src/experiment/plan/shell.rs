//! Shell quoting for the command lines `latlab run --dry-run` prints.

pub use latlab_core::output::shell_quote;

/// Words joined into one line a shell reads back as the same words.
pub(crate) fn shell_join(words: &[String]) -> String {
    words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}
