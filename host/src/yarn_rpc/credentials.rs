//! Hadoop's token storage file (`org.apache.hadoop.security.Credentials`):
//! what a container launch context's `tokens` hold and what a container
//! reads from `HADOOP_TOKEN_FILE_LOCATION`. "HDTS", a version byte, then
//! the tokens and secret keys: version 0 in Writable form (what Java
//! writes by default, and what this module writes), version 1 as one
//! varint-delimited `CredentialsProto`. Reading is bounded: the input's
//! size, the counts, and every length against the bytes that remain.

use prost::Message;

use super::messages::ipc::TokenProto;

/// The longest file decoded.
pub const MAX_BYTES: usize = 1 << 20;
/// The most tokens, and the most secrets, in one file.
pub const MAX_ENTRIES: usize = 10_000;

/// The file's first bytes (`Credentials.TOKEN_STORAGE_MAGIC`).
const MAGIC: &[u8; 4] = b"HDTS";
/// `SerializedFormat.WRITABLE`: Writable form.
const WRITABLE: u8 = 0;
/// `SerializedFormat.PROTOBUF`: a delimited `CredentialsProto`.
const PROTOBUF: u8 = 1;

/// One token, under the alias the file keys it by.
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    /// The key in the file (often the token's service).
    pub alias: String,
    /// The serialized token identifier.
    pub identifier: Vec<u8>,
    /// The identifier's MAC under the issuer's secret.
    pub password: Vec<u8>,
    /// The token kind, e.g. `YARN_AM_RM_TOKEN`.
    pub kind: String,
    /// The address the token is for, `host:port`.
    pub service: String,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("alias", &self.alias)
            .field("identifier", &self.identifier.len())
            .field("password", &"<redacted>")
            .field("kind", &self.kind)
            .field("service", &self.service)
            .finish()
    }
}

impl Token {
    /// Hadoop's `Token.encodeToUrlString`: the token in Writable form
    /// (identifier, password, kind, service), in URL-safe base64 — what
    /// YARN's REST answers a delegation token request with.
    pub fn to_url_string(&self) -> String {
        use base64::Engine as _;
        let mut out = Vec::new();
        write_bytes(&mut out, &self.identifier);
        write_bytes(&mut out, &self.password);
        write_bytes(&mut out, self.kind.as_bytes());
        write_bytes(&mut out, self.service.as_bytes());
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(out)
    }

    /// A token from its URL string (`Token.decodeFromUrlString`), stored
    /// under `alias`; bounded as a token storage file is.
    pub fn from_url_string(text: &str, alias: String) -> Result<Token, String> {
        use base64::Engine as _;
        let text = text.trim().trim_end_matches('=');
        if text.len() > MAX_BYTES {
            return Err(format!(
                "the token is {} characters, more than {MAX_BYTES}",
                text.len()
            ));
        }
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|e| format!("the token is not URL-safe base64: {e}"))?;
        let mut reader = Reader {
            bytes: &bytes,
            at: 0,
        };
        let token = Token {
            alias,
            identifier: reader.bytes("the token's identifier")?.to_vec(),
            password: reader.bytes("the token's password")?.to_vec(),
            kind: reader.text("the token's kind")?,
            service: reader.text("the token's service")?,
        };
        match reader.remaining() {
            0 => Ok(token),
            n => Err(format!("{n} bytes follow the token")),
        }
    }
}

/// A token storage file's contents.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    /// The tokens, one per alias.
    pub tokens: Vec<Token>,
    /// The secret keys by alias, one per alias.
    pub secrets: Vec<(String, Vec<u8>)>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secrets: Vec<&str> = self.secrets.iter().map(|(a, _)| a.as_str()).collect();
        f.debug_struct("Credentials")
            .field("tokens", &self.tokens)
            .field("secrets", &secrets)
            .finish()
    }
}

