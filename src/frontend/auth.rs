//! `mysql_native_password` (MySQL protocol: the client proves it knows the password with
//! `SHA1(pw) XOR SHA1(scramble ++ SHA1(SHA1(pw)))`).

use sha1::{Digest, Sha1};

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

#[cfg(test)]
mod tests {
    use super::*;

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
