//! Per-origin policy: what agents may do where (issue 14 §1, SPEC §9).
//!
//! A [`Policy`] is an ordered list of [`Rule`]s, each an [`OriginPattern`] with an [`Access`]
//! level and, optionally, whether sensitive reads (cookies, local storage, response bodies,
//! hidden-input values, raw HTML) are allowed there; the first rule that matches a URL decides,
//! and the policy's defaults decide for a URL no rule matches. Two owners hold one each: the
//! operator (the hub's `--policy` file) and the browser's owner (the extension's popup, or an
//! administrator's managed storage). [`stricter`] combines their verdicts field by field, so
//! neither owner can loosen what the other locked.
//!
//! The rules are pure and shared: the hub checks what it can know up front (a navigation's
//! URL), and the extension checks the frame actually targeted when the operation runs.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What agents may do on an origin, from the loosest to the strictest (the derived order is
/// strictness).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Observe and act.
    Act,
    /// Observe; every action that can change the page waits for a person's approval.
    Ask,
    /// Observe only.
    Read,
    /// Nothing: no navigation there, no reads, no actions; its tabs are listed without URL or
    /// title.
    Deny,
}

/// Whether sensitive reads are allowed (`Deny` is the stricter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sensitive {
    /// Cookies, local storage, response bodies, hidden-input values and raw HTML may be read.
    Allow,
    /// They may not.
    Deny,
}

/// One rule: the origins it covers and what it allows there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    /// The origins the rule covers.
    pub origin: OriginPattern,
    /// What agents may do there.
    pub access: Access,
    /// Sensitive reads there; the policy's default when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sensitive: Option<Sensitive>,
}

/// One owner's policy. The same shape is the hub's TOML file, the wire's JSON and the
/// extension's stored settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    /// The access where no rule matches.
    #[serde(default = "Policy::default_access")]
    pub default: Access,
    /// Sensitive reads where no rule matches, and for rules that do not say.
    #[serde(default = "Policy::default_sensitive")]
    pub sensitive: Sensitive,
    /// The rules, first match wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
    /// The rules for mobile devices' apps, by package, first match wins; `default` covers
    /// the packages none matches. Browsers ignore them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub apps: Vec<AppRule>,
}

/// One rule for apps on a mobile device: the packages it covers and what agents may do while
/// one of them is in the foreground (`ask` needs a person at the device, which tabwire cannot
/// ask there yet: the action is refused with the reason).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppRule {
    /// The packages the rule covers.
    pub package: PackagePattern,
    /// What agents may do there.
    pub access: Access,
}

/// Which app packages a rule covers: `*` (every app), `com.bank.*` (`com.bank` and every
/// package under it), or one package (`com.android.settings`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PackagePattern(String);

impl PackagePattern {
    /// Parses a pattern, saying what is wrong with one that is not.
    pub fn parse(text: &str) -> Result<PackagePattern, PolicyError> {
        let text = text.trim();
        if text == "*" {
            return Ok(PackagePattern(text.to_owned()));
        }
        let name = text.strip_suffix(".*").unwrap_or(text);
        let valid = crate::devices::is_package_name(name);
        if !valid {
            return Err(PolicyError(format!(
                "package pattern `{text}`: expected `*`, an app ID such as `com.example.app` (an Android package or an iOS bundle ID), or one followed by `.*`"
            )));
        }
        Ok(PackagePattern(text.to_owned()))
    }

    /// Whether `package` is covered. Names are compared without case: Android tells
    /// `com.Slack` from `com.slack`, but a rule written for one is meant for both, and a rule
    /// that misses an app fails open.
    pub fn matches(&self, package: &str) -> bool {
        if self.0 == "*" {
            return true;
        }
        let package = package.to_ascii_lowercase();
        let pattern = self.0.to_ascii_lowercase();
        match pattern.strip_suffix(".*") {
            Some(under) => {
                package == under
                    || package
                        .strip_prefix(under)
                        .is_some_and(|rest| rest.starts_with('.'))
            }
            None => package == pattern,
        }
    }
}

impl TryFrom<String> for PackagePattern {
    type Error = PolicyError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        PackagePattern::parse(&text)
    }
}

impl From<PackagePattern> for String {
    fn from(pattern: PackagePattern) -> String {
        pattern.0
    }
}

impl fmt::Display for PackagePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// At most this many rules in one policy: a policy is written by a person.
pub const MAX_RULES: usize = 500;

impl Default for Policy {
    /// Everything allowed: today's behaviour, local mode's default.
    fn default() -> Self {
        Policy {
            default: Access::Act,
            sensitive: Sensitive::Allow,
            rules: Vec::new(),
            apps: Vec::new(),
        }
    }
}

