//! `weft token create USER` and `weft token revoke USER`: the tokens file of
//! token authentication (see `security::tokens`); `weft token yarn`: a
//! Hadoop credentials file with an RM delegation token, for YARN clients
//! in token mode (see `yarn_rpc::delegation`), which `weft token renew` and
//! `weft token cancel` renew and cancel.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};

use super::SettingsArgs;
use crate::client::ServerArgs;
use crate::security::TokensFile;
use crate::yarn_rpc::credentials::{Credentials, MAX_BYTES as CREDENTIALS_MAX_BYTES, Token};
use crate::yarn_rpc::delegation::TOKEN_HEADER;
use crate::yarn_rpc::messages::tokens::RM_DELEGATION_TOKEN_KIND;

#[derive(Debug, Subcommand)]
pub(super) enum TokenCommand {
    /// Make a new token for USER, print it once, and store only its hash.
    Create {
        user: String,
        #[command(flatten)]
        file: TokensFileArgs,
    },
    /// Remove every token of USER (a running server stops taking them within a second).
    Revoke {
        user: String,
        #[command(flatten)]
        file: TokensFileArgs,
    },
    /// Ask a running server (token mode) for an RM delegation token and write it
    /// as a Hadoop credentials file: HADOOP_TOKEN_FILE_LOCATION=FILE lets a YARN
    /// client (spark-submit) authenticate on the server's Hadoop RPC port.
    Yarn {
        /// The credentials file to write (made readable by its owner only).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// The server's YARN client address, as the client's
        /// yarn.resourcemanager.address names it (default: --server's host, port 8032).
        #[arg(long, value_name = "HOST:PORT")]
        rm_address: Option<String>,
        /// Who may renew it (`weft token renew`); none by default.
        #[arg(long, default_value = "")]
        renewer: String,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Renew the RM delegation token in a credentials file (`weft token yarn
    /// --out FILE`), as its renewer: it stands a day more, up to a week
    /// after it was issued.
    Renew {
        /// The credentials file.
        file: PathBuf,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Cancel the RM delegation token in a credentials file, as its owner or
    /// renewer: YARN clients holding it are refused from then on.
    Cancel {
        /// The credentials file.
        file: PathBuf,
        #[command(flatten)]
        server: ServerArgs,
    },
}

#[derive(Debug, Args)]
pub(super) struct TokensFileArgs {
    /// The tokens file (default: weft.security.tokens-file, else weft-data/tokens.toml,
    /// where `weft serve` with its default --data-dir looks).
    #[arg(long, value_name = "FILE")]
    tokens_file: Option<PathBuf>,
    #[command(flatten)]
    settings: SettingsArgs,
}

impl TokensFileArgs {
    fn path(&self) -> anyhow::Result<PathBuf> {
        if let Some(path) = &self.tokens_file {
            return Ok(path.clone());
        }
        let settings = self.settings.load()?;
        Ok(settings
            .security
            .tokens_file
            .unwrap_or_else(|| PathBuf::from("weft-data").join("tokens.toml")))
    }
}

pub(super) fn run(command: TokenCommand) -> anyhow::Result<()> {
    match command {
        TokenCommand::Create { user, file } => {
            let path = file.path()?;
            let token = TokensFile::update(&path, |tokens| tokens.create(&user))
                .map_err(anyhow::Error::msg)?;
            // The token on stdout, alone, for scripts; what it is on stderr.
            println!("{token}");
            eprintln!(
                "a token for {user}, stored as its hash in {}; it is shown only this once",
                path.display()
            );
        }
        TokenCommand::Revoke { user, file } => {
            let path = file.path()?;
            let removed = TokensFile::update(&path, |tokens| Ok(tokens.revoke(&user)))
                .map_err(anyhow::Error::msg)?;
            eprintln!("{removed} token(s) of {user} revoked in {}", path.display());
        }
        TokenCommand::Yarn {
            out,
            rm_address,
            renewer,
            server,
        } => yarn_credentials(&out, rm_address, &renewer, &server)?,
        TokenCommand::Renew { file, server } => {
            let token = delegation_token_in(&file)?;
            let answer = server.client()?.post_with_header(
                "/ws/v1/cluster/delegation-token/expiration",
                TOKEN_HEADER,
                &token.to_url_string(),
            )?;
            let until = answer["expiration-time"]
                .as_u64()
                .map_or_else(|| "?".to_string(), crate::clock::iso8601);
            eprintln!(
                "the RM delegation token in {} is valid until {until}",
                file.display()
            );
        }
        TokenCommand::Cancel { file, server } => {
            let token = delegation_token_in(&file)?;
            server.client()?.delete_with_header(
                "/ws/v1/cluster/delegation-token",
                TOKEN_HEADER,
                &token.to_url_string(),
            )?;
            eprintln!("the RM delegation token in {} is cancelled", file.display());
        }
    }
    Ok(())
}

/// The RM delegation token in the Hadoop credentials file `path`.
fn delegation_token_in(path: &std::path::Path) -> anyhow::Result<Token> {
    let bytes = super::read_bounded_bytes(path, CREDENTIALS_MAX_BYTES)?;
    let credentials = Credentials::decode(&bytes)
        .map_err(|e| anyhow::anyhow!("{} is not a Hadoop credentials file: {e}", path.display()))?;
    credentials
        .tokens
        .into_iter()
        .find(|t| t.kind == RM_DELEGATION_TOKEN_KIND)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{} holds no RM delegation token ({RM_DELEGATION_TOKEN_KIND}); `weft token yarn --out FILE` writes one",
                path.display()
            )
        })
}

