//! The permissions warren generates from the topology, proved on real RabbitMQ 3.10 and
//! 4.3 nodes: a spec with two services (a topic exchange with a publisher limited to
//! some routing keys, a direct one) and a consumer in each retry mode, each consumer
//! with a user of its own, is applied to a fresh vhost; then a real AMQP client logs in
//! as each generated user and does what the consumer contract says (allowed), and what
//! it does not (refused by the broker with ACCESS_REFUSED, reply code 403).

use std::future::Future;

use lapin::options::{
    BasicCancelOptions, BasicConsumeOptions, ConfirmSelectOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel};
use serde_json::json;

use crate::amqp::{self, Client, ConsumerContract, Contract, message};
use crate::node::{Node, Version, pct};
use crate::spec::Spec;
use crate::support::Capture;

/// The broker's reply code for an operation the user has no permission for.
const ACCESS_REFUSED: u16 = 403;
/// Every user's password, from this environment variable of `warren apply`.
const PASSWORD_VARIABLE: &str = "PERMS_TEST_PASSWORD";
const PASSWORD: &str = "perms-test-pw";

/// The spec: users are broker-wide, so each is named after the test's vhost.
fn spec_text(vhost: &str) -> String {
    format!(
        r#"version: 1
name: {vhost}
vhosts:
  {vhost}:
    services:
      orders:
        publishers: [{{ user: {vhost}-web, routing_keys: ['order.*'] }}]
        consumers:
          email: {{ user: {vhost}-email, routing_keys: [order.paid], retry: {{ delays: [1m, 2m] }} }}
          sms: {{ user: {vhost}-sms, routing_keys: [order.paid], retry: {{ delays: [1m], mode: reject }} }}
          chain: {{ user: {vhost}-chain, routing_keys: [order.paid], retry: {{ delays: [1m, 2m], mode: reject-chain }} }}
      payments:
        exchange: {{ type: direct }}
        publishers: [{vhost}-pay]
        consumers:
          capture: {{ user: {vhost}-capture, routing_keys: [paid], retry: {{ delays: [1m] }} }}
users:
  {vhost}-email:
    password: {{ env: {PASSWORD_VARIABLE} }}
    permissions:
      {vhost}: {{ configure: '^amq\.gen-' }}
  {vhost}-sms: {{ password: {{ env: {PASSWORD_VARIABLE} }} }}
  {vhost}-chain: {{ password: {{ env: {PASSWORD_VARIABLE} }} }}
  {vhost}-capture: {{ password: {{ env: {PASSWORD_VARIABLE} }} }}
  {vhost}-web: {{ password: {{ env: {PASSWORD_VARIABLE} }} }}
  {vhost}-pay: {{ password: {{ env: {PASSWORD_VARIABLE} }} }}
"#
    )
}

struct Setup {
    node: &'static Node,
    vhost: String,
    _spec: Spec,
    contract: Contract,
    rt: tokio::runtime::Runtime,
    /// The node's own user, to look at queues.
    admin: Client,
}

impl Setup {
    #[track_caller]
    fn start(version: Version) -> Setup {
        let node = Node::shared(version);
        let vhost = node.unused_vhost("perms");
        let spec = Spec::new(&spec_text(&vhost));
        node.apply(spec.arg())
            .with(&["--lock-timeout", "2m"])
            .command()
            .env(PASSWORD_VARIABLE, PASSWORD)
            .run()
            .expect(0);
        node.put(
            &format!("/api/permissions/{}/{}", pct(&vhost), pct(&node.user)),
            &json!({"configure": ".*", "write": ".*", "read": ".*"}),
        );
        // `Contract::of` without the password, which `compile` reads.
        let run = crate::support::warren(&[
            "compile",
            spec.arg(),
            "--contract",
            "--target-version",
            version.target(),
        ])
        .env(PASSWORD_VARIABLE, PASSWORD)
        .run()
        .expect(0);
        let contract: Contract = serde_json::from_str(&run.stdout).expect("contract JSON");
        let rt = amqp::runtime();
        let admin = rt.block_on(Client::connect(node, &vhost));
        Setup {
            node,
            vhost,
            _spec: spec,
            contract,
            rt,
            admin,
        }
    }

    /// Logs in as the generated user `{vhost}-{who}`.
    fn login(&self, who: &str) -> Client {
        let url = format!(
            "amqp://{}:{PASSWORD}@127.0.0.1:{}/{}",
            pct(&format!("{}-{who}", self.vhost)),
            self.node.amqp_port,
            pct(&self.vhost)
        );
        self.rt.block_on(Client::connect_url(&url))
    }

    fn consumer(&self, name: &str) -> ConsumerContract {
        self.contract.consumer(name).clone()
    }