impl Credentials {
    /// Reads a token storage file. Empty input is empty credentials. As
    /// Java's map, a later entry of an alias replaces an earlier one.
    pub fn decode(bytes: &[u8]) -> Result<Credentials, String> {
        if bytes.is_empty() {
            return Ok(Credentials::default());
        }
        if bytes.len() > MAX_BYTES {
            return Err(format!(
                "the token storage is {} bytes, more than {MAX_BYTES}",
                bytes.len()
            ));
        }
        if bytes.get(..MAGIC.len()) != Some(MAGIC) {
            return Err("Bad header found in token storage (it does not start with HDTS)".into());
        }
        let body = &bytes[MAGIC.len()..];
        match body.split_first() {
            None => Err("the token storage ends after its header".into()),
            Some((&WRITABLE, rest)) => decode_writable(rest),
            Some((&PROTOBUF, rest)) => decode_protobuf(rest),
            Some((version, _)) => Err(format!(
                "token storage format {version} is not known (0 is Writable, 1 protobuf)"
            )),
        }
    }

    /// Writes the file in Writable form (version 0), tokens then secrets
    /// in their order here.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.push(WRITABLE);
        write_vint(&mut out, self.tokens.len());
        for token in &self.tokens {
            write_bytes(&mut out, token.alias.as_bytes());
            write_bytes(&mut out, &token.identifier);
            write_bytes(&mut out, &token.password);
            write_bytes(&mut out, token.kind.as_bytes());
            write_bytes(&mut out, token.service.as_bytes());
        }
        write_vint(&mut out, self.secrets.len());
        for (alias, secret) in &self.secrets {
            write_bytes(&mut out, alias.as_bytes());
            write_bytes(&mut out, secret);
        }
        out
    }

    /// Adds a token; it replaces one of the same alias, in its place.
    pub fn add_token(&mut self, token: Token) {
        match self.tokens.iter_mut().find(|t| t.alias == token.alias) {
            Some(existing) => *existing = token,
            None => self.tokens.push(token),
        }
    }

    /// Adds a secret key; it replaces one of the same alias, in its place.
    fn add_secret(&mut self, alias: String, secret: Vec<u8>) {
        match self.secrets.iter_mut().find(|(a, _)| *a == alias) {
            Some(existing) => existing.1 = secret,
            None => self.secrets.push((alias, secret)),
        }
    }
}

/// Version 0: `Credentials.readFields`.
fn decode_writable(bytes: &[u8]) -> Result<Credentials, String> {
    let mut reader = Reader { bytes, at: 0 };
    let mut credentials = Credentials::default();
    let tokens = reader.count("tokens")?;
    for _ in 0..tokens {
        let alias = reader.text("a token's alias")?;
        // `Token.readFields`.
        let identifier = reader.bytes("a token's identifier")?.to_vec();
        let password = reader.bytes("a token's password")?.to_vec();
        let kind = reader.text("a token's kind")?;
        let service = reader.text("a token's service")?;
        credentials.add_token(Token {
            alias,
            identifier,
            password,
            kind,
            service,
        });
    }
    let secrets = reader.count("secret keys")?;
    for _ in 0..secrets {
        let alias = reader.text("a secret key's alias")?;
        let secret = reader.bytes("a secret key")?.to_vec();
        credentials.add_secret(alias, secret);
    }
    match reader.remaining() {
        0 => Ok(credentials),
        n => Err(format!(
            "{n} bytes follow the credentials in the token storage"
        )),
    }
}

