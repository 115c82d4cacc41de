//! `warren state show` and `warren state repair`, for people.

use std::io::{self, Write};

use crate::apply::repair::{RecordState, Repair};
use crate::model::record::{Record, in_words, now};

fn objects(out: &mut dyn Write, record: &Record) -> io::Result<()> {
    writeln!(
        out,
        "Manages {}:",
        crate::text::count(record.objects.len(), "object")
    )?;
    for id in record.object_ids() {
        writeln!(out, "  {id}")?;
    }
    Ok(())
}

/// A spec's record as the broker holds it.
pub fn render_state(out: &mut dyn Write, spec: &str, state: &RecordState) -> io::Result<()> {
    let parameter = Record::parameter_name(spec);
    match state {
        RecordState::Missing => writeln!(
            out,
            "Spec `{spec}` has no ownership record (`{parameter}`): it manages nothing yet."
        ),
        RecordState::Readable(record) => {
            let applied = if record.applied_at == 0 {
                "never applied".to_string()
            } else {
                format!(
                    "last applied {} ago",
                    in_words(now().saturating_sub(record.applied_at))
                )
            };
            writeln!(
                out,
                "Spec `{spec}`: record `{parameter}`, serial {}, {applied}.",
                record.serial
            )?;
            objects(out, record)
        }
        RecordState::Damaged { value, error } => {
            writeln!(
                out,
                "Spec `{spec}`: record `{parameter}` is DAMAGED: {}.",
                error.reason
            )?;
            writeln!(
                out,
                "Every plan that reads it stops until it is repaired with `warren state repair {spec}` (give the spec file to adopt back what it declares). As the broker holds it:"
            )?;
            let text = serde_json::to_string_pretty(value).unwrap_or_default();
            for line in text.lines() {
                writeln!(out, "  {line}")?;
            }
            Ok(())
        }
    }
}

/// What a repair will write.
pub fn render_repair(out: &mut dyn Write, repair: &Repair) -> io::Result<()> {
    writeln!(out, "Damage: {}.", repair.damage.reason)?;
    writeln!(
        out,
        "Repair keeps {} that read, adopts {} the spec declares and finds on the broker, and drops {} that do not read and {} that other specs claim.",
        crate::text::count(repair.kept, "object entry"),
        crate::text::count(repair.adopted.len(), "object"),
        crate::text::count(repair.unreadable.len(), "entry"),
        repair.claimed_by_others.len()
    )?;
    for entry in &repair.unreadable {
        writeln!(out, "  dropped, unreadable: {entry}")?;
    }
    for (id, owner) in &repair.claimed_by_others {
        writeln!(out, "  dropped, claimed by spec `{owner}`: {id}")?;
    }
    for id in &repair.adopted {
        writeln!(out, "  adopted: {id}")?;
    }
    writeln!(out, "The repaired record:")?;
    objects(out, &repair.record)
}
