//! Vhosts, service inner exchanges, consumers' work queues and their bindings.

use serde_json::Value;

use super::consumer::{ConsumerContext, delivery_limit_need};
use super::naming;
use super::resolve::{self, Layered};
use super::{Emitter, durable_queue, queue_arguments, queue_binding, retry};
use crate::model::{
    Arguments, Exchange, ObjectId, ObjectKind, Parameter, Tags, VHOST_LIMITS_COMPONENT,
    VHOST_LIMITS_NAME, Vhost,
};
use crate::spec::{
    Consumer, ExchangeType, HeaderMatchMode, QueueType, RetryMode, Service, Spec, SpecPath,
};

/// Emits every vhost with its services.
pub(crate) fn emit_all(spec: &Spec, out: &mut Emitter) {
    let root = SpecPath::root();
    let mut scratch = Vec::new();
    let top = Layered::default().with_defaults(
        spec,
        &spec.defaults,
        naming::DEFAULTS_ORIGIN,
        &root.key("defaults"),
        &mut scratch,
    );
    out.diagnostics.append(&mut scratch);
    check_named_ladders(spec, out);
    for (vhost_name, vhost) in &spec.vhosts {
        let vhost_path = root.key("vhosts").key(vhost_name);
        emit_vhost(vhost_name, vhost, &vhost_path, out);
        let layered = top.with_defaults(
            spec,
            &vhost.defaults,
            naming::VHOST_ORIGIN,
            &vhost_path.key("defaults"),
            &mut out.diagnostics,
        );
        for (service_name, service) in &vhost.services {
            let service_path = vhost_path.key("services").key(service_name);
            let layered = layered.with_defaults(
                spec,
                &service.defaults,
                &naming::service_origin(service_name),
                &service_path.key("defaults"),
                &mut out.diagnostics,
            );
            emit_service(
                spec,
                vhost_name,
                service_name,
                service,
                &layered,
                &service_path,
                out,
            );
        }
    }
}

/// Checks every named ladder on its own, so that one nobody uses yet is still valid.
fn check_named_ladders(spec: &Spec, out: &mut Emitter) {
    for (name, ladder) in &spec.ladders {
        let path = SpecPath::root().key("ladders").key(name);
        if ladder.ladder.is_some() {
            out.error(
                "invalid-reference",
                format!("ladder `{name}` refers to another ladder"),
                path.key("ladder"),
            )
            .hint("named ladders cannot build on each other: write the delays out");
            continue;
        }
        let layered = Layered {
            retry: Some(ladder.clone()),
            delays_origin: Some(naming::ladder_origin(name)),
            delays_path: Some(path.key("delays")),
            ..Layered::default()
        };
        let mut found = Vec::new();
        // Consumers re-check with their own paths; keep only what is wrong in the ladder itself.
        // A named ladder is checked as a quorum consumer's would be; each consumer that
        // uses it is checked again with its own queue type.
        let target = out.options.target;
        resolve::ladder(&layered, QueueType::Quorum, target, &path, None, &mut found);
        out.diagnostics.extend(found);
    }
}

fn emit_vhost(name: &str, vhost: &crate::spec::Vhost, path: &SpecPath, out: &mut Emitter) {
    if name.is_empty() {
        out.error("invalid-name", "a vhost name cannot be empty", path.clone());
    }
    let id = ObjectId::global(ObjectKind::Vhost, name);
    if !out.claim(id, path) {
        return;
    }
    let tags = (!vhost.tags.is_empty()).then(|| Tags::List(vhost.tags.clone()));
    if vhost.default_queue_type.is_some() && !out.options.target.has_vhost_default_queue_type() {
        out.warn(
            "unsupported-by-target",
            format!(
                "RabbitMQ {} has no per-vhost default queue type: `default_queue_type` is left out",
                out.options.target
            ),
            path.key("default_queue_type"),
        )
        .hint("warren declares every queue with an explicit type, so nothing depends on it");
    }
    out.definitions.vhosts.push(Vhost {
        name: name.to_string(),
        description: vhost.description.clone(),
        tags,
        default_queue_type: vhost
            .default_queue_type
            .filter(|_| out.options.target.has_vhost_default_queue_type())
            .map(|t| t.as_str().to_string()),
        // Some versions read the import's metadata map, others the top-level fields.
        metadata: Some(vhost_metadata(vhost, out.options.target)),
        extra: Default::default(),
    });
    if let Some(limits) = &vhost.limits {
        let mut value = serde_json::Map::new();
        if let Some(max) = limits.max_queues {
            value.insert("max-queues".into(), Value::from(max));
        }
        if let Some(max) = limits.max_connections {
            value.insert("max-connections".into(), Value::from(max));
        }
        if !value.is_empty() {
            // Cannot clash: a vhost has one limits object, and the vhost was claimed above.
            let _ = out.origins.claim(
                ObjectId::in_vhost(ObjectKind::VhostLimits, name, VHOST_LIMITS_NAME),
                &path.key("limits"),
            );
            out.definitions.parameters.push(Parameter {
                vhost: name.to_string(),
                component: VHOST_LIMITS_COMPONENT.into(),
                name: VHOST_LIMITS_NAME.into(),
                value: Value::Object(value),
            });
        }
    }
}

