//! `apply SPEC`: the plan is made again under the locks it needs, shown and confirmed
//! while they are held, then applied without a second recheck. What is confirmed is
//! therefore what the broker holds while nobody else can change it.

use std::time::Duration;

use super::error::{ApplyError, ApplyReport, mismatch_error};
use super::gates::check_gates;
use super::held::{UnderLocks, apply_held};
use super::progress::Progress;
use super::{Options, holder_name, needed};
use crate::broker::{BrokerLock, Client};
use crate::model::{Definitions, GlobalParameter};
use crate::plan::{Plan, replan};

/// A plan made under the locks that apply it (`apply SPEC`).
pub struct Locked {
    /// The plan, made while the locks were held: what the apply will do.
    pub plan: Plan,
    lock: BrokerLock,
    /// The global parameters (every ownership record) as read under the locks.
    global_parameters: Vec<GlobalParameter>,
}

impl Locked {
    /// Gives the locks back without applying (the user declined).
    pub async fn release(self) {
        self.lock.release().await;
    }
}

/// For `apply SPEC`, as Terraform does: takes the locks `planned` needs, then checks
/// its desired state again under them, so that what is shown (and confirmed) is what
/// the broker holds while nobody else can change it. An apply that waited for another
/// one (`--lock-timeout`) therefore plans what is left, instead of refusing a plan that
/// went stale while it waited.
pub async fn lock_and_replan(
    client: &Client,
    planned: &Plan,
    lock_wait: Duration,
) -> Result<Locked, ApplyError> {
    let lock = client
        .lock(&needed(planned), &holder_name(), lock_wait)
        .await?;
    let fresh = async {
        let (mut fresh, global_parameters) = plan_under_locks(client, planned).await?;
        let queues = fresh.queues_needing_counts();
        if !queues.is_empty() {
            let counts = client.message_counts(&queues).await?;
            fresh.set_message_counts(&queues, counts);
        }
        let held = lock.names();
        if let Some(missing) = needed(&fresh).into_iter().find(|n| !held.contains(n)) {
            return Err(ApplyError::Stale(format!(
                "it now also changes objects under the lock of {}",
                missing.describe()
            )));
        }
        Ok((fresh, global_parameters))
    }
    .await;
    match fresh {
        Ok((plan, global_parameters)) => Ok(Locked {
            plan,
            lock,
            global_parameters,
        }),
        Err(error) => {
            lock.release().await;
            Err(error)
        }
    }
}

/// `planned` as it stands under the locks, with the global parameters read there.
/// When what it was made from reads the same again ([`crate::plan::Basis`]: the
/// records, the small listings and the objects it touches), it is what a fresh plan
/// would be; otherwise the broker is read in full and the plan made again.
async fn plan_under_locks(
    client: &Client,
    planned: &Plan,
) -> Result<(Plan, Vec<GlobalParameter>), ApplyError> {
    if let Some(basis) = &planned.basis {
        let (small, named, global_parameters) = tokio::try_join!(
            client.read_live_small(&planned.vhosts),
            client.read_named(basis.named()),
            client.global_parameters(),
        )?;
        let now = Definitions {
            queues: named.queues,
            exchanges: named.exchanges,
            bindings: named.bindings,
            global_parameters,
            ..small.definitions
        };
        if basis.holds(&now) {
            return Ok((planned.clone(), now.global_parameters));
        }
    }
    let (live, global_parameters) = tokio::try_join!(
        client.read_live(&planned.vhosts),
        client.global_parameters()
    )?;
    let mut live = live.definitions;
    live.global_parameters = global_parameters;
    let fresh = replan(planned, &live, Some(client.user().to_string())).map_err(mismatch_error)?;
    Ok((fresh, live.global_parameters))
}

/// Applies a plan made under its locks ([`lock_and_replan`]), then gives them back.
pub async fn apply_locked_plan(
    client: &Client,
    locked: Locked,
    options: &Options,
    progress: &mut Progress<'_>,
) -> Result<ApplyReport, ApplyError> {
    let Locked {
        plan,
        lock,
        global_parameters,
    } = locked;
    let outcome = match check_gates(&plan, options) {
        Ok(()) => {
            let under = UnderLocks::Planned(global_parameters);
            apply_held(client, &plan, options, &lock, under, progress).await
        }
        Err(error) => Err(error),
    };
    lock.release().await;
    outcome
}
