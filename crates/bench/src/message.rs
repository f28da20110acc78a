//! Message framing.
//!
//! Data messages have a fixed size known to both sides (`--bytes`, 128 B for the seed's Latency token, seed
//! `000_e8004e1596fde6a5.txt` §4.1.2), so the data path needs no length prefix: a receiver reads exactly that
//! many bytes. Each data message starts with a 16-byte header:
//!
//! ```text
//! offset 0  u32 LE  kind      1 = data, 2 = stop (the sender has finished; the receiver ends its loop)
//! offset 4  u32 LE  tag       program-defined (ping / pong, barrier phase, ...)
//! offset 8  u64 LE  sequence  round trip / iteration number
//! offset 16 ...     body      a pattern derived from (sequence, tag), or program data
//! ```
//!
//! The pattern lets a receiver check every byte it got (the correctness count of each program).
//! Connection setup uses [`write_control`] / [`read_control`]: a u32 LE length and a JSON document.

use serde::{de::DeserializeOwned, Serialize};
use std::io::{Read, Write};
use thiserror::Error;

/// Bytes of the data-message header.
pub const HEADER_BYTES: usize = 16;
/// Largest control frame accepted (a peer table for thousands of ranks fits easily).
pub const MAX_CONTROL_BYTES: usize = 1 << 20;

/// What a data message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Data,
    Stop,
}

/// A data message's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub tag: u32,
    pub sequence: u64,
}

/// A data message that is not what the protocol expects.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("message of {len} bytes is shorter than the {HEADER_BYTES}-byte header")]
    Short { len: usize },
    #[error("message kind {0} is neither data (1) nor stop (2)")]
    UnknownKind(u32),
    #[error("byte {offset} of message {sequence} is {got:#04x}, expected {expected:#04x}")]
    Corrupt {
        sequence: u64,
        offset: usize,
        expected: u8,
        got: u8,
    },
}

impl Header {
    pub fn data(tag: u32, sequence: u64) -> Header {
        Header {
            kind: Kind::Data,
            tag,
            sequence,
        }
    }

    pub fn stop() -> Header {
        Header {
            kind: Kind::Stop,
            tag: 0,
            sequence: 0,
        }
    }

    /// Write the header into the first [`HEADER_BYTES`] of `buf`.
    pub fn write(&self, buf: &mut [u8]) {
        let kind: u32 = match self.kind {
            Kind::Data => 1,
            Kind::Stop => 2,
        };
        buf[0..4].copy_from_slice(&kind.to_le_bytes());
        buf[4..8].copy_from_slice(&self.tag.to_le_bytes());
        buf[8..16].copy_from_slice(&self.sequence.to_le_bytes());
    }

    /// Read the header at the start of `buf`.
    pub fn read(buf: &[u8]) -> Result<Header, FrameError> {
        if buf.len() < HEADER_BYTES {
            return Err(FrameError::Short { len: buf.len() });
        }
        let word = |at: usize| u32::from_le_bytes(buf[at..at + 4].try_into().unwrap());
        let kind = match word(0) {
            1 => Kind::Data,
            2 => Kind::Stop,
            other => return Err(FrameError::UnknownKind(other)),
        };
        Ok(Header {
            kind,
            tag: word(4),
            sequence: u64::from_le_bytes(buf[8..16].try_into().unwrap()),
        })
    }
}

/// The pattern byte at `offset` of a message with this sequence number and tag.
#[inline]
fn pattern_byte(sequence: u64, tag: u32, offset: usize) -> u8 {
    let mixed = (sequence ^ ((tag as u64) << 48)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> (8 * (offset % 8))) as u8 ^ offset as u8
}

/// A whole data message: `header` then the pattern for its (sequence, tag).
pub fn fill(buf: &mut [u8], header: Header) {
    header.write(buf);
    for (offset, byte) in buf.iter_mut().enumerate().skip(HEADER_BYTES) {
        *byte = pattern_byte(header.sequence, header.tag, offset);
    }
}

/// Check that the body of `buf` is the pattern of its header; returns the header.
pub fn check(buf: &[u8]) -> Result<Header, FrameError> {
    check_from(buf, HEADER_BYTES)
}

/// Check the header and the pattern from byte `from` on (the bytes before it carry program data).
pub fn check_from(buf: &[u8], from: usize) -> Result<Header, FrameError> {
    let header = Header::read(buf)?;
    for (offset, &got) in buf.iter().enumerate().skip(from.max(HEADER_BYTES)) {
        let expected = pattern_byte(header.sequence, header.tag, offset);
        if got != expected {
            return Err(FrameError::Corrupt {
                sequence: header.sequence,
                offset,
                expected,
                got,
            });
        }
    }
    Ok(header)
}

/// Write a control frame: u32 LE length, then `value` as JSON.
pub fn write_control<T: Serialize>(stream: &mut impl Write, value: &T) -> std::io::Result<()> {
    let body = serde_json::to_vec(value)?;
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&(body.len() as u32).to_le_bytes());
    frame.extend_from_slice(&body);
    stream.write_all(&frame)
}

/// Read a control frame written by [`write_control`].
pub fn read_control<T: DeserializeOwned>(stream: &mut impl Read) -> std::io::Result<T> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_CONTROL_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("control frame of {len} bytes (most {MAX_CONTROL_BYTES}): the peer is not a cosched benchmark rank"),
        ));
    }
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body)?;
    serde_json::from_slice(&body)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filled_message_checks_and_a_flipped_byte_is_found() {
        let mut buf = [0u8; 128];
        fill(&mut buf, Header::data(7, 42));
        assert_eq!(check(&buf), Ok(Header::data(7, 42)));
        buf[100] ^= 1;
        match check(&buf) {
            Err(FrameError::Corrupt {
                sequence: 42,
                offset: 100,
                ..
            }) => {}
            other => panic!("expected corruption at byte 100, got {other:?}"),
        }
    }

    #[test]
    fn different_sequences_give_different_bodies() {
        let (mut a, mut b) = ([0u8; 64], [0u8; 64]);
        fill(&mut a, Header::data(0, 1));
        fill(&mut b, Header::data(0, 2));
        assert_ne!(a[HEADER_BYTES..], b[HEADER_BYTES..]);
    }

    #[test]
    fn unknown_kinds_and_short_messages_are_errors() {
        assert_eq!(Header::read(&[0u8; 8]), Err(FrameError::Short { len: 8 }));
        assert_eq!(
            Header::read(&[9u8; 16]),
            Err(FrameError::UnknownKind(0x0909_0909))
        );
    }

    #[test]
    fn control_frames_round_trip() {
        let mut wire = Vec::new();
        write_control(&mut wire, &vec![1u32, 2, 3]).unwrap();
        let back: Vec<u32> = read_control(&mut wire.as_slice()).unwrap();
        assert_eq!(back, vec![1, 2, 3]);
    }
}
