//! Which user opened a loopback TCP connection to the local hub. A Unix socket says so itself
//! (`SO_PEERCRED`); TCP does not, but on Linux the kernel lists every socket with its owner in
//! `/proc/net/tcp` and `/proc/net/tcp6`, readable by everyone: the connecting socket is the
//! line whose local address is the connection's peer address. The hub uses it to keep its
//! handshake places for its own user's browser when another user's process crowds them
//! ([`crate::handshake_places`]); elsewhere (macOS) the answer is unknown.

use std::net::SocketAddr;

/// Whether the user who opened the connection from `peer` (a loopback address) is the hub's
/// own; `None` when it cannot be told (not Linux, not loopback, no line found).
pub fn is_own(peer: SocketAddr) -> Option<bool> {
    if !peer.ip().is_loopback() && !is_mapped_loopback(&peer) {
        return None;
    }
    let owner = owner_of(peer)?;
    Some(owner == tabwire_protocol::local::current_uid())
}

fn is_mapped_loopback(peer: &SocketAddr) -> bool {
    match peer {
        SocketAddr::V6(v6) => v6.ip().to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
        SocketAddr::V4(_) => false,
    }
}

#[cfg(target_os = "linux")]
fn owner_of(peer: SocketAddr) -> Option<u32> {
    let (table, local) = match peer {
        SocketAddr::V4(_) => ("/proc/net/tcp", proc_address(peer)),
        SocketAddr::V6(_) => ("/proc/net/tcp6", proc_address(peer)),
    };
    owner_in(&std::fs::read_to_string(table).ok()?, &local)
}

#[cfg(not(target_os = "linux"))]
fn owner_of(_peer: SocketAddr) -> Option<u32> {
    None
}

/// The address as the kernel's tables print it: the IP as 32-bit words in the machine's byte
/// order, each as eight hex digits, then the port as four.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn proc_address(address: SocketAddr) -> String {
    let words: Vec<u8> = match address {
        SocketAddr::V4(v4) => v4.ip().octets().to_vec(),
        SocketAddr::V6(v6) => v6.ip().octets().to_vec(),
    };
    let mut text = String::new();
    for word in words.chunks(4) {
        let word = u32::from_ne_bytes(word.try_into().expect("chunks of four"));
        text.push_str(&format!("{word:08X}"));
    }
    format!("{text}:{:04X}", address.port())
}

/// The uid of the one socket whose local address is `local` in a `/proc/net/tcp` table (its
/// columns: sl, local_address, rem_address, st, tx_queue:rx_queue, tr:tm->when, retrnsmt, uid,
/// …). Several lines with that address but different owners tell nothing.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn owner_in(table: &str, local: &str) -> Option<u32> {
    let mut owner = None;
    for line in table.lines().skip(1) {
        let columns: Vec<&str> = line.split_whitespace().collect();
        if columns.get(1) != Some(&local) {
            continue;
        }
        let uid: u32 = columns.get(7)?.parse().ok()?;
        match owner {
            Some(seen) if seen != uid => return None,
            _ => owner = Some(uid),
        }
    }
    owner
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_read_by_the_local_address_and_its_uid_column() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0\n\
   1: 0100007F:D431 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 2 1 0000000000000000 20 4 30 10 -1\n";
        assert_eq!(owner_in(table, "0100007F:D431"), Some(1000));
        assert_eq!(owner_in(table, "0100007F:1F90"), Some(0));
        assert_eq!(owner_in(table, "0100007F:0001"), None);
        // Two owners for one address tell nothing.
        let twice = format!(
            "{table}   2: 0100007F:D431 0100007F:2000 01 00000000:00000000 00:00000000 00000000  1001 0 3\n"
        );
        assert_eq!(owner_in(&twice, "0100007F:D431"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_connection_of_this_process_is_its_own_users() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_server, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        assert_eq!(is_own(peer), Some(true));
        // An address no socket has is unknown, never "another user".
        let nobody: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert_eq!(is_own(nobody), None);
        // Not loopback: unknown.
        let far: SocketAddr = "192.0.2.1:4000".parse().unwrap();
        assert_eq!(is_own(far), None);
    }
}