/// Reads the Writable form: Hadoop's vints (`WritableUtils`), byte
/// strings and `Text` (a vint length, then the bytes).
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        if n > self.remaining() {
            return Err(format!(
                "the token storage ends inside {what}: {n} bytes claimed, {} left",
                self.remaining()
            ));
        }
        let taken = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(taken)
    }

    /// `WritableUtils.readVLong`: one byte for −112..=127; otherwise a
    /// first byte telling the sign and how many big-endian bytes follow
    /// (−113..=−120: 1..=8 bytes, positive; −121..=−128: 1..=8 bytes, the
    /// one's complement of a negative number).
    fn vlong(&mut self, what: &str) -> Result<i64, String> {
        let first = self.take(1, what)?[0] as i8;
        if first >= -112 {
            return Ok(i64::from(first));
        }
        let (negative, length) = if first < -120 {
            (true, -(i32::from(first) + 120))
        } else {
            (false, -(i32::from(first) + 112))
        };
        let mut value: u64 = 0;
        for &byte in self.take(length as usize, what)? {
            value = (value << 8) | u64::from(byte);
        }
        let value = value as i64;
        Ok(if negative { value ^ -1 } else { value })
    }

    /// `WritableUtils.readVInt`: a vlong that fits 32 bits.
    fn vint(&mut self, what: &str) -> Result<i32, String> {
        let value = self.vlong(what)?;
        i32::try_from(value).map_err(|_| format!("{what}: {value} does not fit an int"))
    }

    /// A count of entries, at most [`MAX_ENTRIES`].
    fn count(&mut self, what: &str) -> Result<usize, String> {
        let count = self.vint(what)?;
        match usize::try_from(count) {
            Ok(count) if count <= MAX_ENTRIES => Ok(count),
            Ok(_) => Err(format!("{count} {what}: more than {MAX_ENTRIES}")),
            Err(_) => Err(format!("a count of {what} is negative ({count})")),
        }
    }

    /// A vint length, then that many bytes: checked before anything is
    /// taken or allocated.
    fn bytes(&mut self, what: &str) -> Result<&'a [u8], String> {
        let length = self.vint(what)?;
        let length = usize::try_from(length)
            .map_err(|_| format!("the length of {what} is negative ({length})"))?;
        self.take(length, what)
    }

    /// `Text`: a vint length, then UTF-8.
    fn text(&mut self, what: &str) -> Result<String, String> {
        let bytes = self.bytes(what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| format!("{what} is not UTF-8"))
    }
}

/// `WritableUtils.writeVInt`, of a length or count.
fn write_vint(out: &mut Vec<u8>, value: usize) {
    write_vlong(out, i64::try_from(value).unwrap_or(i64::MAX));
}

/// `WritableUtils.writeVLong`.
fn write_vlong(out: &mut Vec<u8>, value: i64) {
    if (-112..=127).contains(&value) {
        out.push(value as u8);
        return;
    }
    let (magnitude, base) = if value < 0 {
        (value ^ -1, -120i64)
    } else {
        (value, -112i64)
    };
    let length = 8 - (magnitude.leading_zeros() as usize) / 8;
    out.push((base - length as i64) as u8);
    out.extend_from_slice(&magnitude.to_be_bytes()[8 - length..]);
}