/// `weft token yarn`: the token, its service every address the client may
/// resolve the RM address to (Hadoop's selector matches a service that
/// contains the one it looks for).
fn yarn_credentials(
    out: &std::path::Path,
    rm_address: Option<String>,
    renewer: &str,
    server: &ServerArgs,
) -> anyhow::Result<()> {
    use std::net::ToSocketAddrs;
    let rm_address = match rm_address {
        Some(address) => address,
        None => {
            let first = server.server.split(',').next().unwrap_or_default();
            let url: axum::http::Uri = first
                .trim()
                .parse()
                .map_err(|e| anyhow::anyhow!("--server {first:?} is not a URL: {e}"))?;
            let host = url
                .host()
                .ok_or_else(|| anyhow::anyhow!("--server {first:?} names no host"))?;
            format!("{host}:{}", crate::config::DEFAULT_CLIENT_RPC_PORT)
        }
    };
    let resolved: Vec<String> = rm_address
        .to_socket_addrs()
        .map_err(|e| anyhow::anyhow!("--rm-address {rm_address:?} does not resolve: {e}"))?
        .map(|address| address.to_string())
        .collect();
    let mut services = resolved;
    services.push(rm_address.clone());
    services.dedup();
    let answer = server.client()?.post_json(
        "/ws/v1/cluster/delegation-token",
        &serde_json::json!({ "renewer": renewer }),
    )?;
    let text = answer["token"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("the server's answer has no token: {answer}"))?;
    let mut token = Token::from_url_string(text, String::new()).map_err(anyhow::Error::msg)?;
    token.service = services.join(",");
    token.alias = token.service.clone();
    let mut credentials = Credentials::default();
    credentials.add_token(token);
    let mut file = crate::private_files::open(out)?;
    file.set_len(0)
        .and_then(|()| std::io::Write::write_all(&mut file, &credentials.encode()))
        .with_context(|| format!("cannot write {}", out.display()))?;
    let owner = answer["owner"].as_str().unwrap_or("?");
    let until = answer["expiration-time"]
        .as_u64()
        .map_or_else(|| "?".to_string(), crate::clock::iso8601);
    eprintln!(
        "an RM delegation token for {owner}, for {rm_address}, valid until {until} (unless renewed: weft token renew; or until it is cancelled, the server restarts or {owner}'s tokens are revoked), written to {}\nuse it: HADOOP_TOKEN_FILE_LOCATION={} spark-submit --master yarn …",
        out.display(),
        out.display()
    );
    Ok(())
}
