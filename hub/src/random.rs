//! Random bytes for secrets: the HS256 key, pairing keys, codes and nonces.
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

#[cfg(test)]
mod tests {
    #[test]
    fn draws_differ() {
        assert_ne!(super::bytes::<16>().unwrap(), super::bytes::<16>().unwrap());
    }
}
