//! `warren export --format k8s`: the resources validate against the Topology
//! Operator's CRDs (tests/k8s/crds/), their names are valid and unique, no secret
//! gets in, the output is deterministic, and what the operator cannot express is
//! refused with nothing written.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::snapshot_settings;
use crate::support::{Capture, EXAMPLES, Run, SHOP_PASSWORDS, example, warren};

const CRDS: &str = "tests/k8s/crds";

/// The CRDs' schemas, compiled, by kind.
struct Crds {
    schemas: boon::Schemas,
    by_kind: Vec<(String, boon::SchemaIndex)>,
}

impl Crds {
    fn load() -> Crds {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(CRDS);
        let mut compiler = boon::Compiler::new();
        let mut kinds = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "yaml") {
                continue;
            }
            let crd: Value =
                serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let kind = crd["spec"]["names"]["kind"].as_str().unwrap().to_string();
            let version = crd["spec"]["versions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["name"] == "v1beta1")
                .unwrap_or_else(|| panic!("{} has no v1beta1", path.display()));
            let schema = strict(version["schema"]["openAPIV3Schema"].clone());
            let url = format!("https://warren.invalid/crd/{kind}.json");
            compiler.add_resource(&url, schema).unwrap();
            kinds.push((kind, url));
        }
        let mut schemas = boon::Schemas::new();
        let by_kind = kinds
            .into_iter()
            .map(|(kind, url)| {
                let index = compiler.compile(&url, &mut schemas).unwrap();
                (kind, index)
            })
            .collect();
        Crds { schemas, by_kind }
    }

    /// `Err` with the validator's words unless `document` validates against its
    /// kind's CRD.
    fn check(&self, document: &Value) -> Result<(), String> {
        let kind = document["kind"].as_str().ok_or("no kind")?;
        let (_, index) = self
            .by_kind
            .iter()
            .find(|(k, _)| k == kind)
            .ok_or_else(|| format!("no CRD for kind {kind}"))?;
        self.schemas
            .validate(document, *index)
            .map_err(|e| format!("{e:#}"))
    }
}

/// An OpenAPI v3 structural schema as a JSON Schema that is stricter than the API
/// server: `x-kubernetes-*` vendor keys dropped, `nullable` as a `null` type, and
/// every object with `properties` (and no `x-kubernetes-preserve-unknown-fields`)
/// closed with `additionalProperties: false`. The API server does not reject an
/// unknown field, it prunes it: a misspelt field would vanish without a word, so the
/// test refuses it.
fn strict(schema: Value) -> Value {
    match schema {
        Value::Object(map) => {
            let preserve =
                map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
            let nullable = map.get("nullable") == Some(&Value::Bool(true));
            let mut out: serde_json::Map<String, Value> = map
                .into_iter()
                .filter(|(k, _)| !k.starts_with("x-kubernetes-") && k != "nullable")
                .map(|(k, v)| (k, strict(v)))
                .collect();
            if nullable && let Some(Value::String(t)) = out.get("type").cloned() {
                out.insert("type".into(), serde_json::json!([t, "null"]));
            }
            if out.contains_key("properties") && !preserve {
                out.entry("additionalProperties")
                    .or_insert(Value::Bool(false));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(strict).collect()),
        other => other,
    }
}

/// The YAML documents of an export, parsed.
fn documents(yaml: &str) -> Vec<Value> {
    yaml.split("\n---\n")
        .skip(1)
        .map(|text| serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}")))
        .collect()
}

fn export(spec: &str, extra: &[&str]) -> Run {
    let mut args = vec!["export", spec, "--format", "k8s", "-o", "-"];
    args.extend_from_slice(extra);
    warren(&args).run()
}

/// A DNS-1123 label: what every `metadata.name` warren writes keeps to (stricter
/// than the subdomain the operator's kinds accept).
fn is_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.iter().all(|b| alnum(b) || *b == b'-')
        && alnum(&bytes[0])
        && alnum(&bytes[bytes.len() - 1])
}

/// Asserts that every document validates, and that every name is a label, unique
/// per kind. Returns the documents.
#[track_caller]
fn check_all(crds: &Crds, what: &str, yaml: &str) -> Vec<Value> {
    let documents = documents(yaml);
    assert!(!documents.is_empty(), "{what}: no resources");
    let mut names = BTreeSet::new();
    for document in &documents {
        if let Err(e) = crds.check(document) {
            panic!(
                "{what}: {} does not validate: {e}\n{document:#}",
                document["metadata"]["name"]
            );
        }
        let name = document["metadata"]["name"].as_str().unwrap();
        assert!(is_label(name), "{what}: {name:?} is not a DNS-1123 label");
        let kind = document["kind"].as_str().unwrap();
        assert!(
            names.insert((kind.to_string(), name.to_string())),
            "{what}: {kind} {name} twice"
        );
        assert_eq!(
            document["spec"]["rabbitmqClusterReference"]["name"],
            "rabbitmq"
        );
    }
    documents
}

