//! Writing a spec's ownership record: its parts, then its head, then the parts it no
//! longer names (the format and why it is stored so: [`crate::model::record::parts`]).

use futures::StreamExt;
use serde_json::{Value, json};

use super::{BrokerError, Client, segment};
use crate::model::GlobalParameter;
use crate::model::record::Record;
use crate::model::record::parts;

/// How many parts are written at once.
const PARTS_IN_FLIGHT: usize = 8;

fn path(name: &str) -> String {
    format!("/api/global-parameters/{}", segment(name))
}

impl Client {
    /// Writes `record`. `present` are the global parameters as read under the locks
    /// this write holds: a part already there with the same content is not written
    /// again. The head is written only once every part it names is, and the parts it no
    /// longer names are deleted only after it: a write stopped anywhere leaves a head
    /// whose parts are all there. A part left over because a delete failed is deleted
    /// by the next write, so the record counts as written once its head is.
    pub async fn write_record(
        &self,
        record: &Record,
        present: &[GlobalParameter],
    ) -> Result<(), BrokerError> {
        let head_name = Record::parameter_name(&record.spec);
        let stored = parts::store(record);
        let to_write: Vec<&(String, Value)> = stored
            .parts
            .iter()
            .filter(|(name, value)| !present.iter().any(|p| &p.name == name && &p.value == value))
            .collect();
        let written: Vec<Result<(), BrokerError>> = futures::stream::iter(&to_write)
            .map(|(name, value)| async move {
                let body = json!({ "name": name, "value": value });
                self.put(&path(name), &body).await
            })
            .buffer_unordered(PARTS_IN_FLIGHT)
            .collect()
            .await;
        written.into_iter().collect::<Result<(), BrokerError>>()?;
        self.put(
            &path(&head_name),
            &json!({ "name": head_name, "value": stored.head }),
        )
        .await?;
        for name in parts::left_over(present, &head_name, &stored) {
            if self.delete(&path(name)).await.is_err() {
                // Named by no head: the next write of this record deletes it.
                break;
            }
        }
        Ok(())
    }
}