fn vhost_metadata(
    vhost: &crate::spec::Vhost,
    target: crate::model::version::TargetVersion,
) -> Arguments {
    let mut metadata = Arguments::new();
    if let Some(description) = &vhost.description {
        metadata.insert("description".into(), Value::from(description.clone()));
    }
    if !vhost.tags.is_empty() {
        metadata.insert("tags".into(), Value::from(vhost.tags.clone()));
    }
    if let Some(queue_type) = vhost
        .default_queue_type
        .filter(|_| target.has_vhost_default_queue_type())
    {
        metadata.insert(
            "default_queue_type".into(),
            Value::from(queue_type.as_str()),
        );
    }
    metadata
}

fn emit_service(
    spec: &Spec,
    vhost: &str,
    service_name: &str,
    service: &Service,
    layered: &Layered,
    path: &SpecPath,
    out: &mut Emitter,
) {
    let exchange_name = service
        .exchange
        .name
        .clone()
        .unwrap_or_else(|| service_name.to_string());
    let exchange_type = service
        .exchange
        .kind
        .or(layered.exchange_type)
        .unwrap_or(ExchangeType::Topic);
    out.exchange(
        Exchange {
            name: exchange_name.clone(),
            vhost: vhost.to_string(),
            kind: exchange_type.as_str().to_string(),
            durable: service.exchange.durable.unwrap_or(true),
            auto_delete: false,
            internal: false,
            arguments: Arguments::new(),
            extra: Default::default(),
        },
        &path.key("exchange"),
    );
    for (index, publisher) in service.publishers.iter().enumerate() {
        out.publishers.push(super::permissions::PublisherUse {
            vhost: vhost.to_string(),
            exchange: exchange_name.clone(),
            exchange_type: exchange_type.as_str().to_string(),
            user: publisher.user().to_string(),
            routing_keys: publisher.routing_keys().map(<[String]>::to_vec),
            path: path.key("publishers").index(index),
        });
    }
    for (consumer_name, consumer) in &service.consumers {
        let consumer_path = path.key("consumers").key(consumer_name);
        let mut layered = layered.clone();
        if let Some(retry) = &consumer.retry {
            let origin = naming::consumer_origin(service_name, consumer_name);
            layered.lay_retry(
                spec,
                retry,
                &origin,
                &consumer_path.key("retry"),
                &mut out.diagnostics,
            );
        }
        let work_type = consumer
            .kind
            .or(layered.queue_type)
            .unwrap_or(QueueType::Quorum);
        let context = ConsumerContext {
            vhost,
            service: service_name,
            consumer: consumer_name,
            user: consumer.user.as_deref(),
            inner_exchange: &exchange_name,
            inner_type: exchange_type,
            routing_keys: &consumer.routing_keys,
            work_queue: consumer
                .queue
                .clone()
                .unwrap_or_else(|| naming::work_queue(service_name, consumer_name)),
            work_type,
            delivery_limit: consumer.delivery_limit.or(layered.delivery_limit),
            path: consumer_path.clone(),
        };
        let ladder = resolve::ladder(
            &layered,
            work_type,
            out.options.target,
            &consumer_path.key("retry"),
            Some(&format!("{service_name}.{consumer_name}")),
            &mut out.diagnostics,
        )
        .filter(|ladder| retry::generated_names_fit(&context, ladder, out));
        if ladder.is_some() && work_type == QueueType::Stream {
            out.error(
                "invalid-value",
                "a stream work queue cannot have a retry ladder: streams cannot dead-letter",
                consumer_path.key("type"),
            )
            .hint("use a quorum queue for work that needs retries");
            continue;
        }
        let dead_letter = ladder
            .as_ref()
            .map(|ladder| retry::work_queue_dead_letter(&context, ladder))
            .unwrap_or_default();
        emit_work_queue(&context, consumer, dead_letter, ladder.as_ref(), out);
        match ladder {
            Some(ladder) => retry::emit(&context, &ladder, out),
            None => {
                let target = out.options.target;
                out.contract.add_plain(&context, target);
            }
        }
    }
}

