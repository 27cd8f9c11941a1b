//! Randomness for a plugin that was not granted `random`: deterministic
//! streams seeded by the plugin's name.
//!
//! Each stream is the SHA-256 counter sequence `SHA-256(seed ‖ n)`, n = 0,
//! 1, ... as 8 little-endian bytes, with `seed = SHA-256("tiny-harness/" +
//! stream + "/" + plugin name)` for the streams `random` (behind
//! `wasi:random/random`) and `insecure` (`wasi:random/insecure`);
//! `wasi:random/insecure-seed` answers the first 16 bytes of the `insecure-
//! seed` stream's seed. So every fresh instance of a plugin reads the same
//! values, two plugins read different ones, and nothing a guest reads says
//! anything about the host. Not secret: anyone who knows the plugin's name
//! can compute them, which is the point of "deterministic".

use std::convert::Infallible;

use rand_core::TryRng;
use sha2::{Digest, Sha256};

/// One deterministic stream.
pub(crate) struct SeededStream {
    seed: [u8; 32],
    /// The next block's counter.
    counter: u64,
    block: [u8; 32],
    /// Bytes of `block` already handed out.
    used: usize,
}

impl SeededStream {
    /// Stream `stream` of plugin `plugin`.
    pub(crate) fn new(plugin: &str, stream: &str) -> Self {
        SeededStream {
            seed: seed(plugin, stream),
            counter: 0,
            block: [0; 32],
            used: 32,
        }
    }

    fn next_byte(&mut self) -> u8 {
        if self.used == self.block.len() {
            let mut hasher = Sha256::new();
            hasher.update(self.seed);
            hasher.update(self.counter.to_le_bytes());
            self.block = hasher.finalize().into();
            self.counter = self.counter.wrapping_add(1);
            self.used = 0;
        }
        let byte = self.block[self.used];
        self.used += 1;
        byte
    }
}

impl TryRng for SeededStream {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        let mut bytes = [0; 4];
        self.fill(&mut bytes);
        Ok(u32::from_le_bytes(bytes))
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let mut bytes = [0; 8];
        self.fill(&mut bytes);
        Ok(u64::from_le_bytes(bytes))
    }

    fn try_fill_bytes(&mut self, bytes: &mut [u8]) -> Result<(), Infallible> {
        self.fill(bytes);
        Ok(())
    }
}

impl SeededStream {
    fn fill(&mut self, bytes: &mut [u8]) {
        for byte in bytes {
            *byte = self.next_byte();
        }
    }
}

/// `wasi:random/insecure-seed` for `plugin`.
pub(crate) fn insecure_seed(plugin: &str) -> u128 {
    let seed = seed(plugin, "insecure-seed");
    let mut first = [0; 16];
    first.copy_from_slice(&seed[..16]);
    u128::from_le_bytes(first)
}

fn seed(plugin: &str, stream: &str) -> [u8; 32] {
    Sha256::digest(format!("tiny-harness/{stream}/{plugin}")).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(plugin: &str, stream: &str, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        SeededStream::new(plugin, stream).fill(&mut out);
        out
    }

    #[test]
    fn streams_are_the_documented_counter_sequence() {
        let seed: [u8; 32] = Sha256::digest(b"tiny-harness/random/p").into();
        let mut expected = Vec::new();
        for n in 0u64..3 {
            let mut hasher = Sha256::new();
            hasher.update(seed);
            hasher.update(n.to_le_bytes());
            expected.extend_from_slice(&hasher.finalize());
        }
        assert_eq!(bytes("p", "random", 96), expected);
        let mut stream = SeededStream::new("p", "random");
        assert_eq!(
            stream.try_next_u64().expect("infallible"),
            u64::from_le_bytes(expected[..8].try_into().expect("8 bytes"))
        );
    }

    #[test]
    fn streams_differ_by_plugin_and_by_stream_and_repeat_otherwise() {
        assert_eq!(bytes("p", "random", 40), bytes("p", "random", 40));
        assert_ne!(bytes("p", "random", 40), bytes("q", "random", 40));
        assert_ne!(bytes("p", "random", 40), bytes("p", "insecure", 40));
        assert_eq!(insecure_seed("p"), insecure_seed("p"));
        assert_ne!(insecure_seed("p"), insecure_seed("q"));
    }
}
