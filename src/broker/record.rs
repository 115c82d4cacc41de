//! Reading and writing a spec's ownership record (the global parameter
//! `warren.<spec>`; its format is [`crate::model::record`]).

use serde_json::json;

use super::{BrokerError, Client, segment};
use crate::model::record::Record;

fn path(spec: &str) -> String {
    format!(
        "/api/global-parameters/{}",
        segment(&Record::parameter_name(spec))
    )
}

impl Client {
    /// The spec's record, if there is one that reads as a record.
    pub async fn read_record(&self, spec: &str) -> Result<Option<Record>, BrokerError> {
        Ok(self
            .get(&path(spec))
            .await?
            .and_then(|value| serde_json::from_value(value["value"].clone()).ok()))
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