/// Whose policy a verdict comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Owner {
    /// The hub's operator.
    Operator,
    /// The browser's owner (the popup, or an administrator's managed storage).
    Browser,
    /// The device's owner (the device backend's `--policy` file).
    Device,
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Owner::Operator => "the operator's policy",
            Owner::Browser => "the browser owner's policy",
            Owner::Device => "the device owner's policy",
        })
    }
}

/// What one policy (or two, combined) says about one URL, and which rule said it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Verdict {
    /// What agents may do.
    pub access: Access,
    /// Whether sensitive reads are allowed.
    pub sensitive: Sensitive,
    /// The rule that decided `access`: its pattern, or `default`.
    pub rule: String,
    /// Whose rule that is.
    pub owner: Owner,
}

/// What an operation needs from the policy of the origin it touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// To read the page (snapshots, content, state, screenshots, waits).
    Read,
    /// To read something sensitive (cookies, storage, bodies, hidden values, raw HTML).
    SensitiveRead,
    /// To change the page (input, a navigation from it, a reload, closing it).
    Act,
    /// To load a URL there.
    Load,
}

/// A verdict applied to a need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Go ahead.
    Allowed,
    /// Go ahead once a person approves (`ask`).
    Ask,
    /// Refused: the sentence says by which rule and what is still allowed.
    Blocked(String),
}

impl Policy {
    fn default_access() -> Access {
        Access::Act
    }

    fn default_sensitive() -> Sensitive {
        Sensitive::Allow
    }

    /// Hosted mode's default for an account without a policy of its own: agents act
    /// everywhere and sensitive reads are off. (`file://` is closed in both modes by the hub,
    /// which puts [`Policy::denying_files`] over every policy it sends unless its operator
    /// opened file URLs.)
    pub fn hosted_default() -> Self {
        Policy {
            default: Access::Act,
            sensitive: Sensitive::Deny,
            rules: Vec::new(),
            apps: Vec::new(),
        }
    }

    /// This policy with `file://` URLs denied before any of its own rules, so no rule of the
    /// policy can open them again: a file URL reads the disk of the computer the browser runs
    /// on. Applying it twice adds the rule once.
    pub fn denying_files(mut self) -> Self {
        let rule = Rule {
            origin: OriginPattern::parse("file://").expect("a valid pattern"),
            access: Access::Deny,
            sensitive: None,
        };
        if self.rules.first() != Some(&rule) {
            self.rules.insert(0, rule);
        }
        self
    }

    /// Nothing allowed anywhere: what a policy that should exist but cannot be read stands
    /// for.
    pub fn deny_all() -> Self {
        Policy {
            default: Access::Deny,
            sensitive: Sensitive::Deny,
            rules: Vec::new(),
            apps: Vec::new(),
        }
    }

