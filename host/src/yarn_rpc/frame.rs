//! Hadoop IPC's framing (version 9): the 7-byte connection preamble, then
//! frames of a 4-byte big-endian length followed by varint-delimited
//! protobufs, read within bounds (a frame's length, the bytes all
//! connections may hold at once, how long a frame may take to arrive).

use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use prost::Message;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The preamble's first four bytes.
pub const MAGIC: &[u8; 4] = b"hrpc";
/// The IPC version Hadoop 2.x and 3.x clients speak.
pub const VERSION: u8 = 9;
/// The preamble's auth byte for no authentication.
const AUTH_NONE: u8 = 0;
/// The preamble's auth byte for SASL (−33 as a signed byte).
const AUTH_SASL: u8 = 0xDF;

/// How a client means to authenticate, from its preamble.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthProtocol {
    /// No authentication: the connection context names the user.
    None,
    /// SASL: a negotiation (call id −33) comes first.
    Sasl,
}

/// Why a preamble was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PreambleError {
    /// Not `hrpc`: not a Hadoop client (or an HTTP request on the RPC port).
    #[error("not a Hadoop RPC connection (the first bytes are not \"hrpc\")")]
    NotHadoop,
    /// `hrpc` with another version.
    #[error("IPC version {0} is not served here: this server speaks version {VERSION}")]
    Version(u8),
    /// An auth byte other than NONE (0) and SASL (−33).
    #[error("auth protocol {0} is not known (0 is none, -33 is SASL)")]
    Auth(u8),
}

/// Reads the preamble: `hrpc`, the version, the service class (ignored)
/// and the auth protocol.
pub fn parse_preamble(bytes: &[u8; 7]) -> Result<AuthProtocol, PreambleError> {
    if &bytes[..4] != MAGIC {
        return Err(PreambleError::NotHadoop);
    }
    if bytes[4] != VERSION {
        return Err(PreambleError::Version(bytes[4]));
    }
    match bytes[6] {
        AUTH_NONE => Ok(AuthProtocol::None),
        AUTH_SASL => Ok(AuthProtocol::Sasl),
        other => Err(PreambleError::Auth(other)),
    }
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the connection between frames.
    #[error("the connection was closed")]
    Closed,
    /// A length prefix of zero, negative or above the limit.
    #[error("a frame of {length} bytes is refused: the limit is {limit} bytes")]
    TooLong {
        /// The length prefix, as the peer sent it (signed, as Java writes it).
        length: i64,
        /// The most a frame may hold.
        limit: usize,
    },
    /// All connections together hold as much unread request data as the
    /// server allows.
    #[error("the server is holding {limit} bytes of requests already; try again")]
    Busy {
        /// The bytes all connections may hold at once.
        limit: usize,
    },
    /// The frame's bytes did not arrive in time.
    #[error("a frame did not arrive within {0:?}")]
    Slow(Duration),
    /// Reading the socket failed.
    #[error("reading the connection failed: {0}")]
    Io(#[from] std::io::Error),
}

/// The request bytes all connections of a server may hold at once, so many
/// connections each sending a large frame cannot take unbounded memory.
#[derive(Debug, Clone)]
pub struct FrameBudget {
    bytes: Arc<Semaphore>,
    limit: usize,
}

impl FrameBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> FrameBudget {
        FrameBudget {
            bytes: Arc::new(Semaphore::new(limit)),
            limit,
        }
    }

    /// Takes `bytes` of the budget until the permit is dropped, waiting
    /// until `deadline` for them to be free (others' frames finish).
    async fn take(
        &self,
        bytes: usize,
        deadline: tokio::time::Instant,
    ) -> Result<OwnedSemaphorePermit, FrameError> {
        let busy = FrameError::Busy { limit: self.limit };
        let permits = u32::try_from(bytes).map_err(|_| FrameError::Busy { limit: self.limit })?;
        match tokio::time::timeout_at(deadline, self.bytes.clone().acquire_many_owned(permits))
            .await
        {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(busy),
        }
    }
}

/// One frame's bytes, holding their share of the budget until dropped.
#[derive(Debug)]
pub struct Frame {
    rest: Bytes,
    budget: OwnedSemaphorePermit,
}

impl Frame {
    /// The frame's share of the budget, to hold while its bytes are in use
    /// (a call's body, sliced from the frame, keeps all of them alive).
    pub fn into_budget(self) -> OwnedSemaphorePermit {
        self.budget
    }

    /// The next varint-delimited message, decoded as `M`.
    pub fn message<M: Message + Default>(&mut self) -> Result<M, prost::DecodeError> {
        M::decode_length_delimited(&mut self.rest)
    }

