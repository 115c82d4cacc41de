//! Reading the broker's current state: a handful of bulk requests per vhost, run
//! concurrently, whatever the number of objects.

use crate::model::addressable::unaddressable;
use std::collections::BTreeSet;

use serde_json::Value;

use super::{BrokerError, Client, segment};
use crate::model::{
    Binding, Definitions, Exchange, GlobalParameter, Parameter, Permission, Policy, Queue,
    TopicPermission, User, VHOST_LIMITS_COMPONENT, VHOST_LIMITS_NAME, Vhost, is_own_kind_component,
};

/// The broker's state, as far as a spec can see it.
#[derive(Debug, Clone, Default)]
pub struct LiveState {
    /// Objects in the given vhosts, and every user and permission.
    pub definitions: Definitions,
    /// Every vhost on the broker, declared or not.
    pub all_vhosts: Vec<String>,
}

fn decode<T: serde::de::DeserializeOwned>(path: &str, value: Value) -> Result<T, BrokerError> {
    serde_json::from_value(value).map_err(|err| BrokerError::Decode {
        path: path.to_string(),
        reason: err.to_string().into(),
    })
}

/// How many times a listing with an item that is not an object is read.
const LISTING_READS: usize = 3;

/// Reads a listing. The broker builds a listing item by item, and an item created or
/// deleted by another client meanwhile (a vhost, on 3.10 with `columns=`) can come
/// back as `[]` instead of an object, or (seen on 4.3.6, under load) as an object
/// without its `name`: such a listing is read again, up to
/// [`LISTING_READS`] times, and only then refused as not understood. Reading it
/// without the item would plan against a broker that never existed.
pub(super) async fn list<T: serde::de::DeserializeOwned>(
    client: &Client,
    path: String,
) -> Result<Vec<T>, BrokerError> {
    for read in 1..=LISTING_READS {
        match client.get(&path).await? {
            Some(Value::Array(items)) => {
                if read < LISTING_READS && items.iter().any(|item| !item.is_object()) {
                    continue;
                }
                let decoded: Result<Vec<T>, BrokerError> =
                    items.into_iter().map(|item| decode(&path, item)).collect();
                if read < LISTING_READS && decoded.is_err() {
                    continue;
                }
                return decoded;
            }
            Some(Value::Null) | None => return Ok(Vec::new()),
            Some(other) => {
                return Err(BrokerError::Decode {
                    path,
                    reason: format!("expected a list, got {}", truncate(&other.to_string())).into(),
                });
            }
        }
    }
    unreachable!("the last read returns")
}

fn truncate(text: &str) -> String {
    text.chars().take(120).collect()
}

/// The queue and exchange listings ask for the columns a plan compares, and for no
/// statistics: `disable_stats=true` spares the broker a pass over every queue's
/// metrics, which is most of a listing's cost (on 3.10 at 5,000 queues, 1.0 s with
/// them and 0.16 s without; the columns are the same), and a plan never reads them
/// (message counts are asked per queue, only for queues it deletes or replaces).
const QUEUE_LISTING: &str =
    "columns=name,vhost,durable,auto_delete,exclusive,arguments,type&disable_stats=true";
const EXCHANGE_LISTING: &str =
    "columns=name,vhost,type,durable,auto_delete,internal,arguments&disable_stats=true";

/// Which listings [`Client::read_live`] makes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Listings {
    All,
    /// Not the queues, exchanges and bindings.
    Small,
}

/// Objects to read one by one ([`Client::read_named`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Named {
    /// Queues: vhost and name.
    pub queues: BTreeSet<(String, String)>,
    /// Exchanges: vhost and name.
    pub exchanges: BTreeSet<(String, String)>,
    /// Pairs of a source and a destination: every binding between them.
    pub bindings: BTreeSet<BindingEnds>,
}

impl Named {
    /// How many objects (pairs, for bindings): the requests a read makes.
    pub fn len(&self) -> usize {
        self.queues.len() + self.exchanges.len() + self.bindings.len()
    }

