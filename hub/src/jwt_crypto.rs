//! The cryptography under `jsonwebtoken`: ring, which rustls already compiles into the hub.
//!
//! `jsonwebtoken`'s own RustCrypto backend brings RSA, P-256, P-384 and Ed25519 crates of its
//! own (some thirty crates, a fifth of a fresh release build). The hub accepts only HS256,
//! RS256 and EdDSA (docs/hosted.md), so these are done here with ring, with HMAC's other two
//! sizes (a test signs HS384 to see it refused where HS256 is configured); every other
//! algorithm is refused as `InvalidAlgorithm`. Keys arrive as `jsonwebtoken` holds them: an HMAC
//! secret, an RSA public key as DER (PKCS#1) or as its modulus and exponent (a JWK), an RSA
//! private key as PKCS#1 DER, an Ed25519 public key as its 32 bytes, an Ed25519 private key as
//! PKCS#8 DER.

use std::sync::Once;

use jsonwebtoken::crypto::{CryptoProvider, JwkUtils, JwtSigner, JwtVerifier};
use jsonwebtoken::errors::{ErrorKind, Result, new_error};
use jsonwebtoken::signature::{self, Signer, Verifier};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, DecodingKeyKind, EncodingKey};
use ring::signature as ring_sig;

static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: signer,
    verifier_factory: verifier,
    jwk_utils: JwkUtils::new_unimplemented(),
};

/// Makes ring `jsonwebtoken`'s backend for this process. Called before every use of
/// `jsonwebtoken` in the hub (and by tests that sign tokens); only the first call does anything.
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Refused only when another provider was installed first, which nothing here does.
        let _ = PROVIDER.install_default();
    });
}

enum SigningKey {
    Hmac(ring::hmac::Key),
    Rsa(Box<ring_sig::RsaKeyPair>),
    Ed25519(ring_sig::Ed25519KeyPair),
}

struct RingSigner(Algorithm, SigningKey);

/// HMAC with the hash an `HS…` algorithm names.
fn hmac(algorithm: Algorithm) -> ring::hmac::Algorithm {
    match algorithm {
        Algorithm::HS384 => ring::hmac::HMAC_SHA384,
        Algorithm::HS512 => ring::hmac::HMAC_SHA512,
        _ => ring::hmac::HMAC_SHA256,
    }
}

fn signer(algorithm: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    let bad_key = || new_error(ErrorKind::InvalidKeyFormat);
    let signing = match (algorithm, key.family()) {
        (Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512, AlgorithmFamily::Hmac) => {
            SigningKey::Hmac(ring::hmac::Key::new(
                hmac(*algorithm),
                key.try_get_hmac_secret()?,
            ))
        }
        (Algorithm::RS256, AlgorithmFamily::Rsa) => SigningKey::Rsa(Box::new(
            ring_sig::RsaKeyPair::from_der(key.inner()).map_err(|_| bad_key())?,
        )),
        (Algorithm::EdDSA, AlgorithmFamily::Ed) => SigningKey::Ed25519(
            ring_sig::Ed25519KeyPair::from_pkcs8_maybe_unchecked(key.inner())
                .map_err(|_| bad_key())?,
        ),
        (Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512, _)
        | (Algorithm::RS256 | Algorithm::EdDSA, _) => return Err(bad_key()),
        _ => return Err(new_error(ErrorKind::InvalidAlgorithm)),
    };
    Ok(Box::new(RingSigner(*algorithm, signing)))
}

impl Signer<Vec<u8>> for RingSigner {
    fn try_sign(&self, msg: &[u8]) -> std::result::Result<Vec<u8>, signature::Error> {
        match &self.1 {
            SigningKey::Hmac(key) => Ok(ring::hmac::sign(key, msg).as_ref().to_vec()),
            SigningKey::Rsa(pair) => {
                let mut out = vec![0; pair.public().modulus_len()];
                pair.sign(
                    &ring_sig::RSA_PKCS1_SHA256,
                    &ring::rand::SystemRandom::new(),
                    msg,
                    &mut out,
                )
                .map_err(|_| signature::Error::new())?;
                Ok(out)
            }
            SigningKey::Ed25519(pair) => Ok(pair.sign(msg).as_ref().to_vec()),
        }
    }
}

impl JwtSigner for RingSigner {
    fn algorithm(&self) -> Algorithm {
        self.0
    }
}

struct RingVerifier(Algorithm, DecodingKey);

fn verifier(algorithm: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    let family = match algorithm {
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => AlgorithmFamily::Hmac,
        Algorithm::RS256 => AlgorithmFamily::Rsa,
        Algorithm::EdDSA => AlgorithmFamily::Ed,
        _ => return Err(new_error(ErrorKind::InvalidAlgorithm)),
    };
    if key.family() != family {
        return Err(new_error(ErrorKind::InvalidKeyFormat));
    }
    Ok(Box::new(RingVerifier(*algorithm, key.clone())))
}

impl Verifier<Vec<u8>> for RingVerifier {
    fn verify(&self, msg: &[u8], sig: &Vec<u8>) -> std::result::Result<(), signature::Error> {
        let checked = match (self.0, self.1.kind()) {
            (
                Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512,
                DecodingKeyKind::SecretOrDer(secret),
            ) => {
                let key = ring::hmac::Key::new(hmac(self.0), secret);
                ring::hmac::verify(&key, msg, sig)
            }
            (Algorithm::RS256, DecodingKeyKind::SecretOrDer(der)) => {
                ring_sig::UnparsedPublicKey::new(&ring_sig::RSA_PKCS1_2048_8192_SHA256, der)
                    .verify(msg, sig)
            }
            (Algorithm::RS256, DecodingKeyKind::RsaModulusExponent { n, e }) => {
                ring_sig::RsaPublicKeyComponents { n, e }.verify(
                    &ring_sig::RSA_PKCS1_2048_8192_SHA256,
                    msg,
                    sig,
                )
            }
            (Algorithm::EdDSA, DecodingKeyKind::SecretOrDer(public)) => {
                ring_sig::UnparsedPublicKey::new(&ring_sig::ED25519, public).verify(msg, sig)
            }
            _ => Err(ring::error::Unspecified),
        };
        checked.map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for RingVerifier {
    fn algorithm(&self) -> Algorithm {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_algorithms_are_refused_not_verified() {
        install();
        let key = DecodingKey::from_secret(b"k");
        for algorithm in [
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::ES256,
            Algorithm::ES384,
        ] {
            let refused = jsonwebtoken::crypto::verify("c2ln", b"a.b", &key, algorithm);
            assert!(
                matches!(
                    refused.as_ref().map_err(|e| e.kind()),
                    Err(ErrorKind::InvalidAlgorithm)
                ),
                "{algorithm:?}: {refused:?}"
            );
        }
    }

    #[test]
    fn an_hmac_signature_verifies_only_with_its_secret() {
        install();
        let token = jsonwebtoken::crypto::sign(
            b"a.b",
            &EncodingKey::from_secret(b"secret"),
            Algorithm::HS256,
        )
        .unwrap();
        let verify = |secret: &[u8], message: &[u8]| {
            jsonwebtoken::crypto::verify(
                &token,
                message,
                &DecodingKey::from_secret(secret),
                Algorithm::HS256,
            )
            .unwrap()
        };
        assert!(verify(b"secret", b"a.b"));
        assert!(!verify(b"secreT", b"a.b"));
        assert!(!verify(b"secret", b"a.c"));
    }
}
