//! The deprecated features a broker reports in use (`GET /api/deprecated-features/used`,
//! RabbitMQ 3.13 on; older brokers answer 404).

use serde_json::Value;

use super::{BrokerError, Client};

const USED: &str = "/api/deprecated-features/used";

impl Client {
    /// The names of the deprecated features the broker reports in use; `None` when the
    /// broker has no such endpoint (before 3.13) and cannot tell.
    pub async fn deprecated_features_used(&self) -> Result<Option<Vec<String>>, BrokerError> {
        let Some(answer) = self.get(USED).await? else {
            return Ok(None);
        };
        let names = answer
            .as_array()
            .ok_or_else(|| BrokerError::Decode {
                path: USED.into(),
                reason: "not a list".into(),
            })?
            .iter()
            .filter_map(|feature| match feature {
                Value::String(name) => Some(name.clone()),
                other => other["name"].as_str().map(str::to_string),
            })
            .collect();
        Ok(Some(names))
    }
}