fn emit_work_queue(
    context: &ConsumerContext,
    consumer: &Consumer,
    dead_letter: Arguments,
    ladder: Option<&resolve::Ladder>,
    out: &mut Emitter,
) {
    let has_retry = ladder.is_some();
    let path = &context.path;
    let mut arguments = queue_arguments(context.work_type);
    // Where rejected messages go never changes, so it lives in queue arguments, where no
    // user policy can shadow it.
    arguments.extend(dead_letter);
    let native = ladder.filter(|ladder| ladder.mode == RetryMode::Native);
    let needs = if let Some(ladder) = native {
        retry::native_needs(context, ladder, out)
    } else if context.work_type == QueueType::Quorum {
        delivery_limit_need(
            out,
            context.delivery_limit,
            has_retry,
            &path.key("delivery_limit"),
        )
        .into_iter()
        .map(std::sync::Arc::new)
        .collect()
    } else {
        if consumer.delivery_limit.is_some() {
            out.error(
                "invalid-value",
                format!(
                    "`delivery_limit` only applies to quorum queues; this work queue is {}",
                    context.work_type.as_str()
                ),
                path.key("delivery_limit"),
            )
            .hint("remove it, or make the work queue `type: quorum`");
        }
        Vec::new()
    };
    out.queue(
        durable_queue(context.vhost, &context.work_queue, arguments),
        context.work_type,
        needs,
        &path.key("queue"),
    );
    bind_to_inner_exchange(context, consumer, &context.work_queue, out);
}

/// Binds a queue to the consumer's inner exchange as the consumer's keys or headers say.
pub(crate) fn bind_to_inner_exchange(
    context: &ConsumerContext,
    consumer: &Consumer,
    queue: &str,
    out: &mut Emitter,
) {
    let path = &context.path;
    let binding = |routing_key: &str, arguments: Arguments| {
        queue_binding(
            context.vhost,
            context.inner_exchange,
            queue,
            routing_key,
            arguments,
        )
    };
    match context.inner_type {
        ExchangeType::Headers => {
            if !consumer.routing_keys.is_empty() {
                out.error(
                    "invalid-value",
                    "a headers exchange routes on headers, not routing keys",
                    path.key("routing_keys"),
                )
                .hint("replace `routing_keys` with `headers: { match: all, values: { … } }`");
            }
            let Some(headers) = &consumer.headers else {
                out.error(
                    "missing-key",
                    format!(
                        "consumer `{}` reads from headers exchange `{}` but has no `headers` match",
                        context.consumer, context.inner_exchange
                    ),
                    path.clone(),
                )
                .hint("add `headers: { match: all, values: { type: order } }`");
                return;
            };
            let mut arguments = Arguments::new();
            let mode = match headers.mode.unwrap_or(HeaderMatchMode::All) {
                HeaderMatchMode::All => "all",
                HeaderMatchMode::Any => "any",
            };
            arguments.insert("x-match".into(), Value::from(mode));
            if headers.values.is_empty() {
                out.error(
                    "invalid-value",
                    "an empty header match binds the queue to every message of the exchange",
                    path.key("headers").key("values"),
                )
                .hint("list the headers to match, e.g. `values: { type: order }`");
            }
            for (name, value) in &headers.values {
                if name.starts_with("x-") {
                    out.error(
                        "invalid-value",
                        format!("header `{name}` starts with `x-`: a headers binding ignores such headers"),
                        path.key("headers").key("values").key(name),
                    )
                    .hint("use a header name without the `x-` prefix");
                }
                arguments.insert(name.clone(), value.clone());
            }
            out.binding(binding("", arguments), &path.key("headers"));
        }
        other => {
            if consumer.headers.is_some() {
                out.error(
                    "invalid-value",
                    format!(
                        "`headers` needs a headers exchange, but `{}` is {}",
                        context.inner_exchange,
                        other.as_str()
                    ),
                    path.key("headers"),
                )
                .hint("use `routing_keys`, or make the service exchange `type: headers`");
            }
            if other == ExchangeType::Fanout && !consumer.routing_keys.is_empty() {
                out.warn(
                    "ignored-routing-keys",
                    format!(
                        "`{}` is a fanout exchange: it ignores routing keys",
                        context.inner_exchange
                    ),
                    path.key("routing_keys"),
                )
                .hint("remove `routing_keys`");
            }
            if consumer.routing_keys.is_empty() {
                if other == ExchangeType::Fanout {
                    out.binding(binding("", Arguments::new()), path);
                } else {
                    out.error(
                        "missing-key",
                        format!(
                            "consumer `{}` has no `routing_keys`: nothing would reach its queue from {} exchange `{}`",
                            context.consumer,
                            other.as_str(),
                            context.inner_exchange
                        ),
                        path.clone(),
                    )
                    .hint("add e.g. `routing_keys: [\"order.created\"]` (`#` matches everything on a topic exchange)");
                }
            }
            for (index, key) in consumer.routing_keys.iter().enumerate() {
                if key.len() > 255 {
                    out.error(
                        "invalid-value",
                        "routing key longer than 255 bytes",
                        path.key("routing_keys").index(index),
                    );
                }
                out.binding(
                    binding(key, Arguments::new()),
                    &path.key("routing_keys").index(index),
                );
            }
        }
    }
}
