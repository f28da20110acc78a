//! The network between nodes: latency plus bandwidth, never losing a message.
//!
//! Seed: `000_e8004e1596fde6a5.txt` §3.2.3 — Illinois Fast Messages 2.0 on Myrinet: 40 µs user-space to
//! user-space for 128-byte messages, 13 MB/s.
//!
//! ## Approach
//! Each node has one outgoing link (its network interface). A message leaves when the link is free, occupies
//! it for `bytes / bandwidth`, and arrives `latency` after it has left; messages from one node therefore
//! arrive in the order they were sent. There is no contention at the receiver and no loss.
//!
//! ## Algorithm
//! ```text
//! send(src, bytes, now):
//!     start   = max(now, link_free[src])
//!     link_free[src] = start + ceil(bytes × 10^9 / bandwidth)
//!     arrival = link_free[src] + latency
//! ```
//!
//! ## Parameters
//! [`crate::scenario::NetworkParams`]: `latency_ns` (default 30 µs) and `bandwidth_bytes_per_s` (13 MB/s),
//! so a 128-byte message takes 30 + 9.8 ≈ 40 µs.

use crate::scenario::NetworkParams;
use cosched_policy::{Nanos, SECONDS};

/// The cluster network: per-node link state and counters.
#[derive(Clone, Debug)]
pub struct Network {
    params: NetworkParams,
    link_free: Vec<Nanos>,
    /// Messages handed to the network.
    pub sent: u64,
    /// Messages delivered to their receiver.
    pub delivered: u64,
}

impl Network {
    /// A network between `nodes` nodes.
    pub fn new(params: NetworkParams, nodes: u32) -> Self {
        Network {
            params,
            link_free: vec![0; nodes as usize],
            sent: 0,
            delivered: 0,
        }
    }

    /// Time to put `bytes` on the wire at the configured bandwidth, rounded up to a whole nanosecond.
    pub fn serialisation(&self, bytes: u32) -> Nanos {
        (bytes as u128 * SECONDS as u128).div_ceil(self.params.bandwidth_bytes_per_s as u128)
            as Nanos
    }

    /// Sends `bytes` from node `src` at `now`; returns the arrival time at the receiver.
    pub fn send(&mut self, src: u32, bytes: u32, now: Nanos) -> Nanos {
        let start = now.max(self.link_free[src as usize]);
        let done = start + self.serialisation(bytes);
        self.link_free[src as usize] = done;
        self.sent += 1;
        done + self.params.latency_ns
    }

    /// The fixed one-way latency (an acknowledgement takes it back to the sender).
    pub fn latency(&self) -> Nanos {
        self.params.latency_ns
    }

    /// Records one delivery.
    pub fn deliver(&mut self) {
        self.delivered += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_policy::MICROS;

    #[test]
    fn a_128_byte_message_takes_about_40_us() {
        // 128 B / 13 MB/s = 9846.15 ns → 9847 ns rounded up; + 30 µs latency = 39,847 ns.
        let mut net = Network::new(NetworkParams::default(), 2);
        assert_eq!(net.send(0, 128, 0), 30 * MICROS + 9847);
    }

    #[test]
    fn back_to_back_sends_queue_on_the_senders_link() {
        // Two 13,000-byte messages at 13 MB/s: 1 ms each on the wire. The second leaves at 1 ms, arrives at
        // 2 ms + 30 µs; a message from the other node is not delayed.
        let mut net = Network::new(NetworkParams::default(), 2);
        assert_eq!(net.send(0, 13_000, 0), 1_030 * MICROS);
        assert_eq!(net.send(0, 13_000, 0), 2_030 * MICROS);
        assert_eq!(net.send(1, 13_000, 0), 1_030 * MICROS);
        assert_eq!(net.sent, 3);
    }
}
