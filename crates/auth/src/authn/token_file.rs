//! Static tokens (`--token-auth-file`): a CSV file of `token,user,uid[,"group1,group2"]`, read
//! once at start, parsed by upstream's rules: at least three columns, a record with an empty
//! token is skipped, a duplicate token replaces the earlier one, the fourth column is split on
//! commas. Tokens carry no audience of their own: they are good for the server's audiences
//! only (upstream's audience-agnostic wrapper).

use super::{audiences_for, TokenAuthenticated, TokenAuthenticator, TokenUser};
use async_trait::async_trait;
use kapi_machinery::UserInfo;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Why a token file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("reading token file {path:?}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("token file '{path}' must have at least 3 columns (token, user name, user uid), found {found}")]
    Columns { path: String, found: usize },
    #[error("token file '{path}': record on line {line}: {reason}")]
    Syntax {
        path: String,
        line: usize,
        reason: &'static str,
    },
}

/// The users of a token file, by token.
pub struct StaticTokens {
    tokens: HashMap<String, UserInfo>,
    api_audiences: Vec<String>,
}

impl StaticTokens {
    /// Reads and parses `path`.
    pub fn from_file(path: &Path, api_audiences: Vec<String>) -> Result<Self, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string(), api_audiences)
    }

    /// Parses CSV text; `path` only names the file in messages.
    pub fn parse(
        text: &str,
        path: &str,
        api_audiences: Vec<String>,
    ) -> Result<Self, TokenFileError> {
        let mut tokens = HashMap::new();
        for (line, record) in parse_csv(text, path)? {
            let [token, name, uid, rest @ ..] = record.as_slice() else {
                return Err(TokenFileError::Columns {
                    path: path.into(),
                    found: record.len(),
                });
            };
            if token.is_empty() {
                tracing::warn!(path, line, "empty token in the token file; skipped");
                continue;
            }
            let mut user = UserInfo {
                name: name.clone(),
                uid: uid.clone(),
                ..Default::default()
            };
            if let Some(groups) = rest.first() {
                user.groups = groups.split(',').map(String::from).collect();
            }
            if tokens.insert(token.clone(), user).is_some() {
                tracing::warn!(path, line, "duplicate token in the token file");
            }
        }
        Ok(Self {
            tokens,
            api_audiences,
        })
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

#[async_trait]
impl TokenAuthenticator for StaticTokens {
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: Option<&[String]>,
    ) -> TokenAuthenticated {
        let Some(auds) = audiences_for(&self.api_audiences, audiences) else {
            return TokenAuthenticated::NotMine;
        };
        match self.tokens.get(token) {
            Some(user) => TokenAuthenticated::User(TokenUser {
                user: user.clone(),
                audiences: auds,
            }),
            None => TokenAuthenticated::NotMine,
        }
    }
}

/// RFC 4180 records as Go's `encoding/csv` reads them (variable field counts, quoted fields
/// with `""` escapes and newlines, blank lines skipped), each with its first line number.
fn parse_csv(text: &str, path: &str) -> Result<Vec<(usize, Vec<String>)>, TokenFileError> {
    let err = |line, reason| TokenFileError::Syntax {
        path: path.into(),
        line,
        reason,
    };
    let mut records = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1usize;
    while chars.peek().is_some() {
        let start = line;
        let mut record = Vec::new();
        let mut field = String::new();
        let mut blank = true;
        loop {
            match chars.next() {
                None => {
                    record.push(std::mem::take(&mut field));
                    break;
                }
                Some('\n') => {
                    line = line.saturating_add(1);
                    record.push(std::mem::take(&mut field));
                    break;
                }
                Some('\r') if chars.peek() == Some(&'\n') => {}
                Some(',') => {
                    blank = false;
                    record.push(std::mem::take(&mut field));
                }
                Some('"') if field.is_empty() => {
                    blank = false;
                    loop {
                        match chars.next() {
                            None => {
                                return Err(err(start, "extraneous or missing \" in quoted-field"))
                            }
                            Some('"') if chars.peek() == Some(&'"') => {
                                chars.next();
                                field.push('"');
                            }
                            Some('"') => break,
                            Some(c) => {
                                if c == '\n' {
                                    line = line.saturating_add(1);
                                }
                                field.push(c);
                            }
                        }
                    }
                    match chars.peek() {
                        None | Some(',') | Some('\n') | Some('\r') => {}
                        Some(_) => {
                            return Err(err(line, "extraneous or missing \" in quoted-field"))
                        }
                    }
                }
                Some('"') => return Err(err(line, "bare \" in non-quoted-field")),
                Some(c) => {
                    blank = false;
                    field.push(c);
                }
            }
        }
        if !(blank && matches!(record.as_slice(), [only] if only.is_empty())) {
            records.push((start, record));
        }
    }
    Ok(records)
}