    fn ready(&self, queue: &str) -> u32 {
        self.rt.block_on(self.admin.ready(queue))
    }

    /// Publishes as `client` and waits for the confirm; panics when refused.
    #[track_caller]
    fn publish(&self, client: &Client, exchange: &str, key: &str) {
        self.rt
            .block_on(client.publish(exchange, key, b"m", message("perms")))
            .unwrap_or_else(|e| panic!("publish to {exchange}/{key}: {e}"));
    }

    /// Runs `op` on a fresh channel of `client`: it must fail with ACCESS_REFUSED.
    #[track_caller]
    fn refused<F, Fut>(&self, client: &Client, what: &str, op: F)
    where
        F: FnOnce(Channel) -> Fut,
        Fut: Future<Output = Result<(), lapin::Error>>,
    {
        let result = self.rt.block_on(async {
            let channel = client.connection.create_channel().await.expect("channel");
            op(channel).await
        });
        let code = match &result {
            Err(error) => match error.kind() {
                lapin::ErrorKind::ProtocolError(amqp) => Some(amqp.get_id()),
                _ => None,
            },
            Ok(()) => None,
        };
        assert_eq!(
            code,
            Some(ACCESS_REFUSED),
            "{what}: expected ACCESS_REFUSED, got {result:?}"
        );
    }

    /// Consuming `queue` as `client` is refused.
    #[track_caller]
    fn consume_refused(&self, client: &Client, queue: &str) {
        let queue_name = queue.to_string();
        self.refused(client, &format!("consume {queue}"), |channel| async move {
            channel
                .basic_consume(
                    queue_name.as_str().into(),
                    "perms".into(),
                    BasicConsumeOptions::default(),
                    FieldTable::default(),
                )
                .await
                .map(|_| ())
        });
    }

    /// Consuming `queue` as `client` works.
    #[track_caller]
    fn consume_allowed(&self, client: &Client, queue: &str) {
        self.rt.block_on(async {
            let channel = client.connection.create_channel().await.expect("channel");
            channel
                .basic_consume(
                    queue.into(),
                    "perms".into(),
                    BasicConsumeOptions::default(),
                    FieldTable::default(),
                )
                .await
                .unwrap_or_else(|e| panic!("consume {queue}: {e}"));
            // Cancelled before the channel closes: a channel closed with a consumer on it
            // cancels that consumer while closing, and lapin has then failed the
            // connection's next publish ("invalid channel state: Closing (basic.cancel)",
            // RabbitMQ 4.0 under load).
            let _ = channel
                .basic_cancel("perms".into(), BasicCancelOptions::default())
                .await;
            let _ = channel.close(200, "".into()).await;
        });
    }

    /// Publishing to `exchange` with `key` as `client` is refused.
    #[track_caller]
    fn publish_refused(&self, client: &Client, exchange: &str, key: &str) {
        let (exchange_name, key_name) = (exchange.to_string(), key.to_string());
        self.refused(
            client,
            &format!("publish to {exchange}/{key}"),
            |channel| async move {
                channel
                    .confirm_select(ConfirmSelectOptions::default())
                    .await?;
                let confirm = channel
                    .basic_publish(
                        exchange_name.as_str().into(),
                        key_name.as_str().into(),
                        Default::default(),
                        b"m",
                        BasicProperties::default(),
                    )
                    .await?;
                confirm.await?;
                // A refused publish closes the channel: any later call reports why.
                channel
                    .queue_declare(
                        "".into(),
                        QueueDeclareOptions {
                            passive: true,
                            ..QueueDeclareOptions::default()
                        },
                        FieldTable::default(),
                    )
                    .await
                    .map(|_| ())
            },
        );
    }

    /// Declaring a queue named `queue` as `client` is refused.
    #[track_caller]
    fn declare_refused(&self, client: &Client, queue: &str) {
        let queue_name = queue.to_string();
        self.refused(client, &format!("declare {queue}"), |channel| async move {
            channel
                .queue_declare(
                    queue_name.as_str().into(),
                    QueueDeclareOptions {
                        durable: true,
                        ..QueueDeclareOptions::default()
                    },
                    FieldTable::default(),
                )
                .await
                .map(|_| ())
        });
    }

    /// Deleting `queue` as `client` is refused.
    #[track_caller]
    fn delete_refused(&self, client: &Client, queue: &str) {
        let queue_name = queue.to_string();
        self.refused(client, &format!("delete {queue}"), |channel| async move {
            channel
                .queue_delete(queue_name.as_str().into(), QueueDeleteOptions::default())
                .await
                .map(|_| ())
        });
    }
}

