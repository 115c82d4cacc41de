//! Passwords: RabbitMQ's salted hashes, and the clear passwords warren holds in memory
//! only to recognise an unchanged password under another salt.

use std::collections::BTreeMap;

use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256, Sha512};

/// RabbitMQ password hashing algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HashingAlgorithm {
    /// `rabbit_password_hashing_sha256` (RabbitMQ's default).
    Sha256,
    /// `rabbit_password_hashing_sha512`.
    Sha512,
    /// `rabbit_password_hashing_md5`: what brokers before 3.6 wrote. Still read by
    /// every broker, so files and brokers that hold such users import as they are;
    /// new passwords should use `sha256`.
    Md5,
}

impl HashingAlgorithm {
    /// The broker's name of the algorithm (its hashing module).
    pub fn module(self) -> &'static str {
        match self {
            HashingAlgorithm::Sha256 => "rabbit_password_hashing_sha256",
            HashingAlgorithm::Sha512 => "rabbit_password_hashing_sha512",
            HashingAlgorithm::Md5 => "rabbit_password_hashing_md5",
        }
    }

    /// The algorithm of a broker's hashing module; `None` for one warren does not know
    /// (a third-party hashing plugin).
    pub fn from_module(module: &str) -> Option<HashingAlgorithm> {
        [
            HashingAlgorithm::Sha256,
            HashingAlgorithm::Sha512,
            HashingAlgorithm::Md5,
        ]
        .into_iter()
        .find(|algorithm| algorithm.module() == module)
    }
}

/// RabbitMQ's salted hash: base64(salt ++ H(salt ++ password)), with a 4-byte salt.
///
/// The salt is derived from the user name and the password, so exporting the same spec
/// twice gives the same file (no churn in a GitOps diff) while two users with the same
/// password still get different hashes.
pub fn hash_password(user: &str, password: &str, algorithm: HashingAlgorithm) -> String {
    let mut seed = Sha256::new();
    seed.update(b"warren password salt\0");
    seed.update(user.as_bytes());
    seed.update([0]);
    seed.update(password.as_bytes());
    let salt: [u8; 4] = seed.finalize()[..4].try_into().expect("4 bytes");
    hash_with_salt(&salt, password, algorithm)
}

/// The hash of `password` with a given salt (also used to check a broker's hash).
pub fn hash_with_salt(salt: &[u8], password: &str, algorithm: HashingAlgorithm) -> String {
    let digest: Vec<u8> = match algorithm {
        HashingAlgorithm::Sha256 => {
            let mut hasher = Sha256::new();
            hasher.update(salt);
            hasher.update(password.as_bytes());
            hasher.finalize().to_vec()
        }
        HashingAlgorithm::Sha512 => {
            let mut hasher = Sha512::new();
            hasher.update(salt);
            hasher.update(password.as_bytes());
            hasher.finalize().to_vec()
        }
        HashingAlgorithm::Md5 => {
            let mut hasher = md5::Md5::new();
            hasher.update(salt);
            hasher.update(password.as_bytes());
            hasher.finalize().to_vec()
        }
    };
    let mut bytes = salt.to_vec();
    bytes.extend(digest);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Clear passwords by user name, used only to recognise an unchanged password under
/// another salt. Never printed: its `Debug` shows only how many it holds.
#[derive(Default, Clone)]
pub struct Passwords {
    /// The clear passwords that could be read.
    pub clear: BTreeMap<String, String>,
    /// Users whose password could not be read while planning (a pull-request job holds
    /// no application secrets), with what is missing (``environment variable `X` ``).
    /// Their passwords are not compared, and no plan holding them is applied.
    pub unknown: BTreeMap<String, String>,
}

impl Passwords {
    /// Known passwords only.
    pub fn known(clear: BTreeMap<String, String>) -> Passwords {
        Passwords {
            clear,
            unknown: BTreeMap::new(),
        }
    }
}

impl std::fmt::Debug for Passwords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Passwords({} redacted, {} unknown)",
            self.clear.len(),
            self.unknown.len()
        )
    }
}

/// Whether `live_hash` (written with `algorithm`) is the hash of `password` under its
/// own salt.
pub fn is_hash_of(live_hash: &str, algorithm: HashingAlgorithm, password: &str) -> bool {
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(live_hash) else {
        return false;
    };
    bytes.len() >= 4 && hash_with_salt(&bytes[..4], password, algorithm) == live_hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_hashes_are_the_brokers_legacy_format() {
        // base64(salt ++ md5(salt ++ password)), as rabbit_password_hashing_md5 writes.
        assert_eq!(
            hash_with_salt(&[1, 2, 3, 4], "guest", HashingAlgorithm::Md5),
            "AQIDBH/JkOf0oGZ5yhQgSBXkHS0="
        );
        assert_eq!(
            HashingAlgorithm::from_module("rabbit_password_hashing_md5"),
            Some(HashingAlgorithm::Md5)
        );
    }

    #[test]
    fn hashes_are_stable_salted_and_verifiable() {
        let first = hash_password("orders", "s3cret", HashingAlgorithm::Sha256);
        assert_eq!(
            first,
            hash_password("orders", "s3cret", HashingAlgorithm::Sha256)
        );
        assert_ne!(
            first,
            hash_password("payments", "s3cret", HashingAlgorithm::Sha256)
        );
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&first)
            .unwrap();
        assert_eq!(bytes.len(), 4 + 32);
        assert_eq!(
            hash_with_salt(&bytes[..4], "s3cret", HashingAlgorithm::Sha256),
            first
        );
        let long = hash_password("orders", "s3cret", HashingAlgorithm::Sha512);
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(long)
                .unwrap()
                .len(),
            4 + 64
        );
    }
}
