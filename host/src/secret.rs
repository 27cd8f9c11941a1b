//! Secrets the harness holds (model providers' API keys): a type whose
//! `Debug` and `Display` never show the value, so a key cannot reach a log,
//! an error, a printed configuration or a hook context by accident. Only
//! [`Secret::expose`] reads it, where it goes on the wire.

use std::fmt;

use serde::Deserialize;

/// What a secret prints as.
pub const REDACTED: &str = "<redacted>";

/// A secret string. Compares by value (configurations are compared in
/// tests), prints as [`REDACTED`].
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value, to put on the wire. Never format it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the secret replaced by [`REDACTED`]:
    /// for what a provider answered, which may quote the key it refused.
    pub fn redact_from(&self, text: &str) -> String {
        // A very short "key" would redact ordinary words; such a key is
        // not a real one, and redacting nothing is no leak of a real one.
        if self.0.len() < 4 {
            return text.to_owned();
        }
        text.replace(&self.0, REDACTED)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({REDACTED})")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_never_prints_its_value() {
        let secret = Secret::new("sk-live-1234");
        assert_eq!(format!("{secret}"), REDACTED);
        assert_eq!(format!("{secret:?}"), "Secret(<redacted>)");
        assert_eq!(format!("{:?}", Some(&secret)), "Some(Secret(<redacted>))");
        assert_eq!(secret.expose(), "sk-live-1234");
    }

    #[test]
    fn redaction_removes_every_copy_of_the_key() {
        let secret = Secret::new("sk-live-1234");
        assert_eq!(
            secret.redact_from("Incorrect API key provided: sk-live-1234 (sk-live-1234)."),
            "Incorrect API key provided: <redacted> (<redacted>)."
        );
        assert_eq!(Secret::new("a").redact_from("a cat"), "a cat");
    }
}