#[test]
fn every_example_exports_resources_that_validate_against_the_operators_crds() {
    let crds = Crds::load();
    for name in EXAMPLES {
        let run = export(&example(name), &["--cluster", "rabbitmq"]).expect(0);
        let documents = check_all(&crds, name, &run.stdout);
        // The order: vhosts first, and every kind in one run.
        let kinds: Vec<&str> = documents
            .iter()
            .map(|d| d["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds[0], "Vhost", "{name}");
        let mut runs = kinds.clone();
        runs.dedup();
        let distinct: BTreeSet<&str> = kinds.iter().copied().collect();
        assert_eq!(
            runs.len(),
            distinct.len(),
            "{name}: kinds interleave: {runs:?}"
        );
        let order = [
            "Vhost",
            "Exchange",
            "Queue",
            "Binding",
            "Policy",
            "OperatorPolicy",
            "User",
            "Permission",
            "TopicPermission",
        ];
        let positions: Vec<usize> = runs
            .iter()
            .map(|k| order.iter().position(|o| o == k).unwrap())
            .collect();
        assert!(positions.is_sorted(), "{name}: {runs:?}");
    }
}

/// The check is not vacuous: a misspelt field (which the API server would prune
/// without a word) and a value outside an enum fail it.
#[test]
fn the_crd_check_refuses_a_misspelt_field_and_a_value_outside_an_enum() {
    let crds = Crds::load();
    let run = export(&example("ladder"), &["--cluster", "rabbitmq"]).expect(0);
    let documents = documents(&run.stdout);
    let queue = documents.iter().find(|d| d["kind"] == "Queue").unwrap();
    crds.check(queue).unwrap();
    let mut misspelt = queue.clone();
    misspelt["spec"]["durabel"] = Value::Bool(true);
    assert!(crds.check(&misspelt).is_err());
    let policy = documents.iter().find(|d| d["kind"] == "Policy").unwrap();
    let mut outside = policy.clone();
    outside["spec"]["applyTo"] = Value::from("everything");
    assert!(crds.check(&outside).is_err());
}

#[test]
fn the_namespace_is_set_on_every_resource_when_given() {
    let run = export(
        &example("shop"),
        &["--cluster", "rabbitmq", "--namespace", "shop-prod"],
    )
    .expect(0);
    for document in documents(&run.stdout) {
        assert_eq!(
            document["metadata"]["namespace"], "shop-prod",
            "{document:#}"
        );
    }
    let run = export(&example("shop"), &["--cluster", "rabbitmq"]).expect(0);
    assert!(
        documents(&run.stdout)
            .iter()
            .all(|d| d["metadata"].get("namespace").is_none())
    );
}

#[test]
fn two_exports_are_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    for name in EXAMPLES {
        let files: Vec<_> = (0..2)
            .map(|n| {
                let file = dir.path().join(format!("{name}-{n}.yaml"));
                export_to(&example(name), &file).expect(0);
                std::fs::read(&file).unwrap()
            })
            .collect();
        assert_eq!(files[0], files[1], "{name}");
    }
}

fn export_to(spec: &str, file: &Path) -> Run {
    warren(&[
        "export",
        spec,
        "--format",
        "k8s",
        "--cluster",
        "rabbitmq",
        "-o",
        file.to_str().unwrap(),
    ])
    .run()
}

fn spec_file(dir: &Path, text: &str) -> String {
    let path = dir.join("spec.yaml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// Users with passwords and hashes, a shovel and a federation upstream with URIs:
/// every kind the operator has, validated, with no password, hash or URI in it.
const SECRETS_SPEC: &str = r#"version: 1
name: secrets
vhosts:
  shop:
    default_queue_type: quorum
    queues:
      orders: {}
    operator_policies:
      cap:
        pattern: '^orders$'
        apply_to: queues
        definition: { max-length: 1000 }
    parameters:
      federation-upstream:
        origin:
          uri: "amqp://fed-user:fed-secret-pw@origin.example"
          expires: 3600000
          max-hops: 1
      shovel:
        drain-legacy:
          src-uri: { env: LEGACY_URI }
          src-queue: legacy
          dest-uri: "amqp://shovel-user:shovel-secret-pw@shop.example"
          dest-queue: orders
          delete-after: 10
users:
  orders_app:
    password: { env: K8S_TEST_PASSWORD }
    tags: [management]
    limits: { max_connections: 50, max_channels: 500 }
    permissions:
      shop: { configure: "^orders$", write: ".*", read: ".*" }
  hashed:
    password_hash: "kI3GCqW5JLMJa4iX1lo7X4D6XbYqlLgxIs30+P6tENUV2POR"
    hashing_algorithm: sha512
  certificate: 
    password_hash: ""
"#;

#[test]
fn no_password_hash_or_uri_gets_into_the_output() {
    let crds = Crds::load();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec_file(dir.path(), SECRETS_SPEC);
    let run = warren(&[
        "export",
        &spec,
        "--format",
        "k8s",
        "--cluster",
        "rabbitmq",
        "-o",
        "-",
    ])
    .env("K8S_TEST_PASSWORD", "orders-secret-pw")
    .env(
        "LEGACY_URI",
        "amqp://legacy:legacy-secret-pw@legacy.example",
    )
    .run()
    .expect(0);
    for secret in [
        "orders-secret-pw",
        "kI3GCqW5JLMJa4iX1lo7X4D6XbYqlLgxIs30",
        "fed-secret-pw",
        "shovel-secret-pw",
        "legacy-secret-pw",
        "amqp://",
    ] {
        assert!(!run.stdout.contains(secret), "{secret} in:\n{}", run.stdout);
        assert!(
            !run.stderr.contains(secret),
            "{secret} in stderr:\n{}",
            run.stderr
        );
    }
    let documents = check_all(&crds, "secrets spec", &run.stdout);
    let kinds: BTreeSet<&str> = documents
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    for kind in [
        "Vhost",
        "Queue",
        "OperatorPolicy",
        "User",
        "Permission",
        "Shovel",
        "Federation",
    ] {
        assert!(kinds.contains(kind), "{kind} missing: {kinds:?}");
    }
    let user = documents.iter().find(|d| d["kind"] == "User").unwrap();
    let secret = user["spec"]["importCredentialsSecret"]["name"]
        .as_str()
        .unwrap();
    assert!(
        run.stderr.contains(&format!("needs Secret {secret}")),
        "{}",
        run.stderr
    );
    let shovel = documents.iter().find(|d| d["kind"] == "Shovel").unwrap();
    assert_eq!(shovel["spec"]["srcQueue"], "legacy");
    assert_eq!(shovel["spec"]["deleteAfter"], "10");
    // The shop passwords of the examples, set in the environment, stay out too.
    let run = warren(&[
        "export",
        &example("shop"),
        "--format",
        "k8s",
        "--cluster",
        "rabbitmq",
        "-o",
        "-",
    ])
    .envs(SHOP_PASSWORDS.iter().copied())
    .run()
    .expect(0);
    for (_, password) in SHOP_PASSWORDS {
        assert!(!run.stdout.contains(password), "{password}");
    }
    assert!(!run.stdout.to_lowercase().contains("passwordhash"));
}

#[test]
fn names_that_sanitize_alike_get_different_resources() {
    let crds = Crds::load();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec_file(
        dir.path(),
        "version: 1\nname: alike\nvhosts:\n  shop:\n    queues:\n      Orders: {}\n      orders: {}\n      orders.: {}\n      orders_: {}\n",
    );
    let run = export(&spec, &["--cluster", "rabbitmq"]).expect(0);
    let documents = check_all(&crds, "alike", &run.stdout);
    let queues: Vec<(&str, &str)> = documents
        .iter()
        .filter(|d| d["kind"] == "Queue")
        .map(|d| {
            (
                d["metadata"]["name"].as_str().unwrap(),
                d["spec"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(queues.len(), 4, "{queues:?}");
    let names: BTreeSet<&str> = queues.iter().map(|(n, _)| *n).collect();
    assert_eq!(names.len(), 4, "{queues:?}");
    for (name, real) in &queues {
        assert!(name.starts_with("queue-shop-orders-"), "{name} for {real}");
    }
}

/// Each thing the operator cannot express: the error names the object and what the
/// operator lacks, the exit code is 1, and no file is written.
#[test]
fn what_the_operator_cannot_express_is_refused_and_nothing_is_written() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "internal exchange",
            "vhosts:\n  shop:\n    exchanges:\n      hidden: { type: fanout, internal: true }\n",
            &[
                "exchange \"hidden\" in vhost \"shop\"",
                "no `internal` field",
            ],
        ),
        (
            "operator policy on exchanges",
            "vhosts:\n  shop:\n    operator_policies:\n      ex:\n        pattern: '.*'\n        apply_to: exchanges\n        definition: { max-length: 10 }\n",
            &[
                "operator policy \"ex\" in vhost \"shop\"",
                "applyTo queues, classic_queues, quorum_queues, streams, not \"exchanges\"",
            ],
        ),
        (
            "user tag",
            "users:\n  robot:\n    password_hash: \"\"\n    tags: [impersonator]\n",
            &["user \"robot\"", "not \"impersonator\""],
        ),
        (
            "SHA-256 hash",
            "users:\n  legacy:\n    password_hash: \"kI3GCqW5JLMJa4iX1lo7X4D6XbYqlLgxIs30+P6tENUV2POR\"\n",
            &["user \"legacy\"", "stores every hash as SHA-512"],
        ),
        (
            "MD5 asked for",
            "users:\n  old:\n    password: { env: K8S_UNUSED }\n    hashing_algorithm: md5\n",
            &[
                "user \"old\"",
                "rabbit_password_hashing_md5",
                "hashes every password with SHA-512",
            ],
        ),
        (
            "global parameter",
            "global_parameters:\n  platform-owner: { team: platform }\n",
            &[
                "global parameter \"platform-owner\"",
                "no resource for global runtime parameters",
            ],
        ),
        (
            "other parameter component",
            "vhosts:\n  shop:\n    parameters:\n      mqtt-port-to-vhost-mapping:\n        m: { \"1883\": shop }\n",
            &[
                "component \"mqtt-port-to-vhost-mapping\"",
                "shovels and federation upstreams only",
            ],
        ),
        (
            "federation key without a field",
            "vhosts:\n  shop:\n    parameters:\n      federation-upstream:\n        origin: { uri: \"amqp://h\", consumer-tag: x }\n",
            &[
                "federation-upstream \"origin\" in vhost \"shop\"",
                "no field for `consumer-tag`",
            ],
        ),
        (
            "shovel field from the environment",
            "vhosts:\n  shop:\n    parameters:\n      shovel:\n        s: { src-uri: \"amqp://h\", src-queue: { env: K8S_QUEUE }, dest-uri: \"amqp://h\", dest-queue: q }\n",
            &[
                "shovel \"s\" in vhost \"shop\"",
                "environment variable `K8S_QUEUE`",
            ],
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (what, body, expected) in cases {
        let spec = spec_file(dir.path(), &format!("version: 1\nname: refused\n{body}"));
        let output = dir.path().join("out.yaml");
        let run = export_to(&spec, &output);
        assert_eq!(run.code, Some(1), "{what}: {}\n{}", run.stdout, run.stderr);
        for text in *expected {
            assert!(
                run.stderr.contains(text),
                "{what}: no {text:?} in:\n{}",
                run.stderr
            );
        }
        assert!(
            run.stderr.contains("nothing was written"),
            "{what}: {}",
            run.stderr
        );
        assert!(!output.exists(), "{what}: a file was written");
        assert!(run.stdout.is_empty(), "{what}");
    }
}

#[test]
fn cluster_and_namespace_need_format_k8s_and_k8s_needs_a_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.json");
    let out = output.to_str().unwrap();
    let spec = example("ladder");
    for flags in [
        &["--cluster", "rabbitmq"][..],
        &["--namespace", "shop"],
        &["--format", "json", "--cluster", "x"],
    ] {
        let mut args = vec!["export", spec.as_str(), "-o", out];
        args.extend_from_slice(flags);
        let run = warren(&args).run().expect(1);
        assert!(
            run.stderr.contains("for `--format k8s` only"),
            "{flags:?}: {}",
            run.stderr
        );
        assert!(!output.exists(), "{flags:?}");
    }
    let run = warren(&["export", &spec, "--format", "k8s", "-o", out])
        .run()
        .expect(1);
    assert!(run.stderr.contains("needs --cluster"), "{}", run.stderr);
    let run = warren(&[
        "export",
        &spec,
        "--format",
        "k8s",
        "--cluster",
        "Rabbit_MQ",
        "-o",
        out,
    ])
    .run()
    .expect(1);
    assert!(
        run.stderr.contains("not a Kubernetes object name"),
        "{}",
        run.stderr
    );
    let run = warren(&[
        "export",
        &spec,
        "--format",
        "k8s",
        "--cluster",
        "r",
        "--namespace",
        "a.b",
        "-o",
        out,
    ])
    .run()
    .expect(1);
    assert!(
        run.stderr.contains("not a Kubernetes namespace"),
        "{}",
        run.stderr
    );
    assert!(!output.exists());
    // The definitions export is what it was without --format.
    let default = warren(&["export", &spec, "-o", "-"]).run().expect(0);
    let json = warren(&["export", &spec, "--format", "json", "-o", "-"])
        .run()
        .expect(0);
    assert_eq!(default.stdout, json.stdout);
    let _: Value = serde_json::from_str(&default.stdout).unwrap();
}

#[test]
fn the_k8s_export_of_the_shop_example_is_pinned() {
    let run = export(
        &example("shop"),
        &["--cluster", "rabbitmq", "--namespace", "shop"],
    )
    .expect(0);
    snapshot_settings("snapshots").bind(|| {
        insta::assert_snapshot!("k8s__export@shop", run.stdout);
    });
}
