//! The per-tenant cache partition at the gateway (issue 20 item 5): the Lua filter of each
//! EnvoyExtensionPolicy emitted for the fixture fleet with a shared model added, run by LuaJIT (the Lua runtime Envoy embeds) against a stand-in
//! of Envoy's stream handle (`tests/serving/stream_handle.lua`), with every forwarded body read
//! the way the model server reads it (`tests/serving/judge.py`, Python's `json`, which vLLM's
//! and SGLang's FastAPI servers parse request bodies with).
//!
//! The property, tried as an attacker would: whatever body a tenant sends, either the gateway
//! refuses it, or the top-level `cache_salt` the server reads is that tenant's value, under both
//! last-wins and first-wins parsing of a repeated key, and every other member is the client's.
//! And the filter never raises a Lua error (Envoy logs it and lets the request through).
//!
//! LuaJIT comes from Debian (`apt-get install -y luajit`, which `.ci/run` installs): without it
//! these tests print why they are skipped and pass, but under `CI=true` they fail.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::print_stderr
)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The emitted filter of one tenant of one model, and the salt the plan gives it.
struct Filter {
    file: String,
    script: String,
    salt: String,
}

/// The serving block added to the fixture fleet's `us-east-1a` (both tenants are `mig`, so they
/// may share the prefix cache), as the example fleet declares it.
const SERVING: &str = r#"
    serving {
        gateway "envoy-gateway" name="inference" namespace="envoy-gateway-system" tenant-header="x-tenantc-tenant" claim="tenant"
        model "llama-70b" stack="vllm" namespace="serving-llama" service="llama-70b" port=8000 requests-per-second=200 concurrency=64 prefix-cache="shared" {
            tenant "acme-serving" requests-per-second=120 concurrency=40
            tenant "globex-vision" requests-per-second=60 concurrency=24
        }
    }
"#;

/// Every cache-salt filter of the fixture fleet with a shared model in `us-east-1a`, with the
/// plan's salt of its tenant.
fn fleet_filters() -> Vec<Filter> {
    let root = tempfile::tempdir().unwrap();
    support::copy_fleet(root.path());
    let cell_file = root.path().join("cells/us-east-1a.kdl");
    let cell = std::fs::read_to_string(&cell_file).unwrap();
    let end = cell.rfind('}').expect("the cell block closes");
    std::fs::write(
        &cell_file,
        format!("{}{SERVING}{}", &cell[..end], &cell[end..]),
    )
    .unwrap();
    let compilation = support::compile_root(root.path());
    let tree = compilation.output.as_ref().expect("the fleet compiles");
    let plan = compilation.plan.as_ref().expect("a plan");
    let mut filters = Vec::new();
    for cell in &plan.cells {
        for tenant in &cell.tenants {
            for serving in &tenant.serving {
                let name = format!("{}-{}", serving.model, tenant.name);
                let file = format!("{}/serving/envoyextensionpolicy-{name}.yaml", cell.name);
                let Some(bytes) = tree.get(&file) else {
                    continue;
                };
                let text = String::from_utf8(bytes.clone()).unwrap();
                filters.push(Filter {
                    script: inline_script(&text),
                    salt: serving.cache.value.clone(),
                    file,
                });
            }
        }
    }
    filters
}

/// The `inline: |` block of an emitted policy.
fn inline_script(policy: &str) -> String {
    let start = policy
        .find("    inline: |\n")
        .unwrap_or_else(|| panic!("no inline script in\n{policy}"));
    let mut script = String::new();
    for line in policy[start..].lines().skip(1) {
        if line.is_empty() {
            script.push('\n');
        } else if let Some(code) = line.strip_prefix("      ") {
            script.push_str(code);
            script.push('\n');
        } else {
            break;
        }
    }
    script
}

fn luajit() -> Option<PathBuf> {
    let found = Command::new("luajit").arg("-v").output().ok()?;
    found.status.success().then(|| PathBuf::from("luajit"))
}

/// LuaJIT, or `None` when it is missing outside CI (the test then passes, saying why).
fn runtime() -> Option<PathBuf> {
    let found = luajit();
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "luajit is not installed, and CI must run the cache-salt filter: apt-get install -y luajit"
        );
        eprintln!(
            "skipped: luajit is not installed (apt-get install -y luajit); CI=true fails here"
        );
    }
    found
}

