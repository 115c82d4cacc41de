//! Watch delayed retries happen: applies `examples/multi-consumer.yaml` (with a short
//! delay) to a broker, runs its two consumers, one that always fails and one that
//! always succeeds, publishes one message and prints what each consumer does.
//!
//! ```sh
//! cargo build && cargo run --example demo -- --url http://localhost:15672 --user guest --password guest
//! ```
//!
//! See examples/demo/README.md.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use futures::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions, BasicRejectOptions,
    ConfirmSelectOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use serde_json::Value;

const USAGE: &str = "usage: demo [--url MGMT_URL] [--user U] [--password P] [--amqp-port PORT] [--delay DURATION] [--no-apply]

  --url        management API of the broker (default: $WARREN_URL, else http://localhost:15672)
  --user       user name (default: $WARREN_USER, else guest)
  --password   password (default: $WARREN_PASSWORD, else guest)
  --amqp-port  AMQP port on the management URL's host (default: $WARREN_AMQP_PORT, else 5672)
  --delay      the retry delay, a warren duration (default: 2s)
  --no-apply   do not run `warren apply`: the spec is already applied";

struct Args {
    url: String,
    user: String,
    password: String,
    amqp_port: u16,
    delay: String,
    apply: bool,
}

fn args() -> Result<Args, String> {
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let mut args = Args {
        url: env("WARREN_URL", "http://localhost:15672"),
        user: env("WARREN_USER", "guest"),
        password: env("WARREN_PASSWORD", "guest"),
        amqp_port: env("WARREN_AMQP_PORT", "5672")
            .parse()
            .map_err(|_| "WARREN_AMQP_PORT is not a port")?,
        delay: "2s".into(),
        apply: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value\n{USAGE}"));
        match flag.as_str() {
            "--url" => args.url = value()?,
            "--user" => args.user = value()?,
            "--password" => args.password = value()?,
            "--amqp-port" => args.amqp_port = value()?.parse().map_err(|_| "bad --amqp-port")?,
            "--delay" => args.delay = value()?,
            "--no-apply" => args.apply = false,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    // The first URL if several are given, as warren accepts.
    args.url = args.url.split(',').next().unwrap_or_default().to_string();
    Ok(args)
}

/// The warren binary built beside this example, else `cargo run --bin warren`.
fn warren() -> Command {
    let built = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("warren")))
        .filter(|p| p.exists());
    match built {
        Some(path) => Command::new(path),
        None => {
            let mut c = Command::new("cargo");
            c.args(["run", "--quiet", "--bin", "warren", "--"]);
            c
        }
    }
}

fn run(mut command: Command) -> Result<String, String> {
    let out = command
        .output()
        .map_err(|e| format!("cannot run warren: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "warren failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The example spec with the demo's delay, in a temp file.
fn spec(delay: &str) -> Result<PathBuf, String> {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/multi-consumer.yaml");
    let text = std::fs::read_to_string(&example).map_err(|e| format!("{e}"))?;
    let text = text.replace("delays: [60s]", &format!("delays: [{delay}]"));
    let path = std::env::temp_dir().join(format!("warren-demo-{}.yaml", std::process::id()));
    std::fs::write(&path, text).map_err(|e| format!("{e}"))?;
    Ok(path)
}

fn main() {
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    if let Err(e) = runtime.block_on(demo(args)) {
        eprintln!("demo: {e}");
        std::process::exit(1);
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "the demo is one story told top to bottom: publish, fail, wait, come back, park"
)]
async fn demo(args: Args) -> Result<(), String> {
    let spec = spec(&args.delay)?;
    let spec_arg = spec.to_str().unwrap();
    if args.apply {
        println!(
            "Applying examples/multi-consumer.yaml with a {} delay…",
            args.delay
        );
        let mut apply = warren();
        apply
            .args(["apply", spec_arg, "--auto-approve", "--url", &args.url])
            .args(["--user", &args.user, "--password", &args.password]);
        run(apply)?;
    }
    let mut compile = warren();
    compile.args(["compile", spec_arg, "--contract"]);
    let contract: Value = serde_json::from_str(&run(compile)?).map_err(|e| format!("{e}"))?;
    let mut compile = warren();
    compile.args(["compile", spec_arg]);
    let definitions: Value = serde_json::from_str(&run(compile)?).map_err(|e| format!("{e}"))?;
    let _ = std::fs::remove_file(&spec);
    let consumers = contract["consumers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let vhost = consumers[0]["vhost"].as_str().unwrap_or("/").to_string();

    // warren creates the vhost; let the demo's user in.
    let http = reqwest::Client::new();
    http.put(format!(
        "{}/api/permissions/{}/{}",
        args.url.trim_end_matches('/'),
        encode(&vhost),
        encode(&args.user)
    ))
    .basic_auth(&args.user, Some(&args.password))
    .json(&serde_json::json!({"configure": ".*", "write": ".*", "read": ".*"}))
    .send()
    .await
    .and_then(|r| r.error_for_status())
    .map_err(|e| format!("cannot grant permissions on {vhost}: {e}"))?;

    let host = args
        .url
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split(['/', ':']).next())
        .unwrap_or("localhost")
        .rsplit('@')
        .next()
        .unwrap_or("localhost")
        .to_string();
    let amqp = format!(
        "amqp://{}:{}@{host}:{}/{}",
        encode(&args.user),
        encode(&args.password),
        args.amqp_port,
        encode(&vhost)
    );
    let connection = Connection::connect(&amqp, ConnectionProperties::default())
        .await
        .map_err(|e| format!("AMQP connection to {host}:{}: {e}", args.amqp_port))?;
    let publisher = connection
        .create_channel()
        .await
        .map_err(|e| e.to_string())?;
    publisher
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .map_err(|e| e.to_string())?;

    let started = Instant::now();
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    // The first consumer always fails, the second always succeeds.
    for (index, consumer) in consumers.iter().enumerate() {
        let channel = connection
            .create_channel()
            .await
            .map_err(|e| e.to_string())?;
        channel
            .basic_qos(1, BasicQosOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        let queue = consumer["queue"].as_str().unwrap().to_string();
        let mut stream = channel
            .basic_consume(
                queue.as_str().into(),
                "".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(|e| e.to_string())?;
        let (consumer, publisher, done) = (consumer.clone(), publisher.clone(), done_tx.clone());
        let fails = index == 0;
        tokio::spawn(async move {
            let name = consumer["consumer"].as_str().unwrap_or("?").to_string();
            while let Some(Ok(delivery)) = stream.next().await {
                let t = started.elapsed().as_secs_f64();
                let body = String::from_utf8_lossy(&delivery.data).into_owned();
                let attempt = retries(&delivery, &queue) + 1;
                println!("[{t:6.2}s] {name:<14} Processing {body:?} (attempt {attempt})");
                if !fails {
                    let _ = delivery.ack(BasicAckOptions::default()).await;
                    println!("[{t:6.2}s] {name:<14} Done");
                    let _ = done.send(());
                    continue;
                }
                let line = fail(&consumer, &publisher, &delivery, &queue).await;
                println!("[{t:6.2}s] {name:<14} {line}");
                if !line.starts_with("Retrying") {
                    let _ = done.send(());
                }
            }
        });
    }

    let inner = inner_exchange(&definitions, consumers[0]["queue"].as_str().unwrap_or(""))
        .ok_or("the work queue is bound to no exchange")?;
    println!("Publishing \"order 42\" to exchange {inner} in vhost {vhost}\n");
    publisher
        .basic_publish(
            inner.as_str().into(),
            "".into(),
            BasicPublishOptions::default(),
            b"order 42",
            BasicProperties::default().with_delivery_mode(2),
        )
        .await
        .map_err(|e| e.to_string())?
        .await
        .map_err(|e| e.to_string())?;

    // Wait for both consumers to be done with the message.
    for _ in 0..consumers.len() {
        tokio::time::timeout(Duration::from_secs(60), done_rx.recv())
            .await
            .map_err(|_| "no end within 60 s")?;
    }
    if let Some(parking) = consumers[0]["retry"]["on_exhausted"]["queue"].as_str() {
        println!("\nThe message now waits in {parking}; nothing else holds it.");
    }
    let _ = connection.close(200, "demo done".into()).await;
    Ok(())
}

/// The exchange a work queue is bound to (the service's inner exchange), from the
/// compiled definitions: the contract says how to consume, not where to publish.
fn inner_exchange(definitions: &Value, queue: &str) -> Option<String> {
    definitions["bindings"]
        .as_array()?
        .iter()
        .find(|b| b["destination"] == queue && b["destination_type"] == "queue")
        .and_then(|b| b["source"].as_str())
        .map(str::to_string)
}

/// Retries so far, as the contract counts them in `reject` mode: the `count` of the
/// `x-death` entry for the work queue and reason `rejected`.
fn retries(delivery: &lapin::message::Delivery, queue: &str) -> u64 {
    let Some(headers) = delivery.properties.headers() else {
        return 0;
    };
    let Some(AMQPValue::FieldArray(deaths)) = headers.inner().get("x-death") else {
        return 0;
    };
    deaths
        .as_slice()
        .iter()
        .filter_map(|d| match d {
            AMQPValue::FieldTable(t) => Some(t.inner()),
            _ => None,
        })
        .find(|t| text(t.get("queue")) == queue && text(t.get("reason")) == "rejected")
        .and_then(|t| match t.get("count") {
            Some(AMQPValue::LongLongInt(n)) => u64::try_from(*n).ok(),
            Some(AMQPValue::LongInt(n)) => u64::try_from(*n).ok(),
            _ => None,
        })
        .unwrap_or(0)
}

fn text(v: Option<&AMQPValue>) -> String {
    match v {
        Some(AMQPValue::LongString(s)) => s.to_string(),
        Some(AMQPValue::ShortString(s)) => s.to_string(),
        _ => String::new(),
    }
}

/// The `reject` contract: reject while retries remain, then park (or drop).
async fn fail(
    consumer: &Value,
    publisher: &Channel,
    delivery: &lapin::message::Delivery,
    queue: &str,
) -> String {
    let retry = &consumer["retry"];
    let max = retry["max_retries"].as_u64().unwrap_or(0);
    let n = retries(delivery, queue);
    if n < max {
        let _ = delivery.reject(BasicRejectOptions { requeue: false }).await;
        let delay = retry["schedule"][n as usize]["delay"]
            .as_str()
            .unwrap_or("?");
        return format!("Retrying in {delay} (retry {} of {max})", n + 1);
    }
    let exhausted = &retry["on_exhausted"];
    if exhausted["action"] == "park" {
        let exchange = exhausted["exchange"].as_str().unwrap_or_default();
        let key = exhausted["routing_key"].as_str().unwrap_or_default();
        let confirm = publisher
            .basic_publish(
                exchange.into(),
                key.into(),
                BasicPublishOptions::default(),
                &delivery.data,
                delivery.properties.clone(),
            )
            .await;
        if let Ok(confirm) = confirm {
            let _ = confirm.await;
        }
        let _ = delivery.ack(BasicAckOptions::default()).await;
        format!(
            "Can't retry, park in {}",
            exhausted["queue"].as_str().unwrap_or("?")
        )
    } else {
        let _ = delivery.ack(BasicAckOptions::default()).await;
        "Can't retry, drop".to_string()
    }
}

/// Percent-encodes a URL segment.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
