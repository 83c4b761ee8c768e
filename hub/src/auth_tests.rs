use super::*;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "tabwire-auth-{name}-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
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
        Role::Browser,
        Duration::from_secs(3600),
        "laptop",
    )
    .unwrap();
    assert!(created, "the first issue creates the key");
    let auth = Authenticator::load(&dir, &KeySource::Secret).unwrap();
    let principal = auth.verify(&token).unwrap();
    assert_eq!(principal.account, "alice");
    assert_eq!(principal.role, Role::Browser);
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
    let (token, record, _) =
        issue(&dir, "bob", Role::Browser, Duration::from_secs(3600), "").unwrap();
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
        role: Role::Browser,
        jti: "j".into(),
        expires_at: now_secs() - LEEWAY_SECS - 1,
    };
    let dir = temp_dir("expiry");
    issue(&dir, "a", Role::Agent, Duration::from_secs(60), "").unwrap();
    let auth = Authenticator::load(&dir, &KeySource::Secret).unwrap();
    assert_eq!(auth.still_valid(&principal), Err("its token expired"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn jwks_keys_verify_with_the_pinned_algorithm_only() {
    let dir = temp_dir("jwks");
    let jwks = testdata("test-only-jwks.json");
    let ed = EncodingKey::from_ed_pem(&std::fs::read(testdata("test-only-ed25519.pem")).unwrap())
        .unwrap();
    let rsa = EncodingKey::from_rsa_pem(&std::fs::read(testdata("test-only-rs256.pem")).unwrap())
        .unwrap();
    let body = claims("carol", "agent", 600, AUDIENCE);
    let ed_token = sign(Algorithm::EdDSA, &ed, Some("ed1"), &body);
    let rsa_token = sign(Algorithm::RS256, &rsa, Some("rsa1"), &body);

    let eddsa =
        Authenticator::load(&dir, &KeySource::Jwks(jwks.clone(), Algorithm::EdDSA)).unwrap();
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

    // With an issuer configured, `iss` is required and must match.
    let pinned = Authenticator::load(&dir, &KeySource::Jwks(jwks.clone(), Algorithm::EdDSA))
        .unwrap()
        .with_issuer("https://idp.example");
    assert!(pinned.verify(&ed_token).is_err(), "no iss");
    let mut with_iss = body.clone();
    with_iss["iss"] = serde_json::json!("https://idp.example");
    assert!(
        pinned
            .verify(&sign(Algorithm::EdDSA, &ed, Some("ed1"), &with_iss))
            .is_ok()
    );
    with_iss["iss"] = serde_json::json!("https://other.example");
    assert!(
        pinned
            .verify(&sign(Algorithm::EdDSA, &ed, Some("ed1"), &with_iss))
            .is_err()
    );

    let rs256 =
        Authenticator::load(&dir, &KeySource::Jwks(jwks.clone(), Algorithm::RS256)).unwrap();
    assert_eq!(rs256.verify(&rsa_token).unwrap().account, "carol");
    assert!(rs256.verify(&ed_token).is_err());

    assert!(Authenticator::load(&dir, &KeySource::Jwks(jwks, Algorithm::HS256)).is_err());
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
    issue(&dir, "erin", Role::Browser, Duration::from_secs(600), "").unwrap();
    let listed = issued(&dir).unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].jti, record.jti);
    let _ = std::fs::remove_dir_all(dir);
}