#[derive(Debug, PartialEq)]
enum Outcome {
    /// Forwarded; the server reads these salts (last-wins, first-wins) and the other members
    /// are the client's (`None` when the original was not a JSON object).
    Forwarded {
        last: Value,
        first: Value,
        rest_equal: Value,
    },
    /// Forwarded as it came (no body).
    Unchanged,
    /// Refused by the gateway with this status.
    Refused(String),
}

fn serving_dir() -> PathBuf {
    support::repo().join("tests/serving")
}

/// Runs `script` on a request with `body` (none for `None`).
fn run(lua: &Path, script: &str, body: Option<&[u8]>) -> Outcome {
    let scratch = tempfile::tempdir().unwrap();
    let script_path = scratch.path().join("filter.lua");
    std::fs::write(&script_path, script).unwrap();
    let body_in = scratch.path().join("in");
    let body_out = scratch.path().join("out");
    let body_arg = match body {
        Some(bytes) => {
            std::fs::write(&body_in, bytes).unwrap();
            body_in.to_str().unwrap().to_string()
        }
        None => "-".to_string(),
    };
    let ran = Command::new(lua)
        .arg(serving_dir().join("stream_handle.lua"))
        .arg(&script_path)
        .arg(&body_arg)
        .arg(&body_out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&ran.stdout).to_string();
    assert!(
        ran.status.success(),
        "luajit failed: {stdout}{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let line = stdout.lines().next().unwrap_or_default().to_string();
    if let Some(rest) = line.strip_prefix("responded ") {
        return Outcome::Refused(rest.split(' ').next().unwrap().to_string());
    }
    match line.as_str() {
        "forwarded-unchanged" => Outcome::Unchanged,
        "forwarded" => {
            let judged = Command::new("python3")
                .arg(serving_dir().join("judge.py"))
                .arg(&body_arg)
                .arg(&body_out)
                .output()
                .unwrap();
            assert!(
                judged.status.success(),
                "{}",
                String::from_utf8_lossy(&judged.stderr)
            );
            let verdict: Value = serde_json::from_slice(&judged.stdout).unwrap();
            Outcome::Forwarded {
                last: verdict["last"].clone(),
                first: verdict["first"].clone(),
                rest_equal: verdict["rest_equal"].clone(),
            }
        }
        _ => panic!("the filter failed open (Envoy would forward the request): {stdout}"),
    }
}

/// Bodies a tenant might send to set, smuggle or keep its own salt, and the ones it must be
/// able to send. `true`: the body must be forwarded with the tenant's salt; `false`: refused.
const ATTACKS: &[(&str, &[u8], bool)] = &[
    (
        "a plain completion",
        br#"{"model":"m","prompt":"hi"}"#,
        true,
    ),
    (
        "a chat completion with nested objects",
        br#"{"model":"m","messages":[{"role":"user","content":"a {\"b\": [1]}"}],"max_tokens":3}"#,
        true,
    ),
    ("an empty object", b"{}", true),
    ("an empty object in whitespace", b"  \r\n\t{ \n }\n ", true),
    (
        "its own salt",
        br#"{"cache_salt":"tenantc:us-east-1a:llama-70b:globex-vision","prompt":"x"}"#,
        false,
    ),
    (
        "its own salt last",
        br#"{"prompt":"x","cache_salt":"other"}"#,
        false,
    ),
    (
        "its own salt escaped",
        br#"{"cache\u005fsalt":"other"}"#,
        false,
    ),
    (
        "its own salt escaped upper",
        br#"{"\u0063ache_salt":"other"}"#,
        false,
    ),
    (
        "its own salt escaped upper hex",
        br#"{"cache\u005Fsalt":"other"}"#,
        false,
    ),
    (
        "a key ending in an escaped backslash before its salt",
        br#"{"p\\":"q\\","cache_salt":"other"}"#,
        false,
    ),
    (
        "a salt after a string holding escaped quotes",
        br#"{"prompt":"say \"}\" and \"{\"","cache_salt":"other"}"#,
        false,
    ),
    (
        "a salt in a nested object only",
        br#"{"messages":[{"cache_salt":"other"}],"extra":{"cache_salt":"other"}}"#,
        true,
    ),
    (
        "a salt inside a prompt string",
        br#"{"prompt":"\"cache_salt\":\"other\"}"}"#,
        true,
    ),
    (
        "a different key that looks alike",
        br#"{"Cache_Salt":"other","cache_salt2":1}"#,
        true,
    ),
    (
        "a second object after the first",
        br#"{"a":1}{"cache_salt":"other"}"#,
        false,
    ),
    ("an array", br#"[{"cache_salt":"other"}]"#, false),
    ("a string", br#""cache_salt""#, false),
    ("an unterminated object", br#"{"prompt":"x""#, false),
    ("an unterminated string", br#"{"prompt":"x}"#, false),
    ("mismatched brackets", br#"{"a":[1}]"#, false),
    ("a closing bracket for the object", br#"{"a":1]"#, false),
    ("an invalid escape", br#"{"cache\x5fsalt":"other"}"#, false),
    (
        "a short unicode escape",
        br#"{"cache\u5fsalt":"other"}"#,
        false,
    ),
    (
        "UTF-16 (Python's json decodes it)",
        b"{\0\"\0c\0a\0c\0h\0e\0_\0s\0a\0l\0t\0\"\0:\0\"\0o\0\"\0}\0",
        false,
    ),
    (
        "UTF-16 big-endian",
        b"\0{\0\"\0c\0a\0c\0h\0e\0_\0s\0a\0l\0t\0\"\0:\0\"\0o\0\"\0}",
        false,
    ),
    (
        "a byte-order mark",
        b"\xef\xbb\xbf{\"cache_salt\":\"other\"}",
        false,
    ),
    (
        "non-ASCII keys",
        "{\"ключ\":\"値\",\"\\u00e9\":1}".as_bytes(),
        true,
    ),
    ("not JSON", b"model=m&cache_salt=other", false),
];

fn expect_attacks(lua: &Path, filter: &Filter) -> Vec<String> {
    let mut wrong = Vec::new();
    for (what, body, forwarded) in ATTACKS {
        let outcome = run(lua, &filter.script, Some(body));
        let salt = Value::String(filter.salt.clone());
        let ok = match (&outcome, forwarded) {
            (
                Outcome::Forwarded {
                    last,
                    first,
                    rest_equal,
                },
                true,
            ) => *last == salt && *first == salt && *rest_equal == Value::Bool(true),
            (Outcome::Refused(status), false) => status == "400",
            _ => false,
        };
        if !ok {
            wrong.push(format!(
                "{}: {what}: expected {}, got {outcome:?}",
                filter.file,
                if *forwarded {
                    format!("forwarded with salt {}", filter.salt)
                } else {
                    "a 400".to_string()
                }
            ));
        }
    }
    wrong
}

#[test]
fn every_tenant_request_reaches_the_server_with_its_own_salt_or_is_refused() {
    let Some(lua) = runtime() else { return };
    let filters = fleet_filters();
    // The cell serves one model with a shared prefix cache to two tenants.
    assert_eq!(
        filters.len(),
        2,
        "one filter per tenant of the shared model"
    );
    assert_ne!(
        filters[0].salt, filters[1].salt,
        "each tenant has its own salt"
    );
    let mut wrong = Vec::new();
    for filter in &filters {
        assert!(
            filter.script.contains(&format!("\"{}\"", filter.salt)),
            "{} carries its tenant's salt",
            filter.file
        );
        wrong.extend(expect_attacks(&lua, filter));
        // A request without a body (a GET of the model list) passes as it is.
        assert_eq!(run(&lua, &filter.script, None), Outcome::Unchanged);
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_filter_survives_large_deep_and_random_bodies_without_a_lua_error() {
    let Some(lua) = runtime() else { return };
    let filter = &fleet_filters()[0];
    let salt = Value::String(filter.salt.clone());
    // 4 MiB of prompt, and 10,000 levels of nesting: no recursion, no error.
    let big = format!(
        "{{\"prompt\":\"{}\",\"n\":1}}",
        "tok \\\"en\\\" ".repeat(400_000)
    );
    let Outcome::Forwarded { last, first, .. } = run(&lua, &filter.script, Some(big.as_bytes()))
    else {
        panic!("a large prompt is forwarded");
    };
    assert_eq!((last, first), (salt.clone(), salt.clone()));
    let deep = format!("{{\"a\":{}1{}}}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(matches!(
        run(&lua, &filter.script, Some(deep.as_bytes())),
        Outcome::Forwarded { .. }
    ));
    // Random bytes over the characters that matter to the scanner: each run either refuses or
    // forwards a body whose top-level salt, if the server can read it, is the tenant's.
    let alphabet: &[u8] = b"{}[]\",:\\u0aF_ cache_salt";
    let mut rng = support::Rng(0x5a17_c0de);
    for _ in 0..150 {
        let len = 1 + rng.below(40) as usize;
        let mut body: Vec<u8> = vec![b'{'];
        for _ in 0..len {
            body.push(alphabet[rng.below(alphabet.len() as u64) as usize]);
        }
        match run(&lua, &filter.script, Some(&body)) {
            Outcome::Forwarded { last, first, .. } => {
                for read in [last, first] {
                    assert!(
                        read == salt || read == Value::String("unparsable".to_string()),
                        "{:?} reached the server with salt {read}",
                        String::from_utf8_lossy(&body)
                    );
                }
            }
            Outcome::Refused(status) => assert_eq!(status, "400"),
            Outcome::Unchanged => panic!("a body was forwarded without the filter's salt"),
        }
    }
}

#[test]
fn the_filter_passes_envoy_gateways_validation_mocks() {
    // Envoy Gateway's strict validation runs envoy_on_request against mocks whose buffer is 10
    // bytes long and returns fixed bytes; the filter must finish without an error there.
    let Some(lua) = runtime() else { return };
    for filter in fleet_filters() {
        let scratch = tempfile::tempdir().unwrap();
        let script_path = scratch.path().join("filter.lua");
        std::fs::write(&script_path, &filter.script).unwrap();
        let body_in = scratch.path().join("in");
        std::fs::write(&body_in, b"{}").unwrap();
        let ran = Command::new(&lua)
            .arg(serving_dir().join("stream_handle.lua"))
            .arg(&script_path)
            .arg(&body_in)
            .arg(scratch.path().join("out"))
            .arg("validator")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&ran.stdout);
        assert!(stdout.starts_with("responded 400 "), "{stdout}");
    }
}

/// The emitted filter with one of its defences taken out, as a careless edit would.
fn weakened(script: &str, remove: &str, by: &str) -> String {
    assert!(script.contains(remove), "the filter has {remove:?}");
    script.replacen(remove, by, 1)
}

#[test]
fn a_filter_without_its_defences_is_caught() {
    let Some(lua) = runtime() else { return };
    let filter = &fleet_filters()[0];
    let broken = [
        // The client's own salt no longer refused: a first-wins reader takes it.
        (
            "no refusal of a client salt",
            weakened(
                &filter.script,
                "if key == \"cache_salt\" then",
                "if false then",
            ),
        ),
        // Escapes no longer decoded in keys: an escaped salt slips through.
        (
            "keys compared undecoded",
            weakened(
                &filter.script,
                "local key, after = read_string(s, i)",
                "local after = skip_string(s, i)\n        local key = after and string.sub(s, i + 1, after - 2)",
            ),
        ),
        // The salt never set: every body reaches the server with the client's salt or none.
        (
            "salt not set at all",
            weakened(&filter.script, "body:setBytes(", "tostring("),
        ),
        // The trailing-data check removed.
        (
            "trailing data accepted",
            weakened(
                &filter.script,
                "if string.find(s, \"%S\", i + 1) then",
                "if false then",
            ),
        ),
    ];
    for (what, script) in broken {
        let caught = Filter {
            file: what.to_string(),
            script,
            salt: filter.salt.clone(),
        };
        assert!(
            !expect_attacks(&lua, &caught).is_empty(),
            "{what}: the attacks no longer catch it"
        );
    }
}