/// Each consumer's user consumes its own queues and publishes its retries and parked
/// messages as its contract says, and nothing else.
fn consumers_get_what_their_contract_needs(version: Version) {
    let setup = Setup::start(version);
    let email = setup.consumer("email");
    let sms = setup.consumer("sms");
    let chain = setup.consumer("chain");
    let capture = setup.consumer("capture");
    for (who, contract) in [
        ("email", &email),
        ("sms", &sms),
        ("chain", &chain),
        ("capture", &capture),
    ] {
        assert_eq!(
            contract.user.as_deref(),
            Some(format!("{}-{who}", setup.vhost).as_str()),
            "the contract names the user"
        );
        let client = setup.login(who);
        for queue in &contract.consume_from {
            setup.consume_allowed(&client, queue);
        }
        let retry = contract.retry();
        match retry.mode.as_str() {
            "publish" => {
                // A retry to the first tier, then a parked message.
                let step = &retry.schedule[0];
                setup.publish(&client, &retry.exchange, &step.routing_key);
                assert_eq!(
                    setup.ready(&step.queue),
                    1,
                    "{who}: the retry is in its tier"
                );
                let parking = retry.on_exhausted.queue.as_deref().unwrap();
                setup.publish(&client, &retry.exchange, "parking");
                assert_eq!(setup.ready(parking), 1, "{who}: the message is parked");
            }
            "reject" => {
                let parking = retry.on_exhausted.queue.as_deref().unwrap();
                setup.publish(&client, &retry.exchange, "parking");
                assert_eq!(setup.ready(parking), 1, "{who}: the message is parked");
            }
            // The broker moves and parks the messages: the consumer publishes nothing.
            _ => setup.publish_refused(&client, &retry.exchange, "parking"),
        }
        // Another consumer's queue, retry exchange and service exchange.
        let other = if who == "email" { &sms } else { &email };
        setup.consume_refused(&client, &other.queue);
        setup.publish_refused(&client, &other.retry().exchange, "parking");
        let foreign_service = if contract.service == "orders" {
            ("payments", "paid")
        } else {
            ("orders", "order.paid")
        };
        setup.publish_refused(&client, foreign_service.0, foreign_service.1);
        // Nothing of the topology is theirs to declare or delete.
        setup.declare_refused(&client, &format!("{}.mine", contract.queue));
        setup.delete_refused(&client, &contract.queue);
        setup.rt.block_on(client.close());
    }
    // The refused deletes deleted nothing.
    for contract in [&email, &sms, &chain, &capture] {
        assert_eq!(setup.ready(&contract.queue), 0);
    }
}

/// A publisher publishes to its service's exchange, with its routing keys only on the
/// topic exchange, and to nothing else; it reads nothing.
fn publishers_publish_to_their_service_only(version: Version) {
    let setup = Setup::start(version);
    let email = setup.consumer("email");
    let capture = setup.consumer("capture");

    let web = setup.login("web");
    setup.publish(&web, "orders", "order.paid");
    assert_eq!(
        setup.ready(&email.queue),
        1,
        "the publish reached the consumer"
    );
    setup.publish_refused(&web, "orders", "invoice.sent");
    setup.publish_refused(&web, "orders", "order.paid.eu");
    setup.publish_refused(&web, "payments", "paid");
    setup.publish_refused(&web, &email.retry().exchange, "parking");
    setup.consume_refused(&web, &email.queue);
    setup.rt.block_on(web.close());

    let pay = setup.login("pay");
    setup.publish(&pay, "payments", "paid");
    assert_eq!(
        setup.ready(&capture.queue),
        1,
        "the publish reached the consumer"
    );
    setup.publish_refused(&pay, "orders", "order.paid");
    setup.consume_refused(&pay, &capture.queue);
    setup.declare_refused(&pay, "pay.mine");
    setup.rt.block_on(pay.close());
}

/// The written `configure: '^amq\.gen-'` is added to the generated permission: the
/// user declares a server-named queue, and only that.
fn a_written_permission_is_added_to_the_generated_one(version: Version) {
    let setup = Setup::start(version);
    let email = setup.login("email");
    let name = setup.rt.block_on(async {
        let channel = email.connection.create_channel().await.expect("channel");
        let queue = channel
            .queue_declare(
                "".into(),
                QueueDeclareOptions {
                    exclusive: true,
                    ..QueueDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("a server-named queue is declared");
        queue.name().to_string()
    });
    assert!(name.starts_with("amq.gen-"), "{name}");
    setup.declare_refused(&email, "reply.queue");
    // The generated part still holds.
    setup.consume_allowed(&email, &setup.consumer("email").queue);
    setup.rt.block_on(email.close());
}

per_version!(
    consumers_get_what_their_contract_needs,
    publishers_publish_to_their_service_only,
    a_written_permission_is_added_to_the_generated_one,
);
