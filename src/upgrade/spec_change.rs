//! What to change in the spec that manages an object a finding is about, instead of
//! changing the object by hand (the next apply would undo that): the change itself,
//! by check and kind of object, and the spec whose ownership record lists the object.

use crate::model::finding::Finding;
use crate::model::record::records;
use crate::model::{Definitions, ObjectKind, TargetVersion};
use crate::spec::SpecPath;

/// Names, on each finding, the spec whose ownership record lists its object (in a
/// broker's definitions or a file exported from one), with the change to make in that
/// spec instead of by hand: a managed object is changed in its spec, or the next apply
/// undoes the fix.
pub(super) fn managed_by_specs(
    definitions: &Definitions,
    to: TargetVersion,
    findings: &mut [Finding],
) {
    let Ok(owners) = records(&definitions.global_parameters) else {
        return;
    };
    for finding in findings {
        let Some(object) = &finding.object else {
            continue;
        };
        let Some((spec, _)) = owners
            .iter()
            .find(|(_, record)| record.object_ids().contains(object))
        else {
            continue;
        };
        let kind = object.kind;
        finding.upgrade_mut().managed_by = Some(spec.clone());
        if finding.code == "quorum-default-delivery-limit" {
            // Whether the spec sets the limit itself depends on what it says about the
            // queue, which only the spec knows: no hand-made policy.
            finding.help = Some(format!(
                "spec `{spec}` manages the queue (its ownership record lists it): `warren upgrade-check SPEC --to {to}` with that spec says whether, compiled for {to}, it sets the limit itself (warren's retry ladders do); apply the spec right after the upgrade, and set `delivery_limit` on the consumer where it does not"
            ));
            continue;
        }
        finding.upgrade_mut().spec_change = spec_change(finding.code, kind, None).map(|change| {
            format!("in spec `{spec}` (its ownership record lists the object): {change}; then `warren apply`")
        });
    }
}

/// The change to make in a spec for a finding about an object of `kind` it writes at
/// `path` (a consumer's work queue, a plain queue, a policy).
pub(super) fn spec_change(id: &str, kind: ObjectKind, path: Option<&SpecPath>) -> Option<String> {
    let consumer = path.is_some_and(|p| p.to_string().contains("consumers"));
    let policy = matches!(kind, ObjectKind::Policy | ObjectKind::OperatorPolicy);
    Some(match id {
        "classic-mirroring" => "remove the `ha-*` keys from the policy's `definition` (the policy itself when nothing else is left); queues that need replicas become quorum queues".into(),
        "classic-queue-version-1" if policy => "remove `queue-version` from the policy's `definition`".into(),
        "classic-queue-version-1" => "remove `x-queue-version` from the queue's `arguments`".into(),
        "queue-master-locator" if policy => "replace `queue-master-locator` with `queue-leader-locator` in the policy's `definition`".into(),
        "queue-master-locator" => "replace `x-queue-master-locator` with `x-queue-leader-locator` in the queue's `arguments`".into(),
        "queue-mode-lazy" if policy => "remove `queue-mode` from the policy's `definition`".into(),
        "queue-mode-lazy" => "remove `x-queue-mode` from the queue's `arguments`".into(),
        "consumer-timeout-classic" if policy => "give the policy `apply_to: quorum_queues`, or remove `consumer-timeout`".into(),
        "consumer-timeout-classic" => "remove `x-consumer-timeout` from the queue's `arguments`, or make it `type: quorum`".into(),
        "transient-nonexclusive-queue" => "set `durable: true` on the queue".into(),
        "quorum-default-delivery-limit" if consumer => "set `delivery_limit` on the consumer (or in `defaults`): a number works on every line; `unlimited` compiles to -1, which only 4.0 and later accept".into(),
        "quorum-default-delivery-limit" => "set a delivery limit: a `delivery-limit` policy over the queue, or `x-delivery-limit` in its `arguments` for a new queue".into(),
        "delayed-message-exchange" => "remove the exchange and give the consumers that need delays a retry ladder (`retry: { delays: [...] }`)".into(),
        _ => return None,
    })
}
