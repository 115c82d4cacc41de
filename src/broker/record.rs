//! Reading and writing a spec's ownership record (the global parameter
//! `warren.<spec>`; its format is [`crate::model::record`]).

use serde_json::{Value, json};

use super::{BrokerError, Client, segment};
use crate::model::record::Record;

fn path(spec: &str) -> String {
    format!(
        "/api/global-parameters/{}",
        segment(&Record::parameter_name(spec))
    )
}

impl Client {
    /// The spec's record as the broker holds it, read or not (for `warren state`).
    pub async fn read_record_value(&self, spec: &str) -> Result<Option<Value>, BrokerError> {
        Ok(self
            .get(&path(spec))
            .await?
            .map(|mut parameter| parameter["value"].take()))
    }

    /// Writes the spec's record.
    pub async fn write_record(&self, record: &Record) -> Result<(), BrokerError> {
        let name = Record::parameter_name(&record.spec);
        self.put(
            &path(&record.spec),
            &json!({ "name": name, "value": record }),
        )
        .await
    }
}