    /// The next varint-delimited message's bytes, undecoded (a call's
    /// request, decoded by the protocol that serves it).
    pub fn raw(&mut self) -> Result<Bytes, String> {
        let length = prost::encoding::decode_varint(&mut self.rest).map_err(|e| e.to_string())?;
        usize::try_from(length)
            .ok()
            .filter(|length| *length <= self.rest.remaining())
            .map(|length| self.rest.split_to(length))
            .ok_or_else(|| {
                format!(
                    "a delimited message of {length} bytes runs past the end of its frame ({} bytes left)",
                    self.rest.remaining()
                )
            })
    }
}

/// How much of a frame's body is read (and taken from the budget) at once:
/// the budget holds bytes that arrived, not lengths that were announced.
const CHUNK: usize = 64 << 10;

/// Reads one frame: its length (waiting up to `idle` for it to start),
/// then its body, all of it within `slow`. A length above `max` is refused
/// at once; the body is taken from the budget as it arrives, waiting (up
/// to the same deadline) while other frames hold it.
pub async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    max: usize,
    budget: &FrameBudget,
    idle: Duration,
    slow: Duration,
) -> Result<Frame, FrameError> {
    let mut prefix = [0u8; 4];
    match tokio::time::timeout(idle, reader.read_exact(&mut prefix)).await {
        Err(_) => return Err(FrameError::Slow(idle)),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            return Err(FrameError::Closed);
        }
        Ok(read) => read?,
    };
    let length = i32::from_be_bytes(prefix);
    let length = usize::try_from(length)
        .ok()
        .filter(|length| (1..=max).contains(length))
        .ok_or(FrameError::TooLong {
            length: i64::from(length),
            limit: max,
        })?;
    let deadline = tokio::time::Instant::now() + slow;
    let mut body = Vec::new();
    let mut held: Option<OwnedSemaphorePermit> = None;
    while body.len() < length {
        let chunk = CHUNK.min(length - body.len());
        let permit = budget.take(chunk, deadline).await?;
        match held.as_mut() {
            Some(held) => held.merge(permit),
            None => held = Some(permit),
        }
        let start = body.len();
        body.resize(start + chunk, 0);
        match tokio::time::timeout_at(deadline, reader.read_exact(&mut body[start..])).await {
            Err(_) => return Err(FrameError::Slow(slow)),
            Ok(read) => read?,
        };
    }
    let budget = held.ok_or(FrameError::TooLong {
        length: 0,
        limit: max,
    })?;
    Ok(Frame {
        rest: Bytes::from(body),
        budget,
    })
}

/// A frame to send: each message varint-delimited, after the 4-byte
/// length of them all.
pub fn encode_frame(messages: &[&dyn EncodeDelimited]) -> Vec<u8> {
    let length: usize = messages.iter().map(|m| m.delimited_len()).sum();
    let mut out = Vec::with_capacity(4 + length);
    // A frame is far below 2 GiB: every message in it is bounded.
    out.extend_from_slice(&u32::try_from(length).unwrap_or(u32::MAX).to_be_bytes());
    for message in messages {
        message.write_delimited(&mut out);
    }
    out
}

/// A message that can be written varint-delimited into a frame (object
/// safe, unlike `prost::Message`'s generic methods).
pub trait EncodeDelimited {
    /// Its length with the varint prefix.
    fn delimited_len(&self) -> usize;
    /// Appends it, varint-delimited, to `out`.
    fn write_delimited(&self, out: &mut Vec<u8>);
}

impl<M: Message> EncodeDelimited for M {
    fn delimited_len(&self) -> usize {
        let length = self.encoded_len();
        prost::encoding::length_delimiter_len(length) + length
    }

    fn write_delimited(&self, out: &mut Vec<u8>) {
        // Writing into a Vec cannot run out of room.
        let _ = self.encode_length_delimited(out);
    }
}

/// Already-encoded message bytes, written delimited like a message.
#[derive(Debug)]
pub struct Encoded(pub Vec<u8>);

impl EncodeDelimited for Encoded {
    fn delimited_len(&self) -> usize {
        prost::encoding::length_delimiter_len(self.0.len()) + self.0.len()
    }