/// A vint length, then the bytes (`Text.write`, and a token's byte
/// fields).
fn write_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    write_vint(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// Security.proto `CredentialsKVProto`: one token or secret by alias.
#[derive(Clone, PartialEq, prost::Message)]
struct CredentialsKVProto {
    /// alias: the key.
    #[prost(string, required, tag = "1")]
    alias: String,
    /// token: set in `CredentialsProto.tokens`.
    #[prost(message, optional, tag = "2")]
    token: Option<TokenProto>,
    /// secret: set in `CredentialsProto.secrets`.
    #[prost(bytes = "vec", optional, tag = "3")]
    secret: Option<Vec<u8>>,
}

/// Security.proto `CredentialsProto`: the protobuf form's body.
#[derive(Clone, PartialEq, prost::Message)]
struct CredentialsProto {
    /// tokens: by alias.
    #[prost(message, repeated, tag = "1")]
    tokens: Vec<CredentialsKVProto>,
    /// secrets: by alias.
    #[prost(message, repeated, tag = "2")]
    secrets: Vec<CredentialsKVProto>,
}

/// Version 1: `Credentials.readProto`, one varint-delimited
/// `CredentialsProto` (and here nothing after it).
fn decode_protobuf(bytes: &[u8]) -> Result<Credentials, String> {
    let mut rest = bytes;
    let length = prost::encoding::decode_varint(&mut rest)
        .map_err(|e| format!("the token storage's length is malformed: {e}"))?;
    if length != rest.len() as u64 {
        return Err(format!(
            "the token storage claims {length} bytes of credentials, and {} follow",
            rest.len()
        ));
    }
    count_entries(rest)?;
    let proto = CredentialsProto::decode(rest)
        .map_err(|e| format!("the token storage cannot be decoded: {e}"))?;
    let mut credentials = Credentials::default();
    for entry in proto.tokens {
        // As Java: an entry without a token is an empty token.
        let token = entry.token.unwrap_or_default();
        credentials.add_token(Token {
            alias: entry.alias,
            identifier: token.identifier,
            password: token.password,
            kind: token.kind,
            service: token.service,
        });
    }
    for entry in proto.secrets {
        credentials.add_secret(entry.alias, entry.secret.unwrap_or_default());
    }
    Ok(credentials)
}

/// Counts the top-level entries of an encoded `CredentialsProto` before
/// it is decoded, so a small input cannot ask for many entries.
fn count_entries(mut body: &[u8]) -> Result<(), String> {
    let malformed = |e: prost::DecodeError| format!("the token storage is malformed: {e}");
    let (mut tokens, mut secrets) = (0usize, 0usize);
    while !body.is_empty() {
        let key = prost::encoding::decode_varint(&mut body).map_err(malformed)?;
        let skip = match key & 7 {
            0 => {
                prost::encoding::decode_varint(&mut body).map_err(malformed)?;
                0
            }
            1 => 8,
            2 => prost::encoding::decode_varint(&mut body).map_err(malformed)?,
            5 => 4,
            wire => return Err(format!("the token storage has wire type {wire}")),
        };
        if skip > body.len() as u64 {
            return Err("the token storage ends inside an entry".into());
        }
        body = &body[skip as usize..];
        match key >> 3 {
            1 => tokens += 1,
            2 => secrets += 1,
            _ => {}
        }
        if tokens > MAX_ENTRIES || secrets > MAX_ENTRIES {
            return Err(format!(
                "the token storage has more than {MAX_ENTRIES} tokens or secrets"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vint(value: i64) -> Vec<u8> {
        let mut out = Vec::new();
        write_vlong(&mut out, value);
        out
    }

    fn read(bytes: &[u8]) -> Result<(i64, usize), String> {
        let mut reader = Reader { bytes, at: 0 };
        let value = reader.vlong("a test value")?;
        Ok((value, reader.at))
    }

    #[test]
    fn vints_are_hadoops_encoding() {
        // WritableUtils.writeVLong: −112..=127 in one byte; otherwise
        // −113 − n (positive) or −121 − n (negative, one's complement)
        // and n big-endian bytes.
        let cases: &[(i64, &[u8])] = &[
            (0, &[0x00]),
            (1, &[0x01]),
            (127, &[0x7f]),
            (-1, &[0xff]),
            (-112, &[0x90]),
            (128, &[0x8f, 0x80]),
            (255, &[0x8f, 0xff]),
            (256, &[0x8e, 0x01, 0x00]),
            (300, &[0x8e, 0x01, 0x2c]),
            (-113, &[0x87, 0x70]),
            (-256, &[0x87, 0xff]),
            (-257, &[0x86, 0x01, 0x00]),
            (i64::from(i32::MAX), &[0x8c, 0x7f, 0xff, 0xff, 0xff]),
            (i64::from(i32::MIN), &[0x84, 0x7f, 0xff, 0xff, 0xff]),
            (
                i64::MAX,
                &[0x88, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            ),
            (
                i64::MIN,
                &[0x80, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            ),
        ];
        for &(value, bytes) in cases {
            assert_eq!(vint(value), bytes, "{value}");
            assert_eq!(read(bytes), Ok((value, bytes.len())), "{value}");
        }
        for value in -70_000..70_000 {
            let bytes = vint(value);
            assert_eq!(read(&bytes), Ok((value, bytes.len())));
        }
        // Truncated.
        assert!(read(&[0x8e, 0x01]).is_err());
        assert!(read(&[]).is_err());
        // A vint must fit 32 bits.
        let mut reader = Reader {
            bytes: &vint(1 << 31),
            at: 0,
        };
        assert!(reader.vint("a test value").is_err());
    }

    /// Bytes written by hand as Java's `Credentials.writeTokenStorageToStream`
    /// (Writable) lays them out.
    fn java_bytes() -> Vec<u8> {
        let mut bytes = b"HDTS\x00".to_vec();
        bytes.push(0x02); // two tokens
        // Token 1: alias Text "rm:8030", identifier 3 bytes, password 2
        // bytes, kind Text, service Text.
        bytes.extend(b"\x07rm:8030");
        bytes.extend(b"\x03\x0a\x00\xff");
        bytes.extend(b"\x02\x01\x02");
        bytes.extend(b"\x10YARN_AM_RM_TOKEN");
        bytes.extend(b"\x07rm:8030");
        // Token 2: a 200-byte identifier (vint 0x8f 0xc8), an empty
        // password, an empty service.
        bytes.extend(b"\x02nm");
        bytes.extend([0x8f, 0xc8]);
        bytes.extend([0x5a; 200]);
        bytes.extend(b"\x00");
        bytes.extend(b"\x07NMToken");
        bytes.extend(b"\x00");
        bytes.push(0x01); // one secret
        bytes.extend(b"\x06secret");
        bytes.extend(b"\x04\xde\xad\xbe\xef");
        bytes
    }

    fn java_credentials() -> Credentials {
        Credentials {
            tokens: vec![
                Token {
                    alias: "rm:8030".into(),
                    identifier: vec![0x0a, 0x00, 0xff],
                    password: vec![1, 2],
                    kind: "YARN_AM_RM_TOKEN".into(),
                    service: "rm:8030".into(),
                },
                Token {
                    alias: "nm".into(),
                    identifier: vec![0x5a; 200],
                    password: vec![],
                    kind: "NMToken".into(),
                    service: String::new(),
                },
            ],
            secrets: vec![("secret".into(), vec![0xde, 0xad, 0xbe, 0xef])],
        }
    }

    #[test]
    fn javas_writable_form_is_read_and_written() {
        let bytes = java_bytes();
        assert_eq!(Credentials::decode(&bytes), Ok(java_credentials()));
        assert_eq!(java_credentials().encode(), bytes);
    }

    #[test]
    fn empty_input_is_empty_credentials() {
        assert_eq!(Credentials::decode(b""), Ok(Credentials::default()));
        let empty = Credentials::default().encode();
        assert_eq!(empty, b"HDTS\x00\x00\x00");
        assert_eq!(Credentials::decode(&empty), Ok(Credentials::default()));
    }

    #[test]
    fn round_trips() {
        let mut credentials = java_credentials();
        for i in 0..300 {
            credentials.add_token(Token {
                alias: format!("alias-{i}"),
                identifier: vec![i as u8; i],
                password: vec![0xff; 20],
                kind: "ContainerToken".into(),
                service: format!("host-{i}:8041 ✓"),
            });
        }
        credentials.secrets.push(("big".into(), vec![7; 70_000]));
        let bytes = credentials.encode();
        assert_eq!(Credentials::decode(&bytes), Ok(credentials));
    }

    #[test]
    fn add_token_replaces_the_same_alias_in_place() {
        let mut credentials = java_credentials();
        let mut replacement = credentials.tokens[0].clone();
        replacement.password = vec![9, 9, 9];
        credentials.add_token(replacement.clone());
        assert_eq!(credentials.tokens.len(), 2);
        assert_eq!(credentials.tokens[0], replacement);
        let mut other = replacement;
        other.alias = "other".into();
        credentials.add_token(other.clone());
        assert_eq!(credentials.tokens.len(), 3);
        assert_eq!(credentials.tokens[2], other);
    }

    #[test]
    fn a_later_entry_of_an_alias_wins_as_in_javas_map() {
        let mut bytes = b"HDTS\x00\x02".to_vec();
        for password in [b"\x01\x01", b"\x01\x02"] {
            bytes.extend(b"\x01a\x01i");
            bytes.extend(password);
            bytes.extend(b"\x01k\x01s");
        }
        bytes.extend(b"\x02\x01s\x01x\x01s\x01y");
        let credentials = Credentials::decode(&bytes).unwrap();
        assert_eq!(credentials.tokens.len(), 1);
        assert_eq!(credentials.tokens[0].password, b"\x02");
        assert_eq!(credentials.secrets, vec![("s".to_string(), b"y".to_vec())]);
    }

    #[test]
    fn every_truncation_is_refused() {
        let bytes = java_bytes();
        for end in 1..bytes.len() {
            assert!(Credentials::decode(&bytes[..end]).is_err(), "{end}");
        }
    }

    #[test]
    fn malformed_files_are_refused() {
        let refused = |bytes: &[u8], says: &str| {
            let error = Credentials::decode(bytes).unwrap_err();
            assert!(error.contains(says), "{error}");
        };
        refused(b"HDTX\x00\x00\x00", "Bad header");
        refused(b"HDTS", "ends after its header");
        refused(b"HDTS\x02\x00\x00", "format 2 is not known");
        refused(b"HDTS\x00\x00\x00\x00", "1 bytes follow");
        // Negative counts and lengths.
        refused(b"HDTS\x00\xff\x00", "negative");
        refused(b"HDTS\x00\x00\x01\x01a\xff", "negative");
        // A count over the bound, with nothing behind it.
        let mut many = b"HDTS\x00".to_vec();
        many.extend(vint(10_001));
        refused(&many, "more than 10000");
        // A length larger than the input, claimed before any allocation.
        let mut huge = b"HDTS\x00\x01\x01a".to_vec();
        huge.extend(vint(i64::from(i32::MAX)));
        refused(&huge, "2147483647 bytes claimed");
        // A vint past 32 bits.
        let mut long = b"HDTS\x00".to_vec();
        long.extend(vint(1 << 40));
        refused(&long, "does not fit an int");
        // Text that is not UTF-8.
        refused(b"HDTS\x00\x00\x01\x02\xc3\x28\x00", "not UTF-8");
        // Too big as a whole.
        let mut big = b"HDTS\x00".to_vec();
        big.resize(MAX_BYTES + 1, 0);
        refused(&big, "more than 1048576");
    }

    #[test]
    fn the_protobuf_form_is_read() {
        let proto = CredentialsProto {
            tokens: vec![CredentialsKVProto {
                alias: "rm:8030".into(),
                token: Some(TokenProto {
                    identifier: vec![0x0a, 0x00, 0xff],
                    password: vec![1, 2],
                    kind: "YARN_AM_RM_TOKEN".into(),
                    service: "rm:8030".into(),
                }),
                secret: None,
            }],
            secrets: vec![CredentialsKVProto {
                alias: "secret".into(),
                token: None,
                secret: Some(vec![0xde, 0xad, 0xbe, 0xef]),
            }],
        };
        let mut bytes = b"HDTS\x01".to_vec();
        bytes.extend(proto.encode_length_delimited_to_vec());
        let credentials = Credentials::decode(&bytes).unwrap();
        assert_eq!(credentials.tokens, java_credentials().tokens[..1]);
        assert_eq!(credentials.secrets, java_credentials().secrets);

        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(Credentials::decode(&trailing).is_err());
        for end in 5..bytes.len() {
            assert!(Credentials::decode(&bytes[..end]).is_err(), "{end}");
        }
        // Many tiny entries are refused before they are decoded.
        let mut body = Vec::new();
        for _ in 0..=MAX_ENTRIES {
            body.extend([0x12, 0x00]);
        }
        let mut many = b"HDTS\x01".to_vec();
        prost::encoding::encode_varint(body.len() as u64, &mut many);
        many.extend(body);
        let error = Credentials::decode(&many).unwrap_err();
        assert!(error.contains("more than 10000"), "{error}");
    }

    #[test]
    fn debug_shows_no_passwords_or_secrets() {
        let shown = format!("{:?}", java_credentials());
        assert!(shown.contains("rm:8030"));
        assert!(
            !shown.contains("222") && !shown.contains("[1, 2]"),
            "{shown}"
        );
    }

    proptest::proptest! {
        #[test]
        fn any_input_is_decoded_or_refused_without_panic(
            version in 0u8..3,
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
        ) {
            let mut bytes = b"HDTS".to_vec();
            bytes.push(version);
            bytes.extend(body);
            let _ = Credentials::decode(&bytes);
        }

        #[test]
        fn anything_encoded_decodes_the_same(
            tokens in proptest::collection::vec(
                (".{0,8}", proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
                 proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
                 ".{0,8}", ".{0,8}"),
                0..6),
        ) {
            let mut credentials = Credentials::default();
            for (alias, identifier, password, kind, service) in tokens {
                credentials.add_token(Token { alias, identifier, password, kind, service });
            }
            let bytes = credentials.encode();
            proptest::prop_assert_eq!(Credentials::decode(&bytes), Ok(credentials));
        }
    }
}