    /// Checks what a person wrote: the number of rules.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let rules = self.rules.len() + self.apps.len();
        if rules > MAX_RULES {
            return Err(PolicyError(format!(
                "{rules} rules; a policy holds at most {MAX_RULES}"
            )));
        }
        Ok(())
    }

    /// Whether this policy allows everything everywhere (nothing to check).
    pub fn allows_everything(&self) -> bool {
        self.default == Access::Act
            && self.sensitive == Sensitive::Allow
            && self
                .rules
                .iter()
                .all(|rule| rule.access == Access::Act && rule.sensitive != Some(Sensitive::Deny))
            && self.apps.iter().all(|rule| rule.access == Access::Act)
    }

    /// What this policy, held by `owner`, says about the app `package` (a device's foreground
    /// app).
    pub fn app_verdict(&self, package: &str, owner: Owner) -> Verdict {
        match self.apps.iter().find(|rule| rule.package.matches(package)) {
            Some(rule) => Verdict {
                access: rule.access,
                sensitive: self.sensitive,
                rule: rule.package.to_string(),
                owner,
            },
            None => Verdict {
                access: self.default,
                sensitive: self.sensitive,
                rule: "default".into(),
                owner,
            },
        }
    }

    /// What this policy, held by `owner`, says about `url`.
    pub fn verdict(&self, url: &str, owner: Owner) -> Verdict {
        let origin = match UrlOrigin::judge(url) {
            Judged::Origin(origin) => Some(origin),
            Judged::NoOrigin => None,
            Judged::Unreadable => {
                return Verdict {
                    access: Access::Deny,
                    sensitive: Sensitive::Deny,
                    rule: "an address whose host cannot be read for certain".into(),
                    owner,
                };
            }
        };
        match self
            .rules
            .iter()
            .find(|rule| origin.as_ref().is_some_and(|o| rule.origin.matches(o)))
        {
            Some(rule) => Verdict {
                access: rule.access,
                sensitive: rule.sensitive.unwrap_or(self.sensitive),
                rule: rule.origin.to_string(),
                owner,
            },
            None => Verdict {
                access: self.default,
                sensitive: self.sensitive,
                rule: "default".into(),
                owner,
            },
        }
    }

    /// The policy as lines, one rule per line (`https://*.bank.example deny`, with
    /// `sensitive=deny` or `sensitive=allow` when the rule says), then a `default` line: the
    /// form the extension's popup edits.
    pub fn to_lines(&self) -> String {
        let mut text = String::new();
        for rule in &self.rules {
            text.push_str(&format!("{} {}", rule.origin, access_name(rule.access)));
            if let Some(sensitive) = rule.sensitive {
                text.push_str(&format!(" sensitive={}", sensitive_name(sensitive)));
            }
            text.push('\n');
        }
        text.push_str(&format!(
            "default {} sensitive={}\n",
            access_name(self.default),
            sensitive_name(self.sensitive)
        ));
        text
    }

    /// Reads [`Policy::to_lines`]' form; blank lines and lines starting with `#` are skipped,
    /// and a missing `default` line means `default act sensitive=allow`.
    pub fn from_lines(text: &str) -> Result<Policy, PolicyError> {
        let mut policy = Policy::default();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |what: String| PolicyError(format!("line {}: {what}", number + 1));
            let mut words = line.split_whitespace();
            let first = words.next().unwrap_or_default();
            let access = words
                .next()
                .ok_or_else(|| at(format!("`{first}` needs an access: deny, read, ask or act")))
                .and_then(|word| parse_access(word).map_err(at))?;
            let mut sensitive = None;
            for word in words {
                let value = word.strip_prefix("sensitive=").ok_or_else(|| {
                    at(format!(
                        "unexpected `{word}`; a rule is ORIGIN ACCESS [sensitive=allow|deny]"
                    ))
                })?;
                sensitive = Some(parse_sensitive(value).map_err(at)?);
            }
            if first == "default" {
                policy.default = access;
                if let Some(sensitive) = sensitive {
                    policy.sensitive = sensitive;
                }
            } else {
                let origin = OriginPattern::parse(first).map_err(|e| at(e.0))?;
                policy.rules.push(Rule {
                    origin,
                    access,
                    sensitive,
                });
            }
        }
        policy.validate()?;
        Ok(policy)
    }
}

fn access_name(access: Access) -> &'static str {
    match access {
        Access::Act => "act",
        Access::Ask => "ask",
        Access::Read => "read",
        Access::Deny => "deny",
    }
}

fn sensitive_name(sensitive: Sensitive) -> &'static str {
    match sensitive {
        Sensitive::Allow => "allow",
        Sensitive::Deny => "deny",
    }
}

fn parse_access(word: &str) -> Result<Access, String> {
    match word {
        "act" => Ok(Access::Act),
        "ask" => Ok(Access::Ask),
        "read" => Ok(Access::Read),
        "deny" => Ok(Access::Deny),
        other => Err(format!(
            "unknown access `{other}`; one of deny, read, ask, act"
        )),
    }
}

fn parse_sensitive(word: &str) -> Result<Sensitive, String> {
    match word {
        "allow" => Ok(Sensitive::Allow),
        "deny" => Ok(Sensitive::Deny),
        other => Err(format!("unknown sensitive `{other}`; allow or deny")),
    }
}

/// The stricter of two verdicts, field by field: the stricter access (with the rule that set
/// it; on a tie, the operator's), and sensitive reads allowed only when both allow them. (A
/// refused sensitive read names the access rule's owner, which may not be the one whose rule
/// refused it; the sentence still names the origin and what is allowed.)
pub fn stricter(a: Verdict, b: Verdict) -> Verdict {
    let sensitive = a.sensitive.max(b.sensitive);
    let winner = if b.access > a.access
        || (b.access == a.access && b.owner == Owner::Operator && a.owner != Owner::Operator)
    {
        b
    } else {
        a
    };
    Verdict {
        sensitive,
        ..winner
    }
}

impl Verdict {
    /// Whether `need` may go ahead on the origin of `url`, which this verdict is about.
    pub fn gate(&self, need: Need, url: &str) -> Gate {
        // Loading a blank page shows nothing of anyone's: it is never refused. (Reading or
        // acting on one follows the rules for URLs without an origin: a blank page a site
        // made holds what that site put there.)
        if need == Need::Load && url.trim().eq_ignore_ascii_case("about:blank") {
            return Gate::Allowed;
        }
        let origin = UrlOrigin::of(url).map_or_else(|| url.to_owned(), |o| o.to_string());
        let by = format!("{} (rule `{}`)", self.owner, self.rule);
        match (self.access, need) {
            (Access::Deny, _) => Gate::Blocked(format!(
                "{by} does not let agents load, read or act on {origin}."
            )),
            (Access::Read, Need::Act) => Gate::Blocked(format!(
                "{by} lets agents only read {origin}: no clicks, typing or navigation from it."
            )),
            (_, Need::SensitiveRead) if self.sensitive == Sensitive::Deny => {
                Gate::Blocked(format!(
                    "{by} does not allow sensitive reads (cookies, storage, response bodies, hidden \
                 values, raw HTML) on {origin}; other reads work."
                ))
            }
            (Access::Ask, Need::Act) => Gate::Ask,
            _ => Gate::Allowed,
        }
    }
}

