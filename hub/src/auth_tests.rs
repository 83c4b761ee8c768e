use super::*;
use tabwire_protocol::Kind;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "tabwire-auth-{name}-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A fresh auth directory as `token issue` makes one: this user's, mode 0700.
fn private_dir(name: &str) -> PathBuf {
    use std::os::unix::fs::DirBuilderExt;
    let dir = temp_dir(name);
    std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    dir
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

fn claims(sub: &str, role: &str, exp_offset: i64, aud: &str) -> serde_json::Value {
    let now = now_secs() as i64;
    serde_json::json!({
        "sub": sub, "role": role, "iat": now, "exp": now + exp_offset,
        "jti": uuid::Uuid::new_v4().simple().to_string(), "aud": aud,
    })
}

fn sign(
    alg: Algorithm,
    key: &EncodingKey,
    kid: Option<&str>,
    claims: &serde_json::Value,
) -> String {
    crate::jwt_crypto::install();
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn hub_secret(dir: &Path) -> EncodingKey {
    EncodingKey::from_secret(&read_secret(&dir.join(SECRET_FILE)).unwrap())
}

#[test]
fn an_issued_token_verifies_as_its_account_and_role() {
    let dir = temp_dir("issue");
    let (token, record, created) = issue(
        &dir,
        "alice",
        Role::Peer(Kind::Browser),
        Duration::from_secs(3600),
        "laptop",
    )
    .unwrap();
    assert!(created, "the first issue creates the key");
    let auth = Authenticator::load(&dir, &KeySource::Secret).unwrap();
    let principal = auth.verify(&token).unwrap();
    assert_eq!(principal.account, "alice");
    assert_eq!(principal.role, Role::Peer(Kind::Browser));
    assert_eq!(principal.jti, record.jti);
    // The ledger records the token without the token.
    let ledger = std::fs::read_to_string(dir.join(ISSUED_FILE)).unwrap();
    assert!(ledger.contains(&record.jti) && ledger.contains("laptop"));
    assert!(!ledger.contains(&token));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.join(SECRET_FILE)), 0o600);
        assert_eq!(mode(&dir), 0o700);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_tokens_are_refused() {
    let dir = temp_dir("bad");
    issue(&dir, "alice", Role::Agent, Duration::from_secs(60), "").unwrap();
    let auth = Authenticator::load(&dir, &KeySource::Secret).unwrap();
    let key = hub_secret(&dir);
    let good = sign(
        Algorithm::HS256,
        &key,
        None,
        &claims("alice", "agent", 600, AUDIENCE),
    );
    assert!(auth.verify(&good).is_ok());
    let other = EncodingKey::from_secret(&[7u8; 32]);
    let cases = [
        ("empty", String::new()),
        ("garbage", "not-a-token".to_owned()),
        (
            "expired",
            sign(
                Algorithm::HS256,
                &key,
                None,
                &claims("alice", "agent", -3600, AUDIENCE),
            ),
        ),
        (
            "wrong key",
            sign(
                Algorithm::HS256,
                &other,
                None,
                &claims("alice", "agent", 600, AUDIENCE),
            ),
        ),
        (
            "HS384 instead of the configured HS256",
            sign(
                Algorithm::HS384,
                &key,
                None,
                &claims("alice", "agent", 600, AUDIENCE),
            ),
        ),
        (
            "other audience",
            sign(
                Algorithm::HS256,
                &key,
                None,
                &claims("alice", "agent", 600, "someone"),
            ),
        ),
        (
            "unknown role",
            sign(
                Algorithm::HS256,
                &key,
                None,
                &claims("alice", "admin", 600, AUDIENCE),
            ),
        ),
        (
            "bad account",
            sign(
                Algorithm::HS256,
                &key,
                None,
                &claims("a/b", "agent", 600, AUDIENCE),
            ),
        ),
        ("tampered", format!("{good}x")),
        ("unsigned", {
            let mut parts = good.split('.');
            let _ = parts.next();
            // {"alg":"none","typ":"JWT"}
            format!(
                "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.{}.",
                parts.next().unwrap()
            )
        }),
        ("oversized", "a".repeat(MAX_TOKEN_LEN + 1)),
    ];
    for (what, token) in cases {
        assert!(auth.verify(&token).is_err(), "{what} was accepted");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_revoked_token_is_refused_by_a_running_hub_within_a_second() {
    let dir = temp_dir("revoke");
    let (token, record, _) = issue(
        &dir,
        "bob",
        Role::Peer(Kind::Browser),
        Duration::from_secs(3600),
        "",
    )
    .unwrap();
    let (other, _, _) = issue(&dir, "bob", Role::Agent, Duration::from_secs(3600), "").unwrap();
    let auth = Authenticator::load(&dir, &KeySource::Secret).unwrap();
    let principal = auth.verify(&token).unwrap();
    assert_eq!(revoke(&dir, std::slice::from_ref(&record.jti)).unwrap(), 1);
    assert_eq!(
        revoke(&dir, std::slice::from_ref(&record.jti)).unwrap(),
        0,
        "already revoked"
    );
    std::thread::sleep(REVOCATION_RECHECK + Duration::from_millis(100));
    assert!(auth.verify(&token).is_err());
    assert_eq!(auth.still_valid(&principal), Err("its token was revoked"));
    assert!(
        auth.verify(&other).is_ok(),
        "only the named token is revoked"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_accepted_token_stops_being_valid_when_it_expires() {
    let principal = Principal {
        account: "a".into(),
        role: Role::Peer(Kind::Browser),
        jti: "j".into(),
        expires_at: now_secs() - LEEWAY_SECS - 1,
    };
    let dir = temp_dir("expiry");
    issue(&dir, "a", Role::Agent, Duration::from_secs(60), "").unwrap();
    let auth = Authenticator::load(&dir, &KeySource::Secret).unwrap();
    assert_eq!(auth.still_valid(&principal), Err("its token expired"));
    let _ = std::fs::remove_dir_all(dir);
}

const ISSUER: &str = "https://idp.example";

fn jwks(path: &Path, algorithm: Algorithm) -> KeySource {
    KeySource::Jwks {
        path: path.to_path_buf(),
        algorithm,
        issuer: ISSUER.into(),
    }
}

#[test]
fn jwks_keys_verify_with_the_pinned_algorithm_and_issuer_only() {
    let dir = private_dir("jwks");
    let keys = testdata("test-only-jwks.json");
    let ed = EncodingKey::from_ed_pem(&std::fs::read(testdata("test-only-ed25519.pem")).unwrap())
        .unwrap();
    let rsa = EncodingKey::from_rsa_pem(&std::fs::read(testdata("test-only-rs256.pem")).unwrap())
        .unwrap();
    let mut body = claims("carol", "agent", 600, AUDIENCE);
    body["iss"] = serde_json::json!(ISSUER);
    let ed_token = sign(Algorithm::EdDSA, &ed, Some("ed1"), &body);
    let rsa_token = sign(Algorithm::RS256, &rsa, Some("rsa1"), &body);

    let eddsa = Authenticator::load(&dir, &jwks(&keys, Algorithm::EdDSA)).unwrap();
    assert_eq!(eddsa.verify(&ed_token).unwrap().account, "carol");
    assert!(
        eddsa.verify(&rsa_token).is_err(),
        "RS256 is not the pinned algorithm"
    );
    assert!(
        eddsa
            .verify(&sign(Algorithm::EdDSA, &ed, Some("nope"), &body))
            .is_err(),
        "unknown kid"
    );
    // The classic confusion: an HS256 token keyed with the public key's bytes.
    let x = "mbqRyUITGSdBcN7wS7ob__ZJXzjVDLTMqSZnBkW6GmQ";
    let confused = sign(
        Algorithm::HS256,
        &EncodingKey::from_secret(x.as_bytes()),
        Some("ed1"),
        &body,
    );
    assert!(eddsa.verify(&confused).is_err());

    // The same keys signing for another issuer, or naming none, are refused.
    let mut elsewhere = body.clone();
    elsewhere["iss"] = serde_json::json!("https://other.example");
    assert!(
        eddsa
            .verify(&sign(Algorithm::EdDSA, &ed, Some("ed1"), &elsewhere))
            .is_err(),
        "another issuer"
    );
    elsewhere.as_object_mut().unwrap().remove("iss");
    assert!(
        eddsa
            .verify(&sign(Algorithm::EdDSA, &ed, Some("ed1"), &elsewhere))
            .is_err(),
        "no iss"
    );

    let rs256 = Authenticator::load(&dir, &jwks(&keys, Algorithm::RS256)).unwrap();
    assert_eq!(rs256.verify(&rsa_token).unwrap().account, "carol");
    assert!(rs256.verify(&ed_token).is_err());

    assert!(Authenticator::load(&dir, &jwks(&keys, Algorithm::HS256)).is_err());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_key_open_to_other_users_stops_the_hub_and_token_issue() {
    let dir = temp_dir("open-key");
    issue(&dir, "alice", Role::Agent, Duration::from_secs(60), "").unwrap();
    let key = dir.join(SECRET_FILE);
    // Every group and other bit on its own, read, write or execute.
    for mode in [0o640, 0o620, 0o610, 0o604, 0o602, 0o601, 0o644, 0o666] {
        chmod(&key, mode);
        let error = Authenticator::load(&dir, &KeySource::Secret).err().unwrap();
        assert!(
            matches!(error, AuthError::OpenSecret { mode: m, .. } if m == mode),
            "{mode:o}: {error}"
        );
        let message = error.to_string();
        assert!(
            message.contains(&format!("chmod 600 {}", key.display())),
            "{message}"
        );
        let issued = issue(&dir, "alice", Role::Agent, Duration::from_secs(60), "");
        assert!(
            matches!(issued, Err(AuthError::OpenSecret { .. })),
            "{mode:o}: token issue signed with an exposed key"
        );
    }
    for mode in [0o600, 0o400] {
        chmod(&key, mode);
        assert!(
            Authenticator::load(&dir, &KeySource::Secret).is_ok(),
            "{mode:o}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_auth_directory_open_to_other_users_stops_the_hub_and_token_issue() {
    let dir = temp_dir("open-dir");
    issue(&dir, "alice", Role::Agent, Duration::from_secs(60), "").unwrap();
    let keys = testdata("test-only-jwks.json");
    for mode in [
        0o750, 0o740, 0o710, 0o770, 0o705, 0o704, 0o701, 0o702, 0o755, 0o777,
    ] {
        chmod(&dir, mode);
        // Whichever keys the hub uses: the revocation list lives here too.
        for source in [KeySource::Secret, jwks(&keys, Algorithm::EdDSA)] {
            let error = Authenticator::load(&dir, &source).err().unwrap();
            assert!(
                matches!(error, AuthError::OpenDirectory { mode: m, .. } if m == mode),
                "{mode:o}: {error}"
            );
            let message = error.to_string();
            assert!(
                message.contains(&format!("chmod 700 {}", dir.display())),
                "{message}"
            );
        }
        let issued = issue(&dir, "alice", Role::Agent, Duration::from_secs(60), "");
        assert!(
            matches!(issued, Err(AuthError::OpenDirectory { .. })),
            "{mode:o}: token issue wrote into an open directory"
        );
        // A revocation is never held up by the directory's mode.
        assert_eq!(revoke(&dir, &[format!("j{mode:o}")]).unwrap(), 1);
    }
    chmod(&dir, 0o700);
    assert!(Authenticator::load(&dir, &KeySource::Secret).is_ok());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_auth_directory_of_another_user_stops_the_hub() {
    let dir = private_dir("foreign");
    // As root (as the tests run here) the directory is given away; as anyone else, `/` is a
    // directory of another user (root) already.
    let foreign = if tabwire_protocol::local::current_uid() == 0 {
        std::os::unix::fs::chown(&dir, Some(65534), None).unwrap();
        dir.clone()
    } else {
        PathBuf::from("/")
    };
    let error = Authenticator::load(&foreign, &KeySource::Secret)
        .err()
        .unwrap();
    assert!(
        matches!(error, AuthError::ForeignDirectory { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("chown -R"), "{error}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_jwks_file_others_may_write_stops_the_hub() {
    let dir = private_dir("jwks-mode");
    let copy = dir.join("jwks.json");
    std::fs::copy(testdata("test-only-jwks.json"), &copy).unwrap();
    for mode in [0o664, 0o646, 0o622] {
        chmod(&copy, mode);
        let error = Authenticator::load(&dir, &jwks(&copy, Algorithm::EdDSA))
            .err()
            .unwrap();
        assert!(
            matches!(error, AuthError::WritableJwks { mode: m, .. } if m == mode),
            "{mode:o}: {error}"
        );
        assert!(error.to_string().contains("chmod go-w"), "{error}");
    }
    // Public keys may be read by anyone.
    chmod(&copy, 0o644);
    assert!(Authenticator::load(&dir, &jwks(&copy, Algorithm::EdDSA)).is_ok());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_missing_key_is_a_clear_start_up_error() {
    let dir = temp_dir("nokey");
    let error = Authenticator::load(&dir, &KeySource::Secret)
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("token issue"), "{error}");
}

#[test]
fn ttls_and_accounts_are_checked() {
    assert_eq!(parse_ttl("90s").unwrap(), Duration::from_secs(90));
    assert_eq!(parse_ttl("30d").unwrap(), Duration::from_secs(30 * 86_400));
    for bad in [
        "",
        "d",
        "0h",
        "5w",
        "-1d",
        "99999d",
        "1.5h",
        "213503982334602d",
        "999999999999999999d",
    ] {
        assert!(parse_ttl(bad).is_err(), "{bad}");
    }
    assert!(check_account("alice@example.com").is_ok());
    for bad in ["", "a b", "a/b", &"x".repeat(65)] {
        assert!(check_account(bad).is_err(), "{bad}");
    }
}

#[test]
fn revocation_lines_may_be_json_or_bare() {
    let set = parse_revocations("{\"jti\":\"a\",\"revokedAt\":1}\n\n# note\nb\n");
    assert!(set.contains("a") && set.contains("b") && set.len() == 2);
}

#[test]
fn an_unreadable_revocation_list_refuses_every_token() {
    let dir = temp_dir("unreadable");
    let (token, _, _) = issue(&dir, "dave", Role::Agent, Duration::from_secs(600), "").unwrap();
    let auth = Authenticator::load(&dir, &KeySource::Secret).unwrap();
    assert!(auth.verify(&token).is_ok());
    // A revocation list that exists but cannot be read (here: a directory in its place).
    std::fs::create_dir(dir.join(REVOKED_FILE)).unwrap();
    std::thread::sleep(REVOCATION_RECHECK + Duration::from_millis(100));
    assert!(auth.verify(&token).is_err(), "failed open");
    std::fs::remove_dir(dir.join(REVOKED_FILE)).unwrap();
    std::thread::sleep(REVOCATION_RECHECK + Duration::from_millis(100));
    assert!(
        auth.verify(&token).is_ok(),
        "recovers once the file is readable"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_damaged_ledger_line_is_skipped() {
    let dir = temp_dir("ledger");
    let (_, record, _) = issue(&dir, "erin", Role::Agent, Duration::from_secs(600), "").unwrap();
    let ledger = dir.join(ISSUED_FILE);
    write_line(&mut append(&ledger).unwrap(), &ledger, "{\"jti\":\"half").unwrap();
    issue(
        &dir,
        "erin",
        Role::Peer(Kind::Browser),
        Duration::from_secs(600),
        "",
    )
    .unwrap();
    let listed = issued(&dir).unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].jti, record.jti);
    let _ = std::fs::remove_dir_all(dir);
}