    /// Whether there is nothing to read.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The ends of bindings.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BindingEnds {
    /// Vhost.
    pub vhost: String,
    /// Source exchange.
    pub source: String,
    /// `queue` or `exchange`.
    pub destination_type: String,
    /// Destination.
    pub destination: String,
}

/// The default exchange and the predefined `amq.*` exchanges are not the spec's.
fn is_spec_exchange(exchange: &Exchange) -> bool {
    !exchange.name.is_empty() && !exchange.name.starts_with("amq.")
}

/// Every queue's implicit binding from the default exchange is not an object.
fn is_spec_binding(binding: &Binding) -> bool {
    !binding.source.is_empty()
}

/// How many times the global parameters are listed while a head names a part that is
/// gone (see [`Client::global_parameters`]).
const LISTINGS_FOR_PARTS: usize = 3;

impl Client {
    /// The global parameters (where ownership records live), with every part the
    /// records' heads name.
    ///
    /// A listing is not one snapshot of the broker: one taken while an apply writes a
    /// record can hold the new head and miss a part written just before it. Such a part
    /// is read by its name; one that is gone (the write that listed it was replaced by a
    /// later one, which deleted it) means a newer head exists, and the listing is taken
    /// again. What is still missing after that is missing, and the record reads as
    /// damaged.
    pub async fn global_parameters(&self) -> Result<Vec<GlobalParameter>, BrokerError> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let mut listed = list::<GlobalParameter>(self, "/api/global-parameters".into()).await?;
            let missing = crate::model::record::parts::missing_parts(&listed);
            let mut all_found = true;
            for name in missing {
                let path = format!("/api/global-parameters/{}", segment(&name));
                match self.get(&path).await? {
                    Some(mut found) => listed.push(GlobalParameter {
                        name,
                        value: found["value"].take(),
                    }),
                    None => all_found = false,
                }
            }
            if all_found || attempts == LISTINGS_FOR_PARTS {
                return Ok(listed);
            }
        }
    }

    /// Reads everything a plan compares, for the given vhosts: five broker-wide
    /// listings and six per vhost, concurrently.
    pub async fn read_live(&self, vhosts: &[String]) -> Result<LiveState, BrokerError> {
        self.read_scope(vhosts, Listings::All).await
    }

    /// [`Client::read_live`] without the three listings that grow with the topology
    /// (queues, exchanges, bindings): the vhosts, users, permissions, parameters and
    /// policies, a few small requests. What a plan read moments ago is checked again
    /// with it and with [`Client::read_named`] (see `plan::basis`).
    pub async fn read_live_small(&self, vhosts: &[String]) -> Result<LiveState, BrokerError> {
        self.read_scope(vhosts, Listings::Small).await
    }

    async fn read_scope(
        &self,
        vhosts: &[String],
        listings: Listings,
    ) -> Result<LiveState, BrokerError> {
        // The per-vhost listings do not wait for the list of vhosts: a vhost that does
        // not exist answers 404, read as empty, and is dropped below.
        let broker_wide = async {
            tokio::try_join!(
                list::<Vhost>(
                    self,
                    "/api/vhosts?columns=name,description,tags,default_queue_type,metadata".into()
                ),
                list::<User>(self, "/api/users".into()),
                list::<Permission>(self, "/api/permissions".into()),
                list::<TopicPermission>(self, "/api/topic-permissions".into()),
                list::<Parameter>(self, "/api/parameters".into()),
            )
        };
        let per_vhost =
            futures_join_all(vhosts.iter().map(|vhost| self.read_vhost(vhost, listings)));
        let (broker_wide, per_vhost) = tokio::join!(broker_wide, per_vhost);
        let (all_vhosts, users, permissions, topic_permissions, parameters) = broker_wide?;
        let mut definitions = Definitions {
            users,
            ..Definitions::default()
        };
        let present: Vec<&Vhost> = all_vhosts
            .iter()
            .filter(|v| vhosts.contains(&v.name))
            .collect();
        definitions.permissions = permissions
            .into_iter()
            .filter(|p| vhosts.contains(&p.vhost))
            .collect();
        definitions.topic_permissions = topic_permissions
            .into_iter()
            .filter(|p| vhosts.contains(&p.vhost))
            .collect();
        // Shovels, federation upstreams…; limits and operator policies are read per vhost.
        let runtime: Vec<Parameter> = parameters
            .into_iter()
            .filter(|p| vhosts.contains(&p.vhost))
            .filter(|p| !is_own_kind_component(&p.component))
            .collect();
        for (vhost, part) in vhosts.iter().zip(per_vhost) {
            let part = part?;
            if !present.iter().any(|v| &v.name == vhost) {
                continue;
            }
            definitions.queues.extend(part.queues);
            definitions.exchanges.extend(part.exchanges);
            definitions.bindings.extend(part.bindings);
            definitions.policies.extend(part.policies);
            definitions.parameters.extend(part.parameters);
        }
        definitions.parameters.extend(runtime);
        definitions.vhosts = present.into_iter().cloned().collect();
        Ok(LiveState {
            definitions,
            all_vhosts: all_vhosts.into_iter().map(|v| v.name).collect(),
        })
    }

    async fn read_vhost(
        &self,
        vhost: &str,
        listings: Listings,
    ) -> Result<Definitions, BrokerError> {
        let v = segment(vhost);
        let large = async {
            if listings == Listings::Small {
                return Ok((Vec::new(), Vec::new(), Vec::new()));
            }
            tokio::try_join!(
                list::<Queue>(self, format!("/api/queues/{v}?{QUEUE_LISTING}")),
                list::<Exchange>(self, format!("/api/exchanges/{v}?{EXCHANGE_LISTING}")),
                list::<Binding>(self, format!("/api/bindings/{v}")),
            )
        };
        let ((queues, exchanges, bindings), policies, operator_policies, limits) = tokio::try_join!(
            large,
            list::<Policy>(self, format!("/api/policies/{v}")),
            list::<Policy>(self, format!("/api/operator-policies/{v}")),
            list::<Value>(self, format!("/api/vhost-limits/{v}")),
        )?;
        let mut parameters = Vec::new();
        for mut policy in operator_policies {
            policy.vhost = vhost.to_string();
            parameters.push(Parameter::operator_policy(&policy));
        }
        for limit in limits {
            if limit["value"].as_object().is_some_and(|v| !v.is_empty()) {
                parameters.push(Parameter {
                    vhost: vhost.to_string(),
                    component: VHOST_LIMITS_COMPONENT.into(),
                    name: VHOST_LIMITS_NAME.into(),
                    value: limit["value"].clone(),
                });
            }
        }
        Ok(Definitions {
            queues,
            exchanges: exchanges.into_iter().filter(is_spec_exchange).collect(),
            bindings: bindings.into_iter().filter(is_spec_binding).collect(),
            policies,
            parameters,
            ..Definitions::default()
        })
    }

    /// The given queues, exchanges and bindings, one request each (a binding: every
    /// binding between its source and destination), a few at a time; objects that do
    /// not exist are left out. For the few objects a plan changes, this is far
    /// cheaper than the listings, whose cost grows with every object of the vhost.
    pub async fn read_named(&self, named: &Named) -> Result<Definitions, BrokerError> {
        let queues = futures_join_all(named.queues.iter().map(|(vhost, name)| {
            let path = format!(
                "/api/queues/{}/{}?{QUEUE_LISTING}",
                segment(vhost),
                segment(name)
            );
            self.one::<Queue>(path)
        }));
        let exchanges = futures_join_all(named.exchanges.iter().map(|(vhost, name)| {
            let path = format!(
                "/api/exchanges/{}/{}?{EXCHANGE_LISTING}",
                segment(vhost),
                segment(name)
            );
            self.one::<Exchange>(path)
        }));
        let bindings = futures_join_all(named.bindings.iter().map(|ends| {
            let kind = if ends.destination_type == "exchange" {
                "e"
            } else {
                "q"
            };
            let path = format!(
                "/api/bindings/{}/e/{}/{kind}/{}",
                segment(&ends.vhost),
                segment(&ends.source),
                segment(&ends.destination)
            );
            list::<Binding>(self, path)
        }));
        let (queues, exchanges, bindings) = tokio::join!(queues, exchanges, bindings);
        let mut definitions = Definitions::default();
        for queue in queues {
            definitions.queues.extend(queue?);
        }
        for exchange in exchanges {
            definitions
                .exchanges
                .extend(exchange?.filter(is_spec_exchange));
        }
        for between in bindings {
            definitions
                .bindings
                .extend(between?.into_iter().filter(is_spec_binding));
        }
        Ok(definitions)
    }

    /// One object, `None` when it does not exist.
    async fn one<T: serde::de::DeserializeOwned>(
        &self,
        path: String,
    ) -> Result<Option<T>, BrokerError> {
        match self.get(&path).await? {
            None | Some(Value::Null) => Ok(None),
            Some(value) => decode(&path, value).map(Some),
        }
    }

    /// Everything of the given vhosts (all vhosts when `only` is empty), and every
    /// global parameter: what a broker's own definitions export would hold.
    pub async fn read_definitions(&self, only: &[String]) -> Result<Definitions, BrokerError> {
        let version = self.version().await?;
        let all = self.read_live(&[]).await?;
        let unreachable: Vec<Vhost> = all
            .all_vhosts
            .iter()
            .filter(|v| unaddressable(v).is_some() && (only.is_empty() || only.contains(v)))
            .filter_map(|v| serde_json::from_value(serde_json::json!({"name": v})).ok())
            .collect();
        let wanted: Vec<String> = all
            .all_vhosts
            .into_iter()
            .filter(|v| only.is_empty() || only.contains(v))
            // A vhost no URL reaches is not read (its listings would be the
            // broker's whole listing); `import` says it left it out.
            .filter(|v| unaddressable(v).is_none())
            .collect();
        let mut live = self.read_live(&wanted).await?;
        // Named, so that the caller can say it was left out.
        live.definitions.vhosts.extend(unreachable);
        live.definitions.global_parameters = self.global_parameters().await?;
        live.definitions.rabbitmq_version = Some(version);
        Ok(live.definitions)
    }

    /// Message counts of the given queues (one request each: only for queues a plan
    /// would delete or replace).
    pub async fn message_counts(
        &self,
        queues: &[(String, String)],
    ) -> Result<Vec<Option<u64>>, BrokerError> {
        let reads = queues.iter().map(|(vhost, name)| async move {
            let path = format!(
                "/api/queues/{}/{}?columns=messages,messages_ready,messages_unacknowledged",
                segment(vhost),
                segment(name)
            );
            let value = self.get(&path).await?;
            Ok::<_, BrokerError>(value.and_then(|v| {
                v["messages"].as_u64().or_else(|| {
                    Some(v["messages_ready"].as_u64()? + v["messages_unacknowledged"].as_u64()?)
                })
            }))
        });
        futures_join_all(reads).await.into_iter().collect()
    }
}

/// Concurrent requests to the management API.
const CONCURRENCY: usize = 8;

/// Runs futures with bounded concurrency, keeping their order.
pub(super) async fn futures_join_all<F, T>(futures: impl IntoIterator<Item = F>) -> Vec<T>
where
    F: std::future::Future<Output = T>,
{
    futures_join_all_counted(futures, &mut |_| {}).await
}

/// [`futures_join_all`], telling `each` about every result as it comes (in order), so
/// that a long run of writes can report how far it has come.
pub(super) async fn futures_join_all_counted<F, T>(
    futures: impl IntoIterator<Item = F>,
    each: &mut dyn FnMut(&T),
) -> Vec<T>
where
    F: std::future::Future<Output = T>,
{
    use futures::StreamExt;
    let mut results = futures::stream::iter(futures).buffered(CONCURRENCY);
    let mut all = Vec::new();
    while let Some(result) = results.next().await {
        each(&result);
        all.push(result);
    }
    all
}
