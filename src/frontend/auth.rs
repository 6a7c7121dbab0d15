//! Password proofs clients send at login (MySQL protocol):
//! - `mysql_native_password`: `SHA1(pw) XOR SHA1(scramble ++ SHA1(SHA1(pw)))`, 20 bytes;
//! - `caching_sha2_password` (MySQL 8's default) fast path:
//!   `SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) ++ scramble)`, 32 bytes. manx knows every
//!   user's password, so the fast path applies to every right password; a proof that does not
//!   match gets MySQL's full authentication on a TLS connection (the cleartext password, see
//!   `super::wire::tls::Link::full_authentication`) and 1045 on a plain one.

use sha1::{Digest, Sha1};
use sha2::Sha256;

/// `true` when `response` is the client's proof for `password` against `scramble`. An empty
/// configured password accepts only an empty response (SPEC §3.3).
pub fn verify_native_password(password: &str, scramble: &[u8], response: &[u8]) -> bool {
    if password.is_empty() {
        return response.is_empty();
    }
    response.len() == 20 && expected(password, scramble) == response
}

/// The response a client sends for `password` and `scramble`.
pub fn expected(password: &str, scramble: &[u8]) -> [u8; 20] {
    let stage1: [u8; 20] = Sha1::digest(password.as_bytes()).into();
    let stage2: [u8; 20] = Sha1::digest(stage1).into();
    let mut h = Sha1::new();
    h.update(scramble);
    h.update(stage2);
    let mix: [u8; 20] = h.finalize().into();
    let mut out = [0u8; 20];
    for i in 0..20 {
        out[i] = stage1[i] ^ mix[i];
    }
    out
}

/// `true` when `response` is a `caching_sha2_password` fast-path proof for `password`.
pub fn verify_caching_sha2(password: &str, scramble: &[u8], response: &[u8]) -> bool {
    !password.is_empty() && response.len() == 32 && expected_sha2(password, scramble) == response
}

/// The `caching_sha2_password` proof a client sends for `password` and `scramble`.
pub fn expected_sha2(password: &str, scramble: &[u8]) -> [u8; 32] {
    let stage1: [u8; 32] = Sha256::digest(password.as_bytes()).into();
    let stage2: [u8; 32] = Sha256::digest(stage1).into();
    let mut h = Sha256::new();
    h.update(stage2);
    h.update(scramble);
    let mix: [u8; 32] = h.finalize().into();
    let mut out = [0u8; 32];
    for i in 0..32 {
        out[i] = stage1[i] ^ mix[i];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caching_sha2_round_trip() {
        let scramble = b"01234567890123456789";
        let proof = expected_sha2("123456", scramble);
        assert!(verify_caching_sha2("123456", scramble, &proof));
        assert!(!verify_caching_sha2("12345", scramble, &proof));
        assert!(!verify_native_password("123456", scramble, &proof));
    }

    #[test]
    fn native_password_round_trip() {
        let scramble = b"01234567890123456789";
        let proof = expected("123456", scramble);
        assert!(verify_native_password("123456", scramble, &proof));
        assert!(!verify_native_password("1234567", scramble, &proof));
        assert!(!verify_native_password(
            "123456",
            b"x1234567890123456789",
            &proof
        ));
        assert!(verify_native_password("", scramble, b""));
        assert!(!verify_native_password("", scramble, &proof));
        assert!(!verify_native_password("123456", scramble, b""));
    }
}
