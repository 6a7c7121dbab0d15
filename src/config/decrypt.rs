//! Mycat's encrypted passwords (`usingDecrypt`, SPEC §3.6): RSA-512 "encrypted with the
//! private key" (a PKCS#1 v1.5 block type 1), Base64; decrypted with the public key of Alibaba
//! Druid's `ConfigTools` default key pair, the only key Mycat 1.6 knows. The plaintext is
//! `0:<user>:<password>` for a server.xml user and `1:<host>:<user>:<password>` for a
//! writeHost / readHost.

use base64::Engine;
use num_bigint::BigUint;
use thiserror::Error;

/// Why a ciphertext does not give a password. The texts of the password variants are Mycat's
/// own (misspellings included); the cause of a failed decryption follows in parentheses.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecryptError {
    /// The text is not Base64.
    #[error("not Base64 ({0})")]
    NotBase64(base64::DecodeError),
    /// The bytes are not one 512-bit RSA block below the key's modulus.
    #[error("not a 512-bit RSA block")]
    NotRsaBlock,
    /// The block's PKCS#1 type 1 padding is wrong: encrypted with another key.
    #[error("wrong padding (not encrypted with Mycat's key)")]
    WrongPadding,
    /// The plaintext is not UTF-8.
    #[error("not UTF-8 text")]
    NotUtf8,
    /// A server.xml user's ciphertext is not `0:<user>:<password>` for this user.
    #[error("user {user} passwrod need to decrype ,but decrype password is wrong !{}", cause_suffix(.cause))]
    UserPassword {
        user: String,
        /// Why it did not decrypt at all, if it did not.
        cause: Option<Box<DecryptError>>,
    },
    /// A writeHost / readHost ciphertext is not `1:<host>:<user>:<password>` for this host.
    #[error("host {host},user {user} password need to decrype ,but decrype password is wrong !{}", cause_suffix(.cause))]
    HostPassword {
        host: String,
        user: String,
        /// Why it did not decrypt at all, if it did not.
        cause: Option<Box<DecryptError>>,
    },
}

/// ` (cause)` after Mycat's message, or nothing.
fn cause_suffix(cause: &Option<Box<DecryptError>>) -> String {
    cause
        .as_ref()
        .map(|c| format!(" ({c})"))
        .unwrap_or_default()
}

/// Druid `ConfigTools.DEFAULT_PUBLIC_KEY_STRING` (X.509 SubjectPublicKeyInfo, Base64).
const DEFAULT_PUBLIC_KEY: &str = "MFwwDQYJKoZIhvcNAQEBBQADSwAwSAJBAKHGwq7q2RmwuRgKxBypQHw0mYu4BQZ3eMsTrdK8E6igRcxsobUC7uT0SoxIjl1WveWniCASejoQtn/BY6hVKWsCAwEAAQ==";

/// The modulus and exponent of [`DEFAULT_PUBLIC_KEY`]: the SubjectPublicKeyInfo of a 512-bit
/// key ends with `INTEGER n (65 bytes, leading 0)` and `INTEGER e`.
fn public_key() -> (BigUint, BigUint) {
    let der = base64::engine::general_purpose::STANDARD
        .decode(DEFAULT_PUBLIC_KEY)
        .expect("the built-in key is valid Base64");
    let at = der
        .windows(3)
        .position(|w| w == [0x02, 0x41, 0x00])
        .expect("the built-in key holds a 512-bit modulus");
    let n = BigUint::from_bytes_be(&der[at + 3..at + 3 + 64]);
    let e_at = at + 3 + 64;
    let e_len = der[e_at + 1] as usize;
    let e = BigUint::from_bytes_be(&der[e_at + 2..e_at + 2 + e_len]);
    (n, e)
}

/// The plaintext of a Mycat ciphertext, or why it cannot be read.
pub fn decrypt(cipher: &str) -> Result<String, DecryptError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(cipher.trim())
        .map_err(DecryptError::NotBase64)?;
    let (n, e) = public_key();
    let c = BigUint::from_bytes_be(&bytes);
    if bytes.len() != 64 || c >= n {
        return Err(DecryptError::NotRsaBlock);
    }
    let m = c.modpow(&e, &n).to_bytes_be();
    // Block type 1: 00 01 FF .. FF 00 data (to_bytes_be drops the leading 00).
    let body = m
        .strip_prefix(&[0x01])
        .and_then(|r| {
            let zero = r.iter().position(|b| *b != 0xFF)?;
            (r[zero] == 0 && zero >= 8).then(|| &r[zero + 1..])
        })
        .ok_or(DecryptError::WrongPadding)?;
    String::from_utf8(body.to_vec()).map_err(|_| DecryptError::NotUtf8)
}

/// A server.xml user's password from its ciphertext (`0:<user>:<password>`).
///
/// Errors: Mycat's message when the ciphertext does not decrypt to this user's entry.
pub fn user_password(user: &str, cipher: &str) -> Result<String, DecryptError> {
    let wrong = |cause: Option<DecryptError>| DecryptError::UserPassword {
        user: user.to_string(),
        cause: cause.map(Box::new),
    };
    let plain = decrypt(cipher).map_err(|e| wrong(Some(e)))?;
    let fields: Vec<&str> = plain.split(':').collect();
    match fields.as_slice() {
        ["0", u, password, ..] if *u == user => Ok(password.to_string()),
        _ => Err(wrong(None)),
    }
}

/// A writeHost / readHost password from its ciphertext (`1:<host>:<user>:<password>`).
pub fn host_password(host: &str, user: &str, cipher: &str) -> Result<String, DecryptError> {
    let wrong = |cause: Option<DecryptError>| DecryptError::HostPassword {
        host: host.to_string(),
        user: user.to_string(),
        cause: cause.map(Box::new),
    };
    let plain = decrypt(cipher).map_err(|e| wrong(Some(e)))?;
    let fields: Vec<&str> = plain.split(':').collect();
    match fields.as_slice() {
        ["1", h, u, password, ..] if *h == host && *u == user => Ok(password.to_string()),
        _ => Err(wrong(None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Mycat 1.6.7.1's `DecryptUtil 0:root:123456` printed, from its documentation.
    const ROOT_123456: &str =
        "GO0bnFVWrAuFgr1JMuMZkvfDNyTpoiGU7n/Wlsa151CirHQnANVk3NzE3FErx8v6pAcO0ctX3xFecmSr+976QA==";

    #[test]
    fn mycat_ciphertexts_decrypt_with_the_default_key() {
        assert_eq!(decrypt(ROOT_123456).unwrap(), "0:root:123456");
        assert_eq!(user_password("root", ROOT_123456).unwrap(), "123456");
        let e = user_password("admin", ROOT_123456).unwrap_err();
        assert_eq!(
            e.to_string(),
            "user admin passwrod need to decrype ,but decrype password is wrong !"
        );
        assert!(host_password("hostM1", "root", ROOT_123456).is_err());
        assert!(decrypt("123456").is_err());
        assert_eq!(decrypt("AAAA"), Err(DecryptError::NotRsaBlock));
        assert!(decrypt("").is_err());
        // A ciphertext that does not decrypt names Mycat's message, then the cause.
        let e = host_password("h", "u", "!!").unwrap_err();
        assert!(matches!(
            &e,
            DecryptError::HostPassword { cause: Some(c), .. } if matches!(**c, DecryptError::NotBase64(_))
        ));
        assert!(e.to_string().starts_with(
            "host h,user u password need to decrype ,but decrype password is wrong ! (not Base64 ("
        ));
    }
}
