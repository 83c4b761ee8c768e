//! Random bytes for secrets: the HS256 key, pairing keys, codes and nonces; and random hex for
//! values that must not be guessed but are no secret (fence boundaries, session IDs).
//!
//! Read from the kernel's source directly, so the hub needs no random-number crate for the few
//! bytes it draws, and a failure is an ordinary I/O error with the path in it.

use std::io::{self, Read};

/// The kernel's cryptographic random source.
pub const SOURCE: &str = "/dev/urandom";

/// `N` bytes from [`SOURCE`].
pub fn bytes<const N: usize>() -> io::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    std::fs::File::open(SOURCE)?.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// `N` random bytes as hex. Should [`SOURCE`] fail, the standard library's randomly keyed
/// hasher over a counter stands in: unpredictable from outside the process, which is all these
/// values need.
pub fn hex<const N: usize>() -> String {
    let bytes = bytes::<N>().unwrap_or_else(|_| {
        use std::hash::{BuildHasher, Hasher};
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let mut out = [0u8; N];
        for chunk in out.chunks_mut(8) {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
            let value = hasher.finish().to_be_bytes();
            chunk.copy_from_slice(&value[..chunk.len()]);
        }
        out
    });
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn draws_differ() {
        assert_ne!(super::bytes::<16>().unwrap(), super::bytes::<16>().unwrap());
    }
}
