//! What a replayed copy carries: the parked message's properties with the headers that
//! count its retries gone ([`Replay`]), its first routing key kept, its replays counted.

use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};

use crate::model::headers::{ORIGINAL_ROUTING_KEY_HEADER, REPLAY_COUNT_HEADER, Replay, X_DEATH};

/// The properties of a replayed copy: the parked message's, with the headers `rule`
/// removes gone, the original routing key kept in its header, and the replay count
/// one higher.
pub fn rewrite(properties: &BasicProperties, rule: &Replay) -> BasicProperties {
    let mut headers = properties
        .headers()
        .as_ref()
        .map(|table| table.inner().clone())
        .unwrap_or_default();
    let key = ShortString::from(ORIGINAL_ROUTING_KEY_HEADER);
    if !headers.contains_key(&key)
        && let Some(original) = original_routing_key(&headers, &rule.work_queue)
    {
        headers.insert(key, AMQPValue::LongString(LongString::from(original)));
    }
    for removed in rule.removed() {
        headers.remove(&ShortString::from(removed));
    }
    let replays = headers
        .get(&ShortString::from(REPLAY_COUNT_HEADER))
        .and_then(as_integer)
        .unwrap_or(0);
    headers.insert(
        REPLAY_COUNT_HEADER.into(),
        AMQPValue::LongLongInt(replays.saturating_add(1)),
    );
    properties.clone().with_headers(FieldTable::from(headers))
}

/// The first routing key of the `x-death` entry of `work_queue`: the key the message
/// was routed to its work queue by (the reject modes keep it only there).
fn original_routing_key(
    headers: &std::collections::BTreeMap<ShortString, AMQPValue>,
    work_queue: &str,
) -> Option<String> {
    let AMQPValue::FieldArray(deaths) = headers.get(&ShortString::from(X_DEATH))? else {
        return None;
    };
    deaths.as_slice().iter().find_map(|death| {
        let AMQPValue::FieldTable(death) = death else {
            return None;
        };
        let fields = death.inner();
        let queue = fields.get(&ShortString::from("queue")).and_then(as_text)?;
        if queue != work_queue {
            return None;
        }
        let AMQPValue::FieldArray(keys) = fields.get(&ShortString::from("routing-keys"))? else {
            return None;
        };
        keys.as_slice().first().and_then(as_text)
    })
}

/// A text header value (long or short string).
pub(in crate::broker) fn as_text(value: &AMQPValue) -> Option<String> {
    match value {
        AMQPValue::LongString(text) => Some(String::from_utf8_lossy(text.as_bytes()).into_owned()),
        AMQPValue::ShortString(text) => Some(text.as_str().to_string()),
        _ => None,
    }
}

/// An integer header value, of whatever width the client wrote.
pub(in crate::broker) fn as_integer(value: &AMQPValue) -> Option<i64> {
    match value {
        AMQPValue::ShortShortInt(n) => Some(i64::from(*n)),
        AMQPValue::ShortShortUInt(n) => Some(i64::from(*n)),
        AMQPValue::ShortInt(n) => Some(i64::from(*n)),
        AMQPValue::ShortUInt(n) => Some(i64::from(*n)),
        AMQPValue::LongInt(n) => Some(i64::from(*n)),
        AMQPValue::LongUInt(n) => Some(i64::from(*n)),
        AMQPValue::LongLongInt(n) => Some(*n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use lapin::types::FieldArray;

    use super::*;

    fn text(value: &str) -> AMQPValue {
        AMQPValue::LongString(LongString::from(value))
    }

    fn death(queue: &str, reason: &str, key: &str, count: i64) -> AMQPValue {
        let mut fields = std::collections::BTreeMap::new();
        fields.insert(ShortString::from("queue"), text(queue));
        fields.insert(ShortString::from("reason"), text(reason));
        fields.insert(ShortString::from("count"), AMQPValue::LongLongInt(count));
        fields.insert(
            ShortString::from("routing-keys"),
            AMQPValue::FieldArray(FieldArray::from(vec![text(key)])),
        );
        AMQPValue::FieldTable(FieldTable::from(fields))
    }

    fn parked(headers: Vec<(&str, AMQPValue)>) -> BasicProperties {
        let table: std::collections::BTreeMap<ShortString, AMQPValue> = headers
            .into_iter()
            .map(|(k, v)| (ShortString::from(k), v))
            .collect();
        BasicProperties::default()
            .with_message_id("m-1".into())
            .with_content_type("application/json".into())
            .with_headers(FieldTable::from(table))
    }

    fn header(properties: &BasicProperties, name: &str) -> Option<AMQPValue> {
        properties
            .headers()
            .as_ref()?
            .inner()
            .get(&ShortString::from(name))
            .cloned()
    }

    fn rule() -> Replay {
        Replay {
            work_queue: "orders.email".into(),
        }
    }

    #[test]
    fn a_reject_mode_message_keeps_its_key_and_loses_its_deaths() {
        let deaths = AMQPValue::FieldArray(FieldArray::from(vec![
            death("orders.email.retry.1", "expired", "1", 3),
            death("orders.email", "rejected", "order.created", 3),
        ]));
        let before = parked(vec![
            ("x-death", deaths),
            ("x-first-death-queue", text("orders.email")),
            ("x-delivery-count", AMQPValue::LongLongInt(2)),
            ("tenant", text("acme")),
        ]);
        let after = rewrite(&before, &rule());
        assert_eq!(header(&after, "x-death"), None);
        assert_eq!(header(&after, "x-first-death-queue"), None);
        assert_eq!(header(&after, "x-delivery-count"), None);
        assert_eq!(
            header(&after, ORIGINAL_ROUTING_KEY_HEADER),
            Some(text("order.created"))
        );
        assert_eq!(header(&after, "tenant"), Some(text("acme")));
        assert_eq!(
            header(&after, REPLAY_COUNT_HEADER),
            Some(AMQPValue::LongLongInt(1))
        );
        assert_eq!(after.message_id(), before.message_id());
        assert_eq!(after.content_type(), before.content_type());
    }

    #[test]
    fn a_publish_mode_message_loses_its_count_and_keeps_its_key_header() {
        let before = parked(vec![
            ("warren-retries", AMQPValue::LongLongInt(3)),
            (ORIGINAL_ROUTING_KEY_HEADER, text("order.paid")),
            (REPLAY_COUNT_HEADER, AMQPValue::LongInt(2)),
            (
                "x-death",
                AMQPValue::FieldArray(FieldArray::from(vec![death(
                    "orders.email.retry.3",
                    "expired",
                    "3",
                    1,
                )])),
            ),
        ]);
        let after = rewrite(&before, &rule());
        assert_eq!(header(&after, "warren-retries"), None);
        assert_eq!(header(&after, "x-death"), None);
        assert_eq!(
            header(&after, ORIGINAL_ROUTING_KEY_HEADER),
            Some(text("order.paid"))
        );
        assert_eq!(
            header(&after, REPLAY_COUNT_HEADER),
            Some(AMQPValue::LongLongInt(3))
        );
    }

    #[test]
    fn a_message_without_headers_gets_only_the_replay_count() {
        let after = rewrite(&BasicProperties::default(), &rule());
        let headers = after.headers().as_ref().unwrap().inner().clone();
        assert_eq!(headers.len(), 1, "{headers:?}");
        assert_eq!(
            header(&after, REPLAY_COUNT_HEADER),
            Some(AMQPValue::LongLongInt(1))
        );
    }
}