impl Verdict {
    /// Whether `need` may go ahead while `package` is in the foreground of a device, which
    /// this verdict is about. Loading means opening the app.
    pub fn gate_app(&self, need: Need, package: &str) -> Gate {
        let by = format!("{} (rule `{}`)", self.owner, self.rule);
        match (self.access, need) {
            (Access::Deny, _) => Gate::Blocked(format!(
                "{by} does not let agents open, read or act in the app {package}."
            )),
            (Access::Read, Need::Act) => Gate::Blocked(format!(
                "{by} lets agents only read the app {package}: no taps, typing or swipes in it."
            )),
            (Access::Ask, Need::Act) => Gate::Ask,
            _ => Gate::Allowed,
        }
    }
}

/// A policy that cannot be used, and why (for a person: the file's or popup's words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError(pub String);

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PolicyError {}

/// Which origins a rule covers: `*` (every URL), or `SCHEME://HOST[:PORT]` where the scheme is
/// `http`, `https`, `file` or `*` (http and https), the host is a name, an IP address, `*`, or
/// `*.example.com` (example.com and every name under it), and a left-out port is any port.
/// `file://` covers every file URL. Names are compared without case.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct OriginPattern {
    text: String,
    scheme: SchemePattern,
    host: HostPattern,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum SchemePattern {
    Any,
    Web,
    Is(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum HostPattern {
    Any,
    Under(String),
    Is(String),
}

impl OriginPattern {
    /// Parses a pattern, saying what is wrong with one that is not.
    pub fn parse(text: &str) -> Result<OriginPattern, PolicyError> {
        let bad = |why: &str| PolicyError(format!("origin pattern `{text}`: {why}"));
        let lower = text.trim().to_ascii_lowercase();
        if lower == "*" {
            return Ok(OriginPattern {
                text: lower,
                scheme: SchemePattern::Any,
                host: HostPattern::Any,
                port: None,
            });
        }
        let (scheme, rest) = lower
            .split_once("://")
            .ok_or_else(|| bad("write SCHEME://HOST[:PORT], e.g. https://*.example.com, or *"))?;
        let scheme = match scheme {
            "*" => SchemePattern::Web,
            "http" | "https" | "file" => SchemePattern::Is(scheme.to_owned()),
            _ => return Err(bad("the scheme is http, https, file or *")),
        };
        if scheme == SchemePattern::Is("file".into()) {
            if !rest.is_empty() && rest != "*" {
                return Err(bad("file URLs have no host: write file://"));
            }
            return Ok(OriginPattern {
                text: "file://".into(),
                scheme,
                host: HostPattern::Any,
                port: None,
            });
        }
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', '@']) {
            return Err(bad("an origin has no path, query, fragment or user"));
        }
        let (host, port) = split_port(rest).map_err(|why| bad(&why))?;
        let host = host.strip_suffix('.').unwrap_or(host);
        let host = if host == "*" {
            HostPattern::Any
        } else if let Some(domain) = host.strip_prefix("*.") {
            check_host(domain).map_err(|why| bad(&why))?;
            HostPattern::Under(domain.to_owned())
        } else {
            check_host(host).map_err(|why| bad(&why))?;
            HostPattern::Is(host.to_owned())
        };
        Ok(OriginPattern {
            text: lower.strip_suffix('/').unwrap_or(&lower).to_owned(),
            scheme,
            host,
            port,
        })
    }

    fn matches(&self, origin: &UrlOrigin) -> bool {
        let scheme = match &self.scheme {
            SchemePattern::Any => true,
            SchemePattern::Web => origin.scheme == "http" || origin.scheme == "https",
            SchemePattern::Is(scheme) => *scheme == origin.scheme,
        };
        let host = match &self.host {
            HostPattern::Any => true,
            HostPattern::Is(host) => *host == origin.host,
            HostPattern::Under(domain) => {
                origin.host == *domain
                    || origin
                        .host
                        .strip_suffix(domain.as_str())
                        .is_some_and(|head| head.ends_with('.'))
            }
        };
        scheme && host && self.port.is_none_or(|port| Some(port) == origin.port)
    }
}

fn split_port(hostport: &str) -> Result<(&str, Option<u16>), String> {
    // An IPv6 literal keeps its colons inside brackets.
    let colon = match hostport.rfind(']') {
        Some(end) => hostport[end..].find(':').map(|at| end + at),
        None => hostport.rfind(':'),
    };
    match colon {
        Some(at) => {
            let port = hostport[at + 1..]
                .parse::<u16>()
                .map_err(|_| format!("`{}` is not a port", &hostport[at + 1..]))?;
            Ok((&hostport[..at], Some(port)))
        }
        None => Ok((hostport, None)),
    }
}

fn check_host(host: &str) -> Result<(), String> {
    let ok = !host.is_empty()
        && !host.contains('*')
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '[' | ']' | ':'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{host}` is not a host name (a wildcard only as a leading `*.`)"
        ))
    }
}

impl TryFrom<String> for OriginPattern {
    type Error = PolicyError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        OriginPattern::parse(&text)
    }
}

impl From<OriginPattern> for String {
    fn from(pattern: OriginPattern) -> String {
        pattern.text
    }
}

impl fmt::Display for OriginPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A URL's origin as rules see it: scheme, lower-case host, port (the scheme's default when
/// left out). `blob:`, `filesystem:` and `view-source:` URLs are judged by the URL inside; URLs
/// without an origin (`about:`,
/// `data:`, `chrome:`) match only `*` rules and the default.
#[derive(Debug, Clone, PartialEq, Eq)]
struct UrlOrigin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

/// What a URL is to the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Judged {
    /// A web page's or a file's origin.
    Origin(UrlOrigin),
    /// No origin (`about:`, `data:`, …): only `*` rules and the default apply.
    NoOrigin,
    /// An http(s) URL whose host this parser cannot read the way Chrome will: denied, since
    /// Chrome might take it for a host a rule denies.
    Unreadable,
}

impl UrlOrigin {
    fn of(url: &str) -> Option<UrlOrigin> {
        match UrlOrigin::judge(url) {
            Judged::Origin(origin) => Some(origin),
            _ => None,
        }
    }

    /// Reads `url` the way a browser's URL parser does for what the rules compare: tabs and
    /// newlines are dropped, `\\` is a `/` and any number of slashes may follow the scheme, the
    /// host is percent-decoded, lower-cased and loses one trailing dot, an empty port is the
    /// default one, and a numeric IPv4 host in any of its spellings (`2130706433`, `0x7f.1`)
    /// becomes the dotted one. A host with anything else (non-ASCII letters, `%`, spaces) is
    /// [`Judged::Unreadable`].
    fn judge(url: &str) -> Judged {
        let url: String = url
            .trim_matches(|c: char| c <= ' ')
            .chars()
            .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
            .collect();
        // A URL that shows another one is judged by the one it shows: a blob's creator,
        // `filesystem:` storage, and `view-source:` (which a person may open on a file or a
        // denied page, and which would otherwise have no origin at all).
        let mut url = url.as_str();
        while let Some(inner) = ["blob:", "filesystem:", "view-source:"]
            .iter()
            .find_map(|prefix| {
                url.get(..prefix.len())
                    .filter(|head| head.eq_ignore_ascii_case(prefix))
                    .map(|_| &url[prefix.len()..])
            })
        {
            url = inner;
        }
        let Some((scheme, rest)) = url.split_once(':') else {
            return Judged::NoOrigin;
        };
        let scheme = scheme.to_ascii_lowercase();
        match scheme.as_str() {
            "file" => Judged::Origin(UrlOrigin {
                scheme,
                host: String::new(),
                port: None,
            }),
            "http" | "https" => {
                let rest = rest.trim_start_matches(['/', '\\']);
                let authority = rest.split(['/', '\\', '?', '#']).next().unwrap_or_default();
                let hostport = authority.rsplit('@').next().unwrap_or_default();
                let Ok((host, port)) = split_port_lenient(hostport) else {
                    return Judged::Unreadable;
                };
                let Some(host) = canonical_host(host) else {
                    return Judged::Unreadable;
                };
                let default = if scheme == "https" { 443 } else { 80 };
                Judged::Origin(UrlOrigin {
                    host,
                    port: Some(port.unwrap_or(default)),
                    scheme,
                })
            }
            _ => Judged::NoOrigin,
        }
    }
}

/// [`split_port`], but an empty port (`host:`) is no port, as browsers read it.
fn split_port_lenient(hostport: &str) -> Result<(&str, Option<u16>), String> {
    match hostport.strip_suffix(':') {
        Some(host) if !host.ends_with(']') || host.starts_with('[') => Ok((host, None)),
        _ => split_port(hostport),
    }
}

/// A host as a browser canonicalises it, or `None` when this parser cannot be sure how a
/// browser would read it.
fn canonical_host(host: &str) -> Option<String> {
    // Percent-decoding (ASCII only: anything else would need IDNA mapping).
    let mut bytes = Vec::with_capacity(host.len());
    let raw = host.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' {
            let hex = std::str::from_utf8(raw.get(i + 1..i + 3)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            bytes.push(raw[i]);
            i += 1;
        }
    }
    let host = String::from_utf8(bytes).ok()?.to_ascii_lowercase();
    if host.starts_with('[') {
        let inner = host.strip_prefix('[')?.strip_suffix(']')?;
        let ok = !inner.is_empty()
            && inner
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.');
        return ok.then_some(host);
    }
    let host = host.strip_suffix('.').unwrap_or(&host).to_owned();
    let plain = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if !plain || host.contains("..") {
        return None;
    }
    match ipv4(&host) {
        Ipv4::Address(address) => Some(address),
        Ipv4::NotOne => Some(host),
        Ipv4::Invalid => None,
    }
}

enum Ipv4 {
    Address(String),
    NotOne,
    Invalid,
}

/// A browser's reading of a numeric host: one to four parts, each decimal, `0x` hex or `0`
/// octal, the last filling the remaining bytes. A host whose last part is a number but which is
/// no valid address is invalid (browsers refuse it too).
fn ipv4(host: &str) -> Ipv4 {
    fn number(part: &str) -> Option<u64> {
        if part.is_empty() {
            return None;
        }
        if let Some(hex) = part.strip_prefix("0x") {
            return if hex.is_empty() {
                Some(0)
            } else {
                u64::from_str_radix(hex, 16).ok()
            };
        }
        if part.len() > 1 && part.starts_with('0') {
            return u64::from_str_radix(&part[1..], 8).ok();
        }
        part.parse().ok()
    }
    let parts: Vec<&str> = host.split('.').collect();
    let last = parts.last().copied().unwrap_or_default();
    if number(last).is_none() {
        return Ipv4::NotOne;
    }
    let Some(numbers) = parts
        .iter()
        .map(|p| number(p))
        .collect::<Option<Vec<u64>>>()
    else {
        return Ipv4::Invalid;
    };
    if numbers.len() > 4 || numbers[..numbers.len() - 1].iter().any(|&n| n > 255) {
        return Ipv4::Invalid;
    }
    let rest = 4 - (numbers.len() - 1);
    let last = numbers[numbers.len() - 1];
    if last >= 1u64 << (8 * rest) {
        return Ipv4::Invalid;
    }
    let mut value: u64 = last;
    for (k, &n) in numbers[..numbers.len() - 1].iter().enumerate() {
        value += n << (8 * (3 - k));
    }
    Ipv4::Address(format!(
        "{}.{}.{}.{}",
        (value >> 24) & 255,
        (value >> 16) & 255,
        (value >> 8) & 255,
        value & 255
    ))
}

impl fmt::Display for UrlOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.scheme == "file" {
            return f.write_str("file://");
        }
        write!(f, "{}://{}", self.scheme, self.host)?;
        let default = if self.scheme == "https" { 443 } else { 80 };
        match self.port {
            Some(port) if port != default => write!(f, ":{port}"),
            _ => Ok(()),
        }
    }
}

/// The origin of `url` as a person reads it (`https://mail.example.com`), or `None` for a URL
/// without one.
pub fn origin_of(url: &str) -> Option<String> {
    UrlOrigin::of(url).map(|origin| origin.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(lines: &str) -> Policy {
        Policy::from_lines(lines).unwrap()
    }

    fn access(policy: &Policy, url: &str) -> Access {
        policy.verdict(url, Owner::Operator).access
    }

    #[test]
    fn the_first_matching_rule_decides_and_the_default_covers_the_rest() {
        let p = policy(
            "https://mail.example.com read\nhttps://*.example.com deny\nhttp://localhost:8080 ask\n\
             default act sensitive=deny",
        );
        assert_eq!(access(&p, "https://mail.example.com/inbox"), Access::Read);
        assert_eq!(access(&p, "https://example.com/"), Access::Deny);
        assert_eq!(access(&p, "https://a.b.example.com/x"), Access::Deny);
        assert_eq!(access(&p, "https://notexample.com/"), Access::Act);
        assert_eq!(access(&p, "http://example.com/"), Access::Act, "scheme");
        assert_eq!(access(&p, "http://localhost:8080/a"), Access::Ask);
        assert_eq!(access(&p, "http://localhost:8081/a"), Access::Act, "port");
        assert_eq!(access(&p, "https://user:pw@EXAMPLE.com:443/"), Access::Deny);
        assert_eq!(access(&p, "about:blank"), Access::Act);
        let verdict = p.verdict("https://mail.example.com", Owner::Browser);
        assert_eq!(verdict.rule, "https://mail.example.com");
        assert_eq!(verdict.sensitive, Sensitive::Deny, "the default's");
    }

    #[test]
    fn patterns_are_checked() {
        for bad in [
            "example.com",
            "ftp://x.com",
            "https://x.com/path",
            "https://a.*.com",
            "https://x.com:99999",
            "file://host",
            "https://",
        ] {
            assert!(OriginPattern::parse(bad).is_err(), "{bad}");
        }
        for good in [
            "*",
            "*://*",
            "https://*",
            "file://",
            "http://127.0.0.1:8000",
            "https://[::1]:9",
            "HTTPS://Example.COM/",
        ] {
            assert!(OriginPattern::parse(good).is_ok(), "{good}");
        }
        assert_eq!(
            OriginPattern::parse("HTTPS://Example.COM/")
                .unwrap()
                .to_string(),
            "https://example.com"
        );
        let p = policy("file:// deny\n*://* read");
        assert_eq!(access(&p, "file:///etc/passwd"), Access::Deny);
        assert_eq!(access(&p, "http://x/"), Access::Read);
        assert_eq!(access(&p, "blob:https://x/1234"), Access::Read);
        assert_eq!(access(&p, "data:text/html,hi"), Access::Act);
        let error = Policy::from_lines("https://x.com allow").unwrap_err();
        assert!(error.0.contains("line 1"), "{error}");
    }

    #[test]
    fn lines_round_trip_and_json_is_the_same_policy() {
        let p = policy("https://*.bank.example deny\nhttps://mail.example.com read sensitive=deny");
        assert_eq!(Policy::from_lines(&p.to_lines()).unwrap(), p);
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<Policy>(&json).unwrap(), p);
        assert!(
            serde_json::from_str::<Policy>(r#"{"rules":[{"origin":"x","access":"act"}]}"#).is_err()
        );
    }

    #[test]
    fn the_stricter_owner_wins_both_ways() {
        let operator = policy("https://a.example read\nhttps://b.example act sensitive=deny");
        let browser = policy("https://a.example act\nhttps://b.example deny");
        for url in ["https://a.example/", "https://b.example/"] {
            let v = stricter(
                operator.verdict(url, Owner::Operator),
                browser.verdict(url, Owner::Browser),
            );
            let other_order = stricter(
                browser.verdict(url, Owner::Browser),
                operator.verdict(url, Owner::Operator),
            );
            assert_eq!(v, other_order, "{url}");
        }
        let a = stricter(
            operator.verdict("https://a.example/", Owner::Operator),
            browser.verdict("https://a.example/", Owner::Browser),
        );
        assert_eq!((a.access, a.owner), (Access::Read, Owner::Operator));
        let b = stricter(
            operator.verdict("https://b.example/", Owner::Operator),
            browser.verdict("https://b.example/", Owner::Browser),
        );
        assert_eq!((b.access, b.owner), (Access::Deny, Owner::Browser));
        assert_eq!(b.sensitive, Sensitive::Deny);
    }

    #[test]
    fn gates_follow_the_levels() {
        let p = policy("https://d.x deny\nhttps://r.x read\nhttps://a.x ask sensitive=deny");
        let gate = |url: &str, need| p.verdict(url, Owner::Operator).gate(need, url);
        assert!(matches!(gate("https://d.x/", Need::Load), Gate::Blocked(_)));
        assert!(matches!(gate("https://d.x/", Need::Read), Gate::Blocked(_)));
        assert_eq!(gate("https://r.x/", Need::Read), Gate::Allowed);
        assert_eq!(gate("https://r.x/", Need::Load), Gate::Allowed);
        assert!(matches!(gate("https://r.x/", Need::Act), Gate::Blocked(_)));
        assert_eq!(gate("https://a.x/", Need::Act), Gate::Ask);
        assert!(matches!(
            gate("https://a.x/", Need::SensitiveRead),
            Gate::Blocked(_)
        ));
        assert_eq!(gate("https://o.x/", Need::Act), Gate::Allowed);
        let closed = policy("default deny");
        let blank = closed.verdict("about:blank", Owner::Browser);
        assert_eq!(blank.gate(Need::Load, "about:blank"), Gate::Allowed);
        let Gate::Blocked(why) = gate("https://d.x/page?q=1", Need::Read) else {
            panic!()
        };
        assert!(
            why.contains("rule `https://d.x`") && why.contains("https://d.x"),
            "{why}"
        );
        assert!(!why.contains("page?q"), "{why}");
    }

    #[test]
    fn urls_are_read_as_a_browser_reads_them_and_doubtful_hosts_are_denied() {
        let p = policy("https://*.bank.example deny\nhttp://127.0.0.1 read\ndefault act");
        // Spellings a browser takes for bank.example.
        for url in [
            "https://bank.example\\",
            "https://bank.example:/",
            "https://bank.example./x",
            "https://www.bank.example.:443/",
            "https:bank.example/",
            "https:\\\\bank.example/",
            "https://user@bank.example\\@evil.example/",
            "  https://bank.ex\tample/ ",
            "HTTPS://BANK.EXAMPLE/",
            "blob:https://bank.example/uuid",
            "view-source:https://bank.example/",
            "VIEW-SOURCE:view-source:https://bank.example/",
            "filesystem:https://bank.example/temporary/x",
        ] {
            assert_eq!(access(&p, url), Access::Deny, "{url}");
        }
        assert_eq!(
            access(
                &Policy::default().denying_files(),
                "view-source:file:///etc/passwd"
            ),
            Access::Deny,
            "a file's source is a file"
        );
        // Spellings this parser cannot be sure of are denied.
        for url in [
            "https://bank%2Eexample/",
            "https://ｂａｎｋ.example/",
            "https://bank .example/",
            "https://1.2.3.256/",
        ] {
            let verdict = p.verdict(url, Owner::Operator);
            assert_eq!(verdict.access, Access::Deny, "{url}");
        }
        // Numeric spellings of one address are that address.
        for url in [
            "http://2130706433/",
            "http://0x7f.1/",
            "http://127.1/",
            "http://0177.0.0.1/",
        ] {
            assert_eq!(access(&p, url), Access::Read, "{url}");
        }
        assert_eq!(access(&p, "https://notbank.example/"), Access::Act);
        assert_eq!(access(&p, "https://bank.example.evil.com/"), Access::Act);
        // A blank page loads anywhere; reading one follows the default.
        let closed = policy("default deny");
        let blank = closed.verdict("about:blank", Owner::Browser);
        assert_eq!(blank.gate(Need::Load, "about:blank"), Gate::Allowed);
        assert!(matches!(
            blank.gate(Need::Read, "about:blank"),
            Gate::Blocked(_)
        ));
    }

    #[test]
    fn app_rules_match_packages_and_their_children() {
        let policy: Policy = serde_json::from_str(
            r#"{"default":"act","apps":[
                {"package":"com.bank.*","access":"deny"},
                {"package":"com.android.settings","access":"read"}]}"#,
        )
        .unwrap();
        let access = |package: &str| policy.app_verdict(package, Owner::Operator).access;
        assert_eq!(access("com.bank"), Access::Deny);
        assert_eq!(access("com.bank.mobile"), Access::Deny);
        assert_eq!(access("com.bankrupt"), Access::Act);
        assert_eq!(
            access("com.Bank.Mobile"),
            Access::Deny,
            "names compare without case"
        );
        assert_eq!(access("com.android.settings"), Access::Read);
        assert_eq!(access("com.android.settings.x"), Access::Act);
        assert!(!policy.allows_everything());
        for bad in [
            "",
            "com..bank",
            "com.bank.",
            "1com.x",
            "com.bank*",
            "com/bank",
        ] {
            assert!(PackagePattern::parse(bad).is_err(), "{bad:?}");
        }
        let read = policy.app_verdict("com.android.settings", Owner::Device);
        assert!(
            matches!(read.gate_app(Need::Act, "com.android.settings"), Gate::Blocked(why) if why.contains("device owner"))
        );
        assert_eq!(
            read.gate_app(Need::Read, "com.android.settings"),
            Gate::Allowed
        );
    }

    #[test]
    fn defaults() {
        assert!(Policy::default().allows_everything());
        let hosted = Policy::hosted_default();
        assert!(!hosted.allows_everything());
        assert_eq!(
            hosted.verdict("https://x/", Owner::Operator).sensitive,
            Sensitive::Deny
        );
    }

    #[test]
    fn denying_files_comes_before_every_rule_of_the_policy() {
        let open: Policy = Policy::from_lines("default deny\nfile:// act").unwrap();
        assert_eq!(access(&open, "file:///home/me/.ssh/id_rsa"), Access::Act);
        let closed = open.denying_files();
        for url in [
            "file:///home/me/.ssh/id_rsa",
            "FILE:///etc/passwd",
            "file://host/share",
        ] {
            assert_eq!(access(&closed, url), Access::Deny, "{url}");
        }
        assert_eq!(access(&closed, "https://example.com/"), Access::Deny);
        assert_eq!(
            access(&Policy::default().denying_files(), "https://example.com/"),
            Access::Act
        );
        assert!(!Policy::default().denying_files().allows_everything());
        let twice = closed.clone().denying_files();
        assert_eq!(twice, closed);
    }
}