    fn write_delimited(&self, out: &mut Vec<u8>) {
        prost::encoding::encode_varint(self.0.len() as u64, out);
        out.extend_from_slice(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn preambles_are_read_and_refused_by_their_bytes() {
        assert_eq!(parse_preamble(b"hrpc\x09\x00\x00"), Ok(AuthProtocol::None));
        assert_eq!(parse_preamble(b"hrpc\x09\x00\xdf"), Ok(AuthProtocol::Sasl));
        assert_eq!(parse_preamble(b"GET / H"), Err(PreambleError::NotHadoop));
        assert_eq!(
            parse_preamble(b"hrpc\x07\x00\x00"),
            Err(PreambleError::Version(7))
        );
        assert_eq!(
            parse_preamble(b"hrpc\x09\x00\x51"),
            Err(PreambleError::Auth(0x51))
        );
    }

    async fn read(bytes: &[u8], max: usize, budget: &FrameBudget) -> Result<Frame, FrameError> {
        let mut reader = bytes;
        read_frame(&mut reader, max, budget, SECOND, SECOND).await
    }

    #[tokio::test]
    async fn a_frame_round_trips_its_delimited_messages() {
        let budget = FrameBudget::new(1024);
        let first = Encoded(b"abc".to_vec());
        let second = Encoded(Vec::new());
        let bytes = encode_frame(&[&first, &second]);
        assert_eq!(bytes, [0, 0, 0, 5, 3, b'a', b'b', b'c', 0]);
        let mut frame = read(&bytes, 64, &budget).await.unwrap();
        assert_eq!(&frame.raw().unwrap()[..], b"abc");
        assert_eq!(&frame.raw().unwrap()[..], b"");
        assert!(frame.raw().is_err(), "nothing is left");
    }

    #[tokio::test]
    async fn lengths_out_of_bounds_are_refused_before_any_body_is_read() {
        let budget = FrameBudget::new(1024);
        // 2 GiB, as a hostile client's prefix.
        let huge = [0x7f, 0xff, 0xff, 0xff];
        let err = read(&huge, 64, &budget).await.unwrap_err();
        assert!(matches!(
            err,
            FrameError::TooLong {
                length: 2147483647,
                limit: 64
            }
        ));
        let negative = [0xff, 0xff, 0xff, 0xfe];
        let err = read(&negative, 64, &budget).await.unwrap_err();
        assert!(matches!(err, FrameError::TooLong { length: -2, .. }));
        let empty = [0, 0, 0, 0];
        assert!(matches!(
            read(&empty, 64, &budget).await.unwrap_err(),
            FrameError::TooLong { length: 0, .. }
        ));
    }

    #[tokio::test]
    async fn the_budget_is_shared_and_given_back() {
        let budget = FrameBudget::new(10);
        let bytes = [0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8];
        let held = read(&bytes, 64, &budget).await.unwrap();
        assert!(matches!(
            read(&bytes, 64, &budget).await.unwrap_err(),
            FrameError::Busy { limit: 10 }
        ));
        drop(held);
        assert!(read(&bytes, 64, &budget).await.is_ok());
    }

    #[tokio::test]
    async fn an_announced_length_takes_nothing_of_the_budget_until_bytes_arrive() {
        let budget = FrameBudget::new(1 << 20);
        // 8 MiB announced, nothing sent: the read times out; meanwhile at
        // most the first chunk is taken.
        let (mut client, mut server) = tokio::io::duplex(64);
        use tokio::io::AsyncWriteExt;
        client.write_all(&(8u32 << 20).to_be_bytes()).await.unwrap();
        let reader_budget = budget.clone();
        let reading = tokio::spawn(async move {
            read_frame(
                &mut server,
                16 << 20,
                &reader_budget,
                SECOND,
                Duration::from_millis(300),
            )
            .await
            .map(|_| ())
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(budget.bytes.available_permits() >= (1 << 20) - CHUNK);
        assert!(matches!(
            reading.await.unwrap().unwrap_err(),
            FrameError::Slow(_)
        ));
        assert_eq!(budget.bytes.available_permits(), 1 << 20, "given back");
    }

    #[tokio::test]
    async fn a_delimited_length_past_the_frame_is_an_error_not_a_panic() {
        let budget = FrameBudget::new(64);
        let bytes = [0, 0, 0, 2, 9, 1];
        let mut frame = read(&bytes, 64, &budget).await.unwrap();
        assert!(frame.raw().is_err());
    }

    #[tokio::test]
    async fn a_short_body_and_a_closed_stream_are_told_apart() {
        let budget = FrameBudget::new(64);
        assert!(matches!(
            read(&[], 64, &budget).await.unwrap_err(),
            FrameError::Closed
        ));
        assert!(matches!(
            read(&[0, 0, 0, 9, 1], 64, &budget).await.unwrap_err(),
            FrameError::Io(_)
        ));
    }
}
