//! `weft token create USER` and `weft token revoke USER`: the tokens file of
//! token authentication (see `security::tokens`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::SettingsArgs;
use crate::security::TokensFile;

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
    }
    Ok(())
}
